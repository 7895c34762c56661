//! One session drydock serves: its terminal (the core), the backend its bytes go through,
//! what it was started as, and when an agent last used it.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::backend::Backend;
use super::core::TerminalCore;
use super::reports::SessionInfo;
use crate::millis::millis;

pub(super) struct Session {
    pub backend: Backend,
    pub core: Arc<TerminalCore>,
    pub cwd: Option<PathBuf>,
    /// The command it was created with, or the program a tmux pane runs.
    pub command: Option<String>,
    /// Its shell sends shell-integration marks.
    pub marks: bool,
    last_used: Mutex<Instant>,
}

impl Session {
    pub(super) fn new(
        core: Arc<TerminalCore>,
        backend: Backend,
        cwd: Option<PathBuf>,
        command: Option<String>,
        marks: bool,
    ) -> Session {
        Session {
            backend,
            core,
            cwd,
            command,
            marks,
            last_used: Mutex::new(Instant::now()),
        }
    }

    /// An agent used it now.
    pub(super) fn touch(&self) {
        *self.last_used.lock().expect("session lock") = Instant::now();
    }

    pub(super) fn unused_for(&self) -> Duration {
        self.last_used.lock().expect("session lock").elapsed()
    }

    pub(super) fn write(&self, bytes: &[u8]) -> io::Result<()> {
        self.backend.write(bytes)
    }

    pub(super) fn alive(&self) -> bool {
        self.backend.alive(&self.core)
    }

    pub(super) fn is_users(&self) -> bool {
        self.backend.is_users()
    }

    /// The session as terminal_list shows it; `tmux_socket` is drydock's tmux server.
    pub(super) fn info(&self, name: &str, tmux_socket: &str) -> SessionInfo {
        let (rows, cols) = self.core.size();
        SessionInfo {
            name: name.to_string(),
            backend: self.backend.kind().to_string(),
            pid: self.backend.pid(),
            cwd: self.cwd.as_ref().map(|p| p.display().to_string()),
            command: self.command.clone(),
            rows,
            cols,
            alive: self.alive(),
            exit_code: self.core.life().exit_code(),
            marks: self.marks,
            idle_ms: Some(millis(self.unused_for())),
            generation: Some(self.core.generation()),
            attach: self.backend.attach_command(tmux_socket),
        }
    }
}
