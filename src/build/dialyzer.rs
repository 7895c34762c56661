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
//!   `flock` (or polling) and brings nothing to correctness.
//! - `--no_indentation`: each warning is one line with dialyzer's compact types. Without
//!   it dialyzer puts every type on indented lines of its own; the parser reads both.
//! - Elixir's beams keep their debug info in a form only `elixir_erl` can read, so
//!   dialyzer always gets Elixir's ebin with `-pa` (without it, it crashes on `undef`).

mod parse;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;

pub use parse::{DialyzerParser, SourceRoots, parse_dialyzer_output, warning_kind};

use super::diagnostics::Diagnostic;
use super::{Call, Runner, ToolError};
use crate::process::{CommandSpec, ProcessOutput, RunError, Stream, Termination};

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
    /// Dialyzer ran to the end (with or without warnings).
    pub fn completed(&self) -> bool {
        matches!(self.termination, Termination::Exited(0 | 2))
    }

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
    pub fn user_default() -> Result<Self, ToolError> {
        let cache = dirs::cache_dir().ok_or_else(|| {
            ToolError::Failed(
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

    fn plt_path(&self, toolchain: &Toolchain) -> PathBuf {
        self.dir.join(toolchain.plt_file_name())
    }
}

/// Runs dialyzer on the project's own apps, building the base PLT first if this OTP and
/// Elixir have none yet (which takes about a minute; progress is reported meanwhile).
pub async fn analyze(
    project_root: &Path,
    apps: &[CompiledApp],
    plt_cache: &PltCache,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<DialyzerOutcome, ToolError> {
    check_compiled(apps)?;
    let toolchain = Toolchain::query(project_root, runner, call).await?;
    let (plt, built_plt) = match ensure_plt(plt_cache, &toolchain, runner, call).await? {
        PltState::Ready { path, built } => (path, built),
        PltState::Stopped(outcome) => return Ok(outcome),
    };
    let mut outcome = run_analysis(project_root, apps, &plt, &toolchain, runner, call).await?;
    outcome.built_plt = built_plt;
    Ok(outcome)
}

fn check_compiled(apps: &[CompiledApp]) -> Result<(), ToolError> {
    if apps.is_empty() {
        return Err(ToolError::InvalidArgument(
            "dialyzer needs at least one compiled app".into(),
        ));
    }
    match apps.iter().find(|app| !app.ebin_dir.is_dir()) {
        Some(app) => Err(ToolError::Failed(format!(
            "{} does not exist: compile the project first",
            app.ebin_dir.display()
        ))),
        None => Ok(()),
    }
}

/// The installed OTP and Elixir: they name the PLT built from them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Toolchain {
    otp: String,
    erts: String,
    elixir: String,
    elixir_ebin: PathBuf,
}

/// Prints `key=value` lines; OTP_VERSION has the full release ("25.2.3"), which may be absent.
const TOOLCHAIN_QUERY: &str = r#"
release = List.to_string(:erlang.system_info(:otp_release))
otp_version = Path.join([:code.root_dir(), "releases", release, "OTP_VERSION"])
otp = case File.read(otp_version) do
  {:ok, version} -> String.trim(version)
  _ -> release
end
IO.puts("otp=#{otp}")
IO.puts("erts=#{:erlang.system_info(:version)}")
IO.puts("elixir=#{System.version()}")
IO.puts("elixir_ebin=#{Path.expand(:code.lib_dir(:elixir, :ebin))}")
"#;

impl Toolchain {
    async fn query(cwd: &Path, runner: &Runner, call: &Call<'_>) -> Result<Self, ToolError> {
        let spec = CommandSpec::new("elixir", ["-e", TOOLCHAIN_QUERY], cwd);
        let runner = runner.quick(TOOLCHAIN_QUERY_TIMEOUT);
        let output = run_tool(&runner, spec, call, &mut |_, _| {}).await?;
        let parsed = output
            .termination
            .success()
            .then(|| Self::parse(&output.stdout.text))
            .flatten();
        parsed.ok_or_else(|| {
            ToolError::Failed(format!(
                "could not read the OTP and Elixir versions ({:?}): {}",
                output.termination,
                output.stderr.text.trim()
            ))
        })
    }

    fn parse(text: &str) -> Option<Self> {
        let values: HashMap<&str, &str> =
            text.lines().filter_map(|line| line.split_once('=')).collect();
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
        name.replace(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)), "_")
    }

    fn elixir_ebin(&self) -> String {
        path_arg(&self.elixir_ebin)
    }
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

async fn run_tool(
    runner: &Runner,
    spec: CommandSpec,
    call: &Call<'_>,
    on_line: &mut (dyn FnMut(Stream, &str) + Send),
) -> Result<ProcessOutput, ToolError> {
    let program = spec.program.clone();
    runner.run(spec, call, on_line).await.map_err(|e| match e {
        RunError::NotFound { .. } => ToolError::ToolchainMissing {
            hint: match program.as_str() {
                "dialyzer" => "install Erlang/OTP's dialyzer (Debian and Ubuntu: the erlang-dialyzer package) and put `dialyzer` on the server's PATH",
                _ => "install Elixir and put `elixir` on the server's PATH",
            }
            .into(),
            program,
        },
        other => ToolError::Run(other),
    })
}

enum PltState {
    Ready { path: PathBuf, built: bool },
    /// The build did not finish: this is the call's answer.
    Stopped(DialyzerOutcome),
}

/// One lock per PLT path, for the whole process.
fn plt_lock(path: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Mutex::default);
    let mut locks = LOCKS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(path.to_path_buf()).or_default().clone()
}

async fn ensure_plt(
    cache: &PltCache,
    toolchain: &Toolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<PltState, ToolError> {
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
    toolchain: &Toolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<PltState, ToolError> {
    std::fs::create_dir_all(cache_dir).map_err(|e| {
        ToolError::Failed(format!(
            "could not create the PLT cache {}: {e}",
            cache_dir.display()
        ))
    })?;
    let temp = TempFile(plt.with_extension(format!("plt.{}.tmp", std::process::id())));
    let elixir_ebin = toolchain.elixir_ebin();
    let args = [
        "--build_plt",
        "--output_plt",
        &path_arg(&temp.0),
        "--quiet",
        "--statistics",
        "-pa",
        &elixir_ebin,
        "--apps",
        "erts",
        "kernel",
        "stdlib",
        &elixir_ebin,
    ];
    call.progress.report(
        "building the dialyzer PLT for erts, kernel, stdlib, elixir (first run only; takes a few minutes)",
    );
    let started = Instant::now();
    let mut on_line = |stream: Stream, line: &str| {
        if let (Stream::Stdout, Some(phase)) = (stream, phase_progress(line)) {
            call.progress.report(&format!("dialyzer PLT: {phase}"));
        }
    };
    let spec = CommandSpec::new("dialyzer", args, cache_dir);
    let output = run_tool(runner, spec, call, &mut on_line).await?;
    if !matches!(output.termination, Termination::Exited(0 | 2)) || !temp.0.is_file() {
        let tail = match output.termination {
            Termination::Cancelled | Termination::TimedOut => format!(
                "the dialyzer PLT build was stopped ({:?}) after {}s; the next call starts it again",
                output.termination,
                started.elapsed().as_secs()
            ),
            _ => format!(
                "building the dialyzer PLT failed:\n{}",
                failure_text(&output)
            ),
        };
        return Ok(PltState::Stopped(DialyzerOutcome::stopped(
            output.termination,
            tail,
        )));
    }
    std::fs::rename(&temp.0, plt).map_err(|e| {
        ToolError::Failed(format!("could not store the PLT at {}: {e}", plt.display()))
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

async fn run_analysis(
    project_root: &Path,
    apps: &[CompiledApp],
    plt: &Path,
    toolchain: &Toolchain,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<DialyzerOutcome, ToolError> {
    let mut args = vec![
        "--plt".to_string(),
        path_arg(plt),
        "--no_check_plt".into(),
        "--fullpath".into(),
        "--no_indentation".into(),
        "--quiet".into(),
        "--statistics".into(),
        "-pa".into(),
        toolchain.elixir_ebin(),
    ];
    args.extend(apps.iter().map(|app| path_arg(&app.ebin_dir)));
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
        let spec = CommandSpec::new("dialyzer", args, project_root);
        run_tool(runner, spec, call, &mut on_line).await?
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
        output_tail: (!explained).then(|| failure_text(&output)),
        built_plt: false,
    })
}

static PHASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s+(?P<phase>\w+)\s+\(\+[\d.]+s\):\s+(?P<time>[\d.]+s)(?:\s+\(\s*(?P<size>\d+ \w+)\))?$")
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
        format!("dialyzer ended with {:?} and printed nothing", output.termination)
    } else {
        text
    }
}
