//! The mix toolchain: each build tool as mix commands, their output parsed into reports
//! of the same shapes cargo's are.

pub mod compiler;
mod credo;
pub mod dialyzer;
pub mod exunit;
mod exunit_events;
mod format_diff;
mod formatter_cache;
#[doc(hidden)]
pub mod fuzzing;
mod kit;
mod project;

pub use kit::TOOLCHAIN;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::endings;
use super::line_parser::LineParser;
use super::reports::{
    BuildDiagnostics, BuildReport, BuildStatus, FormatReport, FormatStatus, ProjectInfo, RunEnd,
    RunReport, RunStage, TestEnd, TestReport, TestStage,
};
use super::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use super::results::{Diagnostic, Severity};
use super::runner::Runner;
use super::{BuildKind, ToolchainError};
use crate::call::Call;
use crate::millis::millis;
use crate::process::{CommandSpec, ProcessOutput, Stream, Termination};
use crate::toolchain::Project;
use compiler::{MixDiagnosticParser, MixEvent};
use exunit_events::{ExUnitEvents, ExUnitVerdict, Seen};

const STACKTRACE_CAP: usize = 2048;
/// Lines of mix's own progress, left out of an output tail.
const CHATTER: &[&str] = &[
    "Compiling ",
    "Generated ",
    "==> ",
    "Finished in ",
    "Randomized with seed",
];

fn mix(project: &Project, args: Vec<String>) -> CommandSpec {
    CommandSpec {
        env_set: vec![("TERM".into(), "dumb".into())],
        ..CommandSpec::new("mix", args, &project.root)
    }
}

/// `elixir -e SCRIPT [more args]`: our own Elixir code, run without touching the project.
fn elixir(project: &Project, script: &str, rest: Vec<String>) -> CommandSpec {
    let mut args = vec!["-e".to_string(), script.to_string()];
    args.extend(rest);
    CommandSpec {
        env_set: vec![("TERM".into(), "dumb".into())],
        ..CommandSpec::new("elixir", args, &project.root)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Both streams, for messages that may land on either.
fn all_output(output: &ProcessOutput) -> String {
    format!("{}\n{}", output.stdout.text, output.stderr.text)
}

/// A project whose dependencies were never fetched cannot be built: say so in one line.
fn check_deps(project: &Project, output: &ProcessOutput) -> Result<(), ToolchainError> {
    if output.termination == Termination::Exited(0) {
        return Ok(());
    }
    let text = all_output(output);
    let Some(deps) = compiler::missing_deps(&text) else {
        return Ok(());
    };
    let first = match compiler::hex_missing(&text) {
        true => "Hex is not installed: run `mix local.hex`, then ",
        false => "run ",
    };
    Err(ToolchainError::Failed(format!(
        "dependencies are missing ({}): {first}`mix deps.get` in {}",
        deps.join(", "),
        project.root.display()
    )))
}

fn output_tail(output: &ProcessOutput) -> Option<String> {
    endings::output_tail(&all_output(output), |line| {
        CHATTER.iter().any(|c| line.trim_start().starts_with(c))
            || line.contains(exunit_events::MARKER)
    })
}

/// The directories of an umbrella's child apps (none for a single app), sorted.
fn umbrella_apps(project: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(project.root.join("apps"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| dir.join("mix.exs").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Mix's progress lines worth passing on to the caller.
fn report_event(call: &Call<'_>, event: Option<MixEvent>) {
    match event {
        Some(MixEvent::Compiling { files, kind }) => call
            .progress
            .report(&format!("compiling {files} file(s) ({kind})")),
        Some(MixEvent::Generated { app }) => call.progress.report(&format!("generated {app}")),
        Some(MixEvent::Project { name }) => call.progress.report(&format!("==> {name}")),
        None => {}
    }
}

/// What `mix compile` left: every diagnostic, before a report caps them.
struct Compiled {
    status: BuildStatus,
    diagnostics: Vec<Diagnostic>,
    /// The tail of mix's output, when no error or note explains a failure.
    output: Option<String>,
    notes: Vec<String>,
}

impl Compiled {
    fn into_report(self, started: Instant) -> BuildReport {
        BuildReport {
            seen_before: Vec::new(),
            status: self.status,
            diagnostics: BuildDiagnostics::capped(self.diagnostics),
            duration_ms: millis(started.elapsed()),
            output: self.output,
            notes: self.notes,
        }
    }
}

/// Declared dependencies, read from mix.exs text: enough to choose between
/// `mix dialyzer`/`mix credo` and our fallbacks without starting the VM.
fn declares_dep(project: &Project, dep: &str) -> bool {
    let declared = |dir: &Path| {
        std::fs::read_to_string(dir.join("mix.exs"))
            .is_ok_and(|text| text.contains(&format!("{{:{dep},")))
    };
    declared(&project.root) || umbrella_apps(project).iter().any(|d| declared(d))
}

pub fn project_info<'a>(
    project: &'a Project,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<ProjectInfo, ToolchainError>> {
    async move {
        let quick = runner.quick(Duration::from_secs(60));
        let output = quick
            .run_to_end(elixir(project, project::SCRIPT, Vec::new()), call)
            .await?;
        let json = output
            .stdout
            .text
            .lines()
            .rev()
            .find(|l| l.starts_with('{'));
        let read = match (output.termination, json) {
            (Termination::Exited(0), Some(json)) => {
                serde_json::from_str::<project::MixProject>(json)
                    .map_err(|e| format!("unexpected answer from the mix.exs reader: {e}"))
            }
            _ => Err(output_tail(&output).unwrap_or_else(|| "no output".into())),
        };
        match read {
            // The apps' test folders are walked: on a blocking thread.
            Ok(mix_project) => {
                let root = project.root.clone();
                tokio::task::spawn_blocking(move || mix_project.into_info(&root))
                    .await
                    .map_err(|e| {
                        ToolchainError::Failed(format!("reading the project's files: {e}"))
                    })
            }
            Err(reason) => Err(ToolchainError::Failed(format!(
                "cannot read mix.exs: {reason}"
            ))),
        }
    }
    .boxed()
}

pub fn build<'a>(
    project: &'a Project,
    kind: BuildKind,
    req: &'a CompileRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<BuildReport, ToolchainError>> {
    async move {
        match kind {
            BuildKind::Compile => {
                let started = Instant::now();
                let compiled = compile(project, req, req.force, runner, call).await?;
                Ok(compiled.into_report(started))
            }
            BuildKind::TypeCheck => type_check(project, req, runner, call).await,
            BuildKind::Lint => lint(project, req, runner, call).await,
        }
    }
    .boxed()
}

async fn compile(
    project: &Project,
    req: &CompileRequest,
    force: bool,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<Compiled, ToolchainError> {
    let mut args = strings(&["compile", "--all-warnings"]);
    if force {
        args.push("--force".into());
    }
    if req.warnings_as_errors {
        args.push("--warnings-as-errors".into());
    }
    call.progress.report(&format!("mix {}", args.join(" ")));
    let mut compiler = MixDiagnosticParser::new(&project.root);
    let output = {
        let mut on_line =
            |stream: Stream, line: &str| report_event(call, compiler.line(stream, line));
        runner
            .run_toolchain(mix(project, args), call, &mut on_line)
            .await?
    };
    check_deps(project, &output)?;
    let diagnostics = compiler.finish();
    let errors = endings::has_errors(&diagnostics);
    let status = endings::build_status(output.termination, &diagnostics);
    let mut notes = Vec::new();
    if req.warnings_as_errors && status == BuildStatus::Failed && !errors {
        notes.push("failed because of warnings (warnings_as_errors)".to_string());
    }
    let explained = status == BuildStatus::Ok || errors || !notes.is_empty();
    let error_count = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    call.progress.report(&format!(
        "done: {} error(s), {} warning(s)",
        error_count,
        diagnostics.len() - error_count
    ));
    Ok(Compiled {
        status,
        diagnostics,
        output: if explained {
            None
        } else {
            output_tail(&output)
        },
        notes,
    })
}

/// `mix dialyzer` when the project uses dialyxir; otherwise Erlang's dialyzer on the
/// project's beams, with a PLT of OTP and Elixir built once and cached.
async fn type_check(
    project: &Project,
    req: &CompileRequest,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<BuildReport, ToolchainError> {
    let started = Instant::now();
    let compiled = compile(project, req, false, runner, call).await?;
    if compiled.status != BuildStatus::Ok {
        return Ok(compiled.into_report(started));
    }
    let (mut diagnostics, termination, output, mut notes) = if declares_dep(project, "dialyxir") {
        call.progress.report("mix dialyzer --format short");
        let spec = mix(project, strings(&["dialyzer", "--format", "short"]));
        let output = runner.run_to_end(spec, call).await?;
        check_deps(project, &output)?;
        let diagnostics = dialyzer::parse_dialyzer_output(&output.stdout.text, &project.root);
        let tail = output_tail(&output);
        (diagnostics, output.termination, tail, Vec::new())
    } else {
        let apps = compiled_apps(project);
        let plt_cache = dialyzer::PltCache::user_default()?;
        let outcome = dialyzer::analyze(&project.root, &apps, &plt_cache, runner, call).await?;
        let mut notes = vec![
            "dialyxir is not a dependency: ran Erlang's dialyzer on the compiled beams \
             (calls into dependencies are not checked)"
                .to_string(),
        ];
        if outcome.built_plt {
            notes.push(format!(
                "built the dialyzer PLT for erts, kernel, stdlib and elixir once, in {}",
                plt_cache.dir().display()
            ));
        }
        (
            outcome.diagnostics,
            outcome.termination,
            outcome.output_tail,
            notes,
        )
    };
    let errors = endings::has_errors(&diagnostics);
    // The build succeeded: what it left are warnings, listed after dialyzer's.
    diagnostics.extend(compiled.diagnostics);
    let status = match termination {
        Termination::TimedOut => BuildStatus::Timeout,
        Termination::Cancelled => BuildStatus::Cancelled,
        // dialyzer exits 2 when it found warnings: the analysis itself succeeded.
        Termination::Exited(0 | 2) if !errors => BuildStatus::Ok,
        _ => BuildStatus::Failed,
    };
    let explained = status == BuildStatus::Ok || errors;
    notes.extend(compiled.notes);
    Ok(BuildReport {
        seen_before: Vec::new(),
        status,
        diagnostics: BuildDiagnostics::capped(diagnostics),
        duration_ms: millis(started.elapsed()),
        output: if explained { None } else { output },
        notes,
    })
}

/// The project's own apps as mix compiled them (umbrella children included), each with
/// the directory its source paths are relative to.
fn compiled_apps(project: &Project) -> Vec<dialyzer::CompiledApp> {
    // `mix compile` builds for the MIX_ENV it inherits from the server.
    let env = std::env::var("MIX_ENV").unwrap_or_else(|_| "dev".into());
    let lib = project.root.join("_build").join(env).join("lib");
    let mut dirs = umbrella_apps(project);
    if dirs.is_empty() {
        dirs.push(project.root.clone());
    }
    dirs.into_iter()
        .filter_map(|dir| {
            let app = crate::project_facts::mix_app(&dir)?;
            Some(dialyzer::CompiledApp {
                ebin_dir: lib.join(app).join("ebin"),
                source_root: dir,
            })
        })
        .collect()
}

/// `mix credo` when the project uses credo; otherwise every compiler warning (a forced
/// recompile, so unchanged files report theirs too) with a note saying so.
async fn lint(
    project: &Project,
    req: &CompileRequest,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<BuildReport, ToolchainError> {
    if !declares_dep(project, "credo") {
        let started = Instant::now();
        let mut report = compile(project, req, true, runner, call)
            .await?
            .into_report(started);
        report.notes.push(
            "credo is not a dependency of this project: these are the compiler's warnings \
             (add {:credo, \"~> 1.7\", only: [:dev, :test], runtime: false} for more checks)"
                .into(),
        );
        return Ok(report);
    }
    let started = Instant::now();
    call.progress.report("mix credo --format json");
    let spec = mix(
        project,
        strings(&["credo", "--format", "json", "--mute-exit-status"]),
    );
    let output = runner.run_to_end(spec, call).await?;
    check_deps(project, &output)?;
    // Credo's issues are advice: only credo failing to run fails the lint.
    let status = endings::build_status(output.termination, &[]);
    let issues = credo::parse(&output.stdout.text, &project.root);
    let explained = status == BuildStatus::Ok || issues.is_some();
    Ok(BuildReport {
        seen_before: Vec::new(),
        status,
        diagnostics: BuildDiagnostics::capped(issues.unwrap_or_default()),
        duration_ms: millis(started.elapsed()),
        output: if explained {
            None
        } else {
            output_tail(&output)
        },
        notes: Vec::new(),
    })
}

pub fn test<'a>(
    project: &'a Project,
    req: &'a TestRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<TestReport, ToolchainError>> {
    async move {
        let started = Instant::now();
        let test_args = mix_test_args(req);
        call.progress
            .report(&format!("mix test {}", test_args.join(" ")));
        // Our formatter for exact results, ExUnit's own for the fallback parser and the output
        // tail.
        let mut args = strings(&[
            "-S",
            "mix",
            "test",
            "--formatter",
            exunit_events::FORMATTER_MODULE,
        ]);
        args.extend(strings(&["--formatter", "ExUnit.CLIFormatter"]));
        args.extend(test_args);
        let cache = dirs::cache_dir().map(|dir| dir.join("drydock"));
        let formatter = formatter_cache::loader(cache.as_deref(), runner, call).await;
        let spec = elixir(project, &formatter.code, args);
        let runner = formatter.visible_to(runner);
        let (output, compiler, events) = run_test(project, &runner, call, spec).await?;
        check_deps(project, &output)?;
        let run = events.finish();
        let build = BuildDiagnostics::capped(compiler.finish());

        let (counts, failures, seed, formatter_ran) = if run.suites > 0 {
            (run.counts, run.failures, run.seed, true)
        } else {
            let plain =
                exunit::parse_exunit_output(&output.stdout.text, &project.root, STACKTRACE_CAP);
            (plain.counts, plain.failures, plain.seed, false)
        };
        let stage = match formatter_ran {
            true => TestStage::Test,
            false => TestStage::Build,
        };
        let failed = counts.failed > 0 || counts.invalid > 0 || !failures.is_empty();
        let passed_if_any_ran =
            || TestEnd::when_no_test_ran(&counts, test_selection(req)).unwrap_or(TestEnd::Passed);
        let end = match output.termination {
            Termination::TimedOut => TestEnd::Timeout(stage),
            Termination::Cancelled => TestEnd::Cancelled(stage),
            _ if !build.errors.is_empty() && failures.is_empty() && counts.passed == 0 => {
                TestEnd::BuildFailed(build)
            }
            _ if failed => TestEnd::Failed,
            Termination::Exited(0) => passed_if_any_ran(),
            // `--only` that matches nothing exits 1 with every test excluded.
            Termination::Exited(1) if formatter_ran => passed_if_any_ran(),
            _ => TestEnd::Failed,
        };
        let explained = match &end {
            TestEnd::Failed => !failures.is_empty(),
            TestEnd::BuildFailed(build) => !build.errors.is_empty(),
            TestEnd::Timeout(_) | TestEnd::Cancelled(_) => false,
            TestEnd::Passed | TestEnd::NoTestsMatched { .. } | TestEnd::NoTests { .. } => true,
        };
        call.progress.report(&format!(
            "done: {} passed, {} failed, {} skipped, {} excluded",
            counts.passed, counts.failed, counts.ignored, counts.filtered_out
        ));
        Ok(TestReport {
            seen_before: Vec::new(),
            end,
            counts,
            duration_ms: millis(started.elapsed()),
            failures,
            unfinished: Vec::new(),
            output: if explained {
                None
            } else {
                output_tail(&output)
            },
            seed,
        })
    }
    .boxed()
}

async fn run_test(
    project: &Project,
    runner: &Runner,
    call: &Call<'_>,
    spec: CommandSpec,
) -> Result<(ProcessOutput, MixDiagnosticParser, ExUnitEvents), ToolchainError> {
    let mut compiler = MixDiagnosticParser::new(&project.root);
    let mut events = ExUnitEvents::new(&project.root);
    let (mut passed, mut failed) = (0u32, 0u32);
    let output = {
        let mut on_line = |stream: Stream, line: &str| {
            if let Some(seen) = events.line(stream, line) {
                match seen {
                    Seen::Test {
                        outcome: ExUnitVerdict::Passed,
                        ..
                    } => passed += 1,
                    Seen::Test {
                        outcome: ExUnitVerdict::Failed,
                        name,
                    } => {
                        failed += 1;
                        call.progress.report(&format!("FAILED {name}"));
                    }
                    Seen::Test { .. } => {}
                    Seen::SuiteFinished => call.progress.report(&format!(
                        "suite done: {passed} passed, {failed} failed so far"
                    )),
                }
                return;
            }
            report_event(call, compiler.line(stream, line));
        };
        runner.run_toolchain(spec, call, &mut on_line).await?
    };
    Ok((output, compiler, events))
}

/// What the request narrowed the tests to, in words, if it did.
fn test_selection(req: &TestRequest) -> Option<String> {
    let mut parts = Vec::new();
    if !req.tags.is_empty() {
        parts.push(format!("tags {:?} (mix test --only)", req.tags));
    }
    if let Some(filter) = &req.filter {
        parts.push(format!("the filter {filter:?}"));
    }
    if !req.exclude.is_empty() {
        parts.push(format!("exclude {:?}", req.exclude));
    }
    if let Some(path) = &req.path {
        parts.push(format!("the path {path:?}"));
    }
    (!parts.is_empty()).then(|| parts.join(" with "))
}

/// Text values as `--option=value` and the path after `--` (mix test's option parser stops
/// there), so no request value is read as another option; seed and max_failures are numbers.
fn mix_test_args(req: &TestRequest) -> Vec<String> {
    let mut args = Vec::new();
    for tag in &req.tags {
        args.push(format!("--only={tag}"));
    }
    if let Some(name) = &req.filter {
        let name = if name.starts_with("test ") || name.starts_with("doctest ") {
            name.clone()
        } else {
            format!("test {name}")
        };
        args.push(format!("--only=test:{name}"));
    }
    for tag in &req.exclude {
        args.push(format!("--exclude={tag}"));
    }
    if req.include_ignored {
        args.extend(strings(&["--include", "skip"]));
    }
    if let Some(seed) = req.seed {
        args.extend(["--seed".to_string(), seed.to_string()]);
    }
    if let Some(max) = req.max_failures {
        args.extend(["--max-failures".to_string(), max.to_string()]);
    }
    if let Some(path) = &req.path {
        args.extend(["--".to_string(), path.clone()]);
    }
    args
}

/// `mix TASK ...`, where `argv` (task name first) went through the task's allowlist
/// (`task_args`).
pub fn run<'a>(
    project: &'a Project,
    req: &'a RunRequest,
    argv: Vec<String>,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<RunReport, ToolchainError>> {
    async move {
        let started = Instant::now();
        // Compiled first, on its own: its messages become `errors`, and the program's stdout
        // holds nothing but the program's output.
        if argv.first().is_some_and(|task| task == "run") {
            let compiled =
                compile(project, &CompileRequest::default(), false, runner, call).await?;
            let end = match compiled.status {
                BuildStatus::Ok => None,
                BuildStatus::Failed => Some(RunEnd::BuildFailed(BuildDiagnostics::capped(
                    compiled.diagnostics,
                ))),
                BuildStatus::Timeout => Some(RunEnd::Timeout(RunStage::Build)),
                BuildStatus::Cancelled => Some(RunEnd::Cancelled(RunStage::Build)),
            };
            if let Some(end) = end {
                let duration_ms = millis(started.elapsed());
                return Ok(RunReport::not_built(end, compiled.output, duration_ms));
            }
        }
        call.progress.report(&format!("mix {}", argv.join(" ")));
        let spec = CommandSpec {
            stdin: req.stdin.as_ref().map(|s| s.clone().into_bytes()),
            ..mix(project, argv)
        };
        let output = runner.run_to_end(spec, call).await?;
        check_deps(project, &output)?;
        Ok(RunReport::from_output(output, millis(started.elapsed())))
    }
    .boxed()
}

pub fn format<'a>(
    project: &'a Project,
    req: &'a FormatRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<FormatReport, ToolchainError>> {
    async move {
        let started = Instant::now();
        call.progress.report("mix format --check-formatted");
        let check = runner
            .run_to_end(
                mix(project, strings(&["format", "--check-formatted"])),
                call,
            )
            .await?;
        check_deps(project, &check)?;
        let listed = format_diff::unformatted_files(&check.stderr.text);
        let report = |status, files, output| FormatReport {
            status,
            files,
            duration_ms: millis(started.elapsed()),
            output,
        };
        match check.termination {
            Termination::TimedOut => return Ok(report(FormatStatus::Timeout, Vec::new(), None)),
            Termination::Cancelled => return Ok(report(FormatStatus::Cancelled, Vec::new(), None)),
            Termination::Exited(0) => return Ok(report(FormatStatus::Formatted, Vec::new(), None)),
            _ if listed.is_empty() => {
                return Ok(report(FormatStatus::Error, Vec::new(), output_tail(&check)));
            }
            _ => {}
        }
        call.progress.report(&format!(
            "{} file(s) need formatting; computing diffs",
            listed.len()
        ));
        let files = format_diff::diffs(project, &listed, runner, call).await;
        if !req.apply {
            return Ok(report(FormatStatus::NeedsFormatting, files, None));
        }
        call.progress.report("mix format");
        let applied = runner
            .run_to_end(mix(project, strings(&["format"])), call)
            .await?;
        Ok(match applied.termination {
            Termination::Exited(0) => report(FormatStatus::Applied, files, None),
            Termination::TimedOut => report(FormatStatus::Timeout, files, None),
            Termination::Cancelled => report(FormatStatus::Cancelled, files, None),
            _ => report(FormatStatus::Error, files, output_tail(&applied)),
        })
    }
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::Bounded;

    #[test]
    fn test_args_never_let_a_value_be_read_as_an_option() {
        let req = TestRequest {
            tags: vec!["--cover".into()],
            exclude: vec!["area:math".into()],
            filter: Some("adds --export-coverage=x".into()),
            seed: Bounded::new(0),
            path: Some("test/a_test.exs:3".into()),
            ..Default::default()
        };
        assert_eq!(
            mix_test_args(&req),
            [
                "--only=--cover",
                "--only=test:test adds --export-coverage=x",
                "--exclude=area:math",
                "--seed",
                "0",
                "--",
                "test/a_test.exs:3",
            ]
        );
    }
}
