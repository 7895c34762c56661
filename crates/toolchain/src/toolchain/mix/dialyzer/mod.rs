//! Erlang's dialyzer on a mix project that does not use dialyxir: a base PLT for erts,
//! kernel, stdlib and elixir, built once per OTP and Elixir version and cached, then an
//! analysis of the project's own compiled beams, its warnings parsed into diagnostics.
//!
//! Choices:
//! - Only the project's own apps are analysed (umbrella children included). Dependencies
//!   are neither analysed nor added to a PLT: calls into them are unknown to dialyzer, which
//!   assumes they can return anything and never warns about them. This finds fewer
//!   problems than dialyxir (which adds the deps to a project PLT), but it needs no
//!   per-project PLT and no rebuild whenever a dependency changes.
//! - The PLT's file name carries the OTP, erts and Elixir versions; a PLT with the right
//!   name is trusted (`--no_check_plt`): checking it costs seconds on every call. An
//!   upgrade gets a new name, hence a new PLT.
//! - The PLT is built into a temporary file, renamed into place when complete, so a
//!   cancelled, failed or killed build never leaves a PLT behind. Calls in this process
//!   wait for one another's build (a tokio mutex per PLT path) instead of building the
//!   same PLT twice. Separate drydock processes may each build it; the renames keep it
//!   whole either way, at worst the work is done twice. A lock file would need a blocking
//!   `flock` (or polling) and brings nothing to correctness. The build runs under the
//!   call's timeout like any child: a call whose timeout is shorter than the build never
//!   gets past it.
//! - `--no_indentation`: each warning is one line with dialyzer's compact types. Without
//!   it dialyzer puts every type on indented lines of its own; the parser reads both.
//! - Elixir's beams keep their debug info in a form only `elixir_erl` can read, so
//!   dialyzer always gets Elixir's ebin with `-pa` (without it, it crashes on `undef`).

mod parse;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use regex::Regex;

pub use parse::{DialyzerParser, SourceRoots, parse_dialyzer_output};

use crate::call::Call;
use crate::exs;
use crate::process::{CommandSpec, ProcessOutput, Stream, Termination};
use crate::toolchain::ToolchainError;
use crate::toolchain::results::Diagnostic;
use crate::toolchain::runner::Runner;

/// Lines of dialyzer's output kept when it failed.
const FAILURE_LINES: usize = 40;
const TOOLCHAIN_QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// One of the project's own apps, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledApp {
    /// e.g. `_build/dev/lib/my_app/ebin`.
    pub ebin_dir: PathBuf,
    /// The directory the app was compiled in: the project root, or `apps/my_app` in an
    /// umbrella. Warnings name their files relative to it.
    pub source_root: PathBuf,
}

/// What one dialyzer analysis found.
#[derive(Debug, Clone)]
pub struct DialyzerOutcome {
    /// The warnings, ordered by file and line.
    pub diagnostics: Vec<Diagnostic>,
    /// How dialyzer ended: `Exited(0)` no warnings, `Exited(2)` warnings, `Exited(1)` it
    /// failed (see `output_tail`). When the PLT build did not finish, how that ended.
    pub termination: Termination,
    /// What went wrong, in dialyzer's words, when it failed, timed out or was cancelled.
    pub output_tail: Option<String>,
    /// Whether this call built the PLT (the first run for this OTP and Elixir).
    pub built_plt: bool,
}

impl DialyzerOutcome {
    fn stopped(termination: Termination, output_tail: String) -> Self {
        Self {
            diagnostics: Vec::new(),
            termination,
            output_tail: Some(output_tail),
            built_plt: false,
        }
    }
}

/// Where base PLTs are kept.
#[derive(Debug, Clone)]
pub struct PltCache {
    dir: PathBuf,
}

impl PltCache {
    /// `drydock/plt` in the user's cache directory (`$XDG_CACHE_HOME`, else `~/.cache`).
    pub fn user_default() -> Result<Self, ToolchainError> {
        let cache = dirs::cache_dir().ok_or_else(|| {
            ToolchainError::Failed(
                "no cache directory for the dialyzer PLT: set HOME or XDG_CACHE_HOME".into(),
            )
        })?;
        Ok(Self::at(cache.join("drydock").join("plt")))
    }

    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn plt_path(&self, toolchain: &OtpToolchain) -> PathBuf {
        self.dir.join(toolchain.plt_file_name())
    }
}

/// Runs dialyzer on the project's own apps, building the base PLT first if this OTP and
/// Elixir have none yet (which takes about a minute; progress is reported meanwhile).
pub fn analyze<'a>(
    project_root: &'a Path,
    apps: &'a [CompiledApp],
    plt_cache: &'a PltCache,
    runner: &'a Runner,
    call: &'a Call<'a>,
) -> BoxFuture<'a, Result<DialyzerOutcome, ToolchainError>> {
    async move {
        check_compiled(apps)?;
        let toolchain = OtpToolchain::query(project_root, runner, call).await?;
        let (plt, built_plt) = match ensure_plt(plt_cache, &toolchain, runner, call).await? {
            PltState::Ready { path, built } => (path, built),
            PltState::Stopped(outcome) => return Ok(outcome),
        };
        let mut outcome = run_analysis(project_root, apps, &plt, &toolchain, runner, call).await?;
        outcome.built_plt = built_plt;
        Ok(outcome)
    }
    .boxed()
}

fn check_compiled(apps: &[CompiledApp]) -> Result<(), ToolchainError> {
    if apps.is_empty() {
        return Err(ToolchainError::InvalidArgument(
            "dialyzer needs at least one compiled app".into(),
        ));
    }
    match apps.iter().find(|app| !app.ebin_dir.is_dir()) {
        Some(app) => Err(ToolchainError::Failed(format!(
            "{} does not exist: compile the project first",
            app.ebin_dir.display()
        ))),
        None => Ok(()),
    }
}

/// The installed OTP and Elixir: they name the PLT built from them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OtpToolchain {
    otp: String,
    erts: String,
    elixir: String,
    elixir_ebin: PathBuf,
}

impl OtpToolchain {
    async fn query(cwd: &Path, runner: &Runner, call: &Call<'_>) -> Result<Self, ToolchainError> {
        let spec = CommandSpec::new("elixir", ["-e", exs::OTP_TOOLCHAIN], cwd);
        let runner = runner.quick(TOOLCHAIN_QUERY_TIMEOUT);
        let output = runner.run_to_end(spec, call).await?;
        if output.termination == Termination::Cancelled {
            return Err(ToolchainError::Cancelled);
        }
        let parsed = output
            .termination
            .success()
            .then(|| Self::parse(&output.stdout.text))
            .flatten();
        parsed.ok_or_else(|| {
            ToolchainError::Failed(format!(
                "could not read the OTP and Elixir versions ({:?}): {}",
                output.termination,
                output.stderr.text.trim()
            ))
        })
    }

    fn parse(text: &str) -> Option<Self> {
        let values: HashMap<&str, &str> = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .collect();
        Some(Self {
            otp: values.get("otp")?.to_string(),
            erts: values.get("erts")?.to_string(),
            elixir: values.get("elixir")?.to_string(),
            elixir_ebin: PathBuf::from(values.get("elixir_ebin")?),
        })
    }

    fn plt_file_name(&self) -> String {
        let name = format!(
            "otp-{}_erts-{}_elixir-{}.plt",
            self.otp, self.erts, self.elixir
        );
        name.replace(
            |c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)),
            "_",
        )
    }

    fn elixir_ebin(&self) -> String {
        path_arg(&self.elixir_ebin)
    }
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

enum PltState {
    Ready {
        path: PathBuf,
        built: bool,
    },
    /// The build did not finish: this is the call's answer.
    Stopped(DialyzerOutcome),
}

/// One lock per PLT path, for the whole process.
fn plt_lock(path: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Mutex::default);
    let mut locks = LOCKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(path.to_path_buf()).or_default().clone()
}

async fn ensure_plt(
    cache: &PltCache,
    toolchain: &OtpToolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<PltState, ToolchainError> {
    let path = cache.plt_path(toolchain);
    if path.is_file() {
        return Ok(PltState::Ready { path, built: false });
    }
    let lock = plt_lock(&path);
    let _building = match lock.clone().try_lock_owned() {
        Ok(guard) => guard,
        Err(_) => {
            call.progress
                .report("waiting for another call that is building the dialyzer PLT");
            tokio::select! {
                guard = lock.lock_owned() => guard,
                _ = call.cancel.cancelled() => return Ok(PltState::Stopped(DialyzerOutcome::stopped(
                    Termination::Cancelled,
                    "cancelled while waiting for another call's dialyzer PLT build".into(),
                ))),
            }
        }
    };
    // The call we waited for may have built it.
    if path.is_file() {
        return Ok(PltState::Ready { path, built: false });
    }
    build_plt(&cache.dir, &path, toolchain, runner, call).await
}

/// Removes the file when dropped, unless it was renamed away: a stopped build leaves nothing.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn build_plt(
    cache_dir: &Path,
    plt: &Path,
    toolchain: &OtpToolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<PltState, ToolchainError> {
    std::fs::create_dir_all(cache_dir).map_err(|e| {
        ToolchainError::Failed(format!(
            "could not create the PLT cache {}: {e}",
            cache_dir.display()
        ))
    })?;
    let temp = TempFile(plt.with_extension(format!("plt.{}.tmp", std::process::id())));
    call.progress.report(
        "building the dialyzer PLT for erts, kernel, stdlib, elixir (first run only; takes a few minutes)",
    );
    let started = Instant::now();
    let mut on_line = |stream: Stream, line: &str| {
        if let (Stream::Stdout, Some(phase)) = (stream, phase_progress(line)) {
            call.progress.report(&format!("dialyzer PLT: {phase}"));
        }
    };
    let spec = CommandSpec::new("dialyzer", plt_build_args(&temp.0, toolchain), cache_dir);
    let output = runner.run_toolchain(spec, call, &mut on_line).await?;
    if !matches!(output.termination, Termination::Exited(0 | 2)) || !temp.0.is_file() {
        return Ok(PltState::Stopped(unfinished_build(&output, started)));
    }
    std::fs::rename(&temp.0, plt).map_err(|e| {
        ToolchainError::Failed(format!("could not store the PLT at {}: {e}", plt.display()))
    })?;
    call.progress.report(&format!(
        "dialyzer PLT built in {}s: {}",
        started.elapsed().as_secs(),
        plt.display()
    ));
    Ok(PltState::Ready {
        path: plt.to_path_buf(),
        built: true,
    })
}

fn plt_build_args(output_plt: &Path, toolchain: &OtpToolchain) -> Vec<String> {
    let elixir_ebin = toolchain.elixir_ebin();
    let mut args = vec![
        "--build_plt".to_string(),
        "--output_plt".into(),
        path_arg(output_plt),
    ];
    args.extend(["--quiet", "--statistics", "-pa", &elixir_ebin].map(String::from));
    args.extend(["--apps", "erts", "kernel", "stdlib", &elixir_ebin].map(String::from));
    args
}

fn unfinished_build(output: &ProcessOutput, started: Instant) -> DialyzerOutcome {
    let tail = match output.termination {
        Termination::Cancelled | Termination::TimedOut => format!(
            "the dialyzer PLT build was stopped ({:?}) after {}s; the next call starts it again",
            output.termination,
            started.elapsed().as_secs()
        ),
        _ => format!(
            "building the dialyzer PLT failed:\n{}",
            failure_text(output)
        ),
    };
    DialyzerOutcome::stopped(output.termination, tail)
}

async fn run_analysis(
    project_root: &Path,
    apps: &[CompiledApp],
    plt: &Path,
    toolchain: &OtpToolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<DialyzerOutcome, ToolchainError> {
    call.progress
        .report(&format!("dialyzer: analysing {} app(s)", apps.len()));
    let roots = SourceRoots::new(project_root, apps.iter().map(|a| a.source_root.clone()));
    let mut parser = DialyzerParser::new(&roots);
    let output = {
        let mut on_line = |stream: Stream, line: &str| {
            if stream != Stream::Stdout {
                return;
            }
            if let Some(phase) = phase_progress(line) {
                call.progress.report(&format!("dialyzer: {phase}"));
            }
            parser.feed_line(line);
        };
        let args = analysis_args(plt, apps, toolchain);
        let spec = CommandSpec::new("dialyzer", args, project_root);
        runner.run_toolchain(spec, call, &mut on_line).await?
    };
    let diagnostics = parser.finish();
    call.progress
        .report(&format!("dialyzer: {} warning(s)", diagnostics.len()));
    let explained = match output.termination {
        Termination::Exited(0) => true,
        Termination::Exited(2) => !diagnostics.is_empty(),
        _ => false,
    };
    Ok(DialyzerOutcome {
        diagnostics,
        termination: output.termination,
        output_tail: (!explained)
            .then(|| failure_text(&output) + &discard_if_unreadable(plt, &output)),
        built_plt: false,
    })
}

fn analysis_args(plt: &Path, apps: &[CompiledApp], toolchain: &OtpToolchain) -> Vec<String> {
    let mut args = vec!["--plt".to_string(), path_arg(plt)];
    args.extend(
        [
            "--no_check_plt",
            "--fullpath",
            "--no_indentation",
            "--quiet",
            "--statistics",
            "-pa",
        ]
        .map(String::from),
    );
    args.push(toolchain.elixir_ebin());
    args.extend(apps.iter().map(|app| path_arg(&app.ebin_dir)));
    args
}

/// A PLT that dialyzer cannot read (damaged on disk, or written by another dialyzer under
/// the same versions) would fail every call: remove it so that the next call rebuilds it.
fn discard_if_unreadable(plt: &Path, output: &ProcessOutput) -> String {
    let unreadable = output.stdout.text.contains("Could not read PLT file")
        || output.stdout.text.contains("Old PLT file");
    if unreadable && std::fs::remove_file(plt).is_ok() {
        "\n(the cached PLT was removed; the next call builds it again)".into()
    } else {
        String::new()
    }
}

static PHASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s+(?P<phase>\w+)\s+\(\+[\d.]+s\):\s+(?P<time>[\d.]+s)(?:\s+\(\s*(?P<size>\d+ \w+)\))?$",
    )
    .expect("valid regex")
});

/// `--statistics` prints a line as each analysis phase ends, e.g.
/// `    typesig    (+0.00s):   0.58s (   1460 SCCs)` becomes `typesig done in 0.58s (1460 SCCs)`.
fn phase_progress(line: &str) -> Option<String> {
    let caps = PHASE.captures(line)?;
    let size = caps
        .name("size")
        .map(|size| format!(" ({})", size.as_str()))
        .unwrap_or_default();
    Some(format!(
        "{} done in {}{size}",
        &caps["phase"], &caps["time"]
    ))
}

/// Dialyzer's own error (`dialyzer: ...` to the end; it prints errors on stdout), else the
/// last lines of its output without the phase statistics.
fn failure_text(output: &ProcessOutput) -> String {
    let stdout = output.stdout.text.as_str();
    let lines: Vec<&str> = match stdout.lines().position(|l| l.starts_with("dialyzer: ")) {
        Some(start) => stdout.lines().skip(start).take(FAILURE_LINES).collect(),
        None => {
            let all: Vec<&str> = stdout
                .lines()
                .chain(output.stderr.text.lines())
                .filter(|line| !PHASE.is_match(line))
                .collect();
            all[all.len().saturating_sub(FAILURE_LINES)..].to_vec()
        }
    };
    let text = lines.join("\n").trim().to_string();
    if text.is_empty() {
        format!(
            "dialyzer ended with {:?} and printed nothing",
            output.termination
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Progress;
    use crate::process::CapturedOutput;
    use crate::toolchain::recorded;
    use tokio_util::sync::CancellationToken;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Progress for Recorder {
        fn report(&self, message: &str) {
            self.0.lock().unwrap().push(message.to_string());
        }
    }

    impl Recorder {
        fn saw(&self, prefix: &str) -> bool {
            self.0.lock().unwrap().iter().any(|m| m.starts_with(prefix))
        }
    }

    /// Records progress and cancels the call a second after a message starting with
    /// `trigger` is reported.
    struct CancelOn {
        recorder: Recorder,
        trigger: &'static str,
        cancel: CancellationToken,
    }

    impl Progress for CancelOn {
        fn report(&self, message: &str) {
            if message.starts_with(self.trigger) {
                let cancel = self.cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    cancel.cancel();
                });
            }
            self.recorder.report(message);
        }
    }

    fn runner() -> Runner {
        Runner::for_tests()
    }

    fn captured(text: &str) -> CapturedOutput {
        CapturedOutput {
            text: text.to_string(),
            total_bytes: text.len() as u64,
            elided_bytes: 0,
        }
    }

    #[test]
    fn statistics_lines_become_progress() {
        let phases: Vec<_> = recorded::dialyzer("build-plt-erts")
            .stdout()
            .lines()
            .filter_map(phase_progress)
            .collect();
        assert_eq!(phases.len(), 11);
        assert_eq!(phases[0], "compile done in 0.37s (21 modules)");
        assert_eq!(phases[1], "clean done in 0.01s");
        assert_eq!(phases[4], "typesig done in 0.58s (1460 SCCs)");
    }

    #[test]
    fn plt_names_carry_every_version() {
        let toolchain = OtpToolchain::parse(
            "otp=25.2.3\nerts=13.1.5\nelixir=1.14.0\nelixir_ebin=/usr/lib/elixir/lib/elixir/ebin\n",
        )
        .unwrap();
        assert_eq!(
            toolchain.plt_file_name(),
            "otp-25.2.3_erts-13.1.5_elixir-1.14.0.plt"
        );
        assert_eq!(
            toolchain.elixir_ebin,
            PathBuf::from("/usr/lib/elixir/lib/elixir/ebin")
        );
        assert_eq!(OtpToolchain::parse("otp=25\nerts=13.1.5\n"), None);
    }

    #[test]
    fn failures_quote_dialyzer_s_own_error() {
        let output = ProcessOutput {
            termination: Termination::Exited(1),
            stdout: captured(&recorded::dialyzer("error-no-debug-info").stdout()),
            stderr: captured(""),
            duration: Duration::ZERO,
            pid: 1,
        };
        let text = failure_text(&output);
        assert!(
            text.starts_with("dialyzer: Analysis failed with error:\nCould not scan the following file(s):\n  Could not get Core Erlang code for: "),
            "{text}"
        );
        assert!(
            text.ends_with("Reading files and computing callgraph..."),
            "{text}"
        );
    }

    fn mix_dialyzer_project() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("test-projects/mix-dialyzer")
    }

    fn mix_compile(project: &Path) -> CompiledApp {
        // Two tests compiling the same fresh checkout at once would write the same beams.
        static COMPILING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = COMPILING.lock().unwrap_or_else(|p| p.into_inner());
        let status = std::process::Command::new("mix")
            .arg("compile")
            .current_dir(project)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("mix is installed (apt: elixir)");
        assert!(status.success());
        CompiledApp {
            ebin_dir: project.join("_build/dev/lib/mix_dialyzer/ebin"),
            source_root: project.to_path_buf(),
        }
    }

    fn cache_files(cache: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(cache)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    async fn timed_analyze(
        project: &Path,
        apps: &[CompiledApp],
        cache: &PltCache,
        progress: &Recorder,
    ) -> (DialyzerOutcome, Duration) {
        let call = Call::new(progress, CancellationToken::new());
        let started = Instant::now();
        let outcome = analyze(project, apps, cache, &runner(), &call)
            .await
            .unwrap();
        (outcome, started.elapsed())
    }

    /// Builds a real PLT (about a minute on two cores) and analyses test-projects/mix-dialyzer.
    #[tokio::test]
    async fn builds_the_plt_once_then_finds_the_known_warnings() {
        let project = mix_dialyzer_project();
        let apps = [mix_compile(&project)];
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = PltCache::at(cache_dir.path().join("plt"));

        let (first, second) = (Recorder::default(), Recorder::default());
        let ((a, a_time), (b, b_time)) = tokio::join!(
            timed_analyze(&project, &apps, &cache, &first),
            timed_analyze(&project, &apps, &cache, &second),
        );
        eprintln!("two concurrent calls on an empty cache: {a_time:?} and {b_time:?}");
        assert!(
            a.built_plt != b.built_plt,
            "exactly one call builds the PLT"
        );
        let (builder, waiter) = if a.built_plt {
            (&first, &second)
        } else {
            (&second, &first)
        };
        assert!(builder.saw("building the dialyzer PLT for erts, kernel, stdlib, elixir"));
        assert!(builder.saw("dialyzer PLT: typesig done in "));
        assert!(waiter.saw("waiting for another call that is building the dialyzer PLT"));
        for outcome in [&a, &b] {
            assert_eq!(outcome.termination, Termination::Exited(2));
            assert_eq!(outcome.output_tail, None);
            assert_eq!(
                summaries(&outcome.diagnostics),
                parse::tests::MIX_DIALYZER_SUMMARIES
            );
        }
        let plt_files = cache_files(cache.dir());
        assert_eq!(plt_files.len(), 1, "{plt_files:?}");
        assert!(plt_files[0].ends_with(".plt"), "{plt_files:?}");

        let (again, again_time) =
            timed_analyze(&project, &apps, &cache, &Recorder::default()).await;
        eprintln!("analysis with the cached PLT: {again_time:?}");
        assert!(!again.built_plt);
        assert_eq!(again.diagnostics, a.diagnostics);

        let no_debug_info = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("erlc")
            .arg("-o")
            .arg(no_debug_info.path())
            .arg(recorded::path("dialyzer/no_debug_info.erl"))
            .status()
            .expect("erlc is installed (apt: erlang-base)");
        assert!(status.success());
        let broken = [CompiledApp {
            ebin_dir: no_debug_info.path().to_path_buf(),
            source_root: project.clone(),
        }];
        let (failed, _) = timed_analyze(&project, &broken, &cache, &Recorder::default()).await;
        assert_eq!(failed.termination, Termination::Exited(1));
        assert!(failed.diagnostics.is_empty());
        let tail = failed.output_tail.unwrap();
        assert!(
            tail.contains("Could not get Core Erlang code for: "),
            "{tail}"
        );
    }

    #[tokio::test]
    async fn a_cancelled_plt_build_leaves_nothing_behind() {
        let project = mix_dialyzer_project();
        let apps = [mix_compile(&project)];
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = PltCache::at(cache_dir.path());
        let cancel = CancellationToken::new();
        let progress = CancelOn {
            recorder: Recorder::default(),
            trigger: "building the dialyzer PLT",
            cancel: cancel.clone(),
        };
        let call = Call::new(&progress, cancel);
        let outcome = analyze(&project, &apps, &cache, &runner(), &call)
            .await
            .unwrap();
        assert_eq!(outcome.termination, Termination::Cancelled);
        assert!(!outcome.built_plt);
        assert!(
            outcome
                .output_tail
                .unwrap()
                .contains("the next call starts it again")
        );
        assert_eq!(cache_files(cache.dir()), Vec::<String>::new());
    }

    #[tokio::test]
    async fn an_unreadable_plt_is_removed_for_the_next_call_to_rebuild() {
        let project = mix_dialyzer_project();
        let apps = [mix_compile(&project)];
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = PltCache::at(cache_dir.path());
        let progress = Recorder::default();
        let call = Call::new(&progress, CancellationToken::new());
        let toolchain = OtpToolchain::query(&project, &runner(), &call)
            .await
            .unwrap();
        let plt = cache.plt_path(&toolchain);
        std::fs::write(&plt, "not a PLT").unwrap();
        let outcome = analyze(&project, &apps, &cache, &runner(), &call)
            .await
            .unwrap();
        assert_eq!(outcome.termination, Termination::Exited(1));
        let tail = outcome.output_tail.unwrap();
        assert!(
            tail.starts_with("dialyzer: Could not read PLT file "),
            "{tail}"
        );
        assert!(tail.ends_with("the next call builds it again)"), "{tail}");
        assert!(!plt.exists());
    }

    #[tokio::test]
    async fn missing_beams_ask_for_a_compile() {
        let recorder = Recorder::default();
        let call = Call::new(&recorder, CancellationToken::new());
        let apps = [CompiledApp {
            ebin_dir: PathBuf::from("/nonexistent/_build/dev/lib/app/ebin"),
            source_root: PathBuf::from("/nonexistent"),
        }];
        let error = analyze(
            Path::new("/"),
            &apps,
            &PltCache::at("/nonexistent"),
            &runner(),
            &call,
        )
        .await
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "/nonexistent/_build/dev/lib/app/ebin does not exist: compile the project first"
        );
    }

    fn summaries(diagnostics: &[Diagnostic]) -> Vec<String> {
        parse::tests::summaries(diagnostics)
    }
}
