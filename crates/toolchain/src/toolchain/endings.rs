//! How every toolchain's runs end up in a report, whatever the tool: the status a process's
//! end means, the tail of its output, colours and redrawn progress removed, and each
//! diagnostic kept once.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::reports::BuildStatus;
use super::results::{Diagnostic, Severity};
use crate::process::Termination;

/// How many lines of a failed run's output a report keeps.
const OUTPUT_TAIL_LINES: usize = 40;

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]").expect("valid regex")
});

/// Removes terminal colour codes (libtest's sgr0 is `\x1b(B\x1b[m`).
pub fn strip_ansi(line: &str) -> Cow<'_, str> {
    if line.contains('\x1b') {
        ANSI.replace_all(line, "")
    } else {
        Cow::Borrowed(line)
    }
}

/// Drops colour codes, the line ending, and any text a `\r` redrew over (progress bars).
pub fn clean_line(line: &str) -> Cow<'_, str> {
    let line = line.trim_end_matches(['\n', '\r']);
    let line = line.rsplit('\r').next().unwrap_or(line);
    strip_ansi(line)
}

/// The last lines of `text` that are not the tool's progress chatter, or nothing when no
/// line is left.
pub fn output_tail(text: &str, is_chatter: impl Fn(&str) -> bool) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|line| !is_chatter(line)).collect();
    let kept = &lines[lines.len().saturating_sub(OUTPUT_TAIL_LINES)..];
    let joined = kept.join("\n").trim().to_string();
    (!joined.is_empty()).then_some(joined)
}

/// A build's status from how its process ended and what it reported: a build that exits 0
/// but reported an error (mix prints some without failing) did not succeed.
pub fn build_status(termination: Termination, diagnostics: &[Diagnostic]) -> BuildStatus {
    match termination {
        Termination::TimedOut => BuildStatus::Timeout,
        Termination::Cancelled => BuildStatus::Cancelled,
        Termination::Exited(0) if !has_errors(diagnostics) => BuildStatus::Ok,
        Termination::Exited(_) | Termination::Signaled(_) => BuildStatus::Failed,
    }
}

pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// Remembers the diagnostics already reported: cargo's lib and lib-test builds report each
/// one twice, mix prints a warning again on each stream or compile pass.
#[derive(Default)]
pub struct Distinct {
    seen: HashSet<Key>,
}

#[derive(PartialEq, Eq, Hash)]
struct Key {
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    severity: Severity,
    code: Option<String>,
    message: String,
}

impl Distinct {
    /// True the first time this diagnostic (same place, severity, code and message) is seen.
    pub fn first_time(&mut self, diagnostic: &Diagnostic) -> bool {
        self.seen.insert(Key {
            file: diagnostic.file.clone(),
            line: diagnostic.line,
            column: diagnostic.column,
            severity: diagnostic.severity,
            code: diagnostic.code.clone(),
            message: diagnostic.message.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_redrawn_progress_are_removed() {
        assert_eq!(strip_ansi("\x1b[31mFAILED\x1b(B\x1b[m"), "FAILED");
        assert_eq!(
            strip_ansi("\x1b[1m\x1b[92m   Running\x1b[0m x"),
            "   Running x"
        );
        assert_eq!(strip_ansi("\x1b[?25lplain\x1b[K"), "plain");
        assert_eq!(clean_line("  3/10\r  7/10\rdone\r\n"), "done");
    }

    #[test]
    fn the_tail_keeps_the_last_lines_without_chatter() {
        let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let tail = output_tail(&text, |line| line.ends_with('0')).unwrap();
        assert_eq!(tail.lines().count(), OUTPUT_TAIL_LINES);
        assert!(tail.ends_with("line 99"), "{tail}");
        assert!(!tail.contains("line 90"));
        assert_eq!(
            output_tail("   Compiling x\n", |l| l.contains("Compiling")),
            None
        );
    }

    #[test]
    fn an_error_makes_a_clean_exit_a_failed_build() {
        let warning = Diagnostic {
            file: None,
            line: None,
            column: None,
            end_line: None,
            end_column: None,
            severity: Severity::Warning,
            code: None,
            message: "unused".into(),
            label: None,
            notes: Vec::new(),
            suggestions: Vec::new(),
            rendered: None,
        };
        let error = Diagnostic {
            severity: Severity::Error,
            ..warning.clone()
        };
        let ok = Termination::Exited(0);
        assert_eq!(
            build_status(ok, std::slice::from_ref(&warning)),
            BuildStatus::Ok
        );
        assert_eq!(
            build_status(ok, std::slice::from_ref(&error)),
            BuildStatus::Failed
        );
        assert_eq!(
            build_status(Termination::Exited(101), &[]),
            BuildStatus::Failed
        );
        assert_eq!(
            build_status(Termination::TimedOut, &[]),
            BuildStatus::Timeout
        );

        let mut distinct = Distinct::default();
        assert!(distinct.first_time(&warning));
        assert!(!distinct.first_time(&warning.clone()));
        assert!(distinct.first_time(&error));
    }
}
