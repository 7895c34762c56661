//! The parser of cargo's JSON messages: compiler diagnostics and build progress.

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use crate::process::Stream;
use crate::toolchain::endings::Distinct;
use crate::toolchain::line_parser::LineParser;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{Diagnostic, Severity, Suggestion};

/// What one line of cargo's JSON output meant, for progress reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CargoEvent {
    Artifact { target: String, fresh: bool },
    Diagnostic { severity: Severity },
    BuildFinished { success: bool },
}

/// Everything gathered from one cargo run's JSON messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CargoMessages {
    /// In the order rustc reported them, duplicates removed.
    pub diagnostics: Vec<Diagnostic>,
    pub artifacts: u32,
    /// `None` when cargo never reported `build-finished` (killed, or failed before building).
    pub build_success: Option<bool>,
    /// Test executables built (`profile.test`), in build order.
    pub executables: Vec<String>,
}

/// Turns cargo's `--message-format=json` stdout, fed line by line, into diagnostics.
pub struct CargoMessageParser {
    paths: PathMapper,
    include_rendered: bool,
    seen: Distinct,
    messages: CargoMessages,
}

impl LineParser for CargoMessageParser {
    type Event = CargoEvent;
    type Output = CargoMessages;

    /// cargo's messages come on stdout; lines that are not JSON objects (libtest's human
    /// output during `cargo test`, program output during `cargo run`) are ignored.
    fn line(&mut self, stream: Stream, line: &str) -> Option<CargoEvent> {
        if stream != Stream::Stdout {
            return None;
        }
        let line = line.trim_end();
        if !line.starts_with('{') {
            return None;
        }
        match serde_json::from_str::<json::Line>(line).ok()? {
            json::Line::CompilerMessage { message } => self.add_diagnostic(message),
            json::Line::CompilerArtifact {
                target,
                profile,
                executable,
                fresh,
            } => Some(self.add_artifact(target.name, profile.test, executable, fresh)),
            json::Line::BuildFinished { success } => {
                self.messages.build_success = Some(success);
                Some(CargoEvent::BuildFinished { success })
            }
            json::Line::Other => None,
        }
    }

    fn finish(self) -> CargoMessages {
        self.messages
    }
}

impl CargoMessageParser {
    pub fn new(workspace_root: &Path, project_root: &Path, include_rendered: bool) -> Self {
        Self {
            paths: PathMapper::new(workspace_root, project_root),
            include_rendered,
            seen: Distinct::default(),
            messages: CargoMessages::default(),
        }
    }

    fn add_artifact(
        &mut self,
        target: String,
        is_test: bool,
        executable: Option<String>,
        fresh: bool,
    ) -> CargoEvent {
        self.messages.artifacts += 1;
        if let (true, Some(executable)) = (is_test, executable) {
            self.messages.executables.push(executable);
        }
        CargoEvent::Artifact { target, fresh }
    }

    fn add_diagnostic(&mut self, message: json::Diagnostic) -> Option<CargoEvent> {
        let diagnostic = self.convert(message)?;
        if !self.seen.first_time(&diagnostic) {
            return None;
        }
        let severity = diagnostic.severity;
        self.messages.diagnostics.push(diagnostic);
        Some(CargoEvent::Diagnostic { severity })
    }

    fn convert(&self, message: json::Diagnostic) -> Option<Diagnostic> {
        let severity = match message.level.as_str() {
            "warning" => Severity::Warning,
            // Also "error: internal compiler error".
            level if level.starts_with("error") => Severity::Error,
            _ => return None,
        };
        let code = message.code.map(|code| code.code);
        if message.spans.is_empty() && code.is_none() && is_summary(&message.message) {
            return None;
        }
        let primary = self.primary_span(&message.spans);
        let (notes, suggestions) = self.children(&message.children);
        Some(Diagnostic {
            file: primary.map(|span| self.paths.map(&span.file_name)),
            line: primary.map(|span| span.line_start),
            column: primary.map(|span| span.column_start),
            end_line: primary.map(|span| span.line_end),
            end_column: primary.map(|span| span.column_end),
            severity,
            code,
            message: message.message,
            label: primary.and_then(|span| span.label.clone()),
            notes,
            suggestions,
            rendered: message.rendered.filter(|_| self.include_rendered),
        })
    }

    /// The primary span, moved out of macro definitions that live outside the workspace
    /// (std's `panic!`, a dependency's macro) to the invocation in the user's code.
    fn primary_span<'a>(&self, spans: &'a [json::Span]) -> Option<&'a json::Span> {
        let primary = spans.iter().find(|span| span.is_primary)?;
        if self.paths.is_in_workspace(&primary.file_name) {
            return Some(primary);
        }
        let mut span = primary;
        while let Some(expansion) = &span.expansion {
            span = &expansion.span;
            if self.paths.is_in_workspace(&span.file_name) {
                return Some(span);
            }
        }
        Some(primary)
    }

    fn children(&self, children: &[json::Child]) -> (Vec<String>, Vec<Suggestion>) {
        let mut notes = Vec::new();
        let mut suggestions = Vec::new();
        for child in children {
            let applicable = self.applicable_suggestions(child);
            if applicable.is_empty() {
                if !is_boilerplate(&child.message) {
                    notes.push(note_text(child));
                }
            } else {
                suggestions.extend(applicable);
            }
        }
        (notes, suggestions)
    }

    fn applicable_suggestions(&self, child: &json::Child) -> Vec<Suggestion> {
        child
            .spans
            .iter()
            .filter(|span| span.suggestion_applicability.as_deref() == Some("MachineApplicable"))
            .filter_map(|span| {
                Some(Suggestion {
                    message: child.message.clone(),
                    file: self.paths.map(&span.file_name),
                    line: span.line_start,
                    column: span.column_start,
                    end_line: span.line_end,
                    end_column: span.column_end,
                    replacement: span.suggested_replacement.clone()?,
                })
            })
            .collect()
    }
}

/// Notes every lint carries and that tell an agent nothing the code does not
/// ("`#[warn(unused_variables)]` on by default", clippy's documentation link): they would
/// double the size of a result.
fn is_boilerplate(message: &str) -> bool {
    (message.starts_with("`#[") && message.ends_with("on by default"))
        || message.starts_with("for further information visit https://rust-lang.github.io/")
}

/// `help: ...` / `note: ...`; a lone one-line edit that is not machine-applicable is
/// appended the way rustc renders it inline (`help: consider importing: `use x;``).
fn note_text(child: &json::Child) -> String {
    let replacements: Vec<&str> = child
        .spans
        .iter()
        .filter_map(|span| span.suggested_replacement.as_deref())
        .collect();
    match replacements.as_slice() {
        [only] if !only.is_empty() && !only.contains('\n') => {
            format!("{}: {}: `{only}`", child.level, child.message)
        }
        _ => format!("{}: {}", child.level, child.message),
    }
}

/// rustc's closing tallies ("aborting due to 3 previous errors", "2 warnings emitted").
fn is_summary(message: &str) -> bool {
    static SUMMARY: OnceLock<Regex> = OnceLock::new();
    SUMMARY
        .get_or_init(|| {
            Regex::new(r"^(aborting due to .*previous errors?.*|\d+ warnings? emitted)$")
                .expect("valid regex")
        })
        .is_match(message)
}

/// The subset of cargo's and rustc's JSON that drydock reads; the rest is skipped.
mod json {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(tag = "reason", rename_all = "kebab-case")]
    pub(super) enum Line {
        CompilerMessage {
            message: Diagnostic,
        },
        CompilerArtifact {
            target: Target,
            #[serde(default)]
            profile: Profile,
            #[serde(default)]
            executable: Option<String>,
            #[serde(default)]
            fresh: bool,
        },
        BuildFinished {
            success: bool,
        },
        #[serde(other)]
        Other,
    }

    #[derive(Deserialize)]
    pub(super) struct Target {
        pub name: String,
    }

    #[derive(Deserialize, Default)]
    pub(super) struct Profile {
        pub test: bool,
    }

    #[derive(Deserialize)]
    pub(super) struct Diagnostic {
        pub message: String,
        pub code: Option<Code>,
        pub level: String,
        #[serde(default)]
        pub spans: Vec<Span>,
        #[serde(default)]
        pub children: Vec<Child>,
        pub rendered: Option<String>,
    }

    #[derive(Deserialize)]
    pub(super) struct Code {
        pub code: String,
    }

    #[derive(Deserialize)]
    pub(super) struct Child {
        pub message: String,
        pub level: String,
        pub spans: Vec<Span>,
    }

    #[derive(Deserialize)]
    pub(super) struct Span {
        pub file_name: String,
        pub line_start: u32,
        pub line_end: u32,
        pub column_start: u32,
        pub column_end: u32,
        pub is_primary: bool,
        pub label: Option<String>,
        pub suggested_replacement: Option<String>,
        pub suggestion_applicability: Option<String>,
        pub expansion: Option<Box<Expansion>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Expansion {
        pub span: Span,
    }
}

#[cfg(test)]
mod tests;
