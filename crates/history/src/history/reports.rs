//! What the history tools return, and how each reads as text.

use schemars::JsonSchema;
use serde::Serialize;

use super::problem::ProblemKind;
use super::store::Remembered;
use crate::render::Render;

/// A problem drydock saw, where, how often, and how it was fixed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryHit {
    /// Its id in the project memory.
    pub id: i64,
    pub project: String,
    /// cargo or mix.
    pub toolchain: String,
    /// error, warning or test.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The failing test, for a test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What the tool said, as a person reads it.
    pub text: String,
    pub first_seen_ms: u64,
    pub last_seen_ms: u64,
    /// How many runs had it.
    pub seen: u32,
    /// Who ran the check that first had it: a client's name, or "task ID".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// open, or resolved (a later run of the same check no longer had it); recorded for a
    /// command or a task.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_ms: Option<u64>,
    /// The change between the last run that had it and the first that did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<FixReport>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FixReport {
    /// The files the diff shows.
    pub files: Vec<String>,
    /// Other files that changed too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<String>,
    pub diff: String,
}

impl From<Remembered> for HistoryHit {
    fn from(p: Remembered) -> HistoryHit {
        HistoryHit {
            id: p.id,
            project: p.project,
            toolchain: p.toolchain,
            kind: p.problem.kind.name().to_string(),
            code: p.problem.code,
            test: p.problem.test,
            message: p.problem.message,
            file: p.problem.file,
            line: p.problem.line,
            text: p.problem.text,
            first_seen_ms: p.first_ms,
            last_seen_ms: p.last_ms,
            seen: p.seen,
            by: p.client,
            state: match (p.problem.kind, p.resolved_ms) {
                (ProblemKind::Command | ProblemKind::Task, _) => "recorded".into(),
                (_, Some(_)) => "resolved".into(),
                (_, None) => "open".into(),
            },
            resolved_ms: p.resolved_ms,
            fix: p.fix.map(|f| FixReport {
                files: f.files,
                others: f.others,
                diff: f.diff,
            }),
        }
    }
}

impl HistoryHit {
    fn line(&self) -> String {
        let name = self
            .code
            .as_deref()
            .or(self.test.as_deref())
            .map(|c| format!("{c} "))
            .unwrap_or_default();
        let place = match (&self.file, self.line) {
            (Some(file), Some(line)) => format!(" at {file}:{line}"),
            (Some(file), None) => format!(" at {file}"),
            _ => String::new(),
        };
        format!(
            "#{} {} {name}{}{place} in {} · seen {} time(s) · {}",
            self.id, self.kind, self.message, self.project, self.seen, self.state
        )
    }
}

/// history_search's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchReport {
    pub hits: Vec<HistoryHit>,
}

impl Render for SearchReport {
    fn render(&self) -> String {
        if self.hits.is_empty() {
            return "no problem drydock saw matches".into();
        }
        let mut lines = Vec::new();
        for hit in &self.hits {
            lines.push(hit.line());
            if let Some(fix) = &hit.fix {
                lines.push(format!("fixed by changing {}:", fix.files.join(", ")));
                lines.push(fix.diff.trim_end().to_string());
                if !fix.others.is_empty() {
                    lines.push(format!("(and {})", fix.others.join(", ")));
                }
            }
        }
        lines.join("\n")
    }
}

/// A project's problems: open first, then the most recently fixed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProjectReport {
    pub project: String,
    pub open: Vec<HistoryHit>,
    pub fixed: Vec<HistoryHit>,
}

impl Render for ProjectReport {
    fn render(&self) -> String {
        let mut lines = vec![format!(
            "{}: {} open, {} recently fixed",
            self.project,
            self.open.len(),
            self.fixed.len()
        )];
        lines.extend(self.open.iter().chain(&self.fixed).map(HistoryHit::line));
        lines.join("\n")
    }
}
