//! What the build tools return: structured reports, and their short text rendering.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::results::{Diagnostic, FormatFile, Severity, TestCounts, TestFailure};
use crate::render::Render;

/// Diagnostics listed per severity; the rest are counted in `omitted_errors` / `omitted_warnings`.
pub const MAX_DIAGNOSTICS: usize = 50;

/// A status as the tools' results spell it (`build_failed`, `no_tests_matched`), for what
/// records or shows it outside a result.
pub fn status_name(status: impl Serialize) -> String {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(name)) => name,
        other => unreachable!("a status serializes as a string, not {other:?}"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    Ok,
    Failed,
    Timeout,
    Cancelled,
}

/// A build's errors and warnings: at most 50 of each listed, the rest counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BuildDiagnostics {
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    /// Errors the build reported beyond the 50 listed in `errors`.
    pub omitted_errors: u32,
    /// Warnings the build reported beyond the 50 listed in `warnings`.
    pub omitted_warnings: u32,
}

impl BuildDiagnostics {
    /// Split by severity and capped: the one place any report's diagnostics are cut.
    pub fn capped(all: Vec<Diagnostic>) -> Self {
        let (errors, warnings): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|d| d.severity == Severity::Error);
        let (errors, omitted_errors) = cap(errors);
        let (warnings, omitted_warnings) = cap(warnings);
        BuildDiagnostics {
            errors,
            warnings,
            omitted_errors,
            omitted_warnings,
        }
    }

    pub fn error_count(&self) -> usize {
        self.errors.len() + self.omitted_errors as usize
    }

    pub fn warning_count(&self) -> usize {
        self.warnings.len() + self.omitted_warnings as usize
    }
}

fn cap(mut list: Vec<Diagnostic>) -> (Vec<Diagnostic>, u32) {
    let omitted = list.len().saturating_sub(MAX_DIAGNOSTICS);
    list.truncate(MAX_DIAGNOSTICS);
    (list, u32::try_from(omitted).unwrap_or(u32::MAX))
}

/// Result of compile, type_check and lint.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BuildReport {
    pub status: BuildStatus,
    #[serde(flatten)]
    pub diagnostics: BuildDiagnostics,
    pub duration_ms: u64,
    /// The tail of the tool's own output, when it failed without a parsed error
    /// (a broken manifest, a missing dependency) or timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// What the caller should know about how the result was obtained, e.g. that credo is
    /// not installed and the compiler's warnings stand in for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Errors of this result seen and fixed before, with the change that fixed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_before: Vec<SeenBefore>,
}

/// A problem of a result that drydock saw and saw fixed before (its project memory): where
/// the last one to fix it finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeenBefore {
    /// The problem of this result it is about: its code (or test) and message.
    pub problem: String,
    /// The earlier problem's message, file and line.
    pub earlier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The project it was in, when not this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_project: Option<String>,
    /// How many runs had it.
    pub seen: u32,
    pub fixed_at_ms: u64,
    /// Who ran the check that had it first: a client's name, or "task ID".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The files the fix changed that `diff` shows, and the others it changed.
    pub fix_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fix_others: Vec<String>,
    /// The fix as a unified diff (cut when long).
    pub diff: String,
    /// Its id in the project memory (history_search).
    pub history_id: i64,
}

/// How a `test` call ended. Serialized as the report's `status` and `stage` (and, when the
/// tests did not build, the build's diagnostics; when no test ran, the `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(into = "TestEndFields")]
pub enum TestEnd {
    Passed,
    Failed,
    /// The selection (filter, tags, path, exclude) left no test to run.
    NoTestsMatched {
        reason: String,
    },
    /// Nothing was selected and still no test ran: there are none, or all are ignored.
    NoTests {
        reason: String,
    },
    BuildFailed(BuildDiagnostics),
    Timeout(TestStage),
    Cancelled(TestStage),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// Tests ran and none failed.
    Passed,
    Failed,
    /// The filter, tags, path or exclude selected no test: nothing was tested (see `reason`).
    NoTestsMatched,
    /// No test ran although nothing was filtered: the project has none, or every one is
    /// ignored or skipped (see `reason`).
    NoTests,
    /// The code or the tests did not compile: see `errors`.
    BuildFailed,
    Timeout,
    Cancelled,
}

/// Where a `test` call ended: building the code and tests, or running the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStage {
    Build,
    Test,
}

/// `TestEnd` as the report's JSON fields.
#[derive(Serialize, JsonSchema)]
struct TestEndFields {
    status: TestStatus,
    stage: TestStage,
    /// no_tests_matched, no_tests: why no test ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// build_failed: the errors and warnings of the build that failed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    build: Option<BuildDiagnostics>,
}

impl From<TestEnd> for TestEndFields {
    fn from(end: TestEnd) -> Self {
        let (status, stage) = (end.status(), end.stage());
        let (reason, build) = match end {
            TestEnd::NoTestsMatched { reason } | TestEnd::NoTests { reason } => {
                (Some(reason), None)
            }
            TestEnd::BuildFailed(build) => (None, Some(build)),
            _ => (None, None),
        };
        TestEndFields {
            status,
            stage,
            reason,
            build,
        }
    }
}

impl TestEnd {
    pub fn status(&self) -> TestStatus {
        match self {
            TestEnd::Passed => TestStatus::Passed,
            TestEnd::Failed => TestStatus::Failed,
            TestEnd::NoTestsMatched { .. } => TestStatus::NoTestsMatched,
            TestEnd::NoTests { .. } => TestStatus::NoTests,
            TestEnd::BuildFailed(_) => TestStatus::BuildFailed,
            TestEnd::Timeout(_) => TestStatus::Timeout,
            TestEnd::Cancelled(_) => TestStatus::Cancelled,
        }
    }

    /// The stage a timeout or cancel stopped the call in.
    pub fn stopped_in(&self) -> Option<TestStage> {
        match self {
            TestEnd::Timeout(stage) | TestEnd::Cancelled(stage) => Some(*stage),
            _ => None,
        }
    }

    pub fn stage(&self) -> TestStage {
        match self {
            TestEnd::BuildFailed(_) => TestStage::Build,
            TestEnd::Timeout(stage) | TestEnd::Cancelled(stage) => *stage,
            _ => TestStage::Test,
        }
    }

    /// When no test ran (and none failed), how the run ends instead of passing: `selection`
    /// describes what the request narrowed the tests to, if anything.
    pub fn when_no_test_ran(counts: &TestCounts, selection: Option<String>) -> Option<TestEnd> {
        if counts.passed + counts.failed + counts.invalid > 0 {
            return None;
        }
        let left_out = left_out(counts);
        Some(match selection {
            Some(selection) => TestEnd::NoTestsMatched {
                reason: format!("{selection} selected no test to run{left_out}"),
            },
            None if counts.ignored + counts.filtered_out > 0 => TestEnd::NoTests {
                reason: format!("every test was left out{left_out}"),
            },
            None => TestEnd::NoTests {
                reason: "the project has no tests".into(),
            },
        })
    }
}

/// ` (3 filtered out, 1 ignored: pass include_ignored ...)`, or nothing when nothing was left out.
fn left_out(counts: &TestCounts) -> String {
    let mut parts = Vec::new();
    if counts.filtered_out > 0 {
        parts.push(format!("{} filtered out", counts.filtered_out));
    }
    if counts.ignored > 0 {
        parts.push(format!(
            "{} ignored: pass include_ignored to run ignored tests",
            counts.ignored
        ));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TestReport {
    #[serde(flatten)]
    pub end: TestEnd,
    #[serde(flatten)]
    pub counts: TestCounts,
    pub duration_ms: u64,
    pub failures: Vec<TestFailure>,
    /// mix: the seed ExUnit ordered the tests with; pass it back as `seed` to reproduce the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Tests that started and had not finished when the run was stopped (timeout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<String>,
    /// The tail of the tool's own output, when it failed in a way no test or error explains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Failures and errors of this result seen and fixed before, with the change that fixed
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_before: Vec<SeenBefore>,
}

/// How a `run` call ended. Serialized as the report's `status` and `stage`, with the
/// exit code, the signal or the failed build's diagnostics that go with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(into = "RunEndFields")]
pub enum RunEnd {
    Exited(i32),
    Signaled(i32),
    BuildFailed(BuildDiagnostics),
    Timeout(RunStage),
    Cancelled(RunStage),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Exited with code 0.
    Ok,
    /// Exited non-zero or was killed by a signal.
    Error,
    /// The program did not build: see `errors` (and `stderr` when no error explains it).
    BuildFailed,
    Timeout,
    Cancelled,
}

/// Where a `run` call ended: building the program, or running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStage {
    Build,
    Run,
}

/// `RunEnd` as the report's JSON fields.
#[derive(Serialize, JsonSchema)]
struct RunEndFields {
    status: RunStatus,
    stage: RunStage,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    /// The signal that killed the program, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    /// build_failed: the errors and warnings of the build that failed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    build: Option<BuildDiagnostics>,
}

impl From<RunEnd> for RunEndFields {
    fn from(end: RunEnd) -> Self {
        let (status, stage) = (end.status(), end.stage());
        let (exit_code, signal, build) = match end {
            RunEnd::Exited(code) => (Some(code), None, None),
            RunEnd::Signaled(signal) => (None, Some(signal), None),
            RunEnd::BuildFailed(build) => (None, None, Some(build)),
            RunEnd::Timeout(_) | RunEnd::Cancelled(_) => (None, None, None),
        };
        RunEndFields {
            status,
            stage,
            exit_code,
            signal,
            build,
        }
    }
}

impl RunEnd {
    pub fn status(&self) -> RunStatus {
        match self {
            RunEnd::Exited(0) => RunStatus::Ok,
            RunEnd::Exited(_) | RunEnd::Signaled(_) => RunStatus::Error,
            RunEnd::BuildFailed(_) => RunStatus::BuildFailed,
            RunEnd::Timeout(_) => RunStatus::Timeout,
            RunEnd::Cancelled(_) => RunStatus::Cancelled,
        }
    }

    /// The stage a timeout or cancel stopped the call in.
    pub fn stopped_in(&self) -> Option<RunStage> {
        match self {
            RunEnd::Timeout(stage) | RunEnd::Cancelled(stage) => Some(*stage),
            _ => None,
        }
    }

    pub fn stage(&self) -> RunStage {
        match self {
            RunEnd::BuildFailed(_) => RunStage::Build,
            RunEnd::Timeout(stage) | RunEnd::Cancelled(stage) => *stage,
            RunEnd::Exited(_) | RunEnd::Signaled(_) => RunStage::Run,
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunReport {
    #[serde(flatten)]
    pub end: RunEnd,
    /// Capped (head and tail kept, `[... N bytes elided ...]` between).
    pub stdout: String,
    /// The program's stderr; when the build failed without a parsed error, the build's own output.
    pub stderr: String,
    pub duration_ms: u64,
    /// Errors of a build that failed, seen and fixed before, with the change that fixed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_before: Vec<SeenBefore>,
}

impl RunReport {
    /// How a program that ran ended, with everything it printed.
    pub fn from_output(output: crate::process::ProcessOutput, duration_ms: u64) -> Self {
        use crate::process::Termination;
        let end = match output.termination {
            Termination::Exited(code) => RunEnd::Exited(code),
            Termination::Signaled(signal) => RunEnd::Signaled(signal),
            Termination::TimedOut => RunEnd::Timeout(RunStage::Run),
            Termination::Cancelled => RunEnd::Cancelled(RunStage::Run),
        };
        RunReport {
            end,
            stdout: output.stdout.text,
            stderr: output.stderr.text,
            duration_ms,
            seen_before: Vec::new(),
        }
    }

    /// A program that never ran: its build failed (`end` says how), `output` the build's
    /// own words when no diagnostic explains the failure.
    pub fn not_built(end: RunEnd, output: Option<String>, duration_ms: u64) -> Self {
        RunReport {
            end,
            stdout: String::new(),
            stderr: output.unwrap_or_default(),
            duration_ms,
            seen_before: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FormatStatus {
    /// Everything was already formatted.
    Formatted,
    /// Check mode: `files` need formatting.
    NeedsFormatting,
    /// Apply mode: `files` were rewritten.
    Applied,
    /// The formatter could not run (e.g. a file does not parse): see `output`.
    Error,
    Timeout,
    Cancelled,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FormatReport {
    pub status: FormatStatus,
    pub files: Vec<FormatFile>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProjectInfo {
    /// "cargo" or "mix".
    pub toolchain: String,
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edition: Option<String>,
    /// mix: the Elixir version requirement in mix.exs, e.g. "~> 1.14".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elixir_requirement: Option<String>,
    /// The workspace root (may be above the project directory).
    pub workspace_root: String,
    /// Versions of the toolchain programs, e.g. {"rustc": "rustc 1.95.0 (...)"}.
    pub toolchain_versions: std::collections::BTreeMap<String, String>,
    /// Every package of the workspace (one for a single-package project).
    pub packages: Vec<PackageInfo>,
    /// Files that hold tests, relative to the project directory.
    pub test_files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PackageInfo {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elixir_requirement: Option<String>,
    /// Manifest path relative to the project directory.
    pub manifest: String,
    pub targets: Vec<TargetInfo>,
    pub dependencies: Vec<DependencyInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TargetInfo {
    pub name: String,
    /// cargo: lib, bin, test, example, bench, custom-build, proc-macro ...; mix: app, test, escript.
    pub kind: String,
    /// Source path relative to the project directory.
    pub path: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DependencyInfo {
    pub name: String,
    /// The version requirement written in the manifest.
    pub requirement: String,
    /// normal, dev or build (cargo); normal, dev or test (mix `only:`).
    pub kind: String,
    /// The version the lock file resolved it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// registry, path or git (cargo); hex, path, git or in_umbrella (mix).
    pub source: String,
}

fn diagnostic_line(out: &mut String, d: &Diagnostic) {
    let severity = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let code = d
        .code
        .as_deref()
        .map(|c| format!("[{c}]"))
        .unwrap_or_default();
    let location = match (&d.file, d.line, d.column) {
        (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}: "),
        (Some(f), Some(l), None) => format!("{f}:{l}: "),
        (Some(f), None, _) => format!("{f}: "),
        _ => String::new(),
    };
    let _ = write!(out, "\n{location}{severity}{code}: {}", d.message);
    if let Some(label) = &d.label {
        let _ = write!(out, " ({label})");
    }
}

fn output_tail(out: &mut String, output: &Option<String>) {
    if let Some(text) = output {
        let _ = write!(out, "\n--- output ---\n{text}");
    }
}

/// Every listed diagnostic, then how many more were found and not listed.
fn diagnostic_lines(out: &mut String, build: &BuildDiagnostics) {
    for d in build.errors.iter().chain(&build.warnings) {
        diagnostic_line(out, d);
    }
    for (omitted, kind) in [
        (build.omitted_errors, "errors"),
        (build.omitted_warnings, "warnings"),
    ] {
        if omitted > 0 {
            let _ = write!(out, "\n... and {omitted} more {kind} not shown");
        }
    }
}

fn diagnostic_counts(build: &BuildDiagnostics) -> String {
    format!(
        "{} error(s), {} warning(s)",
        build.error_count(),
        build.warning_count()
    )
}

impl Render for BuildReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{}: {} in {} ms",
            status_name(self.status),
            diagnostic_counts(&self.diagnostics),
            self.duration_ms
        );
        for note in &self.notes {
            let _ = write!(out, "\nnote: {note}");
        }
        diagnostic_lines(&mut out, &self.diagnostics);
        output_tail(&mut out, &self.output);
        out
    }
}

impl Render for TestReport {
    fn render(&self) -> String {
        let c = &self.counts;
        let mut out = format!(
            "{}: {} passed, {} failed, {} ignored, {} filtered out in {} ms",
            end_word(self.end.status(), self.end.stopped_in()),
            c.passed,
            c.failed,
            c.ignored,
            c.filtered_out,
            self.duration_ms
        );
        for f in &self.failures {
            let location = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!(" at {file}:{line}"),
                _ => String::new(),
            };
            let _ = write!(out, "\nFAILED {}{location}: {}", f.name, f.message);
            if let (Some(left), Some(right)) = (&f.left, &f.right) {
                let _ = write!(out, " (left: {left}, right: {right})");
            }
        }
        match &self.end {
            TestEnd::BuildFailed(build) => {
                let _ = write!(out, "\nthe build failed: {}", diagnostic_counts(build));
                diagnostic_lines(&mut out, build);
            }
            TestEnd::NoTestsMatched { reason } | TestEnd::NoTests { reason } => {
                let _ = write!(out, "\nno test ran: {reason}");
            }
            _ => {}
        }
        if !self.unfinished.is_empty() {
            let _ = write!(out, "\nunfinished: {}", self.unfinished.join(", "));
        }
        output_tail(&mut out, &self.output);
        out
    }
}

impl Render for RunReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{} in {} ms",
            end_word(self.end.status(), self.end.stopped_in()),
            self.duration_ms
        );
        match &self.end {
            RunEnd::Exited(code) => {
                let _ = write!(out, ", exit code {code}");
            }
            RunEnd::Signaled(signal) => {
                let _ = write!(out, ", killed by signal {signal}");
            }
            RunEnd::BuildFailed(build) => {
                let _ = write!(out, ": {}", diagnostic_counts(build));
                diagnostic_lines(&mut out, build);
            }
            RunEnd::Timeout(_) | RunEnd::Cancelled(_) => {}
        }
        if !self.stdout.is_empty() {
            let _ = write!(out, "\n--- stdout ---\n{}", self.stdout);
        }
        if !self.stderr.is_empty() {
            let _ = write!(out, "\n--- stderr ---\n{}", self.stderr);
        }
        out
    }
}

/// The status, with the stage a timeout or cancel stopped in (`timeout (build)`).
fn end_word<S: Serialize, T: Serialize>(status: S, stopped_in: Option<T>) -> String {
    match stopped_in {
        Some(stage) => format!("{} ({})", status_name(status), status_name(stage)),
        None => status_name(status),
    }
}

impl Render for FormatReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{}: {} file(s) in {} ms",
            status_name(self.status),
            self.files.len(),
            self.duration_ms
        );
        for f in &self.files {
            let _ = write!(out, "\n{} ({} hunk(s))", f.file, f.hunks);
        }
        output_tail(&mut out, &self.output);
        out
    }
}

impl Render for ProjectInfo {
    fn render(&self) -> String {
        let mut out = format!(
            "{} {} ({}), workspace {}",
            self.name, self.version, self.toolchain, self.workspace_root
        );
        for version in self.toolchain_versions.values() {
            let _ = write!(out, "\n{version}");
        }
        for p in &self.packages {
            let targets: Vec<String> = p
                .targets
                .iter()
                .map(|t| format!("{}:{}", t.kind, t.name))
                .collect();
            let _ = write!(
                out,
                "\npackage {} {}: targets {}; {} dependencies",
                p.name,
                p.version,
                targets.join(", "),
                p.dependencies.len()
            );
        }
        let _ = write!(out, "\ntest files: {}", self.test_files.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn diagnostic(severity: Severity, n: usize) -> Diagnostic {
        Diagnostic {
            file: Some("src/lib.rs".into()),
            line: Some(n as u32),
            column: None,
            end_line: None,
            end_column: None,
            severity,
            code: None,
            message: format!("number {n}"),
            label: None,
            notes: Vec::new(),
            suggestions: Vec::new(),
            rendered: None,
        }
    }

    fn many(errors: usize, warnings: usize) -> Vec<Diagnostic> {
        let errors = (0..errors).map(|n| diagnostic(Severity::Error, n));
        let warnings = (0..warnings).map(|n| diagnostic(Severity::Warning, n));
        warnings.chain(errors).collect()
    }

    #[test]
    fn diagnostics_beyond_the_cap_are_counted_and_rendered() {
        let capped = BuildDiagnostics::capped(many(3, MAX_DIAGNOSTICS + 12));
        assert_eq!(
            (capped.errors.len(), capped.omitted_errors),
            (3, 0),
            "errors under the cap are all kept"
        );
        assert_eq!(
            (capped.warnings.len(), capped.omitted_warnings),
            (MAX_DIAGNOSTICS, 12)
        );
        assert_eq!(capped.warnings[0].message, "number 0", "the first are kept");
        let report = BuildReport {
            seen_before: Vec::new(),
            status: BuildStatus::Failed,
            diagnostics: capped,
            duration_ms: 5,
            output: None,
            notes: Vec::new(),
        };
        let text = report.render();
        assert!(
            text.starts_with("failed: 3 error(s), 62 warning(s) in 5 ms"),
            "{text}"
        );
        assert!(
            text.ends_with("\n... and 12 more warnings not shown"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            (&json["omitted_errors"], &json["omitted_warnings"]),
            (&json!(0), &json!(12))
        );
    }

    fn test_report(end: TestEnd) -> Value {
        let report = TestReport {
            seen_before: Vec::new(),
            end,
            counts: TestCounts::default(),
            duration_ms: 1,
            failures: Vec::new(),
            seed: None,
            unfinished: Vec::new(),
            output: None,
        };
        serde_json::to_value(report).unwrap()
    }

    fn keys(value: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn a_test_end_carries_exactly_the_fields_of_its_status() {
        let passed = test_report(TestEnd::Passed);
        assert_eq!(
            (&passed["status"], &passed["stage"]),
            (&json!("passed"), &json!("test"))
        );
        assert!(passed.get("errors").is_none() && passed.get("reason").is_none());

        let build = BuildDiagnostics::capped(many(1, 2));
        let failed = test_report(TestEnd::BuildFailed(build));
        assert_eq!(
            (&failed["status"], &failed["stage"]),
            (&json!("build_failed"), &json!("build"))
        );
        assert_eq!(failed["warnings"].as_array().unwrap().len(), 2);
        assert_eq!(failed["omitted_warnings"], 0);

        let none = test_report(TestEnd::NoTestsMatched {
            reason: "why".into(),
        });
        assert_eq!(
            (&none["status"], &none["reason"]),
            (&json!("no_tests_matched"), &json!("why"))
        );

        let stopped = test_report(TestEnd::Timeout(TestStage::Build));
        assert_eq!(
            (&stopped["status"], &stopped["stage"]),
            (&json!("timeout"), &json!("build"))
        );
        assert!(!keys(&stopped).contains(&"errors"));
    }

    #[test]
    fn no_test_run_is_never_a_pass() {
        let counts = |passed, ignored, filtered_out| TestCounts {
            passed,
            ignored,
            filtered_out,
            ..TestCounts::default()
        };
        assert_eq!(TestEnd::when_no_test_ran(&counts(1, 0, 0), None), None);
        let matched = TestEnd::when_no_test_ran(&counts(0, 0, 7), Some("tags [\"x\"]".into()));
        assert_eq!(
            matched,
            Some(TestEnd::NoTestsMatched {
                reason: "tags [\"x\"] selected no test to run (7 filtered out)".into()
            })
        );
        assert_eq!(
            TestEnd::when_no_test_ran(&counts(0, 0, 0), None),
            Some(TestEnd::NoTests {
                reason: "the project has no tests".into()
            })
        );
        let ignored = TestEnd::when_no_test_ran(&counts(0, 2, 0), None).unwrap();
        assert_eq!(ignored.status(), TestStatus::NoTests);
        assert!(
            format!("{ignored:?}").contains("include_ignored"),
            "{ignored:?}"
        );
    }

    #[test]
    fn a_run_that_did_not_build_says_so_and_which_stage() {
        let build = BuildDiagnostics::capped(many(1, 1));
        let report = RunReport::not_built(RunEnd::BuildFailed(build), None, 3);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            keys(&json),
            [
                "duration_ms",
                "errors",
                "omitted_errors",
                "omitted_warnings",
                "stage",
                "status",
                "stderr",
                "stdout",
                "warnings"
            ]
        );
        assert_eq!(
            (&json["status"], &json["stage"]),
            (&json!("build_failed"), &json!("build"))
        );
        assert!(
            report
                .render()
                .starts_with("build_failed in 3 ms: 1 error(s), 1 warning(s)")
        );

        let ran = serde_json::to_value(RunReport::not_built(RunEnd::Exited(3), None, 1)).unwrap();
        assert_eq!(
            (&ran["status"], &ran["stage"], &ran["exit_code"]),
            (&json!("error"), &json!("run"), &json!(3))
        );
        let stopped = RunReport::not_built(RunEnd::Timeout(RunStage::Build), None, 1);
        assert!(
            stopped.render().starts_with("timeout (build) in 1 ms"),
            "{}",
            stopped.render()
        );
    }
}
