//! The results every toolchain reports, whatever printed them: diagnostics, test counts and
//! failures, unformatted files.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One error or warning, located in the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// Path relative to the project root; absolute when the file lies outside it
    /// (a registry dependency); absent for diagnostics without a location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based, counted in characters (not bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
    pub severity: Severity,
    /// `E0308`, `unused_variables`, `clippy::needless_return`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
    /// The primary span's label, e.g. "expected `i32`, found `&str`".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Child notes and helps without a machine-applicable edit, e.g. "help: consider importing: `use x;`"
    /// (the lint-level and documentation-link boilerplate every lint carries is left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Machine-applicable edits the compiler proposes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<Suggestion>,
    /// The compiler's own rendering; only filled when the caller asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
}

/// A machine-applicable replacement of a span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Suggestion {
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub replacement: String,
}

/// Counts summed over every test binary (unit, integration, doc tests) or ExUnit module.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestCounts {
    pub passed: u32,
    pub failed: u32,
    /// `#[ignore]` tests (cargo), skipped tests (ExUnit `@tag :skip`).
    pub ignored: u32,
    /// Tests left out by a filter (cargo), or excluded by tags (ExUnit).
    pub filtered_out: u32,
    /// ExUnit tests that could not run because their `setup_all` failed; always 0 for cargo.
    #[serde(default)]
    pub invalid: u32,
}

/// One failing test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestFailure {
    /// Full test path, e.g. `tests::adds` or `src/lib.rs - add (line 5)` for a doc test.
    pub name: String,
    /// Where it panicked, relative to the project root when inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The panic message (for assert_eq: "assertion `left == right` failed" plus any custom message).
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<String>,
    /// What the test printed before failing (capped), without the panic lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// The test module (ExUnit), e.g. `MathTest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Where the failure was raised (ExUnit), capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacktrace: Option<String>,
}

impl TestCounts {
    /// Adds the counts of another binary or suite. They are read from output a test can
    /// print too, so they may be anything: a sum beyond u32 stays at its maximum.
    pub fn add(&mut self, more: &TestCounts) {
        self.passed = self.passed.saturating_add(more.passed);
        self.failed = self.failed.saturating_add(more.failed);
        self.ignored = self.ignored.saturating_add(more.ignored);
        self.filtered_out = self.filtered_out.saturating_add(more.filtered_out);
        self.invalid = self.invalid.saturating_add(more.invalid);
    }
}

/// One file that is not formatted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FormatFile {
    /// Relative to the project root when inside it, else absolute.
    pub file: String,
    /// How many separate places in the file rustfmt would change.
    pub hunks: u32,
    /// The hunks, each under an `@@ line N @@` header, capped in length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}
