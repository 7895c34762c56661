//! How bytes reach a session's terminal, and what ending, resizing or renaming it does: a
//! PTY of drydock's own, or a tmux pane (on drydock's tmux server or the user's) that a
//! control client listens to. Every difference between the two is decided here.

use std::io;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::TerminalError;
use super::core::TerminalCore;
use super::pty::{PtyError, PtySession};
use super::tmux::{ControlClient, Tmux};

/// tmux sessions drydock creates are named with this prefix on its own server.
pub(super) const TMUX_PREFIX: &str = "drydock-";

type Result<T, E = TerminalError> = std::result::Result<T, E>;

// One per session, behind an Arc: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Backend {
    Pty(Arc<PtySession>),
    Tmux(TmuxPane),
}

/// A tmux pane drydock listens to (through a control client) and types into.
pub(super) struct TmuxPane {
    pub tmux: Tmux,
    /// tmux's id of the pane, e.g. "%3".
    pub pane: String,
    /// The tmux session that holds it (renamed with it when drydock owns the session).
    tmux_session: Mutex<String>,
    /// Kept for as long as the pane is served: it delivers the pane's output.
    client: ControlClient,
    /// Ordered writes from sync callers (TerminalCore::run's input).
    writer: mpsc::UnboundedSender<Vec<u8>>,
    owns: Owns,
}

/// What of tmux a session is, and so what killing it removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owns {
    /// A pane of the user's own that drydock attached to: never killed, renamed or resized.
    Nothing,
    /// A tmux session drydock created (on its own server).
    Session,
    /// A window drydock created in a tmux session.
    Window,
    /// A pane drydock split off another.
    Pane,
}

impl TmuxPane {
    pub(super) fn new(
        tmux: Tmux,
        pane: String,
        tmux_session: String,
        client: ControlClient,
        writer: mpsc::UnboundedSender<Vec<u8>>,
        owns: Owns,
    ) -> TmuxPane {
        TmuxPane {
            tmux,
            pane,
            tmux_session: Mutex::new(tmux_session),
            client,
            writer,
            owns,
        }
    }

    pub(super) fn tmux_session(&self) -> String {
        self.tmux_session.lock().expect("tmux session lock").clone()
    }

    async fn end(&self) -> Result<()> {
        match self.owns {
            Owns::Session => self.tmux.kill_session(&self.tmux_session()).await?,
            Owns::Window => self.tmux.kill_window(&self.pane).await?,
            Owns::Pane => self.tmux.kill_pane(&self.pane).await?,
            Owns::Nothing => {}
        }
        Ok(())
    }
}

impl Backend {
    pub(super) fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Backend::Pty(pty) => pty.write(bytes).map_err(|e| match e {
                PtyError::Io(e) => e,
                other => io::Error::other(other.to_string()),
            }),
            Backend::Tmux(pane) => pane
                .writer
                .send(bytes.to_vec())
                .map_err(|_| io::Error::other("the tmux pane is gone")),
        }
    }

    /// The program still runs (`core` knows when it ended).
    pub(super) fn alive(&self, core: &TerminalCore) -> bool {
        match self {
            Backend::Pty(pty) => pty.is_alive(),
            Backend::Tmux(pane) => pane.client.is_alive() && !core.has_exited(),
        }
    }

    /// "pty", "tmux", or "user_tmux" (a pane of the user's own tmux server).
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Backend::Pty(_) => "pty",
            Backend::Tmux(pane) if pane.owns == Owns::Nothing => "user_tmux",
            Backend::Tmux(_) => "tmux",
        }
    }

    /// A pane of the user's own tmux server: drydock only reads it, sends to it and
    /// interrupts it.
    pub(super) fn is_users(&self) -> bool {
        matches!(self, Backend::Tmux(pane) if pane.owns == Owns::Nothing)
    }

    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Backend::Pty(pty) => Some(pty.pid()),
            Backend::Tmux(_) => None,
        }
    }

    /// The tmux pane, when the session is one: windows and panes open next to it.
    pub(super) fn tmux_pane(&self) -> Option<&TmuxPane> {
        match self {
            Backend::Tmux(pane) => Some(pane),
            Backend::Pty(_) => None,
        }
    }

    /// How the user watches a session of drydock's tmux server (`socket_name`).
    pub(super) fn attach_command(&self, socket_name: &str) -> Option<String> {
        let pane = self.tmux_pane()?;
        (pane.owns != Owns::Nothing && pane.tmux.socket().is_owned())
            .then(|| format!("tmux -L {socket_name} attach -t {}", pane.tmux_session()))
    }

    pub(super) async fn resize(&self, core: &TerminalCore, rows: u16, cols: u16) -> Result<()> {
        match self {
            Backend::Pty(pty) => pty.resize(rows, cols)?,
            Backend::Tmux(pane) => {
                pane.tmux.resize_pane(&pane.pane, rows, cols).await?;
                core.resize(rows, cols);
            }
        }
        Ok(())
    }

    /// A tmux session drydock created takes the tmux name that goes with the session's
    /// new `name`; nothing else of a backend carries the name.
    pub(super) async fn rename(&self, name: &str) -> Result<()> {
        if let Backend::Tmux(pane) = self
            && pane.owns == Owns::Session
        {
            let renamed = format!("{TMUX_PREFIX}{name}");
            pane.tmux
                .rename_session(&pane.tmux_session(), &renamed)
                .await?;
            *pane.tmux_session.lock().expect("tmux session lock") = renamed;
        }
        Ok(())
    }

    /// Ends what drydock started: every process of a PTY session (waiting, up to a few
    /// seconds, until they are gone), or the tmux session, window or pane it created. A
    /// user's pane is left as it is.
    pub(super) async fn end(&self) -> Result<()> {
        match self {
            Backend::Pty(pty) => {
                let pty = pty.clone();
                let _ = tokio::task::spawn_blocking(move || pty.kill()).await;
                Ok(())
            }
            Backend::Tmux(pane) => pane.end().await,
        }
    }

    /// Ends a PTY session now, blocking (the server stops: PTY sessions cannot outlive it);
    /// tmux sessions stay.
    pub(super) fn end_pty_blocking(&self) {
        if let Backend::Pty(pty) = self {
            pty.kill();
        }
    }
}
