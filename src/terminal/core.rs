//! The backend-independent heart of a terminal: output bytes go in (`feed`), and out come
//! the screen, the numbered lines of its history, shell-integration marks, a generation
//! counter that waiters watch, and the output of a command run through the shell.
//!
//! `feed` holds the state lock only while one chunk is parsed; waiters are woken through a
//! `watch` channel carrying the generation, so a waiter never misses a change between
//! reading the state and going to sleep. The screen is fed the text between marks in order,
//! so a mark knows the line the cursor was on when it arrived.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use super::capture::{Capture, Kept, Phase, line_after};
use super::marks::{Mark, MarkEvent, MarkScanner};
use super::screen::{Lines, Screen};

/// Quiet period used by `run` when there are no marks and the caller gave no fallback.
pub const DEFAULT_QUIET_MS: u64 = 1000;
/// How long `run` waits for the first prompt of a shell expected to emit marks.
const FIRST_PROMPT_WAIT: Duration = Duration::from_secs(10);
/// How long `run` waits for a prompt being drawn to finish before typing.
const PROMPT_DRAW_WAIT: Duration = Duration::from_millis(500);

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

#[derive(Debug, Clone, Default)]
pub struct WaitRequest {
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

/// How `run` decides a command is done when the terminal has no shell-integration marks.
#[derive(Debug, Clone, Default)]
pub struct Fallback {
    pub quiet_ms: Option<u64>,
    /// Matched against the output printed since the command was sent (e.g. `>>> $`).
    pub pattern: Option<Regex>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunOutcome {
    /// The command's own output: ANSI stripped, `\r\n` as `\n`. Over the cap (counted as
    /// JSON), its head and tail around a `[... N bytes, L lines elided ...]` line that says
    /// where the whole output is in terminal_scrollback. With marks, exactly what was
    /// printed between the C and D marks; without, what followed the echoed command line
    /// (up to the matched pattern).
    pub output: String,
    /// From the D mark, or the process's status when it exited; None without marks.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// False when the timeout came first: the command may still be running.
    pub completed: bool,
    pub method: WaitMethod,
    /// Bytes of output left out of `output` (0 when all of it fits).
    pub elided_bytes: u64,
    /// Lines (newlines) of output left out of `output`.
    pub elided_lines: u64,
    /// Where the output is on the terminal, in terminal_scrollback's line numbers.
    pub scrollback: OutputLines,
}

/// The lines a command's output took on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutputLines {
    /// The first line (without marks: the line the command was typed on).
    pub offset: u64,
    /// The line after the last.
    pub end: u64,
    /// The oldest line the terminal still keeps: lines before it are gone from its
    /// scrollback.
    pub oldest_kept: u64,
}

impl OutputLines {
    fn lines(&self) -> u64 {
        self.end - self.offset
    }
}

pub struct TerminalCore {
    state: Mutex<State>,
    generation: watch::Sender<u64>,
    /// One `run` at a time: they share the shell.
    run_lock: tokio::sync::Mutex<()>,
}

struct State {
    screen: Screen,
    scanner: MarkScanner,
    shell: Shell,
    closed: Option<Option<i32>>,
    last_output: Instant,
    capture: Option<Capture>,
}

/// What the shell-integration marks told so far.
#[derive(Debug, Default)]
struct Shell {
    /// A shell drydock started with integration: it will send marks.
    expect_marks: bool,
    /// At least one prompt or end-of-command mark was seen.
    has_marks: bool,
    at_prompt: bool,
    last_mark: Option<Mark>,
    /// The shell sends B (end of prompt).
    seen_command_start: bool,
    last_exit_code: Option<i32>,
}

impl Shell {
    fn on_mark(&mut self, mark: Mark) {
        self.last_mark = Some(mark);
        self.seen_command_start |= mark == Mark::CommandStart;
        match mark {
            Mark::PromptStart | Mark::CommandStart => {
                self.has_marks = true;
                self.at_prompt = true;
            }
            Mark::CommandFinished { exit_code } => {
                self.has_marks = true;
                self.at_prompt = true;
                self.last_exit_code = exit_code;
            }
            Mark::OutputStart => self.at_prompt = false,
        }
    }

    /// A prompt is being drawn: typing now would be echoed twice (once by the terminal,
    /// once by the line editor). Only known for shells that send B.
    fn drawing_prompt(&self) -> bool {
        self.has_marks
            && self.seen_command_start
            && matches!(
                self.last_mark,
                Some(Mark::PromptStart | Mark::CommandFinished { .. })
            )
    }
}

impl TerminalCore {
    pub fn new(rows: u16, cols: u16, scrollback_lines: usize) -> Arc<TerminalCore> {
        Arc::new(TerminalCore {
            state: Mutex::new(State {
                screen: Screen::new(rows, cols, scrollback_lines),
                scanner: MarkScanner::new(),
                shell: Shell::default(),
                closed: None,
                last_output: Instant::now(),
                capture: None,
            }),
            generation: watch::Sender::new(0),
            run_lock: tokio::sync::Mutex::new(()),
        })
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
        self.lock().shell.expect_marks = expect;
    }

    /// Output from the program: updates the screen, scans marks, bumps the generation.
    pub fn feed(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        {
            let mut guard = self.lock();
            let State {
                screen,
                scanner,
                shell,
                last_output,
                capture,
                ..
            } = &mut *guard;
            *last_output = Instant::now();
            scanner.feed(bytes, |event| match event {
                MarkEvent::Text(text) => {
                    screen.feed(text);
                    if let Some(capture) = capture.as_mut() {
                        capture.on_text(text);
                    }
                }
                MarkEvent::Mark(mark) => {
                    shell.on_mark(mark);
                    if let Some(capture) = capture.as_mut() {
                        capture.on_mark(mark, screen.cursor_line());
                    }
                }
            });
        }
        self.bump();
    }

    /// The process ended (`exit_code` None when killed by a signal or unknown).
    pub fn closed(&self, exit_code: Option<i32>) {
        self.lock().closed = Some(exit_code);
        self.bump();
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        self.lock().screen.resize(rows, cols);
        self.bump();
    }

    pub fn screen_text(&self) -> String {
        self.lock().screen.text()
    }

    pub fn screen_styled(&self) -> String {
        self.lock().screen.styled()
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

    /// At least one prompt or end-of-command mark was seen: this shell is integrated.
    pub fn has_marks(&self) -> bool {
        self.lock().shell.has_marks
    }

    /// The shell shows a prompt (last mark A, B or D, not C).
    pub fn at_prompt(&self) -> bool {
        let shell = &self.lock().shell;
        shell.has_marks && shell.at_prompt
    }

    /// Exit status of the last command, from its D mark.
    pub fn last_exit_code(&self) -> Option<i32> {
        self.lock().shell.last_exit_code
    }

    /// Some(exit code) once the process ended.
    pub fn exit_status(&self) -> Option<Option<i32>> {
        self.lock().closed
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }

    /// Resolves to the exit code once the process ended (see [`TerminalCore::closed`]), or
    /// to None if the core is dropped first. Holds no reference to the core while waiting.
    pub fn exit(self: &Arc<Self>) -> impl Future<Output = Option<Option<i32>>> + use<> {
        let core = Arc::downgrade(self);
        let mut generations = self.generation.subscribe();
        async move {
            loop {
                if let Some(status) = core.upgrade()?.exit_status() {
                    return Some(status);
                }
                generations.changed().await.ok()?;
            }
        }
    }

    /// Time since the last output.
    pub fn idle_for(&self) -> Duration {
        self.lock().last_output.elapsed()
    }

    /// Waits for the first of the requested conditions (the generation passing
    /// `after_generation`, a quiet period, the screen matching `pattern`), the process
    /// ending, or `max_wait`.
    pub async fn wait(&self, request: WaitRequest) -> WaitOutcome {
        let start = Instant::now();
        let deadline = start + request.max_wait;
        let mut receiver = self.generation.subscribe();
        let after_generation = request.after_generation.or_else(|| {
            (request.quiet_ms.is_none() && request.pattern.is_none()).then(|| *receiver.borrow())
        });
        loop {
            let generation = *receiver.borrow_and_update();
            let now = Instant::now();
            let mut wake = deadline;
            {
                let state = self.lock();
                let done = |method, matched| WaitOutcome {
                    completed: true,
                    method,
                    generation,
                    matched,
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
                if state.closed.is_some() {
                    return done(WaitMethod::Exited, None);
                }
                if let Some(quiet_ms) = request.quiet_ms {
                    let quiet_until =
                        state.last_output.max(start) + Duration::from_millis(quiet_ms);
                    if now >= quiet_until {
                        return done(WaitMethod::Quiet, None);
                    }
                    wake = wake.min(quiet_until);
                }
            }
            if now >= deadline {
                return WaitOutcome {
                    completed: false,
                    method: WaitMethod::Timeout,
                    generation,
                    matched: None,
                };
            }
            tokio::select! {
                _ = receiver.changed() => {}
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    /// Types `command` and Enter through `input`, and returns when the command is done:
    /// at its D mark when the shell emits marks (no quiet period), else when the fallback
    /// pattern matches the new output or the output has been quiet for the fallback period.
    /// At `timeout` it returns what was printed so far with `completed: false`; the command
    /// keeps running and the terminal stays usable (interrupt it, then run again). The
    /// output returned costs about `output_cap` bytes as JSON at most.
    pub async fn run(
        &self,
        input: &(dyn Fn(&[u8]) -> io::Result<()> + Sync),
        command: &str,
        timeout: Duration,
        fallback: Fallback,
        output_cap: usize,
    ) -> io::Result<RunOutcome> {
        let _one_at_a_time = self.run_lock.lock().await;
        let start = Instant::now();
        let deadline = start + timeout;
        let expecting_first_prompt = {
            let state = self.lock();
            state.shell.expect_marks && !state.shell.has_marks && state.closed.is_none()
        };
        if expecting_first_prompt {
            self.wait_for(deadline.min(start + FIRST_PROMPT_WAIT), |state| {
                state.shell.has_marks || state.closed.is_some()
            })
            .await;
        }
        self.wait_for(deadline.min(Instant::now() + PROMPT_DRAW_WAIT), |state| {
            !state.shell.drawing_prompt() || state.closed.is_some()
        })
        .await;

        let use_marks = self.arm_capture(&fallback, output_cap);
        let mut line = command.as_bytes().to_vec();
        line.push(b'\r');
        if let Err(error) = input(&line) {
            self.lock().capture = None;
            return Err(error);
        }
        let (method, exit_code, matched_at) = self.await_end(use_marks, &fallback, deadline).await;
        let (kept, scrollback) = self.finish_capture(matched_at);
        let (elided_bytes, elided_lines) = (kept.elided_bytes, kept.elided_lines);
        let mut output = output_text(kept, &scrollback);
        if !use_marks {
            output = drop_echoed_command(&output, command);
        }
        Ok(RunOutcome {
            output,
            exit_code,
            duration_ms: start.elapsed().as_millis() as u64,
            completed: method != WaitMethod::Timeout,
            method,
            elided_bytes,
            elided_lines,
            scrollback,
        })
    }

    /// Waits until `done` holds, or until `deadline`.
    async fn wait_for(&self, deadline: Instant, done: impl Fn(&State) -> bool) {
        let mut receiver = self.generation.subscribe();
        loop {
            receiver.borrow_and_update();
            let done_now = done(&self.lock());
            if done_now || Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                _ = receiver.changed() => {}
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
    }

    /// Starts capturing the output of the command about to be typed; returns whether its
    /// end will be known from marks.
    fn arm_capture(&self, fallback: &Fallback, output_cap: usize) -> bool {
        let mut state = self.lock();
        // A program in the foreground (a REPL started from the shell) gets the command,
        // not the shell: its end is the fallback's to find, when the caller gave one.
        let foreground_program =
            !state.shell.at_prompt && (fallback.pattern.is_some() || fallback.quiet_ms.is_some());
        let use_marks = state.shell.has_marks && !foreground_program;
        let phase = if !use_marks {
            Phase::Raw
        } else if state.shell.at_prompt {
            Phase::AwaitOutputStart
        } else {
            Phase::AwaitPreviousEnd
        };
        let cursor = state.screen.cursor_line();
        state.capture = Some(Capture::new(phase, output_cap, cursor));
        use_marks
    }

    /// Waits for the end of the command being captured: its D mark, the fallback's pattern
    /// or quiet period, the process's exit, or the deadline. Returns how it ended, its exit
    /// code, and where in the output the pattern matched.
    async fn await_end(
        &self,
        use_marks: bool,
        fallback: &Fallback,
        deadline: Instant,
    ) -> (WaitMethod, Option<i32>, Option<u64>) {
        let quiet_ms = match (fallback.quiet_ms, &fallback.pattern) {
            _ if use_marks => None,
            (Some(ms), _) => Some(ms),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_QUIET_MS),
        };
        let quiet = quiet_ms.map(Duration::from_millis);
        let pattern = fallback.pattern.as_ref().filter(|_| !use_marks);
        let mut pattern_checked: u64 = 0;
        let mut receiver = self.generation.subscribe();
        loop {
            receiver.borrow_and_update();
            let now = Instant::now();
            let mut wake = deadline;
            {
                let mut state = self.lock();
                let closed = state.closed;
                let capture = state.capture.as_mut().expect("capture armed by run");
                if let Phase::Done(exit_code) = capture.phase {
                    return (WaitMethod::Mark, exit_code, None);
                }
                if let Some(pattern) = pattern
                    && capture.text.total > pattern_checked
                {
                    let (window_start, window) = capture
                        .text
                        .recent(capture.text.total - pattern_checked + 1024);
                    pattern_checked = capture.text.total;
                    let (skipped, window) = utf8_window(&window);
                    if let Some(found) = last_match(pattern, &window) {
                        let at = window_start + (skipped + found) as u64;
                        return (WaitMethod::Pattern, None, Some(at));
                    }
                }
                if let Some(exit_code) = closed {
                    return (WaitMethod::Exited, exit_code, None);
                }
                if let Some(quiet) = quiet {
                    let quiet_until = capture.last_output.unwrap_or(capture.started) + quiet;
                    if now >= quiet_until {
                        return (WaitMethod::Quiet, None, None);
                    }
                    wake = wake.min(quiet_until);
                }
            }
            if now >= deadline {
                return (WaitMethod::Timeout, None, None);
            }
            tokio::select! {
                _ = receiver.changed() => {}
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    /// Ends the capture: the output kept (cut where a pattern matched), and the lines it
    /// took on the terminal.
    fn finish_capture(&self, matched_at: Option<u64>) -> (Kept, OutputLines) {
        let (capture, cursor, oldest_kept) = {
            let mut state = self.lock();
            let capture = state.capture.take().expect("capture armed by run");
            (
                capture,
                state.screen.cursor_line(),
                state.screen.oldest_line(),
            )
        };
        let end = capture.end_line.unwrap_or_else(|| line_after(cursor));
        let offset = capture.first_line.unwrap_or(end).min(end);
        let lines = OutputLines {
            offset,
            end,
            oldest_kept,
        };
        (capture.text.finish(matched_at), lines)
    }
}

/// The output kept; where its middle was left out, a line saying how much, and where the
/// whole output can be read.
fn output_text(kept: Kept, lines: &OutputLines) -> String {
    if kept.elided_bytes == 0 {
        return kept.head + &kept.tail;
    }
    let gone = match lines.oldest_kept > lines.offset {
        true => format!("; lines before {} are no longer kept", lines.oldest_kept),
        false => String::new(),
    };
    format!(
        "{}\n[... {} bytes, {} lines elided; the whole output is terminal_scrollback offset {}, {} lines{gone} ...]\n{}",
        kept.head,
        kept.elided_bytes,
        kept.elided_lines,
        lines.offset,
        lines.lines(),
        kept.tail
    )
}

/// The window as text, starting at a character boundary: (bytes skipped, text). Offsets
/// in the text are byte offsets in the window after the skipped bytes, unless the output
/// itself is not UTF-8.
fn utf8_window(window: &[u8]) -> (usize, std::borrow::Cow<'_, str>) {
    let skipped = window
        .iter()
        .take(3)
        .take_while(|&&b| (0x80..0xc0).contains(&b))
        .count();
    let window = &window[skipped..];
    let text = match std::str::from_utf8(window) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(error) if error.error_len().is_none() => std::borrow::Cow::Borrowed(
            std::str::from_utf8(&window[..error.valid_up_to()]).unwrap_or_default(),
        ),
        Err(_) => String::from_utf8_lossy(window),
    };
    (skipped, text)
}

fn last_match(pattern: &Regex, text: &str) -> Option<usize> {
    pattern.find_iter(text).last().map(|found| found.start())
}

/// Without marks the capture starts with the terminal's echo of the command line.
fn drop_echoed_command(output: &str, command: &str) -> String {
    let first_command_line = command.lines().next().unwrap_or("").trim();
    match output.split_once('\n') {
        Some((first, rest)) if first.trim_end().ends_with(first_command_line) => rest.to_string(),
        None if output.trim_end().ends_with(first_command_line) => String::new(),
        _ => output.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_is_dropped_without_marks() {
        assert_eq!(drop_echoed_command(">>> 1+1\n2\n", "1+1"), "2\n");
        assert_eq!(drop_echoed_command("1+1\n2\n", "1+1"), "2\n");
        assert_eq!(drop_echoed_command("other\n2\n", "1+1"), "other\n2\n");
    }

    fn feed_all(core: &TerminalCore, chunks: &[&[u8]]) {
        for chunk in chunks {
            core.feed(chunk);
        }
    }

    #[tokio::test]
    async fn run_with_marks_split_across_feeds() {
        let core = TerminalCore::new(24, 80, 100);
        core.feed(b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07");
        assert!(core.has_marks() && core.at_prompt());
        let feeder = core.clone();
        let input = move |bytes: &[u8]| -> io::Result<()> {
            assert_eq!(bytes, b"echo hi\r");
            let feeder = feeder.clone();
            tokio::spawn(async move {
                feed_all(
                    &feeder,
                    &[
                        b"echo hi\r\n\x1b]13",
                        b"3;C\x07h",
                        b"i\r",
                        b"\n\x1b]133;D;",
                        b"3\x07\x1b]133;A\x07$ ",
                    ],
                );
            });
            Ok(())
        };
        let outcome = core
            .run(
                &input,
                "echo hi",
                Duration::from_secs(5),
                Fallback::default(),
                1024,
            )
            .await
            .unwrap();
        assert_eq!(outcome.output, "hi\n");
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(outcome.method, WaitMethod::Mark);
        assert!(outcome.completed);
        // "$ echo hi" on line 0, "hi" on line 1, the next prompt on line 2.
        assert_eq!(
            outcome.scrollback,
            OutputLines {
                offset: 1,
                end: 2,
                oldest_kept: 0
            }
        );
    }

    #[tokio::test]
    async fn wait_for_change_pattern_quiet_and_timeout() {
        let core = TerminalCore::new(24, 80, 100);
        let generation = core.generation();
        let outcome = core
            .wait(WaitRequest {
                max_wait: Duration::from_millis(50),
                ..Default::default()
            })
            .await;
        assert_eq!(outcome.method, WaitMethod::Timeout);
        core.feed(b"ready> ");
        let outcome = core
            .wait(WaitRequest {
                after_generation: Some(generation),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            })
            .await;
        assert_eq!(
            (outcome.method, outcome.generation),
            (WaitMethod::Changed, generation + 1)
        );
        let outcome = core
            .wait(WaitRequest {
                pattern: Some(Regex::new(r"\w+> ?$").unwrap()),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            })
            .await;
        assert_eq!(outcome.method, WaitMethod::Pattern);
        assert_eq!(outcome.matched.as_deref(), Some("ready> "));
        let started = Instant::now();
        let outcome = core
            .wait(WaitRequest {
                quiet_ms: Some(100),
                max_wait: Duration::from_secs(1),
                ..Default::default()
            })
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
    async fn a_flood_comes_back_capped_saying_where_all_of_it_is() {
        let core = TerminalCore::new(24, 80, 1000);
        core.feed(b"\x1b]133;A\x07$ \x1b]133;B\x07");
        let seq: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
        let feeder = core.clone();
        let input = move |_: &[u8]| -> io::Result<()> {
            let mut flood = b"seq 1 100000\r\n\x1b]133;C\x07".to_vec();
            flood.extend((1..=100_000).flat_map(|n| format!("{n}\r\n").into_bytes()));
            flood.extend(b"\x1b]133;D;0\x07\x1b]133;A\x07$ ");
            let feeder = feeder.clone();
            tokio::spawn(async move {
                for chunk in flood.chunks(4096) {
                    feeder.feed(chunk);
                }
            });
            Ok(())
        };
        let outcome = core
            .run(
                &input,
                "seq 1 100000",
                Duration::from_secs(10),
                Fallback::default(),
                4096,
            )
            .await
            .unwrap();

        let oldest_kept = core.lines(0, 0).oldest;
        assert_eq!(
            outcome.scrollback,
            OutputLines {
                offset: 1,
                end: 100_001,
                oldest_kept
            }
        );
        let marker = format!(
            "\n[... {} bytes, {} lines elided; the whole output is terminal_scrollback offset 1, \
             100000 lines; lines before {oldest_kept} are no longer kept ...]\n",
            outcome.elided_bytes, outcome.elided_lines
        );
        let (head, tail) = outcome.output.split_once(&marker).expect("one marker line");
        assert!(
            seq.starts_with(head) && seq.ends_with(tail),
            "{head:?} {tail:?}"
        );
        assert!(head.starts_with("1\n2\n3\n") && tail.ends_with("99999\n100000\n"));
        let kept = (head.len() + tail.len()) as u64;
        assert_eq!(kept + outcome.elided_bytes, seq.len() as u64);
        let newlines = |text: &str| text.matches('\n').count() as u64;
        assert_eq!(
            newlines(head) + newlines(tail) + outcome.elided_lines,
            100_000
        );
        assert!(serde_json::to_string(&outcome.output).unwrap().len() < 4096 + 200);
        let page = core.lines(oldest_kept, 2);
        assert_eq!(
            page.lines,
            vec![(oldest_kept).to_string(), (oldest_kept + 1).to_string()]
        );
    }
}
