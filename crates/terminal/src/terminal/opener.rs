//! Where sessions come from: the user's shell started on a PTY or in tmux (a session of its
//! own, or a window or pane next to another), or a tmux pane that already runs, listened
//! to from its current screen on: drydock's own after a restart, the user's on first use.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::TerminalError;
use super::backend::{Backend, Owns, TMUX_PREFIX, TmuxPane};
use super::core::{ExitStatus, TerminalCore};
use super::pty::{PtyError, PtySession, PtySpawn};
use super::pump::Pump;
use super::requests::Placement;
use super::session::Session;
use super::shell_integration::{self, ShellLaunch};
use super::tmux::{
    self, CaptureOptions, ControlClient, ControlEvent, PaneInfo, SessionDefaults, SocketSpec,
    Spawn, Tmux, TmuxError, UNNAMED_OWNER,
};
use crate::config::Config;
use crate::shared_reading::SharedReading;

type Result<T, E = TerminalError> = std::result::Result<T, E>;

pub(super) struct Opener {
    /// drydock's own tmux server.
    tmux: Tmux,
    /// The user's tmux server.
    user_tmux: Tmux,
    /// The shell new sessions start.
    shell: String,
    /// Where the shell-integration scripts are installed.
    shell_dir: PathBuf,
    scrollback_lines: usize,
    env_remove: Vec<String>,
    /// The panes of drydock's server and of the user's, each read once for the callers that
    /// ask together (every agent and terminal listing reads them).
    own_panes: SharedReading<Vec<PaneInfo>>,
    user_panes: SharedReading<Vec<PaneInfo>>,
}

/// The user's shell as a new session gets it: how to start it, where, and what to send it.
pub(super) struct NewShell {
    launch: ShellLaunch,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    command: Option<String>,
    rows: u16,
    cols: u16,
}

impl Opener {
    pub(super) fn new(config: &Config) -> Opener {
        let defaults = SessionDefaults {
            history_limit: u32::try_from(config.terminal.scrollback_lines).unwrap_or(u32::MAX),
            remain_on_exit: true,
            owner: owner_of(config),
        };
        let tmux = Tmux::new(SocketSpec::Name(config.terminal.tmux_socket.clone()))
            .with_defaults(defaults.clone())
            .with_env_remove(config.env_remove.clone());
        let user_tmux = Tmux::user_default()
            .with_defaults(SessionDefaults {
                remain_on_exit: false,
                ..defaults
            })
            .with_env_remove(config.env_remove.clone());
        Opener {
            tmux,
            user_tmux,
            shell: config
                .terminal
                .shell
                .clone()
                .unwrap_or_else(shell_integration::user_shell),
            shell_dir: shell_integration::default_dir(),
            scrollback_lines: config.terminal.scrollback_lines,
            env_remove: config.env_remove.clone(),
            own_panes: SharedReading::default(),
            user_panes: SharedReading::default(),
        }
    }

    /// The shell new sessions start.
    pub(super) fn shell(&self) -> &str {
        &self.shell
    }

    /// The shell, with drydock's integration, to start in `cwd` with `env` added.
    pub(super) fn new_shell(
        &self,
        cwd: PathBuf,
        env: BTreeMap<String, String>,
        command: Option<String>,
        (rows, cols): (u16, u16),
    ) -> Result<NewShell> {
        let launch =
            shell_integration::launch(&self.shell, &self.shell_dir).map_err(PtyError::Io)?;
        let mut all_env = launch.env.clone();
        all_env.extend(env);
        Ok(NewShell {
            launch,
            env: all_env,
            cwd,
            command,
            rows,
            cols,
        })
    }

    pub(super) fn open_pty(&self, shell: &NewShell) -> Result<Session> {
        let pty = PtySession::spawn(PtySpawn {
            argv: shell.launch.argv.clone(),
            cwd: shell.cwd.clone(),
            env: shell.env.clone(),
            env_remove: self.env_remove.clone(),
            rows: shell.rows,
            cols: shell.cols,
            scrollback: self.scrollback_lines,
            expect_marks: shell.launch.marks,
        })?;
        Ok(Session::new(
            pty.core(),
            Backend::Pty(Arc::new(pty)),
            Some(shell.cwd.clone()),
            shell.command.clone(),
            shell.launch.marks,
        ))
    }

    /// A tmux session of its own on drydock's server, for the session called `name`.
    pub(super) async fn open_tmux(&self, name: &str, shell: &NewShell) -> Result<Session> {
        let tmux_name = format!("{TMUX_PREFIX}{name}");
        let argv = started_on_enter(&shell.launch.argv);
        let spawn = Spawn {
            cwd: Some(&shell.cwd),
            argv: &argv,
            env: &shell.env,
        };
        let mut attempts = 0;
        loop {
            self.tmux
                .new_session(&tmux_name, &spawn, shell.rows, shell.cols)
                .await?;
            match self.adopt(&tmux_name).await {
                // A server that was exiting (its last session had just been closed, by
                // another drydock sharing it) took the new session down with it a moment
                // after creating it: the next attempt starts a fresh server.
                Err(TerminalError::Tmux(TmuxError::NoServer { .. })) if attempts < 3 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                adopted => return release_shell(adopted?, shell),
            }
        }
    }

    /// A new window or split pane next to `anchor`, as `place` says.
    pub(super) async fn open_placed(
        &self,
        place: &Placement,
        anchor: &TmuxPane,
        shell: &NewShell,
    ) -> Result<Session> {
        let argv = started_on_enter(&shell.launch.argv);
        let spawn = Spawn {
            cwd: Some(&shell.cwd),
            argv: &argv,
            env: &shell.env,
        };
        let tmux = &anchor.tmux;
        let (info, owns) = match place {
            Placement::Window { .. } => (
                tmux.new_window(&anchor.tmux_session(), None, &spawn)
                    .await?,
                Owns::Window,
            ),
            Placement::Split { vertical, .. } => (
                tmux.split_pane(&anchor.pane, *vertical, &spawn).await?,
                Owns::Pane,
            ),
        };
        let session = self.attach_pane(tmux, info, owns).await?;
        release_shell(session, shell)
    }

    /// The names of the tmux sessions an earlier run of this drydock (this host) left on its
    /// server: not those of the other hosts that share it (a team's hosts on one machine),
    /// which are theirs to serve. Sessions of drydocks that did not name their host are taken
    /// up as before.
    pub(super) async fn leftover_sessions(&self) -> Vec<String> {
        let Ok(found) = self.tmux.list_sessions_with_prefix(TMUX_PREFIX).await else {
            return Vec::new();
        };
        let own = &self.tmux.defaults().owner;
        found
            .into_iter()
            .filter(|session| {
                session
                    .owner
                    .as_deref()
                    .is_some_and(|owner| owner == own || owner == UNNAMED_OWNER)
            })
            .map(|session| session.name)
            .collect()
    }

    /// Serves an existing tmux session of drydock's server (by its tmux name): its first
    /// pane's current screen, then live output.
    pub(super) async fn adopt(&self, tmux_session: &str) -> Result<Session> {
        let pane = self
            .tmux
            .session_panes(tmux_session)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| TmuxError::UnknownTarget {
                target: tmux_session.to_string(),
                message: "no pane".into(),
            })?;
        self.attach_pane(&self.tmux, pane, Owns::Session).await
    }

    /// Serves a pane of the user's tmux server, addressed as `tmux:SESSION:WINDOW.PANE`.
    pub(super) async fn attach_users_pane(&self, address: &str) -> Result<Session> {
        let address = tmux::parse_address(address)?;
        let tmux = match &address.socket {
            Some(name) => self.users_named(name),
            None => self.user_tmux.clone(),
        };
        let pane = tmux.pane_at(&address).await?;
        self.attach_pane(&tmux, pane, Owns::Nothing).await
    }

    /// The user's tmux server on socket `name`, with the same settings as the default one.
    fn users_named(&self, name: &str) -> Tmux {
        Tmux::new(SocketSpec::UserNamed(name.to_string()))
            .with_defaults(self.user_tmux.defaults().clone())
            .with_env_remove(self.env_remove.clone())
    }

    /// Every pane of drydock's tmux server (none when it is not running).
    pub(super) async fn own_panes(&self) -> Vec<PaneInfo> {
        self.own_panes
            .get(|| async { self.tmux.list_panes().await.unwrap_or_default() })
            .await
    }

    /// Every pane of the user's tmux servers: the default one and the others in the user's
    /// tmux socket directory (none of a server that is not running).
    pub(super) async fn user_panes(&self) -> Vec<PaneInfo> {
        self.user_panes
            .get(|| async {
                // No socket, no server: not worth a tmux process each listing.
                let mut panes = Vec::new();
                if self.user_tmux.has_socket() {
                    panes = self.user_tmux.list_panes().await.unwrap_or_default();
                }
                for name in tmux::user_socket_names() {
                    panes.extend(
                        self.users_named(&name)
                            .list_panes()
                            .await
                            .unwrap_or_default(),
                    );
                }
                panes
            })
            .await
    }

    /// Listens to `pane`: its current screen first, then live output.
    async fn attach_pane(&self, tmux: &Tmux, pane: PaneInfo, owns: Owns) -> Result<Session> {
        let core = TerminalCore::new(pane.height, pane.width, self.scrollback_lines);
        let client = ControlClient::attach(tmux, &pane.session).await?;
        let pump =
            Pump::start(core.clone(), format!("tmux-feeder-{}", pane.id)).map_err(PtyError::Io)?;
        client.subscribe(&pane.id, Arc::new(move |bytes: &[u8]| pump.push(bytes)));
        let screen = tmux
            .capture(
                &pane.id,
                CaptureOptions {
                    escapes: true,
                    ..Default::default()
                },
            )
            .await?;
        core.feed(
            screen
                .trim_end_matches('\n')
                .replace('\n', "\r\n")
                .as_bytes(),
        );
        if owns != Owns::Nothing {
            record_exit(tmux.clone(), &client, &core, pane.id.clone());
        }
        let writer = pane_writer(tmux.clone(), pane.id.clone());
        // drydock starts bash or zsh with its integration in the sessions it creates.
        let marks = owns != Owns::Nothing && matches!(pane.command.as_str(), "bash" | "zsh");
        core.set_expect_marks(marks);
        let backend = Backend::Tmux(TmuxPane::new(
            tmux.clone(),
            pane.id,
            pane.session,
            client,
            writer,
            owns,
        ));
        Ok(Session::new(
            core,
            backend,
            Some(pane.path),
            Some(pane.command),
            marks,
        ))
    }
}

/// What marks the sessions this drydock creates as its own: its name as a host
/// (`[tasks] host`, the machine's name by default), which a restart keeps and by which the
/// hosts of a team on one machine tell their claims apart.
fn owner_of(config: &Config) -> String {
    config.tasks.host.name.clone()
}

/// Tells `core` when the program of `pane` (on drydock's own server, where panes remain
/// after their program exits) ends, with its exit status.
fn record_exit(tmux: Tmux, client: &ControlClient, core: &Arc<TerminalCore>, pane: String) {
    let mut events = client.events();
    let core = Arc::downgrade(core);
    tokio::spawn(async move {
        loop {
            let status = match events.recv().await {
                Ok(ControlEvent::PaneExited {
                    pane: dead, status, ..
                }) if dead == pane => status,
                Ok(ControlEvent::PaneClosed { pane: closed }) if closed == pane => {
                    // Closed means killed with its session: a pane that still answers lives on.
                    if still_there(&tmux, &pane).await {
                        continue;
                    }
                    None
                }
                Ok(ControlEvent::Exited { .. }) | Err(RecvError::Closed) => return,
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
            };
            if let Some(core) = core.upgrade()
                && !core.has_exited()
            {
                core.exited(status.map_or(ExitStatus::Unknown, ExitStatus::Code));
            }
            return;
        }
    });
}

/// Whether `pane` still runs its program. A busy machine can make tmux fail to answer for a
/// moment (a listing that timed out reports every pane closed): only tmux's own word that the
/// pane is gone or dead, or no answer at all within a few seconds, ends it.
async fn still_there(tmux: &Tmux, pane: &str) -> bool {
    for attempt in 1..=5u64 {
        match tmux.pane(pane).await {
            Ok(info) => return !info.dead,
            Err(TmuxError::UnknownTarget { .. }) => return false,
            Err(error) => {
                tracing::debug!("asking tmux about pane {pane} (attempt {attempt}): {error}");
                tokio::time::sleep(Duration::from_millis(300 * attempt)).await;
            }
        }
    }
    false
}

/// Sends what is written to it to the pane, in order, from a task of its own.
fn pane_writer(tmux: Tmux, pane: String) -> mpsc::UnboundedSender<Vec<u8>> {
    let (writer, mut writes) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(bytes) = writes.recv().await {
            if let Err(error) = tmux.send_bytes(&pane, &bytes).await {
                tracing::warn!("sending to tmux pane {pane}: {error}");
            }
        }
    });
    writer
}

/// A tmux pane started with `started_on_enter`, now listened to: what it runs is known,
/// and the line that lets its shell start is sent.
fn release_shell(mut session: Session, shell: &NewShell) -> Result<Session> {
    session.marks = shell.launch.marks;
    session.core.set_expect_marks(shell.launch.marks);
    session.cwd = Some(shell.cwd.clone());
    session.command = shell.command.clone();
    session.write(b"\n")?;
    Ok(session)
}

/// `argv` behind a shell that waits for one line first: nothing the program prints is lost
/// before drydock's control client listens (it then sends the line).
fn started_on_enter(argv: &[String]) -> Vec<String> {
    let mut wrapped = vec![
        "sh".to_string(),
        "-c".to_string(),
        "read _drydock_go; exec \"$@\"".to_string(),
        "sh".to_string(),
    ];
    wrapped.extend(argv.iter().cloned());
    wrapped
}
