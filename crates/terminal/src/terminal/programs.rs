//! What runs in the terminals, for the capabilities that watch programs in them (agents):
//! each terminal's first process, and what a terminal shows at one moment.

use super::core::Observed;
use super::session::Session;
use super::tmux::PaneInfo;
use super::{Result, Terminals};
use futures::FutureExt;
use futures::future::BoxFuture;

/// A terminal and the process it runs: a PTY's program, a tmux pane's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalProgram {
    /// The name the terminal tools address it by.
    pub name: String,
    pub pid: u32,
    /// A pane of the user's own tmux server (drydock never kills it unasked).
    pub users: bool,
}

impl Terminals {
    /// Every terminal drydock serves or can reach with the process it runs: its own sessions
    /// and every live pane of the user's tmux server, attached or not. Two tmux calls at
    /// most; nothing is captured.
    pub fn programs(&self) -> BoxFuture<'_, Vec<TerminalProgram>> {
        async move {
            let own_panes = self.opener.own_panes().await;
            let mut programs: Vec<TerminalProgram> = self
                .registry
                .all()
                .into_iter()
                .filter(|(name, _)| !name.starts_with("tmux:"))
                .filter_map(|(name, session)| {
                    let pid = program_pid(&session, &own_panes)?;
                    Some(TerminalProgram {
                        name,
                        pid,
                        users: false,
                    })
                })
                .collect();
            programs.extend(
                self.opener
                    .user_panes()
                    .await
                    .into_iter()
                    .filter(|pane| !pane.dead)
                    .map(|pane| TerminalProgram {
                        name: pane.address(),
                        pid: pane.pid,
                        users: true,
                    }),
            );
            programs
        }
        .boxed()
    }

    /// The process drydock's own terminal `name` runs (a PTY's program, a tmux pane's
    /// process), if it is one and still there.
    pub fn program_of<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<u32>> {
        async move {
            let session = self.registry.get(name)?;
            match session.backend.pid() {
                Some(pid) => Some(pid),
                None => program_pid(&session, &self.opener.own_panes().await),
            }
        }
        .boxed()
    }

    /// What terminal `name` shows and what its program reported; a pane of the user's tmux
    /// server is attached on first use, and then follows its output like drydock's own. It
    /// counts as using the session: a session an agent runs in is not idle.
    pub fn observe<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Observed>> {
        async move { Ok(self.session(name).await?.core.observe()) }.boxed()
    }

    /// Writes `bytes` to terminal `name`'s program, as typed keys (the agent tools' answers
    /// and prompts: they decide what to send and check what it did).
    pub fn write<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        async move {
            let session = self.session(name).await?;
            session.touch();
            session.write(bytes)?;
            Ok(())
        }
        .boxed()
    }
}

/// The process `session` runs: a PTY's program, or its pane's process among `own_panes`.
fn program_pid(session: &Session, own_panes: &[PaneInfo]) -> Option<u32> {
    session.backend.pid().or_else(|| {
        let pane = session.backend.tmux_pane()?;
        own_panes.iter().find(|p| p.id == pane.pane).map(|p| p.pid)
    })
}
