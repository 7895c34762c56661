//! The tmux backend: sessions, windows and panes on a tmux server, driven with the `tmux`
//! command line (argv, never a shell), and pane output as events from a control-mode client
//! ([`ControlClient`]).
//!
//! Two kinds of server are addressed through [`SocketSpec`]: drydock's own (a socket path or
//! `-L` name drydock owns, where its sessions carry a name prefix and the `@drydock` session
//! option, so they are found again after a restart) and the user's default server, whose
//! existing panes are addressed as `tmux:SESSION:WINDOW.PANE`.
//!
//! Every session target is passed to tmux as `=NAME:` (exact match): a bare `-t NAME` lets
//! tmux fall back to a prefix match, and `kill-session -t a` kills a session named `a b`.
//!
//! This file is the client ([`Tmux`]: sessions, panes, keys, captures); beside it `socket`
//! (which server), `listing` (what tmux lists, parsed; addresses and names), `command`
//! (running tmux, its failures), `control` (the control-mode client) and `changes` (one
//! change to a server's sessions at a time).

mod changes;
mod command;
pub(super) mod control;
mod listing;
mod procs;
mod socket;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::process::env_policy;
use crate::process::shell_quote::single_quoted;
use command::{
    SEPARATOR, classify_error, cmd, escape_arg, first_line, parse_lines, parse_one, run_tmux,
    socket_suffix,
};
pub(super) use control::{ControlClient, ControlEvent};
pub(super) use listing::{
    PaneAddress, PaneInfo, SessionInfo, parse_address, session_target, validate_session_name,
};
pub(super) use socket::{SocketSpec, inside_tmux, user_socket_names};

/// How long a single tmux command may take before it is reported as [`TmuxError::Timeout`].
pub(super) const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The session option drydock sets on the sessions it creates: `@drydock OWNER`.
pub(super) const DRYDOCK_SESSION_OPTION: &str = "@drydock";
/// The owner earlier drydocks wrote (`@drydock 1`), before sessions named the drydock that
/// created them.
pub(super) const UNNAMED_OWNER: &str = "1";

/// How long a kill waits for the control clients of a killed session to end.
const DETACH_WITHIN: Duration = Duration::from_secs(2);

/// How often `new_session` retries while a previous server is still exiting.
const NEW_SESSION_RETRIES: u32 = 5;

/// Longest hex run given to one `send-keys -H`.
const SEND_BYTES_CHUNK: usize = 1024;

/// How often a dead pane without an exit status is nudged (see [`Tmux::settle_exits`]), and
/// how long to wait after each nudge.
const REAP_NUDGES: u32 = 5;
const REAP_WAIT: Duration = Duration::from_millis(100);

pub(super) type Result<T, E = TmuxError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum TmuxError {
    #[error("tmux is not installed (no `tmux` on PATH)")]
    NotInstalled,
    #[error("no tmux server is running{}", socket_suffix(.socket))]
    NoServer { socket: Option<String> },
    #[error("tmux has no {target}: {message}")]
    UnknownTarget { target: String, message: String },
    #[error("a tmux session named {0:?} already exists")]
    DuplicateSession(String),
    #[error("invalid tmux session name {name:?}: {reason}")]
    InvalidSessionName { name: String, reason: &'static str },
    #[error("invalid tmux pane address {address:?}: {reason}")]
    InvalidAddress { address: String, reason: String },
    /// Only the tests type keys by tmux name.
    #[cfg(test)]
    #[error("unknown key name {0:?} (e.g. Enter, Escape, C-c, Up, Tab, BSpace, F5)")]
    InvalidKey(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("tmux {command} timed out after {timeout:?}")]
    Timeout { command: String, timeout: Duration },
    #[error("tmux {command} failed: {message}")]
    Command { command: String, message: String },
    #[error("unexpected output from tmux {command}: {output:?}")]
    UnexpectedOutput { command: String, output: String },
    #[error("the tmux control client has exited")]
    ControlClientGone,
    #[error("running tmux: {0}")]
    Io(#[from] std::io::Error),
}

/// The installed tmux's version, e.g. "3.3a": asked once (every terminal listing shows it).
pub(super) async fn version() -> Result<String> {
    static VERSION: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    VERSION
        .get_or_try_init(|| async {
            let mut command = Command::new("tmux");
            command.env_remove("TMUX");
            env_policy::scrub(&mut command, &[]);
            let output =
                run_tmux(command, vec!["-V".into()], DEFAULT_COMMAND_TIMEOUT, None).await?;
            let version = output.trim().strip_prefix("tmux ").unwrap_or(output.trim());
            Ok(version.to_string())
        })
        .await
        .cloned()
}

/// What `capture` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CaptureOptions {
    /// Keep colours and attributes as escape sequences (`-e`).
    pub escapes: bool,
    /// Join lines the terminal wrapped (`-J`).
    pub join_wrapped: bool,
    /// First line: 0 is the top of the visible screen, negative numbers reach into the
    /// scrollback (`-S`); `None` is the top of the screen. `i64::MIN` means the oldest line.
    pub start: Option<i64>,
    /// Last line (`-E`); `None` is the bottom of the screen.
    pub end: Option<i64>,
}

/// Options drydock applies to what it creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionDefaults {
    /// Scrollback lines per pane (`history-limit`). On an owned server it is set globally
    /// before the first pane exists; tmux only applies it to panes created afterwards.
    pub history_limit: u32,
    /// Keep a pane whose process exited, with its last screen (`remain-on-exit on`).
    pub remain_on_exit: bool,
    /// Who created the session (`@drydock OWNER`, its host name): several drydocks of one
    /// machine share a tmux server, and each takes up only its own sessions when it starts
    /// again.
    pub owner: String,
}

impl Default for SessionDefaults {
    fn default() -> Self {
        Self {
            history_limit: 10_000,
            remain_on_exit: true,
            owner: UNNAMED_OWNER.to_string(),
        }
    }
}

/// What a new pane runs, and where.
#[derive(Debug, Clone, Default)]
pub(super) struct Spawn<'a> {
    /// Working directory; must exist (tmux silently falls back to $HOME otherwise).
    pub cwd: Option<&'a Path>,
    /// The program and its arguments, executed without a shell. Empty: tmux's default
    /// command (the user's shell).
    pub argv: &'a [String],
    /// Set in the pane's environment (`-e KEY=VALUE`).
    pub env: &'a [(String, String)],
}

/// A tmux server drydock talks to.
#[derive(Debug, Clone)]
pub(super) struct Tmux {
    socket: SocketSpec,
    config_file: Option<PathBuf>,
    timeout: Duration,
    defaults: SessionDefaults,
    /// Kept out of every tmux drydock runs, and out of the global environment of its own
    /// server (secrets: `Config::env_remove`).
    env_remove: Vec<String>,
}

impl Tmux {
    pub(super) fn new(socket: SocketSpec) -> Self {
        Self {
            socket,
            config_file: None,
            timeout: DEFAULT_COMMAND_TIMEOUT,
            defaults: SessionDefaults::default(),
            env_remove: Vec::new(),
        }
    }

    /// The user's server (their existing sessions and panes).
    pub(super) fn user_default() -> Self {
        Self::new(SocketSpec::UserDefault)
    }

    pub(super) fn defaults(&self) -> &SessionDefaults {
        &self.defaults
    }

    pub(super) fn with_defaults(mut self, defaults: SessionDefaults) -> Self {
        self.defaults = defaults;
        self
    }

    /// Environment variables no pane may inherit from drydock (its secrets). A tmux client
    /// that starts the server hands its whole environment to the server's global
    /// environment, and so to every pane: they are removed from every tmux drydock runs, and
    /// from the global environment of its own server, which an older drydock may have
    /// started with them.
    pub(super) fn with_env_remove(mut self, names: Vec<String>) -> Self {
        self.env_remove = names;
        self
    }

    /// Whether this server's socket is there (or cannot be told: then it may be).
    pub(super) fn has_socket(&self) -> bool {
        self.socket.path().is_none_or(|path| path.exists())
    }

    pub(super) fn socket(&self) -> &SocketSpec {
        &self.socket
    }

    /// Waits until no other attach to this server or change of its sessions, by this drydock
    /// or another on the same server, is under way; the next one waits for this one until
    /// the guard is dropped (see `changes`).
    pub(super) async fn changing(&self) -> changes::Changing {
        changes::changing(self.socket.lock_file()).await
    }

    fn base_args(&self) -> Vec<OsString> {
        let mut args = self.socket.args();
        if let Some(config) = &self.config_file {
            args.push("-f".into());
            args.push(config.clone().into());
        }
        args
    }

    /// `tmux` with this server's socket and config file, without `TMUX` (it would make tmux
    /// address the server drydock runs in) and without the removed variables.
    pub(super) fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(self.base_args()).env_remove("TMUX");
        env_policy::scrub(&mut command, &self.env_remove);
        command
    }

    /// On drydock's own server: commands that take the removed variables out of the global
    /// environment new panes start from, to run first in an invocation that creates a pane.
    fn scrub_global_environment(&self) -> Vec<String> {
        if !self.socket.is_owned() {
            return Vec::new();
        }
        let mut args = Vec::new();
        for name in env_policy::removed(&self.env_remove) {
            args.extend(cmd(["set-environment", "-g", "-u", name]));
            args.push(SEPARATOR.into());
        }
        args
    }

    /// Runs one tmux command (or several separated by `;` items, see [`SEPARATOR`]); returns
    /// its stdout.
    async fn run(&self, args: Vec<String>) -> Result<String> {
        run_tmux(
            self.command(),
            args,
            self.timeout,
            Some(self.socket.describe()),
        )
        .await
    }

    /// Every pane on the server (`list-panes -a`). A server without sessions has none; no
    /// server at all is [`TmuxError::NoServer`].
    pub(super) async fn list_panes(&self) -> Result<Vec<PaneInfo>> {
        let panes = self.settle_exits(|| self.list_panes_once()).await?;
        Ok(panes.into_iter().map(|p| self.addressed(p)).collect())
    }

    /// `pane` with the socket name its address carries.
    fn addressed(&self, mut pane: PaneInfo) -> PaneInfo {
        pane.socket = self.socket.address_name();
        pane
    }

    async fn list_panes_once(&self) -> Result<Vec<PaneInfo>> {
        let out = match self
            .run(cmd(["list-panes", "-a", "-F", &PaneInfo::format()]))
            .await
        {
            Ok(out) => out,
            // tmux 3.3 says "no current target" for `list-panes -a` without sessions.
            Err(TmuxError::UnknownTarget { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        parse_lines(&out, PaneInfo::parse, "list-panes")
    }

    /// The panes of one session, every window.
    pub(super) async fn session_panes(&self, session: &str) -> Result<Vec<PaneInfo>> {
        self.settle_exits(|| self.session_panes_once(session)).await
    }

    async fn session_panes_once(&self, session: &str) -> Result<Vec<PaneInfo>> {
        let out = self
            .run(cmd([
                "list-panes",
                "-s",
                "-t",
                &session_target(session),
                "-F",
                &PaneInfo::format(),
            ]))
            .await?;
        parse_lines(&out, PaneInfo::parse, "list-panes")
    }

    /// One pane, by id ("%3") or any pane target (`=S:W.P`).
    pub(super) async fn pane(&self, target: &str) -> Result<PaneInfo> {
        let mut panes = self
            .settle_exits(|| async {
                let out = self.display(target, &PaneInfo::format()).await?;
                Ok(vec![parse_one(&out, PaneInfo::parse, "display-message")?])
            })
            .await?;
        Ok(panes.remove(0))
    }

    /// Reads panes with `read` until none is dead without an exit status, nudging tmux in
    /// between, at most [`REAP_NUDGES`] times.
    ///
    /// tmux 3.3 can miss a SIGCHLD on a busy machine (measured here: 1 pane in 4 under load):
    /// the pane is dead, its process a zombie, and the status never arrives until some other
    /// child of the server exits, because tmux then reaps every exited child. A `run-shell`
    /// job is such a child. Without the loss the status is a moment late at most.
    async fn settle_exits<F, Fut>(&self, read: F) -> Result<Vec<PaneInfo>>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Vec<PaneInfo>>>,
    {
        let mut panes = read().await?;
        for _ in 0..REAP_NUDGES {
            if !panes.iter().any(PaneInfo::exit_unknown) {
                break;
            }
            self.run(cmd(["run-shell", "-b", "true"])).await?;
            tokio::time::sleep(REAP_WAIT).await;
            panes = read().await?;
        }
        Ok(panes)
    }

    /// `display-message -p -t TARGET FORMAT`, with the target checked first: tmux 3.3's
    /// display-message falls back to another pane for a target that does not exist (and
    /// prints empty fields for a missing pane id) instead of failing. `list-panes` fails,
    /// and a failed command ends the sequence.
    async fn display(&self, target: &str, format: &str) -> Result<String> {
        let mut args = cmd(["list-panes", "-t", target, "-f", "#{==:0,1}", "-F", "-"]);
        args.push(SEPARATOR.into());
        args.extend(cmd(["display-message", "-p", "-t", target, format]));
        self.run(args).await
    }

    /// The pane at `tmux:SESSION:WINDOW.PANE`.
    pub(super) async fn pane_at(&self, address: &PaneAddress) -> Result<PaneInfo> {
        Ok(self.addressed(self.pane(&address.target()).await?))
    }

    /// All sessions.
    pub(super) async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let out = self
            .run(cmd(["list-sessions", "-F", &SessionInfo::format()]))
            .await?;
        parse_lines(&out, SessionInfo::parse, "list-sessions")
    }

    /// Sessions whose name starts with `prefix`, for reconciliation at start-up. No server
    /// running means no sessions.
    pub(super) async fn list_sessions_with_prefix(&self, prefix: &str) -> Result<Vec<SessionInfo>> {
        match self.list_sessions().await {
            Ok(sessions) => Ok(sessions
                .into_iter()
                .filter(|s| s.name.starts_with(prefix))
                .collect()),
            Err(TmuxError::NoServer { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Creates a detached session of `cols` x `rows` running `spawn`, marks it `@drydock
    /// OWNER` and returns its pane. On an owned server the [`SessionDefaults`] are set globally first,
    /// in the same tmux invocation (so the very first pane gets the history limit).
    pub(super) async fn new_session(
        &self,
        name: &str,
        spawn: &Spawn<'_>,
        rows: u16,
        cols: u16,
    ) -> Result<PaneInfo> {
        validate_session_name(name)?;
        if rows == 0 || cols == 0 {
            return Err(TmuxError::InvalidArgument(format!(
                "terminal size {cols}x{rows} must be at least 1x1"
            )));
        }
        let mut args = self.scrub_global_environment();
        if self.socket.is_owned() {
            args.extend(cmd([
                "set-option",
                "-g",
                "history-limit",
                &self.defaults.history_limit.to_string(),
            ]));
            args.push(SEPARATOR.into());
            if self.defaults.remain_on_exit {
                args.extend(cmd(["set-option", "-g", "remain-on-exit", "on"]));
                args.push(SEPARATOR.into());
            }
        }
        args.extend(cmd([
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "-P",
            "-F",
            "#{pane_id}",
        ]));
        spawn_args(&mut args, spawn)?;
        let target = session_target(name);
        args.push(SEPARATOR.into());
        args.extend(cmd([
            "set-option",
            "-t",
            &target,
            DRYDOCK_SESSION_OPTION,
            &self.defaults.owner,
        ]));
        if !self.socket.is_owned() && self.defaults.remain_on_exit {
            args.push(SEPARATOR.into());
            args.extend(cmd([
                "set-option",
                "-w",
                "-t",
                &target,
                "remain-on-exit",
                "on",
            ]));
        }
        // A server whose last session was just killed is still exiting for a moment: it
        // refuses connections, or takes the new session down with it. The next attempt
        // starts a fresh one.
        let mut attempts = 0;
        let pane = loop {
            let ran = {
                let _changing = self.changing().await;
                self.run(args.clone()).await
            };
            let created = match ran {
                Ok(out) => self.pane(first_line(&out, "new-session")?).await,
                Err(error) => Err(error),
            };
            match created {
                Err(TmuxError::NoServer { .. }) if attempts < NEW_SESSION_RETRIES => {
                    attempts += 1;
                    // A busy machine takes longer to see the old server gone.
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempts))).await;
                }
                other => break other?,
            }
        };
        Ok(with_start_path(pane, spawn))
    }

    /// Creates a window in `session` running `spawn`; it does not become the current window.
    pub(super) async fn new_window(
        &self,
        session: &str,
        name: Option<&str>,
        spawn: &Spawn<'_>,
    ) -> Result<PaneInfo> {
        let mut args = self.scrub_global_environment();
        args.extend(cmd([
            "new-window",
            "-d",
            "-t",
            &session_target(session),
            "-P",
            "-F",
            "#{pane_id}",
        ]));
        if let Some(name) = name {
            args.extend(cmd(["-n", name]));
        }
        spawn_args(&mut args, spawn)?;
        let out = self.run_changing(args).await?;
        let pane = self.after_create(first_line(&out, "new-window")?).await?;
        Ok(with_start_path(pane, spawn))
    }

    /// Splits `target` (a pane id or target) in two: `vertical` puts the new pane below
    /// (`-v`, a top/bottom split), otherwise to the right (`-h`). The new pane is not made
    /// active.
    pub(super) async fn split_pane(
        &self,
        target: &str,
        vertical: bool,
        spawn: &Spawn<'_>,
    ) -> Result<PaneInfo> {
        let mut args = self.scrub_global_environment();
        args.extend(cmd([
            "split-window",
            if vertical { "-v" } else { "-h" },
            "-d",
            "-t",
            target,
            "-P",
            "-F",
            "#{pane_id}",
        ]));
        spawn_args(&mut args, spawn)?;
        let out = self.run_changing(args).await?;
        let pane = self.after_create(first_line(&out, "split-window")?).await?;
        Ok(with_start_path(pane, spawn))
    }

    async fn after_create(&self, pane_id: &str) -> Result<PaneInfo> {
        // On an owned server remain-on-exit is global already; on the user's server it is set
        // on this pane only, never on their other panes.
        if !self.socket.is_owned() && self.defaults.remain_on_exit {
            self.run(cmd([
                "set-option",
                "-p",
                "-t",
                pane_id,
                "remain-on-exit",
                "on",
            ]))
            .await?;
        }
        self.pane(pane_id).await
    }

    /// Kills a pane and every process it ran (see [`Tmux::kill_session`]).
    pub(super) async fn kill_pane(&self, target: &str) -> Result<()> {
        let panes = vec![self.pane(target).await?];
        self.kill_with_processes(&panes, cmd(["kill-pane", "-t", target]))
            .await
    }

    /// Kills a window (`target`: "@2", "=S:1" or a pane in it) and every process its panes ran.
    pub(super) async fn kill_window(&self, target: &str) -> Result<()> {
        let out = self
            .run(cmd(["list-panes", "-t", target, "-F", &PaneInfo::format()]))
            .await?;
        let panes = parse_lines(&out, PaneInfo::parse, "list-panes")?;
        self.kill_with_processes(&panes, cmd(["kill-window", "-t", target]))
            .await
    }

    /// Kills a session and every process its panes ran. tmux's kill only closes the ptys
    /// (SIGHUP to the foreground process groups); processes that ignore SIGHUP (`nohup`) or
    /// sit in another process group of the pane's terminal session survive that. So the
    /// processes of each pane's session are collected first (from /proc), and whatever
    /// survives the kill gets SIGKILL. A process that left with `setsid` and was reparented
    /// is out of reach.
    ///
    /// The control clients attached to the session (drydock's, and those of other drydocks
    /// on the server) detach with it; the kill holds [`Tmux::changing`] until tmux has seen
    /// them go.
    pub(super) async fn kill_session(&self, session: &str) -> Result<()> {
        let panes = self.session_panes(session).await?;
        let target = session_target(session);
        let processes = procs::of_panes(panes.iter().filter(|p| !p.dead).map(|p| p.pid));
        {
            let _changing = self.changing().await;
            let clients = self.client_pids(&target).await;
            self.run(cmd(["kill-session", "-t", &target])).await?;
            self.after_detaching(&clients).await;
        }
        processes.end(procs::AFTER_HANGUP).await;
        Ok(())
    }

    async fn kill_with_processes(&self, panes: &[PaneInfo], kill: Vec<String>) -> Result<()> {
        let processes = procs::of_panes(panes.iter().filter(|p| !p.dead).map(|p| p.pid));
        self.run_changing(kill).await?;
        processes.end(procs::AFTER_HANGUP).await;
        Ok(())
    }

    /// [`Tmux::run`] for a command that changes what tmux tells control clients about.
    async fn run_changing(&self, args: Vec<String>) -> Result<String> {
        let _changing = self.changing().await;
        self.run(args).await
    }

    /// The processes of the clients attached to session `target` (none when it cannot be
    /// told).
    async fn client_pids(&self, target: &str) -> Vec<i32> {
        match self
            .run(cmd(["list-clients", "-t", target, "-F", "#{client_pid}"]))
            .await
        {
            Ok(out) => out.lines().filter_map(|l| l.trim().parse().ok()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Once the client processes `pids` ended (within [`DETACH_WITHIN`]), one more command:
    /// tmux answers it only after it has dealt with their going.
    pub(super) async fn after_detaching(&self, pids: &[i32]) {
        if pids.is_empty() {
            return;
        }
        let deadline = std::time::Instant::now() + DETACH_WITHIN;
        while pids
            .iter()
            .any(|pid| crate::process::procfs::ProcStat::read(*pid).is_some_and(|p| !p.is_gone()))
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = self
            .run(cmd(["list-sessions", "-F", "#{session_id}"]))
            .await;
    }

    pub(super) async fn rename_session(&self, session: &str, new_name: &str) -> Result<()> {
        validate_session_name(new_name)?;
        self.run_changing(cmd([
            "rename-session",
            "-t",
            &session_target(session),
            new_name,
        ]))
        .await
        .map(drop)
    }

    /// Makes the pane `cols` x `rows`. A pane alone in its window is resized by resizing the
    /// window (`resize-window`, which also sets the window's `window-size` to `manual`, so
    /// attached clients no longer resize it); a pane sharing its window is resized within
    /// it (`resize-pane`), limited by the window.
    pub(super) async fn resize_pane(&self, target: &str, rows: u16, cols: u16) -> Result<()> {
        if rows == 0 || cols == 0 {
            return Err(TmuxError::InvalidArgument(format!(
                "terminal size {cols}x{rows} must be at least 1x1"
            )));
        }
        let out = self.display(target, "#{window_panes}").await?;
        let (rows, cols) = (rows.to_string(), cols.to_string());
        let args = if out.trim() == "1" {
            cmd(["resize-window", "-t", target, "-x", &cols, "-y", &rows])
        } else {
            cmd(["resize-pane", "-t", target, "-x", &cols, "-y", &rows])
        };
        self.run(args).await.map(drop)
    }

    /// Writes raw bytes to the pane (`send-keys -H`, hex), e.g. non-UTF-8 input.
    pub(super) async fn send_bytes(&self, target: &str, bytes: &[u8]) -> Result<()> {
        for chunk in bytes.chunks(SEND_BYTES_CHUNK) {
            let mut args = cmd(["send-keys", "-H", "-t", target, "--"]);
            args.extend(chunk.iter().map(|b| format!("{b:02x}")));
            self.run(args).await?;
        }
        Ok(())
    }

    /// The pane's screen and/or scrollback as text (`capture-pane -p`); for panes whose
    /// output drydock did not see from the start.
    pub(super) async fn capture(&self, target: &str, options: CaptureOptions) -> Result<String> {
        let mut args = cmd(["capture-pane", "-p", "-t", target]);
        if options.escapes {
            args.push("-e".into());
        }
        if options.join_wrapped {
            args.push("-J".into());
        }
        let line = |n: i64| {
            if n == i64::MIN {
                "-".to_string()
            } else {
                n.clamp(i32::MIN as i64 + 1, i32::MAX as i64).to_string()
            }
        };
        if let Some(start) = options.start {
            args.extend(["-S".into(), line(start)]);
        }
        if let Some(end) = options.end {
            args.extend(["-E".into(), line(end)]);
        }
        self.run(args).await
    }
}

/// Appends `-c`, `-e` and the command. With one argument tmux runs the command through
/// `sh -c`; with several it execs them directly. A single-element argv is therefore turned
/// into `exec 'PROGRAM'` so it is never word-split either.
fn spawn_args(args: &mut Vec<String>, spawn: &Spawn<'_>) -> Result<()> {
    if let Some(cwd) = spawn.cwd {
        if !cwd.is_dir() {
            return Err(TmuxError::InvalidArgument(format!(
                "working directory {} does not exist",
                cwd.display()
            )));
        }
        let cwd = cwd.to_str().ok_or_else(|| {
            TmuxError::InvalidArgument(format!("working directory {} is not UTF-8", cwd.display()))
        })?;
        args.extend(cmd(["-c", cwd]));
    }
    for (key, value) in spawn.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(TmuxError::InvalidArgument(format!(
                "invalid environment variable name {key:?}"
            )));
        }
        args.extend(["-e".into(), format!("{key}={value}")]);
    }
    match spawn.argv {
        [] => {}
        [program] => {
            args.push("--".into());
            args.push(format!("exec {}", single_quoted(program)));
        }
        argv => {
            args.push("--".into());
            args.extend(argv.iter().cloned());
        }
    }
    Ok(())
}

/// tmux reports an empty `pane_current_path` for a pane whose process just started; the
/// directory it was started in is the answer then.
fn with_start_path(mut pane: PaneInfo, spawn: &Spawn<'_>) -> PaneInfo {
    if pane.path.as_os_str().is_empty()
        && let Some(cwd) = spawn.cwd
    {
        pane.path = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    }
    pane
}
