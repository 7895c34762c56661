//! Run a child process: argv only (never a shell), in its own process group, with a timeout,
//! cancellation, line-by-line streaming and head + tail capped capture of stdout and stderr
//! (`capture`). Text for a shell drydock does not run itself is `shell_quote`'s.
//!
//! Every process the run started is gone when it ends, however it ends ([`tree`] says how they
//! are found: the process group, descendants that left it with `setsid`, and orphans that
//! carry the run's tag in their environment): on timeout or cancel they get SIGTERM and, after
//! the grace period, SIGKILL; when the direct child exits, whatever is left gets SIGKILL; when
//! the `run` future is dropped, a guard sends SIGKILL.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

mod capture;
pub mod env_policy;
pub mod procfs;
pub mod shell_quote;
mod tree;
pub mod yielding;

#[cfg(test)]
mod tests;

use capture::Pump;
use tree::RunTag;
pub use tree::{Escalation, ProcessTree, RUN_TAG_VAR};

/// Longest line handed to `on_line`. A longer line is cut here, ends with
/// `[... N bytes elided ...]`, and the rest of it is skipped. Deliberately independent of
/// `Limits::output_cap`: line consumers (cargo's JSON messages) need whole lines even when the
/// captured text is kept small, and memory stays bounded either way.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// How long to keep reading once the group is dead, for pipes held open by a process that
/// left the group (e.g. with `setsid`).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// e.g. "cargo"; a bare name is looked up in PATH's absolute folders.
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (or overriding) the inherited environment; wins over `env_remove`.
    pub env_set: Vec<(String, String)>,
    /// Removed from the inherited environment (secrets); exact names. Drydock's token is
    /// always removed ([`env_policy::ALWAYS_REMOVED`]).
    pub env_remove: Vec<String>,
    /// Written to the child's stdin, which is then closed. `None`: stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// Starts from an empty environment instead of drydock's: the child gets `env_set` alone
    /// (a sandbox, which must hold nothing of drydock's but what it is given).
    pub clear_env: bool,
}

impl CommandSpec {
    /// A spec with the inherited environment and stdin at /dev/null.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env_set: Vec::new(),
            env_remove: Vec::new(),
            stdin: None,
            clear_env: false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Per stream: how large the kept text (head + tail) may be as a JSON string.
    pub output_cap: usize,
    /// SIGTERM -> wait this long -> SIGKILL.
    pub kill_grace: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// The exit code; -1 if the status of the child could not be read.
    Exited(i32),
    /// Killed by a signal that did not come from us.
    Signaled(i32),
    TimedOut,
    Cancelled,
}

impl Termination {
    pub fn success(self) -> bool {
        self == Termination::Exited(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOutput {
    /// Lossy UTF-8 of what was kept; when over the cap: head, then
    /// "\n[... N bytes elided ...]\n", then tail.
    pub text: String,
    /// Everything the child wrote to this stream.
    pub total_bytes: u64,
    /// 0 when nothing was cut.
    pub elided_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct ProcessOutput {
    pub termination: Termination,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
    pub duration: Duration,
    /// The direct child's pid, which is also its process group id.
    pub pid: u32,
}

/// Only for "could not run at all"; everything after a successful spawn is a `Termination`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("`{program}` was not found on PATH")]
    NotFound { program: String },
    #[error("could not start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
}

type OnLine<'a> = dyn FnMut(Stream, &str) + Send + 'a;

/// Runs `spec` to completion under `limits`, handing every output line to `on_line` as it
/// arrives (from within this future), and returns how it ended with the capped output.
pub fn run<'a>(
    spec: &'a CommandSpec,
    limits: &'a Limits,
    cancel: &'a CancellationToken,
    on_line: &'a mut (dyn FnMut(Stream, &str) + Send),
) -> BoxFuture<'a, Result<ProcessOutput, RunError>> {
    async move {
        let started = Instant::now();
        let tag = RunTag::next();
        let mut child = spawn(spec, &tag)?;
        let pid = child
            .id()
            .expect("a child that was just spawned has not been reaped");
        let tree = ProcessTree::new(pid, &tag);
        tracing::debug!(program = %spec.program, pid, "spawned");

        let mut pump = Pump::new(&mut child, limits.output_cap);
        let stdin = write_stdin(child.stdin.take(), spec.stdin.as_deref());
        let outcome = wait_for_exit_or_stop(
            &mut child,
            &mut pump,
            stdin,
            limits.timeout,
            cancel,
            on_line,
        )
        .await;
        let termination = match outcome {
            ChildEnd::Exited(status) => termination_of(status),
            ChildEnd::Stopped(reason) => {
                terminate_gracefully(&tree, &mut child, &mut pump, limits.kill_grace, on_line)
                    .await;
                reason
            }
        };
        tree.kill_all_and_look_again();
        let _ = child.wait().await;
        pump.drain(DRAIN_AFTER_EXIT, on_line).await;
        let (stdout, stderr) = pump.finish(on_line);
        tracing::debug!(program = %spec.program, pid, ?termination, "finished");
        Ok(ProcessOutput {
            termination,
            stdout,
            stderr,
            duration: started.elapsed(),
            pid,
        })
    }
    .boxed()
}

/// Where `program` is: itself when it names a path, else the first executable of that
/// name in the absolute folders of drydock's PATH. A relative entry (`.`, `./bin`, an empty
/// one) would name a folder of whatever directory a child starts in: a project's, an agent's
/// worktree, where a program of theirs would run as the person.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    find_in(program, &path, executable)
}

/// The first `program` in `path`'s absolute folders that `usable` takes.
fn find_in(
    program: &str,
    path: &std::ffi::OsStr,
    usable: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| usable(candidate))
}

/// What every run of one caller shares: its limits and the secrets its children never see.
#[derive(Debug, Clone)]
pub struct Policy {
    pub limits: Limits,
    /// Added to every spec's `env_remove` (the config's `env_remove`).
    pub env_remove: Vec<String>,
}

impl Policy {
    /// The same policy with a timeout no longer than `timeout`.
    pub fn within(&self, timeout: Duration) -> Policy {
        Policy {
            limits: Limits {
                timeout: timeout.min(self.limits.timeout),
                ..self.limits
            },
            env_remove: self.env_remove.clone(),
        }
    }

    /// [`run`] under this policy.
    pub fn run<'a>(
        &'a self,
        mut spec: CommandSpec,
        cancel: &'a CancellationToken,
        on_line: &'a mut (dyn FnMut(Stream, &str) + Send),
    ) -> BoxFuture<'a, Result<ProcessOutput, RunError>> {
        async move {
            spec.env_remove.extend(self.env_remove.iter().cloned());
            run(&spec, &self.limits, cancel, on_line).await
        }
        .boxed()
    }

    /// [`Policy::run`] for blocking code: on a thread and a runtime of its own, so that it
    /// works on a blocking thread and on a runtime's worker alike.
    pub fn run_blocking(
        &self,
        spec: CommandSpec,
        cancel: &CancellationToken,
        on_line: &mut (dyn FnMut(Stream, &str) + Send),
    ) -> Result<ProcessOutput, RunError> {
        std::thread::scope(|scope| {
            let runner = scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|source| RunError::Spawn {
                        program: spec.program.clone(),
                        source,
                    })?;
                runtime.block_on(self.run(spec.clone(), cancel, on_line))
            });
            runner
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

fn spawn(spec: &CommandSpec, tag: &RunTag) -> Result<Child, RunError> {
    // A missing cwd also fails with ENOENT: tell it apart from a missing program up front.
    if !spec.cwd.is_dir() {
        let message = format!("working directory {} does not exist", spec.cwd.display());
        return Err(RunError::Spawn {
            program: spec.program.clone(),
            source: io::Error::new(io::ErrorKind::NotFound, message),
        });
    }
    // A bare name is looked up here, in PATH's absolute folders alone, not by exec in the
    // child's working directory.
    let program = match spec.program.contains('/') {
        true => PathBuf::from(&spec.program),
        false => find_program(&spec.program).ok_or_else(|| RunError::NotFound {
            program: spec.program.clone(),
        })?,
    };
    let mut command = Command::new(program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if spec.clear_env {
        command.env_clear();
    }
    env_policy::scrub(&mut command, &spec.env_remove);
    command.envs(spec.env_set.iter().map(|(name, value)| (name, value)));
    command.env(RUN_TAG_VAR, tag.value());
    command.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => RunError::NotFound {
            program: spec.program.clone(),
        },
        _ => RunError::Spawn {
            program: spec.program.clone(),
            source,
        },
    })
}

async fn write_stdin(pipe: Option<ChildStdin>, bytes: Option<&[u8]>) {
    let (Some(mut pipe), Some(bytes)) = (pipe, bytes) else {
        return;
    };
    if let Err(error) = pipe.write_all(bytes).await {
        tracing::debug!("the child did not read all of its stdin: {error}");
    }
    // Dropping `pipe` closes the child's stdin.
}

enum ChildEnd {
    Exited(io::Result<ExitStatus>),
    Stopped(Termination),
}

async fn wait_for_exit_or_stop(
    child: &mut Child,
    pump: &mut Pump,
    stdin: impl Future<Output = ()>,
    timeout: Duration,
    cancel: &CancellationToken,
    on_line: &mut OnLine<'_>,
) -> ChildEnd {
    let deadline = sleep_until(deadline_after(timeout));
    tokio::pin!(deadline, stdin);
    let mut stdin_written = false;
    loop {
        tokio::select! {
            status = child.wait() => return ChildEnd::Exited(status),
            () = &mut deadline => return ChildEnd::Stopped(Termination::TimedOut),
            () = cancel.cancelled() => return ChildEnd::Stopped(Termination::Cancelled),
            () = &mut stdin, if !stdin_written => stdin_written = true,
            () = pump.step(on_line), if pump.is_open() => {}
        }
    }
}

/// The run's escalation up to SIGKILL ([`ProcessTree::terminate`]), still reading output
/// meanwhile. The caller sends SIGKILL afterwards either way.
async fn terminate_gracefully(
    tree: &ProcessTree,
    child: &mut Child,
    pump: &mut Pump,
    grace: Duration,
    on_line: &mut OnLine<'_>,
) {
    let terminated = tree.terminate(Escalation::sigterm(grace));
    tokio::pin!(terminated);
    let mut leader_reaped = false;
    loop {
        tokio::select! {
            _ = &mut terminated => return,
            _ = child.wait(), if !leader_reaped => leader_reaped = true,
            () = pump.step(on_line), if pump.is_open() => {}
        }
    }
}

fn termination_of(status: io::Result<ExitStatus>) -> Termination {
    match status {
        Ok(status) => status
            .code()
            .map(Termination::Exited)
            .or(status.signal().map(Termination::Signaled))
            .unwrap_or(Termination::Exited(-1)),
        Err(error) => {
            tracing::error!("could not wait for the child: {error}");
            Termination::Exited(-1)
        }
    }
}

fn deadline_after(duration: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}
