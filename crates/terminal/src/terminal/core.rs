//! The backend-independent heart of a terminal: output bytes go in (`feed`), and out come
//! the screen, the numbered lines of its history, where the shell stands (from its
//! shell-integration marks), whether the program still runs, a generation counter that
//! waiters watch, and the output of a command run through the shell (`run`).
//!
//! `feed` holds the state lock only while one chunk is parsed; waiters are woken through a
//! `watch` channel carrying the generation, so a waiter never misses a change between
//! reading the state and going to sleep. Every wait goes through `wait_until`, which also
//! ends when the caller's cancellation fires. The screen is fed the text between marks in
//! order, so a mark knows the line the cursor was on when it arrived.

mod run;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::capture::Capture;
use super::command_log::{CommandLog, FinishedCommand};
use super::marks::{MarkEvent, MarkScanner};
pub use super::screen::ProgramStatus;
use super::screen::{Lines, Screen};
use super::shell_state::ShellState;
pub use run::{Fallback, OutputLines, RunError, RunOutcome};

/// What decided that a wait or a run was over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitMethod {
    /// The screen changed after the given generation.
    Changed,
    /// No output for the quiet period.
    Quiet,
    /// The pattern matched.
    Pattern,
    /// The shell's end-of-command mark (OSC 133 D) arrived.
    Mark,
    /// The process ended.
    Exited,
    /// `max_wait` / the timeout passed first.
    Timeout,
}

/// What `wait` waits for: the first of these conditions to hold.
#[derive(Debug, Clone, Default)]
pub struct WaitFor {
    /// Return once the generation is greater than this (default: the current one, when no
    /// other condition is given).
    pub after_generation: Option<u64>,
    /// Return once there was no output for this long (counted from the later of the call
    /// and the last output).
    pub quiet_ms: Option<u64>,
    /// Return once the visible screen text matches (rows trimmed of trailing spaces,
    /// except the cursor's row, kept up to the cursor: `>>> $` matches a prompt).
    pub pattern: Option<Regex>,
    pub max_wait: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WaitOutcome {
    /// A condition was met (or the process ended); false at timeout.
    pub completed: bool,
    pub method: WaitMethod,
    /// The generation when the wait returned: pass it as `after_generation` to wait for
    /// the next change without missing one.
    pub generation: u64,
    /// The text the pattern matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}

/// Whether the terminal's program still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    Running,
    Exited(ExitStatus),
}

impl Life {
    pub fn has_exited(self) -> bool {
        matches!(self, Life::Exited(_))
    }

    /// The program's exit code, once it exited with one.
    pub fn exit_code(self) -> Option<i32> {
        match self {
            Life::Exited(status) => status.code(),
            Life::Running => None,
        }
    }
}

/// How the terminal's program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// It was killed by a signal, or how it ended is not known.
    Unknown,
}

impl ExitStatus {
    pub fn code(self) -> Option<i32> {
        match self {
            ExitStatus::Code(code) => Some(code),
            ExitStatus::Unknown => None,
        }
    }
}

/// A terminal at one moment, as [`TerminalCore::observe`] reads it.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The screen's rows as plain text, trailing blank rows left out.
    pub rows: Vec<String>,
    pub title: String,
    pub program_status: Vec<ProgramStatus>,
    pub last_output: Instant,
    pub life: Life,
    pub generation: u64,
}

/// A wait given up because the caller cancelled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

pub struct TerminalCore {
    state: Mutex<State>,
    generation: watch::Sender<u64>,
    /// One `run` at a time: they share the shell.
    run_lock: tokio::sync::Mutex<()>,
    /// Sends answers to the program's queries, when drydock is its terminal.
    responder: OnceLock<Responder>,
    /// The program's output as it arrives, for live viewers (the dashboard); bounded: a
    /// viewer that falls behind is told it lagged and starts again from a redraw.
    output: broadcast::Sender<Live>,
    /// Whether the program runs or how it ended: read and waited on without the state's
    /// lock, which the feed holds while it parses a burst of output.
    life: watch::Sender<Life>,
    /// Told each command the shell finished (its marks frame it).
    on_command: OnceLock<CommandListener>,
}

type CommandListener = Box<dyn Fn(FinishedCommand) + Send + Sync>;

/// What a live viewer receives after its redraw.
#[derive(Debug, Clone)]
pub enum Live {
    /// Output bytes, in order.
    Output(Arc<[u8]>),
    /// The terminal changed size: the viewer starts again from a redraw at the new size.
    Resized,
}

/// Output chunks kept for live viewers that have not read them yet, and their largest size:
/// at most 16 MiB per watched terminal.
const VIEWER_BACKLOG: usize = 1024;
const VIEWER_CHUNK: usize = 16 * 1024;

/// What a live viewer starts from: the screen as escape codes that redraw it, at its size.
#[derive(Debug, Clone)]
pub struct Redraw {
    pub rows: u16,
    pub cols: u16,
    pub bytes: Vec<u8>,
}

type Responder = Box<dyn Fn(&[u8]) + Send + Sync>;

struct State {
    screen: Screen,
    scanner: MarkScanner,
    shell: ShellState,
    last_output: Instant,
    capture: Option<Capture>,
    commands: CommandLog,
}

/// What a waiter's look at the state found.
enum Check<T> {
    /// The wait is over.
    Done(T),
    /// Not yet: look again at the next change, or at `recheck_at` if it comes first (a
    /// quiet period ending).
    NotYet { recheck_at: Option<Instant> },
}

impl Check<()> {
    fn done_if(done: bool) -> Check<()> {
        match done {
            true => Check::Done(()),
            false => Check::NotYet { recheck_at: None },
        }
    }
}

/// How `wait_until` ended.
enum Waited<T> {
    Done(T),
    /// The deadline passed; `generation` is the one last looked at.
    TimedOut {
        generation: u64,
    },
    Cancelled,
}

impl<T> Waited<T> {
    fn is_cancelled(&self) -> bool {
        matches!(self, Waited::Cancelled)
    }
}

impl TerminalCore {
    pub fn new(rows: u16, cols: u16, scrollback_lines: usize) -> Arc<TerminalCore> {
        Arc::new(TerminalCore {
            state: Mutex::new(State {
                screen: Screen::new(rows, cols, scrollback_lines),
                scanner: MarkScanner::new(),
                shell: ShellState::new(false),
                last_output: Instant::now(),
                capture: None,
                commands: CommandLog::default(),
            }),
            generation: watch::Sender::new(0),
            run_lock: tokio::sync::Mutex::new(()),
            responder: OnceLock::new(),
            output: broadcast::Sender::new(VIEWER_BACKLOG),
            life: watch::Sender::new(Life::Running),
            on_command: OnceLock::new(),
        })
    }

    /// From now on `listener` is told each command the shell finishes.
    pub fn on_command(&self, listener: impl Fn(FinishedCommand) + Send + Sync + 'static) {
        let _ = self.on_command.set(Box::new(listener));
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bump(&self) {
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// The program is a shell drydock started with integration: `run` waits for its first
    /// prompt (up to 10 s) before deciding whether marks are available.
    pub fn set_expect_marks(&self, expect: bool) {
        self.lock().shell.expect_marks(expect);
    }

    /// From now on the program's queries are answered through `respond`, which writes to
    /// its input: for drydock's own PTY, where drydock is the terminal.
    pub fn answer_queries(&self, respond: impl Fn(&[u8]) + Send + Sync + 'static) {
        if self.responder.set(Box::new(respond)).is_ok() {
            self.lock().screen.answer_queries();
        }
    }

    /// Output from the program: updates the screen, scans marks, answers queries (once
    /// answering is on), bumps the generation.
    pub fn feed(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut finished = Vec::new();
        let replies = {
            let mut guard = self.lock();
            let State {
                screen,
                scanner,
                shell,
                last_output,
                capture,
                commands,
            } = &mut *guard;
            *last_output = Instant::now();
            let logging = self.on_command.get().is_some();
            scanner.feed(bytes, |event| match event {
                MarkEvent::Text(text) => {
                    screen.feed(text);
                    if let Some(capture) = capture.as_mut() {
                        capture.on_text(text);
                    }
                    if logging {
                        commands.on_text(text);
                    }
                }
                MarkEvent::Mark(mark) => {
                    shell.on_mark(mark);
                    if let Some(capture) = capture.as_mut() {
                        capture.on_mark(mark, screen.cursor_line());
                    }
                    if logging {
                        let cursor = screen.cursor_line();
                        let read = |start, end| screen.text_between(start, end);
                        finished.extend(commands.on_mark(mark, cursor, read));
                    }
                }
            });
            if self.output.receiver_count() > 0 {
                // Small chunks keep the viewers' backlog small in bytes too.
                for chunk in bytes.chunks(VIEWER_CHUNK) {
                    let _ = self.output.send(Live::Output(Arc::from(chunk)));
                }
            }
            screen.take_replies()
        };
        if let (false, Some(respond)) = (replies.is_empty(), self.responder.get()) {
            respond(&replies);
        }
        if let Some(listener) = self.on_command.get() {
            finished.into_iter().for_each(listener);
        }
        self.bump();
    }

    /// The latest OSC 7501 program status reports, oldest first.
    pub fn program_status(&self) -> Vec<ProgramStatus> {
        self.lock().screen.program_status()
    }

    /// What the terminal shows and what its program reported, read at one moment.
    pub fn observe(&self) -> Observed {
        let state = self.lock();
        Observed {
            rows: state.screen.text().split('\n').map(str::to_owned).collect(),
            title: state.screen.title(),
            program_status: state.screen.program_status(),
            last_output: state.last_output,
            life: self.life(),
            generation: *self.generation.borrow(),
        }
    }

    /// The screen now, and every byte of output after it: taken under one lock, so each
    /// byte is either drawn by the redraw or delivered by the receiver, never both. With
    /// `history` > 0 the redraw first prints up to that many lines of history (plain text)
    /// and scrolls them off the screen, so a new viewer can scroll back through them.
    pub fn view(&self, history: usize) -> (Redraw, broadcast::Receiver<Live>) {
        let mut state = self.lock();
        let receiver = self.output.subscribe();
        let (rows, cols) = state.screen.size();
        let mut bytes = Vec::new();
        if history > 0 && !state.screen.alternate_screen() {
            let lines = state.screen.recent_history(history);
            if !lines.is_empty() {
                bytes.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
                bytes.extend_from_slice(lines.join("\r\n").as_bytes());
                bytes.extend_from_slice("\r\n".repeat(usize::from(rows)).as_bytes());
            }
        }
        bytes.extend_from_slice(state.screen.redraw().as_bytes());
        (Redraw { rows, cols, bytes }, receiver)
    }

    /// The program ended.
    pub fn exited(&self, status: ExitStatus) {
        self.life.send_replace(Life::Exited(status));
        self.bump();
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        {
            let mut state = self.lock();
            state.screen.resize(rows, cols);
            let _ = self.output.send(Live::Resized);
        }
        self.bump();
    }

    /// The visible screen (styled or plain text) and the line number of its top row.
    pub fn screen_and_top_line(&self, styled: bool) -> (String, u64) {
        let state = self.lock();
        let text = match styled {
            true => state.screen.styled(),
            false => state.screen.text(),
        };
        (
            text,
            state.screen.cursor_line().0 - u64::from(state.screen.cursor().0),
        )
    }

    pub fn cursor(&self) -> (u16, u16) {
        self.lock().screen.cursor()
    }

    pub fn size(&self) -> (u16, u16) {
        self.lock().screen.size()
    }

    pub fn title(&self) -> String {
        self.lock().screen.title()
    }

    pub fn application_cursor(&self) -> bool {
        self.lock().screen.application_cursor()
    }

    pub fn alternate_screen(&self) -> bool {
        self.lock().screen.alternate_screen()
    }

    /// Up to `limit` lines of history and screen from line number `offset` (see
    /// `Screen::lines`).
    pub fn lines(&self, offset: u64, limit: usize) -> Lines {
        self.lock().screen.lines(offset, limit)
    }

    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// A receiver that sees every change of the generation from now on.
    pub fn generations(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// At least one prompt or end-of-command mark was seen: this shell is integrated.
    #[cfg(test)]
    pub fn has_marks(&self) -> bool {
        self.lock().shell.has_marks()
    }

    pub fn life(&self) -> Life {
        *self.life.borrow()
    }

    pub fn has_exited(&self) -> bool {
        self.life().has_exited()
    }

    /// Resolves to how the program ended once it did (see [`TerminalCore::exited`]), or to
    /// None if the core is dropped first. Holds no reference to the core while waiting.
    pub fn exit(self: &Arc<Self>) -> impl Future<Output = Option<ExitStatus>> + use<> {
        let mut life = self.life.subscribe();
        async move {
            match *life.wait_for(|life| life.has_exited()).await.ok()? {
                Life::Exited(status) => Some(status),
                Life::Running => None,
            }
        }
    }

    /// Time since the last output.
    pub fn idle_for(&self) -> Duration {
        self.lock().last_output.elapsed()
    }

    /// Waits for the first of the requested conditions (the generation passing
    /// `after_generation`, a quiet period, the screen matching `pattern`), the process
    /// ending, or `max_wait`; gives up when `cancel` fires.
    pub fn wait<'a>(
        &'a self,
        request: WaitFor,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<WaitOutcome, Cancelled>> {
        async move {
            let start = Instant::now();
            let after_generation = request.after_generation.or_else(|| {
                (request.quiet_ms.is_none() && request.pattern.is_none()).then(|| self.generation())
            });
            let quiet = request.quiet_ms.map(Duration::from_millis);
            let waited = self
                .wait_until(start + request.max_wait, cancel, |state, generation| {
                    let done = |method, matched| {
                        Check::Done(WaitOutcome {
                            completed: true,
                            method,
                            generation,
                            matched,
                        })
                    };
                    if let Some(pattern) = &request.pattern {
                        let text = state.screen.text_for_matching();
                        if let Some(found) = pattern.find(&text) {
                            return done(WaitMethod::Pattern, Some(found.as_str().to_string()));
                        }
                    }
                    if after_generation.is_some_and(|after| generation > after) {
                        return done(WaitMethod::Changed, None);
                    }
                    if self.has_exited() {
                        return done(WaitMethod::Exited, None);
                    }
                    let Some(quiet) = quiet else {
                        return Check::NotYet { recheck_at: None };
                    };
                    let quiet_until = state.last_output.max(start) + quiet;
                    if Instant::now() >= quiet_until {
                        return done(WaitMethod::Quiet, None);
                    }
                    Check::NotYet {
                        recheck_at: Some(quiet_until),
                    }
                })
                .await;
            match waited {
                Waited::Done(outcome) => Ok(outcome),
                Waited::TimedOut { generation } => Ok(WaitOutcome {
                    completed: false,
                    method: WaitMethod::Timeout,
                    generation,
                    matched: None,
                }),
                Waited::Cancelled => Err(Cancelled),
            }
        }
        .boxed()
    }

    /// The one wait of the core: looks at the state (and the generation it belongs to) now
    /// and after every change, until `check` is done, `deadline` passes or `cancel` fires.
    async fn wait_until<T>(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
        mut check: impl FnMut(&mut State, u64) -> Check<T>,
    ) -> Waited<T> {
        let mut generations = self.generation.subscribe();
        loop {
            let generation = *generations.borrow_and_update();
            let recheck_at = match check(&mut self.lock(), generation) {
                Check::Done(value) => return Waited::Done(value),
                Check::NotYet { recheck_at } => recheck_at,
            };
            if Instant::now() >= deadline {
                return Waited::TimedOut { generation };
            }
            let wake = recheck_at.map_or(deadline, |at| at.min(deadline));
            tokio::select! {
                _ = cancel.cancelled() => return Waited::Cancelled,
                _ = generations.changed() => {}
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_gets_history_and_the_screen_then_live_output_then_a_resize() {
        let core = TerminalCore::new(3, 20, 100);
        for n in 1..=6 {
            core.feed(format!("line {n}\r\n").as_bytes());
        }
        let (redraw, mut live) = core.view(2);
        let text = String::from_utf8(redraw.bytes).unwrap();
        // Lines 1-4 scrolled off the 3-row screen: the newest two of them come first.
        assert!(text.contains("line 3\r\nline 4\r\n\r\n\r\n"), "{text:?}");
        assert!(!text.contains("line 2"), "{text:?}");
        assert!(text.ends_with(&core.lock().screen.redraw()), "{text:?}");
        assert_eq!((redraw.rows, redraw.cols), (3, 20));
        assert!(live.try_recv().is_err(), "nothing after the redraw yet");

        core.feed(b"more");
        assert!(matches!(live.try_recv(), Ok(Live::Output(bytes)) if &*bytes == b"more"));
        core.resize(5, 30);
        assert!(matches!(live.try_recv(), Ok(Live::Resized)));
        let (redraw, _) = core.view(0);
        assert_eq!((redraw.rows, redraw.cols), (5, 30));
        assert!(
            String::from_utf8(redraw.bytes)
                .unwrap()
                .starts_with("\x1b[0m\x1b[H\x1b[2J")
        );
    }

    async fn wait(core: &TerminalCore, request: WaitFor) -> WaitOutcome {
        core.wait(request, &CancellationToken::new()).await.unwrap()
    }

    #[tokio::test]
    async fn wait_for_change_pattern_quiet_and_timeout() {
        let core = TerminalCore::new(24, 80, 100);
        let generation = core.generation();
        let outcome = wait(
            &core,
            WaitFor {
                max_wait: Duration::from_millis(50),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(outcome.method, WaitMethod::Timeout);
        core.feed(b"ready> ");
        let outcome = wait(
            &core,
            WaitFor {
                after_generation: Some(generation),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            (outcome.method, outcome.generation),
            (WaitMethod::Changed, generation + 1)
        );
        let outcome = wait(
            &core,
            WaitFor {
                pattern: Some(Regex::new(r"\w+> ?$").unwrap()),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(outcome.method, WaitMethod::Pattern);
        assert_eq!(outcome.matched.as_deref(), Some("ready> "));
        let started = Instant::now();
        let outcome = wait(
            &core,
            WaitFor {
                quiet_ms: Some(100),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(outcome.method, WaitMethod::Quiet);
        assert!(started.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn feed_throughput() {
        // A 10 MB stream of 80-column lines with some colour, through the screen model.
        let mut chunk = Vec::new();
        while chunk.len() < 64 * 1024 {
            chunk.extend_from_slice(b"\x1b[32mok\x1b[0m ");
            chunk.extend_from_slice(&[b'x'; 70]);
            chunk.extend_from_slice(b"\r\n");
        }
        let core = TerminalCore::new(24, 80, 10_000);
        let total = if cfg!(debug_assertions) { 2 } else { 10 } * 1024 * 1024;
        let started = Instant::now();
        let mut fed = 0;
        while fed < total {
            core.feed(&chunk);
            fed += chunk.len();
        }
        let seconds = started.elapsed().as_secs_f64();
        let rate = fed as f64 / seconds / 1e6;
        eprintln!("feed throughput: {rate:.1} MB/s ({fed} bytes in {seconds:.2}s)");
        let mut screen = Screen::new(24, 80, 10_000);
        let started = Instant::now();
        for _ in 0..(total / chunk.len()) {
            screen.feed(&chunk);
        }
        let rate = fed as f64 / started.elapsed().as_secs_f64() / 1e6;
        eprintln!("vt100 alone: {rate:.1} MB/s");
        let mut scanner = MarkScanner::new();
        let started = Instant::now();
        let mut count = 0usize;
        for _ in 0..(total / chunk.len()) {
            scanner.feed(&chunk, |_| count += 1);
        }
        let rate = fed as f64 / started.elapsed().as_secs_f64() / 1e6;
        eprintln!("mark scanner alone: {rate:.1} MB/s ({count} events)");
        let kept = core.lines(0, 1);
        assert!(kept.total - kept.oldest <= 10_000 + 24);
    }

    #[tokio::test]
    async fn a_cancelled_wait_returns_at_once() {
        let core = TerminalCore::new(24, 80, 100);
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let waited = core
            .wait(
                WaitFor {
                    pattern: Some(Regex::new("never").unwrap()),
                    max_wait: Duration::from_secs(30),
                    ..Default::default()
                },
                &cancel,
            )
            .await;
        assert_eq!(waited, Err(Cancelled));
    }

    #[tokio::test]
    async fn exit_tells_how_the_program_ended() {
        let core = TerminalCore::new(24, 80, 100);
        let exit = core.exit();
        assert_eq!(core.life(), Life::Running);
        core.exited(ExitStatus::Code(3));
        assert_eq!(exit.await, Some(ExitStatus::Code(3)));
        assert_eq!(core.life().exit_code(), Some(3));
        let killed = TerminalCore::new(24, 80, 100);
        killed.exited(ExitStatus::Unknown);
        assert!(killed.has_exited() && killed.life().exit_code().is_none());
        let dropped = TerminalCore::new(24, 80, 100).exit();
        assert_eq!(dropped.await, None);
    }
}
