//! Terminals agents can drive: drydock's own PTY sessions and tmux panes, each with a
//! screen model, and commands whose end is known from shell-integration marks.
//!
//! The capability's faces: [`Terminals`] (here) takes the tools' [`requests`] and gives
//! back their [`reports`]; what may go wrong is a [`TerminalError`]. Below it, the
//! `registry` keeps the sessions by name, a `session` is a terminal and the `backend` its
//! bytes go through (a PTY or a tmux pane), and the `opener` starts or attaches them.
//!
//! Output flows one way whatever the backend: bytes arrive (a PTY reader thread, tmux's
//! `%output` events) and are fed to a `TerminalCore`, which keeps the screen, the
//! scrollback, where the shell stands and a generation counter that waiters watch.
//! drydock's own PTY also answers what the program asks its terminal (`queries`); tmux
//! does that for its panes.

mod backend;
mod budget;
mod capture;
pub mod command_log;
pub mod core;
#[doc(hidden)]
pub mod fuzzing;
mod keys;
mod lifecycle;
mod marks;
mod opener;
mod operations;
mod programs;
pub mod pty;
mod pump;
mod queries;
mod registry;
pub mod reports;
pub mod requests;
mod screen;
mod session;
pub mod shell_integration;
mod shell_state;
#[cfg(test)]
mod tests;
mod tmux;

use std::io;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use self::core::TerminalCore;
use crate::config::Config;
use crate::events::Events;
use crate::workspace::{Workspace, WorkspaceError};
use budget::{last_lines_within, lines_within};
use keys::KeyError;
use opener::Opener;
use pty::PtyError;
use registry::Registry;
use session::Session;
use tmux::TmuxError;

pub use programs::TerminalProgram;

/// Why a terminal tool could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Pty(#[from] PtyError),
    #[error(transparent)]
    Tmux(#[from] TmuxError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("no session named {name:?}; sessions: {known}")]
    UnknownSession { name: String, known: String },
    #[error("a session named {0:?} already exists")]
    DuplicateName(String),
    #[error("invalid session name {0:?}: use 1-64 letters, digits, `-`, `_` or `.`")]
    InvalidName(String),
    #[error(
        "{0} sessions are open, the configured maximum (terminal.max_sessions): kill one first"
    )]
    TooMany(usize),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("the terminal's process has exited")]
    Exited,
    #[error("writing to the terminal failed: {0}")]
    Io(#[from] io::Error),
    #[error(
        "{0} is a pane of your own tmux server: drydock only reads it, sends to it and interrupts it"
    )]
    NotOurs(String),
    /// The caller cancelled the call; a command it typed keeps running.
    #[error("cancelled")]
    Cancelled,
}

impl From<core::Cancelled> for TerminalError {
    fn from(_: core::Cancelled) -> Self {
        TerminalError::Cancelled
    }
}

impl From<core::RunError> for TerminalError {
    fn from(error: core::RunError) -> Self {
        match error {
            core::RunError::Input(error) => TerminalError::Io(error),
            core::RunError::Cancelled(_) => TerminalError::Cancelled,
        }
    }
}

type Result<T, E = TerminalError> = std::result::Result<T, E>;

/// The sessions drydock serves, by name: its own PTY sessions, sessions on its tmux server
/// (found again after a restart), and the user's own tmux panes (`tmux:SESSION:WINDOW.PANE`).
pub struct Terminals {
    config: Arc<Config>,
    workspace: Workspace,
    registry: Arc<Registry>,
    opener: Opener,
    /// One create at a time, so a name checked free is still free when it is taken.
    creating: tokio::sync::Mutex<()>,
}

impl Terminals {
    pub fn new(config: Arc<Config>, events: Arc<Events>) -> Arc<Self> {
        Arc::new(Self {
            workspace: Workspace::new(config.allowed_roots.clone())
                .with_managed(config.task_dirs().worktrees()),
            opener: Opener::new(&config),
            config,
            registry: Arc::new(Registry::new(events)),
            creating: tokio::sync::Mutex::new(()),
        })
    }

    /// Finds the tmux sessions a previous drydock left on its server and serves them again.
    pub fn reconcile(&self) -> BoxFuture<'_, usize> {
        async move {
            let mut adopted = 0;
            for tmux_session in self.opener.leftover_sessions().await {
                let name = &tmux_session[backend::TMUX_PREFIX.len()..];
                match self.opener.adopt(&tmux_session).await {
                    Ok(session) => {
                        if session.marks {
                            // An empty command line makes the idle shell print a fresh prompt
                            // with its marks, so the next run knows where it stands.
                            let _ = session.write(b"\r");
                        }
                        self.registry.insert(name, Arc::new(session));
                        adopted += 1;
                    }
                    Err(error) => {
                        tracing::warn!("could not adopt tmux session {tmux_session}: {error}")
                    }
                }
            }
            adopted
        }
        .boxed()
    }

    /// Kills idle sessions now and then, until the server stops.
    pub fn start_reaper(&self, shutdown: CancellationToken) {
        self.registry
            .start_reaper(self.config.terminal.idle_timeout, shutdown);
    }

    /// Ends every PTY session (they cannot outlive the server); tmux sessions stay. Blocks
    /// until their processes are gone.
    pub fn shutdown(&self) {
        for session in self.registry.take_all() {
            session.backend.end_pty_blocking();
        }
    }

    /// A session by name, marked as used; a `tmux:SESSION:WINDOW.PANE` of the user's server
    /// is attached on first use.
    async fn session(&self, name: &str) -> Result<Arc<Session>> {
        let session = self.watched(name).await?;
        session.touch();
        Ok(session)
    }

    /// [`Terminals::session`] for watching and reading, which is not using it: an idle
    /// session stays reapable while agents and subscriptions look at it.
    async fn watched(&self, name: &str) -> Result<Arc<Session>> {
        if let Some(session) = self.registry.get(name) {
            return Ok(session);
        }
        if !name.starts_with("tmux:") {
            return Err(self.registry.unknown(name));
        }
        let session = Arc::new(self.opener.attach_users_pane(name).await?);
        self.registry.insert(name, session.clone());
        Ok(session)
    }

    /// A session's terminal, to watch for changes (resource subscriptions).
    pub fn core_of<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Arc<TerminalCore>>> {
        async move { Ok(self.watched(name).await?.core.clone()) }.boxed()
    }

    /// The text of a session's screen or scrollback, for resources, within the configured
    /// output cap.
    pub fn read_text<'a>(
        &'a self,
        name: &'a str,
        scrollback: bool,
    ) -> BoxFuture<'a, Result<String>> {
        async move {
            let session = self.session(name).await?;
            let cap = self.config.terminal.output_cap;
            Ok(if scrollback {
                let kept = session.core.lines(0, usize::MAX);
                let lines: Vec<&str> = kept.lines.iter().map(String::as_str).collect();
                lines_within(&lines, kept.offset, cap)
            } else {
                let (screen, top_line) = session.core.screen_and_top_line(false);
                last_lines_within(&screen, top_line, None, cap)
            })
        }
        .boxed()
    }

    pub fn names(&self) -> Vec<String> {
        self.registry.names()
    }

    /// How the user watches session `name`, when it is one of drydock's tmux sessions.
    pub fn attach_command(&self, name: &str) -> Option<String> {
        let session = self.registry.get(name)?;
        session
            .backend
            .attach_command(&self.config.terminal.tmux_socket)
    }
}
