//! What the build tools return: structured reports, and their short text rendering.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostics::Diagnostic;
use super::format_report::FormatFile;
use super::test_report::{TestCounts, TestFailure};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    Ok,
    Failed,
    Timeout,
    Cancelled,
}

/// Result of compile, type_check and lint.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BuildReport {
    pub status: BuildStatus,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    pub duration_ms: u64,
    /// The tail of the tool's own output, when it failed without a parsed error
    /// (a broken manifest, a missing dependency) or timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// What the caller should know about how the result was obtained, e.g. that credo is
    /// not installed and the compiler's warnings stand in for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    Passed,
    Failed,
    /// The tests did not compile: see `errors`.
    BuildFailed,
    Timeout,
    Cancelled,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TestReport {
    pub status: TestStatus,
    #[serde(flatten)]
    pub counts: TestCounts,
    pub duration_ms: u64,
    pub failures: Vec<TestFailure>,
    /// Compile errors when the tests did not build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Diagnostic>,
    /// mix: the seed ExUnit ordered the tests with; pass it back as `seed` to reproduce the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Tests that started and had not finished when the run was stopped (timeout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<String>,
    /// The tail of the tool's own output, when it failed in a way no test or error explains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Exited with code 0.
    Ok,
    /// Did not build, exited non-zero or was killed by a signal.
    Error,
    Timeout,
    Cancelled,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunReport {
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that killed the program, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Capped (head and tail kept, `[... N bytes elided ...]` between).
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
    /// Compile errors when the program did not build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Diagnostic>,
}

impl RunReport {
    /// How a program that ran ended, with everything it printed.
    pub fn from_output(output: crate::process::ProcessOutput, duration_ms: u64) -> Self {
        use crate::process::Termination;
        let (status, exit_code, signal) = match output.termination {
            Termination::Exited(0) => (RunStatus::Ok, Some(0), None),
            Termination::Exited(code) => (RunStatus::Error, Some(code), None),
            Termination::Signaled(signal) => (RunStatus::Error, None, Some(signal)),
            Termination::TimedOut => (RunStatus::Timeout, None, None),
            Termination::Cancelled => (RunStatus::Cancelled, None, None),
        };
        RunReport {
            status,
            exit_code,
            signal,
            stdout: output.stdout.text,
            stderr: output.stderr.text,
            duration_ms,
            errors: Vec::new(),
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

/// A short text for clients that read only the text content.
pub trait Render {
    fn render(&self) -> String;
}

fn diagnostic_line(out: &mut String, d: &Diagnostic) {
    let severity = match d.severity {
        super::diagnostics::Severity::Error => "error",
        super::diagnostics::Severity::Warning => "warning",
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

impl Render for BuildReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{}: {} error(s), {} warning(s) in {} ms",
            status_word(&self.status),
            self.errors.len(),
            self.warnings.len(),
            self.duration_ms
        );
        for note in &self.notes {
            let _ = write!(out, "\nnote: {note}");
        }
        for d in self.errors.iter().chain(&self.warnings) {
            diagnostic_line(&mut out, d);
        }
        output_tail(&mut out, &self.output);
        out
    }
}

impl Render for TestReport {
    fn render(&self) -> String {
        let c = &self.counts;
        let mut out = format!(
            "{}: {} passed, {} failed, {} ignored, {} filtered out in {} ms",
            status_word(&self.status),
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
        for d in &self.errors {
            diagnostic_line(&mut out, d);
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
        let mut out = format!("{} in {} ms", status_word(&self.status), self.duration_ms);
        if let Some(code) = self.exit_code {
            let _ = write!(out, ", exit code {code}");
        }
        if let Some(signal) = self.signal {
            let _ = write!(out, ", killed by signal {signal}");
        }
        for d in &self.errors {
            diagnostic_line(&mut out, d);
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

impl Render for FormatReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{}: {} file(s) in {} ms",
            status_word(&self.status),
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

fn status_word<T: Serialize>(status: &T) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
