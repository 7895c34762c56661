//! The arguments of the build tools, as clients send them.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::workspace::ToolchainKind;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectInfoRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    /// Needed only when the directory has both Cargo.toml and mix.exs.
    #[serde(default)]
    pub toolchain: Option<ToolchainKind>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompileRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<ToolchainKind>,
    /// Only this workspace member (cargo `-p`).
    #[serde(default)]
    pub package: Option<String>,
    /// Build tests, examples and benches too. Default: false for compile and lint, true for type_check.
    #[serde(default)]
    pub all_targets: Option<bool>,
    /// Cargo features to enable.
    #[serde(default)]
    pub features: Vec<String>,
    /// Include the compiler's full rendered text in each diagnostic (larger results).
    #[serde(default)]
    pub include_rendered: bool,
    /// Recompile everything (mix `--force`). Cargo replays the diagnostics of files it
    /// does not rebuild, so for cargo this changes nothing in the result.
    #[serde(default)]
    pub force: bool,
    /// Fail the build when there are warnings (mix `--warnings-as-errors`).
    #[serde(default)]
    pub warnings_as_errors: bool,
    /// Overrides the configured timeout (clamped to the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<ToolchainKind>,
    /// Run only tests whose name contains this text.
    #[serde(default)]
    pub filter: Option<String>,
    /// With `filter`: the name must match exactly.
    #[serde(default)]
    pub exact: bool,
    /// Only this workspace member (cargo `-p`).
    #[serde(default)]
    pub package: Option<String>,
    /// Run `#[ignore]`d tests too (cargo), or `@tag :skip` tests (mix `--include skip`).
    #[serde(default)]
    pub include_ignored: bool,
    /// mix: a test file or directory, optionally `file:line`, relative to the project.
    #[serde(default)]
    pub path: Option<String>,
    /// mix: run only tests with these tags (`--only`), e.g. `["slow", "area:math"]`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// mix: leave out tests with these tags (`--exclude`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// mix: the random seed (`--seed`; 0 runs tests in order).
    #[serde(default)]
    pub seed: Option<u64>,
    /// mix: stop after this many failures (`--max-failures`).
    #[serde(default)]
    pub max_failures: Option<u32>,
    #[serde(default)]
    pub features: Vec<String>,
    /// Overrides the configured timeout (clamped to the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<ToolchainKind>,
    /// Arguments for the program (or for the task).
    #[serde(default)]
    pub args: Vec<String>,
    /// Which workspace member's binary to run (cargo `-p`).
    #[serde(default)]
    pub package: Option<String>,
    /// Which binary, when the package has several (cargo `--bin`).
    #[serde(default)]
    pub bin: Option<String>,
    /// cargo: instead of running the program, run this cargo subcommand. mix: the task to run
    /// (default `run`, so `args: ["-e", "IO.puts 1"]` or `["script.exs"]`). Either way it
    /// must be in the configured allowlist (`cargo.tasks`, `mix.tasks`).
    #[serde(default)]
    pub task: Option<String>,
    /// Text written to the program's stdin, which is then closed. Without it stdin is empty.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Overrides the configured timeout (clamped to the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormatRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<ToolchainKind>,
    /// Rewrite the files (default: only check and report).
    #[serde(default)]
    pub apply: bool,
    /// Only this workspace member (cargo `-p`).
    #[serde(default)]
    pub package: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}
