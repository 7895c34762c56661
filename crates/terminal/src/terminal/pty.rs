//! drydock's own terminals: a program on a pseudo-terminal (portable-pty), its output read
//! continuously by a thread into a `TerminalCore`, and the whole session killed on `kill`
//! or drop.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use nix::sys::signal::Signal;
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use tokio_util::sync::CancellationToken;

use super::core::{ExitStatus, Fallback, RunError, RunOutcome, TerminalCore};
use super::pump::Pump;
use crate::process::env_policy;
use crate::process::procfs::ProcStat;
use crate::process::{Escalation, ProcessTree};

/// Time between SIGHUP/SIGTERM and SIGKILL when a session is killed.
pub const KILL_GRACE: Duration = Duration::from_millis(500);
/// How a session ends: a hang-up as when its terminal closes, SIGCONT for stopped jobs,
/// SIGTERM, then SIGKILL.
const ESCALATION: Escalation = Escalation {
    first: &[Signal::SIGHUP, Signal::SIGCONT, Signal::SIGTERM],
    grace: KILL_GRACE,
};
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum PtyError {
    #[error("no command to start")]
    EmptyCommand,
    #[error("working directory {0} does not exist or is not a directory")]
    BadCwd(PathBuf),
    #[error("could not open a pseudo-terminal: {0}")]
    OpenPty(String),
    #[error("could not start {program}: {reason}")]
    Spawn { program: String, reason: String },
    #[error("the terminal's process has exited")]
    Exited,
    #[error("terminal I/O failed: {0}")]
    Io(#[from] io::Error),
    #[error("cancelled")]
    Cancelled,
}

#[derive(Debug, Clone)]
pub struct PtySpawn {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (and overriding) drydock's own environment.
    pub env: Vec<(String, String)>,
    /// Taken out of drydock's own environment (secrets: `Config::env_remove`); `env` wins.
    pub env_remove: Vec<String>,
    pub rows: u16,
    pub cols: u16,
    /// Lines of scrollback kept by the screen model.
    pub scrollback: usize,
    /// The program is a shell started with drydock's integration
    /// (`ShellLaunch::marks`): `run` waits for its first prompt.
    pub expect_marks: bool,
}

pub struct PtySession {
    core: Arc<TerminalCore>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pid: u32,
    /// The program as it was when it started: the leader of the session to end.
    leader: Option<ProcStat>,
    exited: Arc<AtomicBool>,
    ended: AtomicBool,
}

impl PtySession {
    pub fn spawn(spawn: PtySpawn) -> Result<PtySession, PtyError> {
        let program = spawn.argv.first().ok_or(PtyError::EmptyCommand)?.clone();
        if !spawn.cwd.is_dir() {
            return Err(PtyError::BadCwd(spawn.cwd));
        }
        let rows = spawn.rows.max(1);
        let cols = spawn.cols.max(1);
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|error| PtyError::OpenPty(format!("{error:#}")))?;
        let mut command = CommandBuilder::from_argv(spawn.argv.iter().map(Into::into).collect());
        command.cwd(&spawn.cwd);
        // The builder starts from a snapshot of drydock's environment.
        env_policy::scrub(&mut command, &spawn.env_remove);
        for (key, value) in &spawn.env {
            command.env(key, value);
        }
        let mut child = pair
            .slave
            .spawn_command(command)
            .map_err(|error| PtyError::Spawn {
                program: program.clone(),
                reason: format!("{error:#}"),
            })?;
        // Only the child holds the slave side now: its exit gives the reader EOF.
        drop(pair.slave);
        let pid = child.process_id().unwrap_or(0);
        // Read before the program can exit: the waiter thread below reaps it.
        let leader = i32::try_from(pid).ok().and_then(ProcStat::read);
        let master = pair.master;
        let mut reader = master
            .try_clone_reader()
            .map_err(|error| PtyError::OpenPty(format!("{error:#}")))?;
        let writer = master
            .take_writer()
            .map_err(|error| PtyError::OpenPty(format!("{error:#}")))?;
        let writer = Arc::new(Mutex::new(writer));

        let core = TerminalCore::new(rows, cols, spawn.scrollback);
        core.set_expect_marks(spawn.expect_marks);
        let answers = writer.clone();
        core.answer_queries(move |reply| {
            let mut writer = answers.lock().unwrap_or_else(|e| e.into_inner());
            // A program that stopped reading its input gets no answer, as in any terminal.
            let _ = writer.write_all(reply).and_then(|()| writer.flush());
        });

        let (reader_done, reader_finished) = std::sync::mpsc::channel::<()>();
        let pump = Pump::start(core.clone(), format!("pty-feeder-{pid}"))?;
        std::thread::Builder::new()
            .name(format!("pty-reader-{pid}"))
            .spawn(move || {
                let mut buffer = vec![0u8; READ_CHUNK];
                loop {
                    match reader.read(&mut buffer) {
                        Ok(0) => break,
                        Ok(n) => pump.push(&buffer[..n]),
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        // EIO once every holder of the slave side is gone.
                        Err(_) => break,
                    }
                }
                pump.finish();
                let _ = reader_done.send(());
            })?;

        let exited = Arc::new(AtomicBool::new(false));
        let waiter_exited = exited.clone();
        let waiter_core = core.clone();
        std::thread::Builder::new()
            .name(format!("pty-waiter-{pid}"))
            .spawn(move || {
                let status = child.wait();
                waiter_exited.store(true, Ordering::SeqCst);
                // Let the reader drain what the program printed last; a background process
                // still holding the terminal must not delay the news for long.
                let _ = reader_finished.recv_timeout(Duration::from_millis(500));
                waiter_core.exited(match status {
                    Ok(status) if status.signal().is_none() => {
                        ExitStatus::Code(status.exit_code() as i32)
                    }
                    _ => ExitStatus::Unknown,
                });
            })?;

        Ok(PtySession {
            core,
            master: Mutex::new(master),
            writer,
            pid,
            leader,
            exited,
            ended: AtomicBool::new(false),
        })
    }

    pub fn core(&self) -> Arc<TerminalCore> {
        self.core.clone()
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The program started is still running (its session may outlive it briefly).
    pub fn is_alive(&self) -> bool {
        !self.exited.load(Ordering::SeqCst)
    }

    /// Writes raw bytes to the program's input.
    pub fn write(&self, bytes: &[u8]) -> Result<(), PtyError> {
        if !self.is_alive() {
            return Err(PtyError::Exited);
        }
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        writer.write_all(bytes)?;
        writer.flush()?;
        Ok(())
    }

    /// Resizes the PTY (the program gets SIGWINCH) and the screen model.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), PtyError> {
        let rows = rows.max(1);
        let cols = cols.max(1);
        self.master
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|error| PtyError::Io(io::Error::other(format!("{error:#}"))))?;
        self.core.resize(rows, cols);
        Ok(())
    }

    /// `TerminalCore::run` with this session's input.
    pub fn run<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        fallback: Fallback,
        output_cap: usize,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<RunOutcome, PtyError>> {
        async move {
            if !self.is_alive() {
                return Err(PtyError::Exited);
            }
            let input = |bytes: &[u8]| -> io::Result<()> {
                self.write(bytes).map_err(|error| match error {
                    PtyError::Io(error) => error,
                    other => io::Error::other(other.to_string()),
                })
            };
            self.core
                .run(&input, command, timeout, fallback, output_cap, cancel)
                .await
                .map_err(|error| match error {
                    RunError::Input(error) => PtyError::Io(error),
                    RunError::Cancelled(_) => PtyError::Cancelled,
                })
        }
        .boxed()
    }

    /// Ends every process of the session (the program is a session leader; background
    /// jobs have their own process groups in it), and their descendants: SIGHUP, SIGCONT and
    /// SIGTERM, then SIGKILL after `KILL_GRACE`. Blocks until they are gone (at most about
    /// 3 s): call it from a blocking thread.
    pub fn kill(&self) {
        if let Some(tree) = self.take_tree() {
            tree.end_blocking(ESCALATION);
        }
    }

    /// The session's processes, the first time it is asked for.
    fn take_tree(&self) -> Option<ProcessTree> {
        let leader = self.leader?;
        let first = !self.ended.swap(true, Ordering::SeqCst);
        first.then(|| ProcessTree::of_sessions([leader]))
    }
}

impl Drop for PtySession {
    /// Ends the session on a thread of its own: a drop may run on an async thread, where
    /// the grace period must not block.
    fn drop(&mut self) {
        let Some(tree) = self.take_tree() else {
            return;
        };
        // The members are listed now, while the session's links are intact.
        tree.members();
        let tree = tree.kill_on_drop();
        let ender = std::thread::Builder::new().name(format!("pty-end-{}", self.pid));
        let _ = ender.spawn(move || tree.end_blocking(ESCALATION));
        // If the thread could not start, the tree was dropped armed: SIGKILL at once.
    }
}

#[cfg(test)]
mod tests;
