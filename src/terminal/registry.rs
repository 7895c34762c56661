//! The sessions drydock serves, by name: its own PTY sessions, sessions on its tmux server
//! (found again after a restart), and the user's own tmux panes (`tmux:SESSION:WINDOW.PANE`).

mod operations;

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::budget::lines_within;
use super::core::{TerminalCore, WaitRequest};
use super::keys::Key;
use super::pty::{PtySession, PtySpawn, TerminalError};
use super::pump::Pump;
use super::requests::*;
use super::shell_integration::{self, ShellLaunch};
use super::tmux::{
    self, CaptureOptions, ControlClient, PaneInfo, SessionDefaults, SocketSpec, Spawn, Tmux,
    TmuxError,
};
use crate::config::Config;
use crate::events::{EventKind, Events};
use crate::workspace::{PathArgument, Workspace, WorkspaceError};
use operations::last_lines_within;

/// tmux sessions drydock creates are named with this prefix on its own server.
const TMUX_PREFIX: &str = "drydock-";
const DEFAULT_ROWS: u16 = 40;
const DEFAULT_COLS: u16 = 120;
/// How long a just-created shell gets to draw its first prompt before create returns.
const READY_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum TerminalsError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Terminal(#[from] TerminalError),
    #[error(transparent)]
    Tmux(#[from] TmuxError),
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
    #[error("writing to the terminal failed: {0}")]
    Io(#[from] io::Error),
    #[error(
        "{0} is a pane of your own tmux server: drydock only reads it, sends to it and interrupts it"
    )]
    NotOurs(String),
}

type Result<T, E = TerminalsError> = std::result::Result<T, E>;

/// How bytes reach a session's terminal.
// One per session, behind an Arc: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Backend {
    Pty(PtySession),
    Tmux {
        tmux: Tmux,
        pane: String,
        tmux_session: Mutex<String>,
        client: ControlClient,
        /// Ordered writes from sync callers (TerminalCore::run's input).
        writer: mpsc::UnboundedSender<Vec<u8>>,
        owns: Owns,
    },
}

/// What of tmux a session is, and so what killing it removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owns {
    /// A pane of the user's own that drydock attached to: never killed, renamed or resized.
    Nothing,
    /// A tmux session drydock created (on its own server).
    Session,
    /// A window drydock created in a tmux session.
    Window,
    /// A pane drydock split off another.
    Pane,
}

pub struct Session {
    backend: Backend,
    core: Arc<TerminalCore>,
    cwd: Option<PathBuf>,
    command: Option<String>,
    marks: bool,
    last_used: Mutex<Instant>,
}

impl Session {
    fn touch(&self) {
        *self.last_used.lock().expect("session lock") = Instant::now();
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match &self.backend {
            Backend::Pty(pty) => pty.write(bytes).map_err(|e| match e {
                TerminalError::Io(e) => e,
                other => io::Error::other(other.to_string()),
            }),
            Backend::Tmux { writer, .. } => writer
                .send(bytes.to_vec())
                .map_err(|_| io::Error::other("the tmux pane is gone")),
        }
    }

    fn alive(&self) -> bool {
        match &self.backend {
            Backend::Pty(pty) => pty.is_alive(),
            Backend::Tmux { client, .. } => client.is_alive() && !self.core.is_closed(),
        }
    }

    fn is_users(&self) -> bool {
        matches!(
            self.backend,
            Backend::Tmux {
                owns: Owns::Nothing,
                ..
            }
        )
    }

    fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Pty(_) => "pty",
            Backend::Tmux {
                owns: Owns::Nothing,
                ..
            } => "user_tmux",
            Backend::Tmux { .. } => "tmux",
        }
    }
}

pub struct Terminals {
    config: Arc<Config>,
    events: Arc<Events>,
    workspace: Workspace,
    sessions: Mutex<BTreeMap<String, Arc<Session>>>,
    tmux: Tmux,
    user_tmux: Tmux,
    shell: String,
    shell_dir: PathBuf,
    next_id: Mutex<u64>,
    /// One create at a time, so a name checked free is still free when it is taken.
    creating: tokio::sync::Mutex<()>,
}

impl Terminals {
    pub fn new(config: Arc<Config>, events: Arc<Events>) -> Arc<Self> {
        let defaults = SessionDefaults {
            history_limit: u32::try_from(config.terminal.scrollback_lines).unwrap_or(u32::MAX),
            remain_on_exit: true,
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
        let shell = config
            .terminal
            .shell
            .clone()
            .unwrap_or_else(shell_integration::user_shell);
        Arc::new(Self {
            workspace: Workspace::new(config.allowed_roots.clone()),
            config,
            events,
            sessions: Mutex::default(),
            tmux,
            user_tmux,
            shell,
            shell_dir: shell_integration::default_dir(),
            next_id: Mutex::new(1),
            creating: tokio::sync::Mutex::new(()),
        })
    }

    /// Finds the tmux sessions a previous drydock left on its server and serves them again.
    pub async fn reconcile(&self) -> usize {
        let Ok(found) = self.tmux.list_sessions_with_prefix(TMUX_PREFIX).await else {
            return 0;
        };
        let mut adopted = 0;
        for session in found.into_iter().filter(|s| s.drydock) {
            let name = session.name[TMUX_PREFIX.len()..].to_string();
            match self.adopt_tmux(&session.name).await {
                Ok(adopted_session) => {
                    if adopted_session.marks {
                        // An empty command line makes the idle shell print a fresh prompt
                        // with its marks, so the next run knows where it stands.
                        let _ = adopted_session.write(b"\r");
                    }
                    self.insert(&name, Arc::new(adopted_session));
                    adopted += 1;
                }
                Err(error) => {
                    tracing::warn!("could not adopt tmux session {}: {error}", session.name)
                }
            }
        }
        adopted
    }

    /// Kills idle sessions now and then, until the server stops.
    pub fn start_reaper(self: &Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        let terminals = Arc::downgrade(self);
        let period = (self.config.terminal.idle_timeout / 2)
            .clamp(Duration::from_secs(1), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(terminals) = terminals.upgrade() else {
                    return;
                };
                terminals.reap_idle().await;
            }
        });
    }

    async fn reap_idle(&self) {
        let limit = self.config.terminal.idle_timeout;
        let idle: Vec<String> = self
            .sessions
            .lock()
            .expect("sessions lock")
            .iter()
            .filter(|(_, s)| {
                s.last_used.lock().expect("session lock").elapsed() > limit
                    && s.core.idle_for() > limit
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in idle {
            tracing::info!("killing terminal session {name}: idle for more than {limit:?}");
            let _ = self.kill(&name).await;
        }
    }

    /// Ends every PTY session (they cannot outlive the server); tmux sessions stay.
    pub fn shutdown(&self) {
        let sessions = std::mem::take(&mut *self.sessions.lock().expect("sessions lock"));
        for session in sessions.values() {
            if let Backend::Pty(pty) = &session.backend {
                pty.kill();
            }
        }
    }

    pub async fn create(&self, req: CreateRequest) -> Result<CreateReport> {
        let cwd = self.workspace.resolve_dir(PathArgument::Cwd, &req.cwd)?;
        if let Some(bad) = req
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            return Err(TerminalsError::InvalidArgument(format!(
                "environment variable name {bad:?} is not valid (empty, or contains `=` or NUL)"
            )));
        }
        let _one_at_a_time = self.creating.lock().await;
        let name = match req.name {
            Some(name) => valid_name(name)?,
            None => self.fresh_name(),
        };
        {
            let sessions = self.sessions.lock().expect("sessions lock");
            if sessions.contains_key(&name) {
                return Err(TerminalsError::DuplicateName(name));
            }
            let ours = sessions.values().filter(|s| !s.is_users()).count();
            if ours >= self.config.terminal.max_sessions {
                return Err(TerminalsError::TooMany(ours));
            }
        }
        let rows = req.rows.unwrap_or(DEFAULT_ROWS).clamp(2, 500);
        let cols = req.cols.unwrap_or(DEFAULT_COLS).clamp(10, 1000);
        let launch =
            shell_integration::launch(&self.shell, &self.shell_dir).map_err(TerminalError::Io)?;
        let mut env = launch.env.clone();
        env.extend(req.env);
        let shell = NewShell {
            launch,
            env,
            cwd,
            command: req.command.clone(),
            rows,
            cols,
        };
        let session = match (req.place, req.backend) {
            (Some(_), Some(BackendKind::Pty)) => {
                return Err(TerminalsError::InvalidArgument(
                    "`place` opens a tmux window or pane: it needs backend tmux".into(),
                ));
            }
            (Some(place), _) => self.spawn_placed(place, &shell).await?,
            (None, Some(BackendKind::Tmux)) => self.spawn_tmux(&name, &shell).await?,
            (None, _) => self.spawn_pty(&shell)?,
        };
        let session = Arc::new(session);
        if session.marks {
            // The first prompt, so a run right after create finds a ready shell.
            let _ = session
                .core
                .wait(WaitRequest {
                    pattern: None,
                    quiet_ms: Some(300),
                    after_generation: None,
                    max_wait: READY_WAIT,
                })
                .await;
        }
        if let Some(command) = &req.command {
            session.write(format!("{command}\r").as_bytes())?;
        }
        let (screen, top_line) = session.core.screen_and_top_line(false);
        let screen = last_lines_within(&screen, top_line, None, self.config.terminal.output_cap);
        let info = self.info(&name, &session);
        self.insert(&name, session);
        Ok(CreateReport {
            session: info,
            screen,
        })
    }

    fn spawn_pty(&self, shell: &NewShell) -> Result<Session> {
        let pty = PtySession::spawn(PtySpawn {
            argv: shell.launch.argv.clone(),
            cwd: shell.cwd.clone(),
            env: shell.env.clone(),
            env_remove: self.config.env_remove.clone(),
            rows: shell.rows,
            cols: shell.cols,
            scrollback: self.config.terminal.scrollback_lines,
            expect_marks: shell.launch.marks,
        })?;
        Ok(Session {
            core: pty.core(),
            backend: Backend::Pty(pty),
            cwd: Some(shell.cwd.clone()),
            command: shell.command.clone(),
            marks: shell.launch.marks,
            last_used: Mutex::new(Instant::now()),
        })
    }

    async fn spawn_tmux(&self, name: &str, shell: &NewShell) -> Result<Session> {
        let tmux_name = format!("{TMUX_PREFIX}{name}");
        let argv = started_on_enter(&shell.launch.argv);
        let spawn = Spawn {
            cwd: Some(&shell.cwd),
            argv: &argv,
            env: &shell.env,
        };
        self.tmux
            .new_session(&tmux_name, &spawn, shell.rows, shell.cols)
            .await?;
        let session = self.adopt_tmux(&tmux_name).await?;
        release_shell(session, shell)
    }

    /// A new window or split pane next to an existing tmux session or pane.
    async fn spawn_placed(&self, place: Placement, shell: &NewShell) -> Result<Session> {
        let (Placement::Window { of } | Placement::Split { of, .. }) = &place;
        let anchor = self.get(of).await?;
        let Backend::Tmux {
            tmux,
            pane,
            tmux_session,
            ..
        } = &anchor.backend
        else {
            return Err(TerminalsError::InvalidArgument(format!(
                "{of} is a pty session: windows and panes can only be opened in tmux"
            )));
        };
        let argv = started_on_enter(&shell.launch.argv);
        let spawn = Spawn {
            cwd: Some(&shell.cwd),
            argv: &argv,
            env: &shell.env,
        };
        let (info, owns) = match &place {
            Placement::Window { .. } => {
                let session_name = tmux_session.lock().expect("session lock").clone();
                (
                    tmux.new_window(&session_name, None, &spawn).await?,
                    Owns::Window,
                )
            }
            Placement::Split { vertical, .. } => {
                (tmux.split_pane(pane, *vertical, &spawn).await?, Owns::Pane)
            }
        };
        let session = self.attach_pane(tmux, info, owns).await?;
        release_shell(session, shell)
    }

    /// Serves an existing tmux session's first pane: its current screen, then live output.
    async fn adopt_tmux(&self, tmux_session: &str) -> Result<Session> {
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

    async fn attach_pane(&self, tmux: &Tmux, pane: PaneInfo, owns: Owns) -> Result<Session> {
        let core = TerminalCore::new(
            pane.height,
            pane.width,
            self.config.terminal.scrollback_lines,
        );
        let client = ControlClient::attach(tmux, &pane.session).await?;
        let pump = Pump::start(core.clone(), format!("tmux-feeder-{}", pane.id))
            .map_err(TerminalError::Io)?;
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
        let (writer, mut writes) = mpsc::unbounded_channel::<Vec<u8>>();
        let (sender, target) = (tmux.clone(), pane.id.clone());
        tokio::spawn(async move {
            while let Some(bytes) = writes.recv().await {
                if let Err(error) = sender.send_bytes(&target, &bytes).await {
                    tracing::warn!("sending to tmux pane {target}: {error}");
                }
            }
        });
        // drydock starts bash or zsh with its integration in the sessions it creates.
        let marks = owns != Owns::Nothing && matches!(pane.command.as_str(), "bash" | "zsh");
        core.set_expect_marks(marks);
        Ok(Session {
            core,
            backend: Backend::Tmux {
                tmux: tmux.clone(),
                pane: pane.id.clone(),
                tmux_session: Mutex::new(pane.session.clone()),
                client,
                writer,
                owns,
            },
            cwd: Some(pane.path.clone()),
            command: Some(pane.command.clone()),
            marks,
            last_used: Mutex::new(Instant::now()),
        })
    }

    /// Serves `session` as `name`, and tells the event feed when it starts and ends.
    fn insert(&self, name: &str, session: Arc<Session>) {
        self.events.publish(EventKind::TerminalSessionCreated {
            session: name.to_string(),
            backend: session.backend_name(),
        });
        let exit = session.core.exit();
        let events = self.events.clone();
        let session_name = name.to_string();
        tokio::spawn(async move {
            let exit_code = exit.await.flatten();
            events.publish(EventKind::TerminalSessionExited {
                session: session_name,
                exit_code,
            });
        });
        self.sessions
            .lock()
            .expect("sessions lock")
            .insert(name.to_string(), session);
    }

    fn fresh_name(&self) -> String {
        let sessions = self.sessions.lock().expect("sessions lock");
        let mut next = self.next_id.lock().expect("id lock");
        loop {
            let name = format!("t{}", *next);
            *next += 1;
            if !sessions.contains_key(&name) {
                return name;
            }
        }
    }

    /// A session by name; a `tmux:SESSION:WINDOW.PANE` of the user's server is attached on
    /// first use.
    async fn get(&self, name: &str) -> Result<Arc<Session>> {
        if let Some(session) = self.sessions.lock().expect("sessions lock").get(name) {
            session.touch();
            return Ok(session.clone());
        }
        if name.starts_with("tmux:") {
            let address = tmux::parse_address(name)?;
            let pane = self.user_tmux.pane_at(&address).await?;
            let session = Arc::new(
                self.attach_pane(&self.user_tmux, pane, Owns::Nothing)
                    .await?,
            );
            self.insert(name, session.clone());
            return Ok(session);
        }
        Err(TerminalsError::UnknownSession {
            name: name.to_string(),
            known: self.known_names(),
        })
    }

    fn known_names(&self) -> String {
        let names: Vec<String> = self
            .sessions
            .lock()
            .expect("sessions lock")
            .keys()
            .cloned()
            .collect();
        if names.is_empty() {
            "none (create one with terminal_create, or address a tmux pane as tmux:SESSION:WINDOW.PANE)".into()
        } else {
            names.join(", ")
        }
    }

    fn info(&self, name: &str, session: &Session) -> SessionInfo {
        let (rows, cols) = session.core.size();
        let (pid, attach) = match &session.backend {
            Backend::Pty(pty) => (Some(pty.pid()), None),
            Backend::Tmux {
                tmux: tmux_server,
                tmux_session,
                owns,
                ..
            } if *owns != Owns::Nothing && tmux_server.socket().is_owned() => (
                None,
                Some(format!(
                    "tmux -L {} attach -t {}",
                    self.config.terminal.tmux_socket,
                    tmux_session.lock().expect("session lock")
                )),
            ),
            Backend::Tmux { .. } => (None, None),
        };
        SessionInfo {
            name: name.to_string(),
            backend: session.backend_name().to_string(),
            pid,
            cwd: session.cwd.as_ref().map(|p| p.display().to_string()),
            command: session.command.clone(),
            rows,
            cols,
            alive: session.alive(),
            exit_code: session.core.exit_status().flatten(),
            marks: session.marks,
            idle_ms: Some(millis(
                session.last_used.lock().expect("session lock").elapsed(),
            )),
            generation: Some(session.core.generation()),
            attach,
        }
    }

    pub async fn list(&self, req: ListRequest) -> Result<ListReport> {
        let environment = Environment {
            inside_tmux: tmux::inside_tmux(),
            tmux_version: tmux::version().await.ok(),
            shell: self.shell.clone(),
        };
        let mut sessions: Vec<SessionInfo> = {
            let map = self.sessions.lock().expect("sessions lock");
            map.iter()
                .filter(|(name, _)| !name.starts_with("tmux:"))
                .map(|(name, session)| self.info(name, session))
                .collect()
        };
        // The user's own panes, whether or not drydock attached to them yet.
        if let Ok(panes) = self.user_tmux.list_panes().await {
            sessions.extend(panes.into_iter().map(user_pane_info));
        }
        if let Some(only) = req.session {
            sessions.retain(|s| s.name == only);
            if sessions.is_empty() {
                return Err(TerminalsError::UnknownSession {
                    name: only,
                    known: self.known_names(),
                });
            }
        }
        Ok(ListReport {
            environment,
            sessions,
        })
    }

    pub async fn manage(&self, req: ManageRequest) -> Result<ManageReport> {
        let session = self.get(&req.session).await?;
        if session.is_users() && req.action != ManageAction::Interrupt {
            return Err(TerminalsError::NotOurs(req.session));
        }
        let done = match req.action {
            ManageAction::Kill => {
                self.kill(&req.session).await?;
                "killed".to_string()
            }
            ManageAction::Interrupt => {
                session.write(&Key::parse("C-c").map_err(TerminalError::from)?.bytes())?;
                "sent C-c".to_string()
            }
            ManageAction::Resize => {
                let (Some(rows), Some(cols)) = (req.rows, req.cols) else {
                    return Err(TerminalsError::InvalidArgument(
                        "resize needs rows and cols".into(),
                    ));
                };
                if !(2..=500).contains(&rows) || !(10..=1000).contains(&cols) {
                    return Err(TerminalsError::InvalidArgument(format!(
                        "{rows}x{cols}: rows must be 2-500 and cols 10-1000"
                    )));
                }
                match &session.backend {
                    Backend::Pty(pty) => pty.resize(rows, cols)?,
                    Backend::Tmux { tmux, pane, .. } => {
                        tmux.resize_pane(pane, rows, cols).await?;
                        session.core.resize(rows, cols);
                    }
                }
                format!("resized to {rows}x{cols}")
            }
            ManageAction::Rename => {
                let new_name = valid_name(req.new_name.clone().ok_or_else(|| {
                    TerminalsError::InvalidArgument("rename needs new_name".into())
                })?)?;
                self.rename(&req.session, &new_name, &session).await?;
                return Ok(ManageReport {
                    session: new_name.clone(),
                    done: format!("renamed from {}", req.session),
                });
            }
        };
        Ok(ManageReport {
            session: req.session,
            done,
        })
    }

    async fn rename(&self, old: &str, new: &str, session: &Session) -> Result<()> {
        if self
            .sessions
            .lock()
            .expect("sessions lock")
            .contains_key(new)
        {
            return Err(TerminalsError::DuplicateName(new.to_string()));
        }
        if let Backend::Tmux {
            tmux,
            tmux_session,
            owns: Owns::Session,
            ..
        } = &session.backend
        {
            let current = tmux_session.lock().expect("session lock").clone();
            let renamed = format!("{TMUX_PREFIX}{new}");
            tmux.rename_session(&current, &renamed).await?;
            *tmux_session.lock().expect("session lock") = renamed;
        }
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if let Some(moved) = sessions.remove(old) {
            sessions.insert(new.to_string(), moved);
        }
        Ok(())
    }

    async fn kill(&self, name: &str) -> Result<()> {
        let session = self.sessions.lock().expect("sessions lock").remove(name);
        let Some(session) = session else {
            return Err(TerminalsError::UnknownSession {
                name: name.to_string(),
                known: self.known_names(),
            });
        };
        match &session.backend {
            Backend::Pty(_) => {
                // Killing waits (up to a few seconds) until every process is gone.
                let session = session.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Pty(pty) = &session.backend {
                        pty.kill();
                    }
                })
                .await;
            }
            Backend::Tmux {
                tmux,
                tmux_session,
                pane,
                owns,
                ..
            } => match owns {
                Owns::Session => {
                    let target = tmux_session.lock().expect("session lock").clone();
                    tmux.kill_session(&target).await?;
                }
                Owns::Window => tmux.kill_window(pane).await?,
                Owns::Pane => tmux.kill_pane(pane).await?,
                Owns::Nothing => {}
            },
        }
        Ok(())
    }

    /// A session's terminal, to watch for changes (resource subscriptions).
    pub async fn core_of(&self, name: &str) -> Result<Arc<TerminalCore>> {
        Ok(self.get(name).await?.core.clone())
    }

    /// The text of a session's screen or scrollback, for resources, within the configured
    /// output cap.
    pub async fn read_text(&self, name: &str, scrollback: bool) -> Result<String> {
        let session = self.get(name).await?;
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

    pub fn names(&self) -> Vec<String> {
        self.sessions
            .lock()
            .expect("sessions lock")
            .keys()
            .cloned()
            .collect()
    }
}

/// The user's shell as a new session gets it: how to start it, where, and what to send it.
struct NewShell {
    launch: ShellLaunch,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    command: Option<String>,
    rows: u16,
    cols: u16,
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

fn valid_name(name: String) -> Result<String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.starts_with('.');
    if ok {
        Ok(name)
    } else {
        Err(TerminalsError::InvalidName(name))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(valid_name("build-1.x_y".into()).is_ok());
        for bad in ["", ".hidden", "a b", "tmux:x:0.0", &"x".repeat(65)] {
            assert!(valid_name(bad.to_string()).is_err(), "{bad}");
        }
    }
}
