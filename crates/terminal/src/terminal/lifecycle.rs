//! Sessions begin and end: terminal_create starts one, terminal_list shows them all (the
//! user's tmux panes too), terminal_manage kills, renames, resizes or interrupts one.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::core::WaitFor;
use super::keys::Key;
use super::registry::valid_name;
use super::reports::{CreateReport, Environment, ListReport, ManageReport, SessionInfo};
use super::requests::{
    BackendKind, CreateRequest, ListRequest, ManageAction, ManageRequest, Placement,
};
use super::session::Session;
use super::tmux::{self, PaneInfo};
use super::{Result, TerminalError, Terminals, last_lines_within};
use crate::call::Call;
use crate::workspace::PathArgument;

const DEFAULT_ROWS: u16 = 40;
const DEFAULT_COLS: u16 = 120;
/// How long a just-created shell gets to draw its first prompt before create returns.
const READY_WAIT: Duration = Duration::from_secs(5);

impl Terminals {
    /// Starts the user's shell in a new session. Cancelled while the shell starts, it
    /// ends the session again.
    pub fn create<'a>(
        &'a self,
        req: CreateRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<CreateReport>> {
        async move {
            let cwd = self.workspace.resolve_dir(PathArgument::Cwd, &req.cwd)?;
            if let Some(bad) = req
                .env
                .keys()
                .find(|k| k.is_empty() || k.contains(['=', '\0']))
            {
                return Err(TerminalError::InvalidArgument(format!(
                    "environment variable name {bad:?} is not valid (empty, or contains `=` or NUL)"
                )));
            }
            let _one_at_a_time = self.creating.lock().await;
            let name = match req.name {
                Some(name) => valid_name(name)?,
                None => self.registry.fresh_name(),
            };
            if self.registry.contains(&name) {
                return Err(TerminalError::DuplicateName(name));
            }
            let ours = self.registry.count_ours();
            if ours >= self.config.terminal.max_sessions {
                return Err(TerminalError::TooMany(ours));
            }
            let rows = req.rows.map_or(DEFAULT_ROWS, |rows| rows.get() as u16);
            let cols = req.cols.map_or(DEFAULT_COLS, |cols| cols.get() as u16);
            let shell = self
                .opener
                .new_shell(cwd, req.env, req.command.clone(), (rows, cols))?;
            let session = match (&req.place, req.backend) {
                (Some(_), Some(BackendKind::Pty)) => {
                    return Err(TerminalError::InvalidArgument(
                        "`place` opens a tmux window or pane: it needs backend tmux".into(),
                    ));
                }
                (Some(place), _) => {
                    let (Placement::Window { of } | Placement::Split { of, .. }) = place;
                    let anchor = self.session(of).await?;
                    let Some(pane) = anchor.backend.tmux_pane() else {
                        return Err(TerminalError::InvalidArgument(format!(
                            "{of} is a pty session: windows and panes can only be opened in tmux"
                        )));
                    };
                    self.opener.open_placed(place, pane, &shell).await?
                }
                (None, Some(BackendKind::Tmux)) => self.opener.open_tmux(&name, &shell).await?,
                (None, _) => self.opener.open_pty(&shell)?,
            };
            let session = Arc::new(session);
            if session.marks {
                // The first prompt, so a run right after create finds a ready shell.
                let first_prompt = WaitFor {
                    quiet_ms: Some(300),
                    max_wait: READY_WAIT,
                    ..Default::default()
                };
                if session.core.wait(first_prompt, &call.cancel).await.is_err() {
                    let _ = session.backend.end().await;
                    return Err(TerminalError::Cancelled);
                }
            }
            if let Some(command) = &req.command {
                session.write(format!("{command}\r").as_bytes())?;
            }
            let (screen, top_line) = session.core.screen_and_top_line(false);
            let screen =
                last_lines_within(&screen, top_line, None, self.config.terminal.output_cap);
            let info = session.info(&name, &self.config.terminal.tmux_socket);
            self.registry.insert(&name, session);
            Ok(CreateReport {
                session: info,
                screen,
            })
        }
        .boxed()
    }

    pub fn list(&self, req: ListRequest) -> BoxFuture<'_, Result<ListReport>> {
        async move {
            let environment = Environment {
                inside_tmux: tmux::inside_tmux(),
                tmux_version: tmux::version().await.ok(),
                shell: self.opener.shell().to_string(),
            };
            let tmux_socket = &self.config.terminal.tmux_socket;
            let mut sessions: Vec<SessionInfo> = self
                .registry
                .all()
                .into_iter()
                .filter(|(name, _)| !name.starts_with("tmux:"))
                .map(|(name, session)| session.info(&name, tmux_socket))
                .collect();
            // The user's own panes, whether or not drydock attached to them yet.
            let panes = self.opener.user_panes().await;
            sessions.extend(panes.into_iter().map(user_pane_info));
            if let Some(only) = req.session {
                sessions.retain(|s| s.name == only);
                if sessions.is_empty() {
                    return Err(self.registry.unknown(&only));
                }
            }
            Ok(ListReport {
                environment,
                sessions,
            })
        }
        .boxed()
    }

    pub fn manage(&self, req: ManageRequest) -> BoxFuture<'_, Result<ManageReport>> {
        async move {
            let session = self.session(&req.session).await?;
            if session.is_users() && req.action != ManageAction::Interrupt {
                return Err(TerminalError::NotOurs(req.session));
            }
            let done = match req.action {
                ManageAction::Kill => {
                    self.registry.end(&req.session).await?;
                    "killed".to_string()
                }
                ManageAction::Interrupt => {
                    session.write(&Key::parse("C-c")?.bytes())?;
                    "sent C-c".to_string()
                }
                ManageAction::Resize => {
                    let (Some(rows), Some(cols)) = (req.rows, req.cols) else {
                        return Err(TerminalError::InvalidArgument(
                            "resize needs rows and cols".into(),
                        ));
                    };
                    let (rows, cols) = (rows.get() as u16, cols.get() as u16);
                    session.backend.resize(&session.core, rows, cols).await?;
                    format!("resized to {rows}x{cols}")
                }
                ManageAction::Rename => {
                    let new_name = valid_name(req.new_name.clone().ok_or_else(|| {
                        TerminalError::InvalidArgument("rename needs new_name".into())
                    })?)?;
                    self.rename(&req.session, &new_name, &session).await?;
                    return Ok(ManageReport {
                        session: new_name,
                        done: format!("renamed from {}", req.session),
                    });
                }
            };
            Ok(ManageReport {
                session: req.session,
                done,
            })
        }
        .boxed()
    }

    async fn rename(&self, old: &str, new: &str, session: &Session) -> Result<()> {
        if self.registry.contains(new) {
            return Err(TerminalError::DuplicateName(new.to_string()));
        }
        session.backend.rename(new).await?;
        self.registry.rename(old, new);
        Ok(())
    }
}

/// A pane of the user's tmux server, as terminal_list shows it.
fn user_pane_info(pane: PaneInfo) -> SessionInfo {
    SessionInfo {
        name: pane.address(),
        backend: "user_tmux".into(),
        pid: Some(pane.pid),
        cwd: Some(pane.path.display().to_string()),
        command: Some(pane.command),
        rows: pane.height,
        cols: pane.width,
        alive: !pane.dead,
        exit_code: pane.dead_status,
        marks: false,
        idle_ms: None,
        generation: None,
        attach: None,
    }
}
