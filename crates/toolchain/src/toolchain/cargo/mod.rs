//! The cargo toolchain: each build tool as cargo commands, their output parsed into reports.

#[doc(hidden)]
pub mod fuzzing;
mod kit;
pub mod libtest;
pub mod messages;
mod project_info;
mod run;
pub mod rustfmt;

use futures::FutureExt;
use futures::future::BoxFuture;
pub use kit::TOOLCHAIN;
use project_info::project_info;
use run::{run, run_task};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Deserialize;

use super::endings;
use super::line_parser::LineParser;
use super::reports::{
    BuildDiagnostics, BuildReport, BuildStatus, DependencyInfo, FormatReport, FormatStatus,
    PackageInfo, ProjectInfo, RunEnd, RunReport, RunStage, TargetInfo, TestEnd, TestReport,
    TestStage,
};
use super::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use super::results::FormatFile;
use super::runner::Runner;
use super::versions::{VersionCache, Versions};
use super::{BuildKind, ToolchainError};
use crate::call::Call;
use crate::millis::millis;
use crate::process::{CommandSpec, Stream, Termination};
use crate::project_facts::{CargoLock, CargoMetadata, CargoPackage};
use crate::toolchain::Project;
use libtest::{LibtestEvent, LibtestParser, TestRun};
use messages::{CargoEvent, CargoMessageParser};
use rustfmt::parse_fmt_check;

/// Lines of the tool's own output kept when it failed without a parsed error.
/// Captured stdout kept per failing test.
const FAILURE_STDOUT_CAP: usize = 4096;
/// Lines of diff shown per file by `format`.
const DIFF_CAP_LINES: usize = 40;

/// The root of the cargo workspace the project belongs to: the nearest directory at or above
/// it whose Cargo.toml has a `[workspace]` table (or the one `package.workspace` names),
/// else the project itself.
pub fn workspace_root(project_root: &Path) -> PathBuf {
    let own = read_manifest(&project_root.join("Cargo.toml"));
    if let Some(explicit) = own.as_ref().and_then(|m| {
        m.get("package")?
            .get("workspace")?
            .as_str()
            .map(PathBuf::from)
    }) {
        let joined = project_root.join(explicit);
        return joined.canonicalize().unwrap_or(joined);
    }
    project_root
        .ancestors()
        .find(|dir| {
            read_manifest(&dir.join("Cargo.toml")).is_some_and(|m| m.get("workspace").is_some())
        })
        .unwrap_or(project_root)
        .to_path_buf()
}

fn read_manifest(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse().ok()
}

fn cargo(project: &Project, args: Vec<String>) -> CommandSpec {
    CommandSpec {
        env_set: vec![
            ("CARGO_TERM_COLOR".into(), "never".into()),
            ("TERM".into(), "dumb".into()),
        ],
        ..CommandSpec::new("cargo", args, &project.root)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `--package=SPEC` and `--features=LIST`, in the `=` form so that no value is read as an
/// option of cargo's (the values are also checked before the call, see `arg_values`).
fn selection_args(args: &mut Vec<String>, package: &Option<String>, features: &[String]) {
    if let Some(package) = package {
        args.push(format!("--package={package}"));
    }
    if !features.is_empty() {
        args.push(format!("--features={}", features.join(",")));
    }
}

/// cargo's words for a rustup component that is not installed (clippy for lint, rustfmt for format).
fn missing_component(stderr: &str) -> Result<(), ToolchainError> {
    for (needle, program, component) in [
        ("no such command: `clippy`", "clippy", "clippy"),
        ("'cargo-clippy' is not installed", "clippy", "clippy"),
        ("no such command: `fmt`", "rustfmt", "rustfmt"),
        ("'cargo-fmt' is not installed", "rustfmt", "rustfmt"),
        ("'rustfmt' is not installed", "rustfmt", "rustfmt"),
    ] {
        if stderr.contains(needle) {
            return Err(ToolchainError::ToolchainMissing {
                program: program.into(),
                hint: format!("run `rustup component add {component}`"),
            });
        }
    }
    Ok(())
}

/// The last lines of cargo's stderr without its progress chatter.
fn output_tail(text: &str) -> Option<String> {
    const CHATTER: &[&str] = &[
        "Compiling ",
        "Checking ",
        "Finished ",
        "Blocking ",
        "Running ",
        "Doc-tests ",
        "Fresh ",
        "Locking ",
        "Updating ",
        "Downloaded ",
        "Downloading ",
    ];
    endings::output_tail(text, |line| {
        let line = line.trim_start();
        CHATTER.iter().any(|c| line.starts_with(c))
    })
}

/// Feeds cargo's JSON messages to the parser and reports compile progress.
fn compile_progress<'p>(
    parser: &'p mut CargoMessageParser,
    call: &'p Call<'_>,
) -> impl FnMut(&str) + Send + 'p {
    let mut units = 0u32;
    move |line: &str| {
        if let Some(CargoEvent::Artifact { target, fresh }) = parser.line(Stream::Stdout, line) {
            units += 1;
            if !fresh {
                call.progress
                    .report(&format!("compiled {target} ({units} units done)"));
            }
        }
    }
}

pub fn build<'a>(
    project: &'a Project,
    kind: BuildKind,
    req: &'a CompileRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<BuildReport, ToolchainError>> {
    async move {
        let (subcommand, all_targets_default) = match kind {
            BuildKind::Compile => ("build", false),
            BuildKind::TypeCheck => ("check", true),
            BuildKind::Lint => ("clippy", false),
        };
        let mut args = strings(&[subcommand, "--message-format=json", "--keep-going"]);
        if req.all_targets.unwrap_or(all_targets_default) {
            args.push("--all-targets".into());
        }
        selection_args(&mut args, &req.package, &req.features);

        let started = Instant::now();
        call.progress.report(&format!("cargo {}", args.join(" ")));
        let ws_root = workspace_root(&project.root);
        let mut parser = CargoMessageParser::new(&ws_root, &project.root, req.include_rendered);
        let output = {
            let mut on_json = compile_progress(&mut parser, call);
            let mut on_line = |stream: Stream, line: &str| {
                if stream == Stream::Stdout {
                    on_json(line);
                }
            };
            runner
                .run_toolchain(cargo(project, args), call, &mut on_line)
                .await?
        };
        if kind == BuildKind::Lint {
            missing_component(&output.stderr.text)?;
        }
        let messages = parser.finish();
        let status = endings::build_status(output.termination, &messages.diagnostics);
        let diagnostics = BuildDiagnostics::capped(messages.diagnostics);
        let mut notes = Vec::new();
        let failed_on_warnings = !diagnostics.warnings.is_empty() && req.warnings_as_errors;
        let status = if status == BuildStatus::Ok && failed_on_warnings {
            notes.push("failed because of warnings (warnings_as_errors)".to_string());
            BuildStatus::Failed
        } else {
            status
        };
        let unexplained =
            status != BuildStatus::Ok && diagnostics.errors.is_empty() && notes.is_empty();
        let report = BuildReport {
            seen_before: Vec::new(),
            status,
            notes,
            output: if unexplained {
                output_tail(&output.stderr.text)
            } else {
                None
            },
            diagnostics,
            duration_ms: millis(started.elapsed()),
        };
        call.progress.report(&format!(
            "done: {} error(s), {} warning(s)",
            report.diagnostics.error_count(),
            report.diagnostics.warning_count()
        ));
        Ok(report)
    }
    .boxed()
}

static RUNNING_BINARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Running (?:unittests |tests |benches )?(?P<src>.+?) \((?P<exe>.+)\)$")
        .expect("valid regex")
});

/// Which test binary is running and which of its tests have finished, to name the
/// tests still running when a run is stopped.
#[derive(Default)]
struct RunningBinary {
    executable: Option<PathBuf>,
    finished: Vec<String>,
}

impl RunningBinary {
    fn observe_stderr(&mut self, line: &str, ws_root: &Path) {
        if let Some(caps) = RUNNING_BINARY.captures(line) {
            self.executable = Some(ws_root.join(&caps["exe"]));
            self.finished.clear();
        } else if line.trim_start().starts_with("Doc-tests ") {
            self.executable = None;
            self.finished.clear();
        }
    }
}

pub fn test<'a>(
    project: &'a Project,
    req: &'a TestRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<TestReport, ToolchainError>> {
    async move {
        let mut args = strings(&["test", "--no-fail-fast", "--message-format=json"]);
        selection_args(&mut args, &req.package, &req.features);
        args.push("--".into());
        args.extend(libtest_args(req, req.include_ignored));

        let started = Instant::now();
        call.progress.report(&format!("cargo {}", args.join(" ")));
        let ws_root = workspace_root(&project.root);
        let mut messages = CargoMessageParser::new(&ws_root, &project.root, false);
        let mut libtest = LibtestParser::new(&ws_root, &project.root, FAILURE_STDOUT_CAP);
        let mut running = RunningBinary::default();
        let mut spec = cargo(project, args);
        spec.env_set.push(("RUST_BACKTRACE".into(), "0".into()));
        let output = {
            let mut on_json = compile_progress(&mut messages, call);
            let mut on_line = |stream: Stream, line: &str| {
                let event = match stream {
                    Stream::Stdout if line.starts_with('{') => {
                        on_json(line);
                        None
                    }
                    Stream::Stdout => libtest.line(Stream::Stdout, line),
                    Stream::Stderr => {
                        running.observe_stderr(line, &ws_root);
                        libtest.line(Stream::Stderr, line)
                    }
                };
                match event {
                    Some(LibtestEvent::TestFinished { name, .. }) => running.finished.push(name),
                    Some(LibtestEvent::BinaryFinished { counts }) => {
                        call.progress.report(&format!(
                            "test binary done: {} passed, {} failed, {} ignored",
                            counts.passed, counts.failed, counts.ignored
                        ))
                    }
                    Some(LibtestEvent::BinaryStarted { name }) => {
                        call.progress.report(&format!("running {name}"))
                    }
                    None => {}
                }
            };
            runner.run_toolchain(spec, call, &mut on_line).await?
        };
        let built = messages.finish();
        let run = libtest.finish();
        let build = BuildDiagnostics::capped(built.diagnostics);
        let build_failed = built.build_success == Some(false);
        let end = test_end(output.termination, build_failed, build, &run, req);
        let unfinished = match end.stopped_in() {
            Some(_) => unfinished_tests(&running, req, project, runner, call).await,
            None => Vec::new(),
        };
        let explained = match &end {
            TestEnd::Failed => !run.failures.is_empty(),
            TestEnd::BuildFailed(build) => !build.errors.is_empty(),
            TestEnd::Timeout(_) | TestEnd::Cancelled(_) => false,
            TestEnd::Passed | TestEnd::NoTestsMatched { .. } | TestEnd::NoTests { .. } => true,
        };
        call.progress.report(&format!(
            "done: {} passed, {} failed, {} ignored",
            run.counts.passed, run.counts.failed, run.counts.ignored
        ));
        Ok(TestReport {
            seen_before: Vec::new(),
            end,
            counts: run.counts,
            duration_ms: millis(started.elapsed()),
            failures: run.failures,
            unfinished,
            seed: None,
            output: if explained {
                None
            } else {
                output_tail(&output.stderr.text)
            },
        })
    }
    .boxed()
}

/// How `cargo test` ended: tests that built and ran none pass nothing.
fn test_end(
    termination: Termination,
    build_failed: bool,
    build: BuildDiagnostics,
    run: &TestRun,
    req: &TestRequest,
) -> TestEnd {
    let stage = match run.binaries {
        0 => TestStage::Build,
        _ => TestStage::Test,
    };
    match termination {
        Termination::TimedOut => TestEnd::Timeout(stage),
        Termination::Cancelled => TestEnd::Cancelled(stage),
        _ if build_failed || (!build.errors.is_empty() && run.binaries == 0) => {
            TestEnd::BuildFailed(build)
        }
        _ if run.counts.failed > 0 => TestEnd::Failed,
        Termination::Exited(0) => {
            TestEnd::when_no_test_ran(&run.counts, test_selection(req)).unwrap_or(TestEnd::Passed)
        }
        _ => TestEnd::Failed,
    }
}

/// What the request narrowed the tests to, in words, if it did.
fn test_selection(req: &TestRequest) -> Option<String> {
    let filter = req.filter.as_ref()?;
    Some(match req.exact {
        true => format!("the exact filter `{filter}`"),
        false => format!("the filter `{filter}`"),
    })
}

/// libtest's options, then `--` and the filter. libtest reads options with getopts, which
/// stops at `--`, so a filter is never read as an option (`--logfile=...` stays a filter).
fn libtest_args(req: &TestRequest, include_ignored: bool) -> Vec<String> {
    let mut args = Vec::new();
    if include_ignored {
        args.push("--include-ignored".into());
    }
    if let Some(filter) = &req.filter {
        if req.exact {
            args.push("--exact".into());
        }
        args.extend(["--".into(), filter.clone()]);
    }
    args
}

/// The tests of the binary that was running when the run stopped, minus those that finished.
async fn unfinished_tests(
    running: &RunningBinary,
    req: &TestRequest,
    project: &Project,
    runner: &Runner,
    call: &Call<'_>,
) -> Vec<String> {
    let Some(executable) = &running.executable else {
        return Vec::new();
    };
    let mut args = strings(&["--list", "--format", "terse"]);
    args.extend(libtest_args(req, false));
    let spec = CommandSpec::new(executable.display().to_string(), args, &project.root);
    let mut names = Vec::new();
    let listing = Call::new(call.progress, Default::default());
    let quick = runner.quick(Duration::from_secs(10));
    let mut collect = |stream: Stream, line: &str| {
        if stream == Stream::Stdout
            && let Some(name) = line.strip_suffix(": test")
            && !running.finished.iter().any(|f| f == name)
        {
            names.push(name.to_string());
        }
    };
    match quick.run(spec, &listing, &mut collect).await {
        Ok(_) => names,
        Err(_) => Vec::new(),
    }
}

pub fn format<'a>(
    project: &'a Project,
    req: &'a FormatRequest,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<FormatReport, ToolchainError>> {
    async move {
        let started = Instant::now();
        let mut check_args = strings(&["fmt", "--check"]);
        selection_args(&mut check_args, &req.package, &[]);
        check_args.extend(strings(&["--", "--color", "never"]));
        call.progress.report("cargo fmt --check");
        let check = runner.run_to_end(cargo(project, check_args), call).await?;
        missing_component(&check.stderr.text)?;
        let files = parse_fmt_check(&check.stdout.text, &project.root, DIFF_CAP_LINES);
        let report = |status, files: Vec<FormatFile>, output: Option<String>| FormatReport {
            status,
            files,
            duration_ms: millis(started.elapsed()),
            output,
        };
        match check.termination {
            Termination::TimedOut => return Ok(report(FormatStatus::Timeout, files, None)),
            Termination::Cancelled => return Ok(report(FormatStatus::Cancelled, files, None)),
            Termination::Exited(0) => return Ok(report(FormatStatus::Formatted, files, None)),
            _ if files.is_empty() => {
                let output =
                    output_tail(&check.stderr.text).or_else(|| output_tail(&check.stdout.text));
                return Ok(report(FormatStatus::Error, files, output));
            }
            _ => {}
        }
        if !req.apply {
            return Ok(report(FormatStatus::NeedsFormatting, files, None));
        }
        let mut apply_args = strings(&["fmt"]);
        selection_args(&mut apply_args, &req.package, &[]);
        call.progress.report("cargo fmt");
        let applied = runner.run_to_end(cargo(project, apply_args), call).await?;
        Ok(match applied.termination {
            Termination::Exited(0) => report(FormatStatus::Applied, files, None),
            Termination::TimedOut => report(FormatStatus::Timeout, files, None),
            Termination::Cancelled => report(FormatStatus::Cancelled, files, None),
            _ => report(
                FormatStatus::Error,
                files,
                output_tail(&applied.stderr.text),
            ),
        })
    }
    .boxed()
}

/// `path` relative to `root` when inside it, else as it is.
pub fn relative_to(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_root_is_found_above_a_member() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/a\"]\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("crates/a")).unwrap();
        std::fs::write(
            root.join("crates/a/Cargo.toml"),
            "[package]\nname = \"a\"\n",
        )
        .unwrap();
        assert_eq!(workspace_root(&root.join("crates/a")), root);
        assert_eq!(workspace_root(&root), root);
        let lone = tempfile::tempdir().unwrap();
        std::fs::write(lone.path().join("Cargo.toml"), "[package]\nname = \"b\"\n").unwrap();
        assert_eq!(workspace_root(lone.path()), lone.path());
    }

    #[test]
    fn output_tail_drops_progress_chatter_and_keeps_the_end() {
        let text = "   Compiling a v0.1.0\nerror: failed to parse manifest at `/x/Cargo.toml`\n\nCaused by:\n  missing field `name`\n";
        assert_eq!(
            output_tail(text).unwrap(),
            "error: failed to parse manifest at `/x/Cargo.toml`\n\nCaused by:\n  missing field `name`"
        );
        assert_eq!(output_tail("    Finished dev\n"), None);
    }

    #[test]
    fn missing_components_get_the_rustup_hint() {
        let err = missing_component("error: no such command: `clippy`\n").unwrap_err();
        assert!(err.to_string().contains("rustup component add clippy"));
        assert!(missing_component("warning: unused").is_ok());
    }

    #[test]
    fn running_lines_name_the_test_executable() {
        let mut running = RunningBinary::default();
        running.finished.push("old".into());
        running.observe_stderr(
            "     Running unittests src/lib.rs (target/debug/deps/demo-1a2b3c)",
            Path::new("/w"),
        );
        assert_eq!(
            running.executable,
            Some(PathBuf::from("/w/target/debug/deps/demo-1a2b3c"))
        );
        assert!(running.finished.is_empty());
        running.observe_stderr(
            "     Running tests/api with space.rs (/abs/target/debug/deps/api-ff)",
            Path::new("/w"),
        );
        assert_eq!(
            running.executable,
            Some(PathBuf::from("/abs/target/debug/deps/api-ff"))
        );
        running.observe_stderr("   Doc-tests demo", Path::new("/w"));
        assert_eq!(running.executable, None);
    }

    #[test]
    fn a_filter_follows_libtest_options_after_dashes() {
        let req = |filter: &str, exact| TestRequest {
            filter: Some(filter.into()),
            exact,
            include_ignored: true,
            ..Default::default()
        };
        assert_eq!(
            libtest_args(&req("--logfile=/x", true), true),
            ["--include-ignored", "--exact", "--", "--logfile=/x"]
        );
        assert_eq!(
            libtest_args(&req("--include-ignored", false), false),
            ["--", "--include-ignored"]
        );
        assert_eq!(
            libtest_args(&TestRequest::default(), true),
            ["--include-ignored"]
        );
    }

    /// A real libtest binary, built with rustc: `--list` with a filter that looks like an
    /// option writes no file and lists nothing; a plain filter still lists its test.
    #[tokio::test]
    async fn listing_unfinished_tests_reads_a_dash_filter_as_a_filter() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("t.rs"),
            "#[test] fn alpha() {}\n#[test] fn beta() {}\n",
        )
        .unwrap();
        let built = std::process::Command::new("rustc")
            .args(["--edition", "2021", "--test", "t.rs", "-o", "t"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(built.success());
        let project = Project {
            root: root.clone(),
            kind: TOOLCHAIN,
        };
        let running = RunningBinary {
            executable: Some(root.join("t")),
            finished: vec!["beta".into()],
        };
        let call = Call::new(&crate::call::Silent, Default::default());
        let runner = Runner::for_tests();
        let list = |filter: String| TestRequest {
            filter: Some(filter),
            ..Default::default()
        };

        let log = root.join("pwned");
        let dashed = list(format!("--logfile={}", log.display()));
        let names = unfinished_tests(&running, &dashed, &project, &runner, &call).await;
        assert_eq!(names, Vec::<String>::new());
        assert!(!log.exists(), "libtest read the filter as --logfile");

        let plain = unfinished_tests(&running, &list("alp".into()), &project, &runner, &call).await;
        assert_eq!(plain, ["alpha"]);
    }

    #[test]
    fn lock_entries_resolve_dependency_versions() {
        let lock: CargoLock = toml::from_str(
            r#"
            [[package]]
            name = "app"
            version = "0.1.0"
            dependencies = ["serde", "rand 0.8.5"]
            [[package]]
            name = "serde"
            version = "1.0.200"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            [[package]]
            name = "rand"
            version = "0.8.5"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            [[package]]
            name = "rand"
            version = "0.9.0"
            source = "registry+https://github.com/rust-lang/crates.io-index"
            "#,
        )
        .unwrap();
        let package = CargoPackage {
            id: "path+file:///a#app@0.1.0".into(),
            name: "app".into(),
            version: "0.1.0".into(),
            edition: None,
            manifest_path: "/a/Cargo.toml".into(),
            targets: Vec::new(),
            dependencies: Vec::new(),
            readme: None,
        };
        let resolved = project_info::resolved_versions(&package, &lock);
        assert_eq!(resolved["serde"], "1.0.200");
        assert_eq!(resolved["rand"], "0.8.5");
    }
}
