//! drydock's own terminals: a program on a pseudo-terminal (portable-pty), its output read
//! continuously by a thread into a `TerminalCore`, and the whole session killed on `kill`
//! or drop.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

use super::core::{Fallback, RunOutcome, TerminalCore};
use super::keys::{Key, KeyError};

/// Time between SIGHUP/SIGTERM and SIGKILL when a session is killed.
pub const KILL_GRACE: Duration = Duration::from_millis(500);
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
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
    #[error(transparent)]
    Key(#[from] KeyError),
}

#[derive(Debug, Clone)]
pub struct PtySpawn {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (and overriding) drydock's own environment.
    pub env: Vec<(String, String)>,
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
    writer: Mutex<Box<dyn Write + Send>>,
    pid: u32,
    exited: Arc<AtomicBool>,
}

impl PtySession {
    pub fn spawn(spawn: PtySpawn) -> Result<PtySession, TerminalError> {
        let program = spawn.argv.first().ok_or(TerminalError::EmptyCommand)?.clone();
        if !spawn.cwd.is_dir() {
            return Err(TerminalError::BadCwd(spawn.cwd));
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
            .map_err(|error| TerminalError::OpenPty(format!("{error:#}")))?;
        let mut command = CommandBuilder::from_argv(spawn.argv.iter().map(Into::into).collect());
        command.cwd(&spawn.cwd);
        for (key, value) in &spawn.env {
            command.env(key, value);
        }
        let mut child =
            pair.slave
                .spawn_command(command)
                .map_err(|error| TerminalError::Spawn {
                    program: program.clone(),
                    reason: format!("{error:#}"),
                })?;
        // Only the child holds the slave side now: its exit gives the reader EOF.
        drop(pair.slave);
        let pid = child.process_id().unwrap_or(0);
        let master = pair.master;
        let mut reader = master
            .try_clone_reader()
            .map_err(|error| TerminalError::OpenPty(format!("{error:#}")))?;
        let writer = master
            .take_writer()
            .map_err(|error| TerminalError::OpenPty(format!("{error:#}")))?;

        let core = TerminalCore::new(rows, cols, spawn.scrollback);
        core.set_expect_marks(spawn.expect_marks);

        let (reader_done, reader_finished) = std::sync::mpsc::channel::<()>();
        let reader_core = core.clone();
        std::thread::Builder::new()
            .name(format!("pty-reader-{pid}"))
            .spawn(move || {
                let mut buffer = vec![0u8; READ_CHUNK];
                loop {
                    match reader.read(&mut buffer) {
                        Ok(0) => break,
                        Ok(n) => reader_core.feed(&buffer[..n]),
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        // EIO once every holder of the slave side is gone.
                        Err(_) => break,
                    }
                }
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
                let exit_code = match status {
                    Ok(status) if status.signal().is_none() => Some(status.exit_code() as i32),
                    _ => None,
                };
                waiter_core.closed(exit_code);
            })?;

        Ok(PtySession {
            core,
            master: Mutex::new(master),
            writer: Mutex::new(writer),
            pid,
            exited,
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
    pub fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
        if !self.is_alive() {
            return Err(TerminalError::Exited);
        }
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        writer.write_all(bytes)?;
        writer.flush()?;
        Ok(())
    }

    pub fn send_text(&self, text: &str) -> Result<(), TerminalError> {
        self.write(text.as_bytes())
    }

    /// Sends keys as the terminal would (arrows follow the program's cursor-key mode).
    pub fn send_keys(&self, keys: &[Key]) -> Result<(), TerminalError> {
        let application_cursor = self.core.application_cursor();
        let bytes: Vec<u8> = keys
            .iter()
            .flat_map(|key| key.bytes_for(application_cursor))
            .collect();
        self.write(&bytes)
    }

    /// C-c as a key (byte 0x03): the terminal turns it into SIGINT for the foreground job.
    pub fn interrupt(&self) -> Result<(), TerminalError> {
        self.send_keys(&[Key::Ctrl('c')])
    }

    /// Resizes the PTY (the program gets SIGWINCH) and the screen model.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), TerminalError> {
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
            .map_err(|error| TerminalError::Io(io::Error::other(format!("{error:#}"))))?;
        self.core.resize(rows, cols);
        Ok(())
    }

    /// `TerminalCore::run` with this session's input.
    pub async fn run(
        &self,
        command: &str,
        timeout: Duration,
        fallback: Fallback,
    ) -> Result<RunOutcome, TerminalError> {
        if !self.is_alive() {
            return Err(TerminalError::Exited);
        }
        let input = |bytes: &[u8]| -> io::Result<()> {
            self.write(bytes).map_err(|error| match error {
                TerminalError::Io(error) => error,
                other => io::Error::other(other.to_string()),
            })
        };
        Ok(self.core.run(&input, command, timeout, fallback).await?)
    }

    /// Ends every process of the session (the program is a session leader; background
    /// jobs have their own process groups in it): SIGHUP and SIGTERM, then SIGKILL after
    /// `KILL_GRACE`. Blocks until they are gone (at most about 3 s). Processes that left
    /// the session themselves (`setsid`, daemons) are not followed.
    pub fn kill(&self) {
        kill_session(self.pid);
    }
}

impl Drop for PtySession {
    fn drop(&mut self) {
        kill_session(self.pid);
    }
}

/// Processes of session `sid` that are not zombies.
pub fn session_processes(sid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parens.
            let Some(after_comm) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
                return false;
            };
            let fields: Vec<&str> = after_comm.split_whitespace().collect();
            fields.len() > 3 && fields[0] != "Z" && fields[0] != "X" && fields[3] == sid.to_string()
        })
        .collect()
}

fn kill_session(sid: u32) {
    if sid == 0 {
        return;
    }
    let signal_all = |signals: &[Signal]| {
        let members = session_processes(sid);
        for pid in &members {
            for signal in signals {
                let _ = kill(Pid::from_raw(*pid as i32), *signal);
            }
        }
        members.is_empty()
    };
    if signal_all(&[Signal::SIGHUP, Signal::SIGCONT, Signal::SIGTERM]) {
        return;
    }
    let wait_empty = |limit: Duration| {
        let started = Instant::now();
        while started.elapsed() < limit {
            if session_processes(sid).is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if wait_empty(KILL_GRACE) {
        return;
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if signal_all(&[Signal::SIGKILL]) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!(sid, "processes of a killed terminal session are still running");
}
