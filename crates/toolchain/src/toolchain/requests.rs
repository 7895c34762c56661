//! The arguments of the build tools, as clients send them.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Toolchain;
use crate::bounded::Bounded;

/// A build tool call's timeout in milliseconds: a day at most, and never above the
/// configured maximum (`timeouts.max_ms`).
pub type TimeoutMs = Bounded<1, 86_400_000>;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectInfoRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    /// Needed only when the directory has both Cargo.toml and mix.exs.
    #[serde(default)]
    pub toolchain: Option<Toolchain>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompileRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<Toolchain>,
    /// Only this workspace member (cargo `--package=SPEC`, e.g. `ws-core` or `serde@1.0.200`),
    /// or the umbrella app (mix). Never starts with `-`.
    #[serde(default)]
    pub package: Option<String>,
    /// Build tests, examples and benches too. Default: false for compile and lint, true for type_check.
    #[serde(default)]
    pub all_targets: Option<bool>,
    /// Cargo features to enable (`--features=a,b`; names like `json` or `serde/derive`).
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
    /// Overrides the configured timeout, in milliseconds (at most 86400000, and clamped to
    /// the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<Toolchain>,
    /// Run only tests whose name contains this text. Any text: it is passed after `--`, so
    /// one that starts with `-` is still a filter, never a test-harness option.
    #[serde(default)]
    pub filter: Option<String>,
    /// With `filter`: the name must match exactly.
    #[serde(default)]
    pub exact: bool,
    /// Only this workspace member (cargo `--package=SPEC`), or the umbrella app (mix).
    #[serde(default)]
    pub package: Option<String>,
    /// Run `#[ignore]`d tests too (cargo), or `@tag :skip` tests (mix `--include skip`).
    #[serde(default)]
    pub include_ignored: bool,
    /// mix: a test file or directory inside the project, optionally `file:line`, relative to
    /// the project (no `..`, not starting with `-`).
    #[serde(default)]
    pub path: Option<String>,
    /// mix: run only tests with these tags (`--only=TAG`), e.g. `["slow", "area:math"]`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// mix: leave out tests with these tags (`--exclude=TAG`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// mix: the random seed (`--seed`; 0 runs tests in order).
    #[serde(default)]
    pub seed: Option<Bounded<0, { u32::MAX as u64 }>>,
    /// mix: stop after this many failures (`--max-failures`).
    #[serde(default)]
    pub max_failures: Option<Bounded<1, 1_000_000>>,
    /// Cargo features to enable (`--features=a,b`).
    #[serde(default)]
    pub features: Vec<String>,
    /// Overrides the configured timeout, in milliseconds (at most 86400000, and clamped to
    /// the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<Toolchain>,
    /// Arguments for the program, or for the task. A cargo program gets them as they are.
    /// A task takes only the arguments on its allowlist; values follow `=` or a separate
    /// argument (`-p ws-core`); a value that starts with `-` needs `=`; file values must be
    /// inside the project. Anything else is refused.
    /// cargo `doc`: --no-deps, --document-private-items, --keep-going, -r/--release,
    /// -p/--package[=SPEC], --workspace, --exclude=SPEC, -F/--features=LIST, --all-features,
    /// --no-default-features, -j/--jobs=N, --profile=NAME, --ignore-rust-version,
    /// --message-format=human|short|json, --lib, --bins, --bin[=NAME], --examples,
    /// --example[=NAME], -q/--quiet, -v/--verbose, --color=WHEN, --locked, --offline, --frozen.
    /// cargo `bench`: the same selection, compile and output options, plus --no-run,
    /// --no-fail-fast, --tests, --test[=NAME], --benches, --bench[=NAME], --all-targets, and
    /// one filter. cargo `tree`: -e/--edges=KINDS, -i/--invert[=SPEC], --prune=SPEC,
    /// --depth=N, --prefix=indent|depth|none, --no-dedupe, -d/--duplicates,
    /// --charset=utf8|ascii, -f/--format=FORMAT, package selection, features, output options.
    /// cargo `metadata`: --format-version=1, --no-deps, features, output options.
    /// cargo `version`: nothing. Never --manifest-path, --config, -Z, --target, --target-dir,
    /// +toolchain, --open.
    /// mix `run`: -e/--eval=EXPR, -r/--require=FILE, --parallel-require=FILE, -p/--parallel,
    /// -c/--config=FILE, --no-compile, --no-deps-check, --no-archives-check,
    /// --no-elixir-version-check, --no-start, --no-halt, --preload-modules, then a script
    /// inside the project (unless --eval) and the program's own arguments (`--` optional).
    /// mix `deps.tree`: --only=ENV, --target=NAME, --exclude=DEP, --format=pretty|plain|dot,
    /// one dependency. mix `app.tree`: --exclude=APP, --format=pretty|plain|dot, one app.
    /// mix `xref`: `callers MODULE`, `trace FILE` or `graph`, with --label, --format, --sink,
    /// --source, --group, --exclude, --only-nodes, --only-direct, --include-siblings,
    /// --min-cycle-size=N, --fail-above=N, --no-compile, --no-deps-check. mix `help`: a task
    /// name, --names or --search PATTERN. mix `docs`: -n/--canonical=URL,
    /// -f/--formatter=html|epub|markdown, --language=LANG, -o/--output=DIR,
    /// --proglang=elixir|erlang, --warnings-as-errors. Other configured tasks: no options,
    /// only values that do not start with `-`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Which workspace member's binary to run (cargo `--package=SPEC`), or the umbrella app (mix).
    #[serde(default)]
    pub package: Option<String>,
    /// Which binary, when the package has several (cargo `--bin=NAME`).
    #[serde(default)]
    pub bin: Option<String>,
    /// cargo: instead of running the program, run this cargo subcommand. mix: the task to run
    /// (default `run`, so `args: ["-e", "IO.puts 1"]` or `["script.exs"]`). Either way it
    /// must be in the configured allowlist (`cargo.tasks`, `mix.tasks`), and its `args` in
    /// the task's own allowlist (see `args`).
    #[serde(default)]
    pub task: Option<String>,
    /// Text written to the program's stdin, which is then closed. Without it stdin is empty.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Overrides the configured timeout, in milliseconds (at most 86400000, and clamped to
    /// the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormatRequest {
    /// Project directory (absolute, `~/...`, or relative to the first allowed root).
    pub project_path: String,
    #[serde(default)]
    pub toolchain: Option<Toolchain>,
    /// Rewrite the files (default: only check and report).
    #[serde(default)]
    pub apply: bool,
    /// Only this workspace member (cargo `--package=SPEC`), or the umbrella app (mix).
    #[serde(default)]
    pub package: Option<String>,
    /// Overrides the configured timeout, in milliseconds (at most 86400000, and clamped to
    /// the configured maximum).
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
}
