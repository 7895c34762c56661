//! A problem a build tool reported, as drydock remembers it: an error or warning of a build,
//! or a failing test. Its identity (toolchain, code or test, message as normalised, file)
//! says when a later run still has it; its family (toolchain, code, message with its names
//! left out) finds the same kind of problem elsewhere, for `seen_before`.

use regex::Regex;
use std::sync::LazyLock;

use crate::toolchain::reports::{
    BuildReport, FormatReport, FormatStatus, RunEnd, RunReport, TestEnd, TestReport,
};
use crate::toolchain::results::{Diagnostic, Severity, TestFailure};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    Error,
    Warning,
    /// A failing test.
    Test,
    /// A command a terminal's shell ran (not a problem: a record of it).
    Command,
    /// A task's end, with its transcript.
    Task,
}

impl ProblemKind {
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Error => "error",
            ProblemKind::Warning => "warning",
            ProblemKind::Test => "test",
            ProblemKind::Command => "command",
            ProblemKind::Task => "task",
        }
    }

    /// Whether it is a problem a build meets (an error, a warning, a failing test), not a
    /// record of a terminal's command or a task's end.
    pub fn is_build_problem(self) -> bool {
        !matches!(self, ProblemKind::Command | ProblemKind::Task)
    }

    pub fn parse(name: &str) -> Option<ProblemKind> {
        match name {
            "error" => Some(ProblemKind::Error),
            "warning" => Some(ProblemKind::Warning),
            "test" => Some(ProblemKind::Test),
            "command" => Some(ProblemKind::Command),
            "task" => Some(ProblemKind::Task),
            _ => None,
        }
    }
}

/// One problem of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub kind: ProblemKind,
    /// `E0502`, `unused_variables`; None for a failing test and for most of Elixir's.
    pub code: Option<String>,
    /// The failing test's full name.
    pub test: Option<String>,
    pub message: String,
    /// Relative to the project, when inside it.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// What a person reads: the compiler's rendering when there is one, else the message with
    /// its label, notes, or the test's left and right.
    pub text: String,
}

impl Problem {
    /// What stays the same while the problem is not fixed: lines move, names do not.
    pub fn identity(&self, toolchain: &str) -> String {
        format!(
            "{toolchain}|{}|{}|{}|{}",
            self.kind.name(),
            self.code.as_deref().or(self.test.as_deref()).unwrap_or(""),
            normalised(&self.message),
            self.file.as_deref().unwrap_or("")
        )
    }

    /// What the same kind of problem shares wherever it is: a rustc error code alone (one
    /// code, one kind: "cannot find value" and "cannot find function" are both E0425), else
    /// its code and the shape of its message (names, numbers and quoted text left out).
    pub fn family(&self, toolchain: &str) -> String {
        let code = self.code.as_deref().unwrap_or("");
        let rustc_code = code.len() == 5
            && code.starts_with('E')
            && code[1..].chars().all(|c| c.is_ascii_digit());
        match rustc_code {
            true => format!("{toolchain}|{}|{code}", self.kind.name()),
            false => format!(
                "{toolchain}|{}|{code}|{}",
                self.kind.name(),
                shape(&self.message)
            ),
        }
    }

    /// The problems of a build: its errors and warnings.
    pub fn of_build(report: &BuildReport) -> Vec<Problem> {
        let diagnostics = &report.diagnostics;
        diagnostics
            .errors
            .iter()
            .chain(&diagnostics.warnings)
            .map(Problem::of_diagnostic)
            .collect()
    }

    /// The problems of a test run: its failing tests, or the errors of a build that failed.
    pub fn of_test(report: &TestReport) -> Vec<Problem> {
        let mut problems: Vec<Problem> = report.failures.iter().map(Problem::of_failure).collect();
        if let TestEnd::BuildFailed(build) = &report.end {
            problems.extend(
                build
                    .errors
                    .iter()
                    .chain(&build.warnings)
                    .map(Problem::of_diagnostic),
            );
        }
        problems
    }

    /// The problems of a run: the errors of a build that failed (a program that ran and
    /// failed has no problem drydock can name).
    pub fn of_run(report: &RunReport) -> Vec<Problem> {
        match &report.end {
            RunEnd::BuildFailed(build) => build
                .errors
                .iter()
                .chain(&build.warnings)
                .map(Problem::of_diagnostic)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The problems of a format check: each file the formatter would change (applying
    /// rewrote them: nothing is left).
    pub fn of_format(report: &FormatReport) -> Vec<Problem> {
        if report.status != FormatStatus::NeedsFormatting {
            return Vec::new();
        }
        report
            .files
            .iter()
            .map(|file| Problem {
                kind: ProblemKind::Warning,
                code: Some("unformatted".into()),
                test: None,
                message: "not formatted".into(),
                file: Some(file.file.clone()),
                line: None,
                text: file.diff.clone().unwrap_or_default(),
            })
            .collect()
    }

    fn of_diagnostic(d: &Diagnostic) -> Problem {
        let text = match &d.rendered {
            Some(rendered) => rendered.clone(),
            None => {
                let mut text = d.message.clone();
                if let Some(label) = &d.label {
                    text.push_str(&format!("\n  {label}"));
                }
                for note in &d.notes {
                    text.push_str(&format!("\n  {note}"));
                }
                text
            }
        };
        Problem {
            kind: match d.severity {
                Severity::Error => ProblemKind::Error,
                Severity::Warning => ProblemKind::Warning,
            },
            code: d.code.clone(),
            test: None,
            message: d.message.clone(),
            file: d.file.clone(),
            line: d.line,
            text,
        }
    }

    fn of_failure(f: &TestFailure) -> Problem {
        let mut text = format!("{}: {}", f.name, f.message);
        if let (Some(left), Some(right)) = (&f.left, &f.right) {
            text.push_str(&format!("\n  left: {left}\n  right: {right}"));
        }
        if let Some(trace) = &f.stacktrace {
            text.push_str(&format!("\n{trace}"));
        }
        Problem {
            kind: ProblemKind::Test,
            code: None,
            test: Some(f.name.clone()),
            message: f.message.clone(),
            file: f.file.clone(),
            line: f.line,
            text,
        }
    }
}

static NUMBERS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").expect("valid"));
static SPACES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s+").expect("valid"));
/// Quoted names (`x`, 'x', "x"), Elixir's `name/arity` and dotted modules.
static NAMES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"`[^`]*`|'[^']*'|"[^"]*"|\b[A-Z][A-Za-z0-9_]*(?:\.[A-Z][A-Za-z0-9_]*)+\b|\b[a-z_][A-Za-z0-9_?!]*/\d+"#)
        .expect("valid")
});

/// The message with numbers and spacing that change from run to run made alike.
pub fn normalised(message: &str) -> String {
    let message = message.lines().next().unwrap_or_default();
    let numbers = NUMBERS.replace_all(message, "N");
    SPACES.replace_all(numbers.trim(), " ").into_owned()
}

/// The message with its names left out too: the kind of problem it is.
pub fn shape(message: &str) -> String {
    let message = message.lines().next().unwrap_or_default();
    let names = NAMES.replace_all(message, "_");
    normalised(&names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(code: Option<&str>, message: &str, file: &str) -> Problem {
        Problem {
            kind: ProblemKind::Error,
            code: code.map(str::to_string),
            test: None,
            message: message.into(),
            file: Some(file.into()),
            line: Some(3),
            text: message.into(),
        }
    }

    #[test]
    fn the_same_problem_keeps_its_identity_and_the_same_kind_shares_a_family() {
        let here = problem(
            Some("E0502"),
            "cannot borrow `items` as mutable because it is also borrowed as immutable",
            "src/inventory.rs",
        );
        let moved = Problem {
            line: Some(40),
            ..here.clone()
        };
        assert_eq!(here.identity("cargo"), moved.identity("cargo"));
        let elsewhere = problem(
            Some("E0502"),
            "cannot borrow `list` as mutable because it is also borrowed as immutable",
            "src/report.rs",
        );
        assert_ne!(here.identity("cargo"), elsewhere.identity("cargo"));
        assert_eq!(here.family("cargo"), elsewhere.family("cargo"));
        let other_kind = problem(
            Some("E0499"),
            "cannot borrow `items` as mutable more than once at a time",
            "src/inventory.rs",
        );
        assert_ne!(here.family("cargo"), other_kind.family("cargo"));
    }

    #[test]
    fn elixir_names_and_arities_are_left_out_of_the_shape() {
        assert_eq!(
            shape(
                "undefined function totl/1 (expected HistoryElixir.Cart to define such a function or for it to be imported, but none are available)"
            ),
            shape(
                "undefined function sum_up/2 (expected HistoryElixir.Report to define such a function or for it to be imported, but none are available)"
            ),
        );
        assert_eq!(
            normalised("mismatched  types at line 12\nmore"),
            "mismatched types at line N"
        );
    }
}
