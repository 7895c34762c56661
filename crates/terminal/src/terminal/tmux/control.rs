//! A tmux control-mode client (`tmux -C attach`): pane output as events instead of polling
//! `capture-pane`.
//!
//! Control mode reports only what panes print after the client attached: a caller captures
//! the current screen first (`Tmux::capture`), then feeds the subscribed bytes.
//!
//! Size: a control client that never sets its size (`refresh-client -C`) is left out of
//! tmux's window-size calculation, so this client never sends one, and also attaches with
//! `-f ignore-size`. (In tmux 3.3 `ignore-size` alone is not enough: a client with that
//! flag still sizes the windows when it is the only client attached.)

use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{Result, Tmux, TmuxError, escape_arg, session_target};

/// Receives a pane's raw output bytes, in order. Called on the client's reader task: keep it
/// short (feed a parser, push to a channel).
pub(crate) type OutputCallback = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// The name of the subscriptions that report pane deaths, one per window: `drydock-dead@N`.
///
/// Per window, never `%*` or `@*`: tmux 3.3a crashes (segfault) when a session ends while a
/// control client with an "every pane" or "every window" subscription is attached and its
/// output is not being read (measured: 60 of 60 runs, and none with per-window ones).
const DEAD_SUBSCRIPTION: &str = "drydock-dead";
/// The window's dead panes, each as "%P=STATUS/SIGNAL ". tmux marks a pane dead when the pty
/// closes and learns the status a moment later (or, on a busy machine, not at all until
/// nudged), so "%P=/" (dead, status not yet known) is not reported: the change to "%P=3/"
/// or "%P=/9" is.
const DEAD_FORMAT: &str = "#{P:#{?pane_dead,#{pane_id}=#{pane_dead_status}/#{pane_dead_signal} ,}}";
const EVENT_CAPACITY: usize = 1024;
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// What happens on the server, as the control client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ControlEvent {
    /// A pane's process exited; the pane remains (remain-on-exit). Reported within about a
    /// second (tmux checks subscriptions once a second).
    /// `status` is the exit status, `signal` the signal that killed it.
    PaneExited {
        pane: String,
        status: Option<i32>,
        signal: Option<i32>,
    },
    /// A subscribed (or seen) pane no longer exists; its subscription is removed.
    PaneClosed {
        pane: String,
    },
    WindowAdded {
        window: String,
    },
    WindowClosed {
        window: String,
    },
    PaneModeChanged {
        pane: String,
    },
    SessionChanged {
        session_id: String,
        name: String,
    },
    SessionsChanged,
    /// The client detached or the server went away; no more events follow.
    Exited {
        reason: Option<String>,
    },
}

/// One parsed line of control-mode output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    Output { pane: String, data: Vec<u8> },
    Begin { number: u64, from_client: bool },
    End { number: u64, error: bool },
    Exit(Option<String>),
    WindowAdd(String),
    WindowClose(String),
    UnlinkedWindowClose(String),
    LayoutChange(String),
    PaneModeChanged(String),
    SessionChanged { id: String, name: String },
    SessionsChanged,
    SubscriptionChanged { name: String, value: String },
    Other(Vec<u8>),
}

/// Undoes control mode's escaping: bytes below 0x20 and `\` arrive as `\ooo` (octal);
/// everything else is the raw byte.
pub(crate) fn decode_octal(escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(escaped.len());
    let mut i = 0;
    while i < escaped.len() {
        let b = escaped[i];
        if b == b'\\'
            && let Some(digits) = escaped.get(i + 1..i + 4)
            && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let value = digits
                .iter()
                .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
            out.push(value as u8);
            i += 4;
            continue;
        }
        out.push(b);
        i += 1;
    }
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses one line (without its newline) that is not inside a `%begin` block.
pub(crate) fn parse_line(line: &[u8]) -> Line {
    let (word, rest) = match line.iter().position(|&b| b == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[][..]),
    };
    let split_word = |bytes: &[u8]| -> (String, Vec<u8>) {
        match bytes.iter().position(|&b| b == b' ') {
            Some(i) => (text(&bytes[..i]), bytes[i + 1..].to_vec()),
            None => (text(bytes), Vec::new()),
        }
    };
    let block_numbers = |rest: &[u8]| -> (u64, bool) {
        let fields: Vec<String> = text(rest).split(' ').map(str::to_string).collect();
        let number = fields.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        let flags: u32 = fields.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
        (number, flags & 1 == 1)
    };
    match word {
        b"%output" => {
            let (pane, data) = split_word(rest);
            Line::Output {
                pane,
                data: decode_octal(&data),
            }
        }
        b"%extended-output" => {
            // %extended-output %PANE AGE ... : DATA
            let (pane, after) = split_word(rest);
            let data = after
                .windows(3)
                .position(|w| w == b" : ")
                .map(|i| &after[i + 3..])
                .unwrap_or(&[]);
            Line::Output {
                pane,
                data: decode_octal(data),
            }
        }
        b"%begin" => {
            let (number, from_client) = block_numbers(rest);
            Line::Begin {
                number,
                from_client,
            }
        }
        b"%end" | b"%error" => Line::End {
            number: block_numbers(rest).0,
            error: word == b"%error",
        },
        b"%exit" => Line::Exit((!rest.is_empty()).then(|| text(rest))),
        b"%window-add" => Line::WindowAdd(text(rest)),
        b"%window-close" => Line::WindowClose(text(rest)),
        b"%unlinked-window-close" => Line::UnlinkedWindowClose(text(rest)),
        b"%layout-change" => Line::LayoutChange(split_word(rest).0),
        b"%pane-mode-changed" => Line::PaneModeChanged(text(rest)),
        b"%session-changed" => {
            let (id, name) = split_word(rest);
            Line::SessionChanged {
                id,
                name: text(&name),
            }
        }
        b"%sessions-changed" => Line::SessionsChanged,
        b"%subscription-changed" => {
            // %subscription-changed NAME $S @W IDX %P ... : VALUE
            let rest_text = text(rest);
            let (head, value) = rest_text
                .split_once(" : ")
                .unwrap_or((rest_text.as_str(), ""));
            let name = head.split(' ').next().unwrap_or_default().to_string();
            Line::SubscriptionChanged {
                name,
                value: value.to_string(),
            }
        }
        _ => Line::Other(line.to_vec()),
    }
}

type Reply = std::result::Result<Vec<String>, String>;

struct Shared {
    /// The client's stdin, where commands go; None once closed.
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Per window, its dead panes already reported ("%P=STATUS/SIGNAL").
    dead: Mutex<HashMap<String, HashSet<String>>>,
    callbacks: Mutex<HashMap<String, OutputCallback>>,
    /// Panes subscribed to or seen printing: the ones whose disappearance is reported.
    known_panes: Mutex<HashSet<String>>,
    /// Reply senders in command order; `None` once the client exited (no reply will come).
    pending: Mutex<Option<VecDeque<oneshot::Sender<Reply>>>>,
    events: broadcast::Sender<ControlEvent>,
}

impl Shared {
    fn emit(&self, event: ControlEvent) {
        let _ = self.events.send(event);
    }

    /// Runs a tmux command line through the control connection; its output lines, or
    /// tmux's error.
    async fn command(&self, line: &str) -> Result<Vec<String>> {
        if line.contains('\n') {
            return Err(TmuxError::InvalidArgument(
                "a control-mode command must be one line".into(),
            ));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut stdin = self.stdin.lock().await;
            let stdin = stdin.as_mut().ok_or(TmuxError::ControlClientGone)?;
            // Queued before writing: replies come back in order, and may arrive before
            // write_all returns.
            self.pending
                .lock()
                .unwrap()
                .as_mut()
                .ok_or(TmuxError::ControlClientGone)?
                .push_back(tx);
            let written = async {
                stdin.write_all(line.as_bytes()).await?;
                stdin.write_all(b"\n").await?;
                stdin.flush().await
            }
            .await;
            if written.is_err() {
                return Err(TmuxError::ControlClientGone);
            }
        }
        match rx.await {
            Ok(Ok(lines)) => Ok(lines),
            Ok(Err(message)) => Err(TmuxError::Command {
                command: line.split(' ').next().unwrap_or_default().to_string(),
                message,
            }),
            Err(_) => Err(TmuxError::ControlClientGone),
        }
    }

    /// Watches window `window` ("@3") for dying panes.
    async fn watch_window(&self, window: &str) -> Result<Vec<String>> {
        self.command(&format!(
            "refresh-client -B '{DEAD_SUBSCRIPTION}{window}:{window}:{DEAD_FORMAT}'"
        ))
        .await
    }

    /// The panes of `window` newly reported dead with a status in `value`; those dead
    /// without one yet, to nudge.
    fn newly_dead(&self, window: &str, value: &str) -> (Vec<(String, String)>, Vec<String>) {
        let mut dead = self.dead.lock().unwrap();
        let seen = dead.entry(window.to_string()).or_default();
        let mut exited = Vec::new();
        let mut unknown = Vec::new();
        let now: HashSet<String> = value.split_whitespace().map(str::to_string).collect();
        for entry in &now {
            let Some((pane, how)) = entry.split_once('=') else {
                continue;
            };
            if how == "/" {
                unknown.push(pane.to_string());
            } else if !seen.contains(entry) {
                exited.push((pane.to_string(), how.to_string()));
            }
        }
        *seen = now;
        (exited, unknown)
    }
}

/// A `tmux -C attach` client on one session. Output of every pane in the session's windows
/// arrives on the reader task; [`ControlClient::subscribe`] routes a pane's bytes to a
/// callback. Dropping the client kills the tmux process and stops its tasks.
pub(crate) struct ControlClient {
    /// Its server: the client detaches under [`Tmux::changing`] when dropped.
    tmux: Tmux,
    shared: Arc<Shared>,
    child: Mutex<Option<Child>>,
    reader: JoinHandle<()>,
    checker: JoinHandle<()>,
    /// Subscribes each new window of the session.
    windows: JoinHandle<()>,
}

impl ControlClient {
    /// Attaches to `session` (exact name) in control mode. Only output produced from now on
    /// is reported: capture the pane's current screen first.
    pub(crate) async fn attach(tmux: &Tmux, session: &str) -> Result<ControlClient> {
        // Until tmux answers the attach, the client is still identifying itself: no change
        // tmux tells control clients about may happen meanwhile (see `changes`).
        let changing = tmux.changing().await;
        let mut command = tmux.command();
        command
            .args([
                "-C",
                "attach-session",
                "-f",
                "ignore-size",
                "-t",
                &escape_arg(&session_target(session)),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => TmuxError::NotInstalled,
            _ => TmuxError::Io(e),
        })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let shared = Arc::new(Shared {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            dead: Mutex::new(HashMap::new()),
            callbacks: Mutex::new(HashMap::new()),
            known_panes: Mutex::new(HashSet::new()),
            pending: Mutex::new(Some(VecDeque::new())),
            events,
        });
        let mut lines = BufReader::new(stdout);
        // The attach command's own reply block comes first, or an error and %exit.
        if let Err(message) = read_attach_reply(&mut lines).await {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(classify_attach_error(session, message));
        }
        drop(changing);
        let (recheck_tx, recheck_rx) = mpsc::unbounded_channel();
        // Listening before the windows are listed: a window added meanwhile is not missed.
        let added = shared.events.subscribe();
        let reader = tokio::spawn(read_loop(tmux.clone(), lines, shared.clone(), recheck_tx));
        let checker = tokio::spawn(check_closed_panes(tmux.clone(), shared.clone(), recheck_rx));
        let windows = tokio::spawn(watch_new_windows(shared.clone(), added));
        let client = ControlClient {
            tmux: tmux.clone(),
            shared,
            child: Mutex::new(Some(child)),
            reader,
            checker,
            windows,
        };
        let listed = client
            .command(&format!(
                "list-windows -t {} -F '#{{window_id}}'",
                escape_arg(&session_target(session))
            ))
            .await?;
        for window in listed {
            client.shared.watch_window(&window).await?;
        }
        Ok(client)
    }

    /// Routes `pane`'s output ("%3") to `callback`, replacing an earlier one.
    pub(crate) fn subscribe(&self, pane: &str, callback: OutputCallback) {
        self.shared
            .known_panes
            .lock()
            .unwrap()
            .insert(pane.to_string());
        self.shared
            .callbacks
            .lock()
            .unwrap()
            .insert(pane.to_string(), callback);
    }

    /// Events from now on (pane exited or closed, windows, sessions, client exit).
    pub(crate) fn events(&self) -> broadcast::Receiver<ControlEvent> {
        self.shared.events.subscribe()
    }

    /// Whether the tmux client is still running.
    pub(crate) fn is_alive(&self) -> bool {
        !self.reader.is_finished()
    }

    /// Runs a tmux command line (tmux syntax, quoted as in a config file) through the
    /// control connection; returns its output lines, or tmux's error.
    pub(crate) async fn command(&self, line: &str) -> Result<Vec<String>> {
        self.shared.command(line).await
    }

    /// Detaches cleanly (closing stdin makes tmux exit the client), killing the process if
    /// it does not exit in time.
    #[cfg(test)]
    pub(crate) async fn close(self) {
        self.shared.stdin.lock().await.take();
        let child = self.child.lock().unwrap().take();
        if let Some(mut child) = child
            && tokio::time::timeout(CLOSE_TIMEOUT, child.wait())
                .await
                .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            // Its detaching is a change tmux tells the other control clients about: made
            // while no attach is under way (see `changes`), on the runtime when there is one.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let tmux = self.tmux.clone();
                    // Its stdin stays open until then: at its end the client would detach.
                    let shared = self.shared.clone();
                    runtime.spawn(async move {
                        let _changing = tmux.changing().await;
                        drop(shared);
                        let pid = child.id();
                        let _ = child.start_kill();
                        let _ = tokio::time::timeout(CLOSE_TIMEOUT, child.wait()).await;
                        tmux.after_detaching(
                            &pid.map(|p| p as i32).into_iter().collect::<Vec<_>>(),
                        )
                        .await;
                    });
                }
                // tokio reaps it in the background.
                Err(_) => {
                    let _ = child.start_kill();
                }
            }
        }
        self.reader.abort();
        self.checker.abort();
        self.windows.abort();
    }
}

/// Subscribes every window added to the session to pane deaths, and drops the
/// subscription (and what it reported) of every window closed.
async fn watch_new_windows(shared: Arc<Shared>, mut events: broadcast::Receiver<ControlEvent>) {
    loop {
        match events.recv().await {
            Ok(ControlEvent::WindowAdded { window }) => {
                let _ = shared.watch_window(&window).await;
            }
            Ok(ControlEvent::WindowClosed { window }) => {
                shared.dead.lock().unwrap().remove(&window);
                let _ = shared
                    .command(&format!("refresh-client -B '{DEAD_SUBSCRIPTION}{window}'"))
                    .await;
            }
            Ok(ControlEvent::Exited { .. }) | Err(broadcast::error::RecvError::Closed) => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
        }
    }
}

async fn read_attach_reply(lines: &mut BufReader<ChildStdout>) -> std::result::Result<(), String> {
    let mut buf = Vec::new();
    let mut in_block = false;
    let mut block = Vec::new();
    loop {
        buf.clear();
        let n = tokio::time::timeout(CLOSE_TIMEOUT * 2, lines.read_until(b'\n', &mut buf))
            .await
            .map_err(|_| "no answer from tmux -C".to_string())?
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(if block.is_empty() {
                "tmux -C exited".to_string()
            } else {
                block.join("\n")
            });
        }
        let line = strip_newline(&buf);
        if in_block {
            match parse_line(line) {
                Line::End { error: false, .. } => return Ok(()),
                Line::End { error: true, .. } => return Err(block.join("\n")),
                _ => block.push(text(line)),
            }
        } else if let Line::Begin { .. } = parse_line(line) {
            in_block = true;
        } else if let Line::Exit(reason) = parse_line(line) {
            return Err(reason.unwrap_or_else(|| "tmux -C exited".into()));
        }
    }
}

fn classify_attach_error(session: &str, message: String) -> TmuxError {
    let error = super::classify_error("attach-session".into(), message, None);
    match error {
        TmuxError::Command { message, .. } if message == "tmux -C exited" => {
            TmuxError::UnknownTarget {
                target: "session".into(),
                message: format!(
                    "cannot attach to session {session:?} (no server or no such session)"
                ),
            }
        }
        other => other,
    }
}

fn strip_newline(buf: &[u8]) -> &[u8] {
    let line = buf.strip_suffix(b"\n").unwrap_or(buf);
    line.strip_suffix(b"\r").unwrap_or(line)
}

async fn read_loop(
    tmux: Tmux,
    mut lines: BufReader<ChildStdout>,
    shared: Arc<Shared>,
    recheck: mpsc::UnboundedSender<()>,
) {
    let mut buf = Vec::new();
    // Inside a %begin..%end block: Some(is a reply to one of our commands, lines so far).
    let mut block: Option<(bool, Vec<String>)> = None;
    let mut exit_reason = None;
    loop {
        buf.clear();
        match lines.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = strip_newline(&buf);
        if let Some((ours, collected)) = block.as_mut() {
            if let Line::End { error, .. } = parse_line(line) {
                if *ours
                    && let Some(tx) = shared
                        .pending
                        .lock()
                        .unwrap()
                        .as_mut()
                        .and_then(VecDeque::pop_front)
                {
                    let lines = std::mem::take(collected);
                    let _ = tx.send(if error {
                        Err(lines.join("\n"))
                    } else {
                        Ok(lines)
                    });
                }
                block = None;
            } else {
                collected.push(text(line));
            }
            continue;
        }
        match parse_line(line) {
            Line::Output { pane, data } => {
                let callback = shared.callbacks.lock().unwrap().get(&pane).cloned();
                match callback {
                    Some(callback) => callback(&data),
                    None => {
                        shared.known_panes.lock().unwrap().insert(pane);
                    }
                }
            }
            Line::Begin { from_client, .. } => block = Some((from_client, Vec::new())),
            Line::End { .. } | Line::Other(_) => {}
            Line::Exit(reason) => {
                exit_reason = reason;
                break;
            }
            Line::WindowAdd(window) => shared.emit(ControlEvent::WindowAdded { window }),
            Line::WindowClose(window) | Line::UnlinkedWindowClose(window) => {
                shared.emit(ControlEvent::WindowClosed { window });
                let _ = recheck.send(());
            }
            Line::LayoutChange(_) => {
                let _ = recheck.send(());
            }
            Line::SessionsChanged => {
                shared.emit(ControlEvent::SessionsChanged);
                let _ = recheck.send(());
            }
            Line::PaneModeChanged(pane) => shared.emit(ControlEvent::PaneModeChanged { pane }),
            Line::SessionChanged { id, name } => shared.emit(ControlEvent::SessionChanged {
                session_id: id,
                name,
            }),
            Line::SubscriptionChanged { name, value } => {
                let Some(window) = name.strip_prefix(DEAD_SUBSCRIPTION) else {
                    continue;
                };
                let (exited, unknown) = shared.newly_dead(window, &value);
                for (pane, how) in exited {
                    let (status, signal) = how.split_once('/').unwrap_or((&how, ""));
                    shared.emit(ControlEvent::PaneExited {
                        pane,
                        status: status.parse().ok(),
                        signal: signal.parse().ok(),
                    });
                }
                for pane in unknown {
                    // Dead without a status: reading the pane makes tmux reap a lost exit
                    // (see `Tmux::settle_exits`); the subscription then reports it.
                    let tmux = tmux.clone();
                    tokio::spawn(async move { tmux.pane(&pane).await });
                }
            }
        }
    }
    // Whatever is pending will never get a reply.
    shared.pending.lock().unwrap().take();
    drop(recheck);
    report_closed_panes(&tmux, &shared).await;
    shared.emit(ControlEvent::Exited {
        reason: exit_reason,
    });
}

/// On layout, window and session changes, reports known panes that are gone.
async fn check_closed_panes(
    tmux: Tmux,
    shared: Arc<Shared>,
    mut recheck: mpsc::UnboundedReceiver<()>,
) {
    while recheck.recv().await.is_some() {
        while recheck.try_recv().is_ok() {}
        report_closed_panes(&tmux, &shared).await;
    }
}

async fn report_closed_panes(tmux: &Tmux, shared: &Shared) {
    // A busy machine can make one listing fail (time out); a close must not go unreported.
    let mut attempts = 0;
    let alive: HashSet<String> = loop {
        attempts += 1;
        let listed = tmux
            .run(vec![
                "list-panes".into(),
                "-a".into(),
                "-F".into(),
                "#{pane_id}".into(),
            ])
            .await;
        match listed {
            Ok(out) => break out.lines().map(str::to_string).collect(),
            // A server without sessions.
            Err(TmuxError::UnknownTarget { .. }) => break HashSet::new(),
            // No server, or one that could not be reached for a moment (a busy machine:
            // "error connecting to …"): only a server still not there after the retries has
            // taken every pane with it.
            Err(TmuxError::NoServer { .. }) if attempts >= 3 => break HashSet::new(),
            Err(_) if attempts < 3 => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(_) => return,
        }
    };
    let gone: Vec<String> = {
        let mut known = shared.known_panes.lock().unwrap();
        let gone: Vec<String> = known.difference(&alive).cloned().collect();
        for pane in &gone {
            known.remove(pane);
        }
        gone
    };
    for pane in gone {
        shared.callbacks.lock().unwrap().remove(&pane);
        shared.emit(ControlEvent::PaneClosed { pane });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_octal_escapes() {
        assert_eq!(
            decode_octal(br"a\033[31mb\015\012\134x\\y\12"),
            b"a\x1b[31mb\r\n\\x\\\\y\\12".to_vec()
        );
        assert_eq!(decode_octal("é\\011".as_bytes()), "é\t".as_bytes());
    }

    #[test]
    fn parses_notifications() {
        assert_eq!(
            parse_line(br"%output %11 a\033[31mb\015\012"),
            Line::Output {
                pane: "%11".into(),
                data: b"a\x1b[31mb\r\n".to_vec()
            }
        );
        assert_eq!(
            parse_line(br"%output %2 "),
            Line::Output {
                pane: "%2".into(),
                data: Vec::new()
            }
        );
        assert_eq!(
            parse_line(br"%extended-output %4 120 : hi\012"),
            Line::Output {
                pane: "%4".into(),
                data: b"hi\n".to_vec()
            }
        );
        assert_eq!(
            parse_line(b"%begin 1795294008 359 1"),
            Line::Begin {
                number: 359,
                from_client: true
            }
        );
        assert_eq!(
            parse_line(b"%error 1795294008 359 1"),
            Line::End {
                number: 359,
                error: true
            }
        );
        assert_eq!(
            parse_line(b"%session-changed $11 my session"),
            Line::SessionChanged {
                id: "$11".into(),
                name: "my session".into()
            }
        );
        assert_eq!(parse_line(b"%exit"), Line::Exit(None));
        assert_eq!(
            parse_line(b"%exit detached"),
            Line::Exit(Some("detached".into()))
        );
        assert_eq!(
            parse_line(b"%subscription-changed drydock-dead@1 $0 @1 1 - : %1=/9 %4=3/ "),
            Line::SubscriptionChanged {
                name: "drydock-dead@1".into(),
                value: "%1=/9 %4=3/ ".into()
            }
        );
        assert_eq!(
            parse_line(b"%layout-change @12 4fe1,40x10,0,0,12 4fe1,40x10,0,0,12 *"),
            Line::LayoutChange("@12".into())
        );
    }

    #[tokio::test]
    async fn a_windows_dead_panes_are_reported_once_each_and_again_after_a_respawn() {
        let (events, _) = broadcast::channel(4);
        let shared = Shared {
            stdin: tokio::sync::Mutex::new(None),
            dead: Mutex::new(HashMap::new()),
            callbacks: Mutex::new(HashMap::new()),
            known_panes: Mutex::new(HashSet::new()),
            pending: Mutex::new(None),
            events,
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(p, h)| (p.to_string(), h.to_string()))
                .collect()
        };
        assert_eq!(
            shared.newly_dead("@1", "%1=/ "),
            (Vec::new(), vec!["%1".to_string()]),
            "dead, its status not known yet: nudged"
        );
        assert_eq!(
            shared.newly_dead("@1", "%1=7/ "),
            (pairs(&[("%1", "7/")]), vec![])
        );
        assert_eq!(
            shared.newly_dead("@1", "%1=7/ %2=/9 "),
            (pairs(&[("%2", "/9")]), vec![]),
            "the first one is not reported again"
        );
        assert_eq!(
            shared.newly_dead("@2", "%5=0/ "),
            (pairs(&[("%5", "0/")]), vec![])
        );
        assert_eq!(
            shared.newly_dead("@1", "%2=/9 "),
            (vec![], vec![]),
            "%1 respawned"
        );
        assert_eq!(
            shared.newly_dead("@1", "%1=1/ %2=/9 "),
            (pairs(&[("%1", "1/")]), vec![])
        );
        assert!(matches!(
            shared.command("list-windows").await,
            Err(TmuxError::ControlClientGone)
        ));
    }
}
