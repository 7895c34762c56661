//! The build tools (the toolchains' and the project memory's).

use super::entry::tool;
use super::{Entry, history_reach};
use crate::history::reports::SearchReport;
use crate::history::requests::SearchRequest;
use crate::toolchain::BuildKind;
use crate::toolchain::reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use crate::toolchain::requests::{
    CompileRequest, FormatRequest, ProjectInfoRequest, RunRequest, TestRequest,
};

pub(super) const TOOLS: &[Entry] = &[
    tool!(
        ProjectInfo(ProjectInfoRequest) -> ProjectInfo,
        "Describe a cargo or mix project: name, version, edition (cargo) or Elixir requirement (mix), toolchain versions (rustc/cargo or Elixir/OTP), workspace packages or umbrella apps, targets, dependencies with the versions Cargo.lock or mix.lock locked, and the files that hold tests.",
        |app, request, context| app.toolchains().project_info(request, context.call),
    ),
    tool!(
        Compile(CompileRequest) -> BuildReport,
        "Build the project (cargo build, or mix compile) and return its errors and warnings with file, line, column, code, message and label. A failing build is a normal result with status \"failed\". mix: `force` recompiles everything, `warnings_as_errors` fails on warnings. At most 50 errors and 50 warnings are listed; `omitted_errors` and `omitted_warnings` count the rest.",
        |app, request, context| app.toolchains().build(BuildKind::Compile, request, context.call),
    ),
    tool!(
        TypeCheck(CompileRequest) -> BuildReport,
        "Type-check the project: cargo check --all-targets (the fastest way to see every error, including in tests and examples), or for mix, dialyzer (mix dialyzer with dialyxir, else Erlang's dialyzer on the compiled beams; its first run builds a PLT for several minutes).",
        |app, request, context| app.toolchains().build(BuildKind::TypeCheck, request, context.call),
    ),
    tool!(
        Test(TestRequest) -> TestReport,
        "Run the tests (cargo test: every binary, unit, integration and doc tests; or mix test). Returns passed/failed/ignored/filtered-out (and, for ExUnit, invalid) counts and each failure with its file, line, message, left/right values and captured output or stacktrace. Tests that do not compile come back with the build's errors and warnings (status \"build_failed\", stage \"build\"). A run in which no test ran is not a pass: status \"no_tests_matched\" when filter, tags, path or exclude selected no test, \"no_tests\" when the project has none (or all are ignored), with a `reason`. mix options: path (file or file:line), tags, exclude, seed, max_failures.",
        |app, request, context| app.toolchains().test(request, context.call),
    ),
    tool!(
        Run(RunRequest) -> RunReport,
        "Build and run the project's program with arguments (like cargo run), or an allowed cargo subcommand given as `task`; for mix, an allowed mix task (default `run`, e.g. args [\"-e\", \"IO.puts 1\"]). Returns status ok/error/build_failed/timeout/cancelled and `stage` (\"build\" or \"run\": where it ended), exit code, stdout and stderr separately; a program that does not build comes back with the build's errors and warnings (status \"build_failed\"). stdin is empty unless given.",
        |app, request, context| app.toolchains().run(request, context.call),
    ),
    tool!(
        Format(FormatRequest) -> FormatReport,
        "Check formatting (cargo fmt --check, or mix format --check-formatted): list the files that need formatting with a short diff. With apply=true, format them and list what changed.",
        |app, request, context| app.toolchains().format(request, context.call),
    ),
    tool!(
        Lint(CompileRequest) -> BuildReport,
        "Lint the project (cargo clippy, or mix credo when the project has it, else the compiler's warnings) and return its warnings and errors with file, line, column, lint code (e.g. clippy::needless_return) and message, plus machine-applicable suggestions.",
        |app, request, context| app.toolchains().build(BuildKind::Lint, request, context.call),
    ),
    tool!(
        HistorySearch(SearchRequest) -> SearchReport,
        "Search drydock's project memory: every error, warning and failing test the build tools (compile, type_check, lint, test, run, format) reported, where and when it was seen, how often, by which client or task, and whether a later run of the same check no longer had it, with the change that fixed it (the diff between the last failing and the first passing run, whether or not it was committed). Ask with the error's text, a code (E0502), a test's name or a sentence saying what goes wrong; narrow by project_path, kind (error, warning, test; command for a terminal's commands, task for tasks' ends) and time (since_ms, until_ms). Returns the best `limit` (default 5).",
        |app, request, context| app.history().search(request, history_reach(context.scope)),
    ),
];
