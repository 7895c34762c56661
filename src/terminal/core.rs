//! The backend-independent heart of a terminal: output bytes go in (`feed`), and out come
//! the screen, the scrollback, shell-integration marks, a generation counter that waiters
//! watch, and the output of a command run through the shell.
//!
//! `feed` holds the state lock only while one chunk is parsed; waiters are woken through a
//! `watch` channel carrying the generation, so a waiter never misses a change between
//! reading the state and going to sleep.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;

use super::marks::{Mark, MarkEvent, MarkScanner};
use super::screen::Screen;

/// Default cap on the output `run` returns: head and tail are kept around a marker.
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;
/// Quiet period used by `run` when there are no marks and the caller gave no fallback.
pub const DEFAULT_QUIET_MS: u64 = 1000;
/// How long `run` waits for the first prompt of a shell expected to emit marks.
const FIRST_PROMPT_WAIT: Duration = Duration::from_secs(10);

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
    /// The command's own output: ANSI stripped, `\r\n` as `\n`, head and tail kept around
    /// a `[... N bytes elided ...]` marker when over the cap. With marks, exactly what was
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
    has_marks: bool,
    expect_marks: bool,
    at_prompt: bool,
    /// The last mark seen, and whether this shell ever sent B (end of prompt).
    last_mark: Option<Mark>,
    seen_command_start: bool,
    last_exit_code: Option<i32>,
    closed: Option<Option<i32>>,
    last_output: Instant,
    output_cap: usize,
    capture: Option<Capture>,
}

impl TerminalCore {
    pub fn new(rows: u16, cols: u16, scrollback_lines: usize) -> Arc<TerminalCore> {
        Arc::new(TerminalCore {
            state: Mutex::new(State {
                screen: Screen::new(rows, cols, scrollback_lines),
                scanner: MarkScanner::new(),
                has_marks: false,
                expect_marks: false,
                at_prompt: false,
                last_mark: None,
                seen_command_start: false,
                last_exit_code: None,
                closed: None,
                last_output: Instant::now(),
                output_cap: DEFAULT_OUTPUT_CAP,
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
        self.lock().expect_marks = expect;
    }

    /// Cap, in bytes, on the output `run` returns.
    pub fn set_output_cap(&self, bytes: usize) {
        self.lock().output_cap = bytes.max(64);
    }

    /// Output from the program: updates the screen, scans marks, bumps the generation.
    pub fn feed(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        {
            let mut guard = self.lock();
            let state = &mut *guard;
            state.screen.feed(bytes);
            state.last_output = Instant::now();
            let State {
                scanner,
                capture,
                has_marks,
                at_prompt,
                last_mark,
                seen_command_start,
                last_exit_code,
                ..
            } = state;
            scanner.feed(bytes, |event| match event {
                MarkEvent::Text(text) => {
                    if let Some(capture) = capture.as_mut() {
                        capture.on_text(text);
                    }
                }
                MarkEvent::Mark(mark) => {
                    *last_mark = Some(mark);
                    *seen_command_start |= mark == Mark::CommandStart;
                    match mark {
                        Mark::PromptStart | Mark::CommandStart => {
                            *has_marks = true;
                            *at_prompt = true;
                        }
                        Mark::CommandFinished { exit_code } => {
                            *has_marks = true;
                            *at_prompt = true;
                            *last_exit_code = exit_code;
                        }
                        Mark::OutputStart => *at_prompt = false,
                    }
                    if let Some(capture) = capture.as_mut() {
                        capture.on_mark(mark);
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

    /// Lines of history + screen, `offset` counted from the oldest kept; and the total.
    pub fn scrollback(&self, offset: usize, limit: usize) -> (Vec<String>, usize) {
        self.lock().screen.scrollback(offset, limit)
    }

    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// At least one prompt or end-of-command mark was seen: this shell is integrated.
    pub fn has_marks(&self) -> bool {
        self.lock().has_marks
    }

    /// The shell shows a prompt (last mark A, B or D, not C).
    pub fn at_prompt(&self) -> bool {
        let state = self.lock();
        state.has_marks && state.at_prompt
    }

    /// Exit status of the last command, from its D mark.
    pub fn last_exit_code(&self) -> Option<i32> {
        self.lock().last_exit_code
    }

    /// Some(exit code) once the process ended.
    pub fn exit_status(&self) -> Option<Option<i32>> {
        self.lock().closed
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
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
    /// keeps running and the terminal stays usable (interrupt it, then run again).
    pub async fn run(
        &self,
        input: &(dyn Fn(&[u8]) -> io::Result<()> + Sync),
        command: &str,
        timeout: Duration,
        fallback: Fallback,
    ) -> io::Result<RunOutcome> {
        let _one_at_a_time = self.run_lock.lock().await;
        let start = Instant::now();
        let deadline = start + timeout;
        let mut receiver = self.generation.subscribe();

        let expecting_first_prompt = {
            let state = self.lock();
            state.expect_marks && !state.has_marks && state.closed.is_none()
        };
        if expecting_first_prompt {
            let first_prompt_deadline = deadline.min(start + FIRST_PROMPT_WAIT);
            loop {
                receiver.borrow_and_update();
                {
                    let state = self.lock();
                    if state.has_marks || state.closed.is_some() {
                        break;
                    }
                }
                if Instant::now() >= first_prompt_deadline {
                    break;
                }
                tokio::select! {
                    _ = receiver.changed() => {}
                    _ = tokio::time::sleep_until(first_prompt_deadline.into()) => {}
                }
            }
        }

        // Typed before the prompt is drawn, the command would be echoed twice on the screen
        // (once by the terminal, once by the line editor): wait for B when the shell sends it.
        let prompt_deadline = deadline.min(Instant::now() + Duration::from_millis(500));
        loop {
            receiver.borrow_and_update();
            {
                let state = self.lock();
                let drawing_prompt = state.has_marks
                    && state.seen_command_start
                    && matches!(
                        state.last_mark,
                        Some(Mark::PromptStart | Mark::CommandFinished { .. })
                    );
                if !drawing_prompt || state.closed.is_some() {
                    break;
                }
            }
            if Instant::now() >= prompt_deadline {
                break;
            }
            tokio::select! {
                _ = receiver.changed() => {}
                _ = tokio::time::sleep_until(prompt_deadline.into()) => {}
            }
        }

        let use_marks = {
            let mut state = self.lock();
            // A program in the foreground (a REPL started from the shell) gets the command,
            // not the shell: its end is the fallback's to find, when the caller gave one.
            let foreground_program =
                !state.at_prompt && (fallback.pattern.is_some() || fallback.quiet_ms.is_some());
            let use_marks = state.has_marks && !foreground_program;
            let phase = if !use_marks {
                Phase::Raw
            } else if state.at_prompt {
                Phase::AwaitOutputStart
            } else {
                Phase::AwaitPreviousEnd
            };
            state.capture = Some(Capture::new(phase, state.output_cap));
            use_marks
        };
        let mut line = command.as_bytes().to_vec();
        line.push(b'\r');
        if let Err(error) = input(&line) {
            self.lock().capture = None;
            return Err(error);
        }
        let quiet = (!use_marks).then(|| {
            let quiet_ms = match (&fallback.quiet_ms, &fallback.pattern) {
                (Some(ms), _) => Some(*ms),
                (None, Some(_)) => None,
                (None, None) => Some(DEFAULT_QUIET_MS),
            };
            quiet_ms.map(Duration::from_millis)
        });
        let quiet = quiet.flatten();
        let mut pattern_checked: u64 = 0;

        let (method, exit_code, matched_at) = loop {
            receiver.borrow_and_update();
            let now = Instant::now();
            let mut wake = deadline;
            {
                let mut state = self.lock();
                let closed = state.closed;
                let capture = state.capture.as_mut().expect("capture armed by run");
                if let Phase::Done(exit_code) = capture.phase {
                    break (WaitMethod::Mark, exit_code, None);
                }
                if let Some(pattern) = fallback.pattern.as_ref().filter(|_| !use_marks)
                    && capture.text.total > pattern_checked
                {
                    let (window_start, window) = capture
                        .text
                        .recent(capture.text.total - pattern_checked + 1024);
                    pattern_checked = capture.text.total;
                    let (skipped, window) = utf8_window(&window);
                    if let Some(found) = last_match(pattern, &window) {
                        let at = window_start + (skipped + found) as u64;
                        break (WaitMethod::Pattern, None, Some(at));
                    }
                }
                if let Some(exit_code) = closed {
                    break (WaitMethod::Exited, exit_code, None);
                }
                if let Some(quiet) = quiet {
                    let quiet_until = capture.last_output.unwrap_or(capture.started) + quiet;
                    if now >= quiet_until {
                        break (WaitMethod::Quiet, None, None);
                    }
                    wake = wake.min(quiet_until);
                }
            }
            if now >= deadline {
                break (WaitMethod::Timeout, None, None);
            }
            tokio::select! {
                _ = receiver.changed() => {}
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        };

        let capture = self.lock().capture.take().expect("capture armed by run");
        let (mut output, elided_bytes) = capture.text.finish(matched_at);
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
        })
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The shell was busy when the command was typed: the running command's D comes first.
    AwaitPreviousEnd,
    AwaitOutputStart,
    Capturing,
    Done(Option<i32>),
    /// No marks: everything after the command was sent is kept.
    Raw,
}

struct Capture {
    phase: Phase,
    stripper: AnsiStripper,
    text: CappedText,
    started: Instant,
    last_output: Option<Instant>,
    scratch: Vec<u8>,
}

impl Capture {
    fn new(phase: Phase, cap: usize) -> Capture {
        Capture {
            phase,
            stripper: AnsiStripper::default(),
            text: CappedText::new(cap),
            started: Instant::now(),
            last_output: None,
            scratch: Vec::new(),
        }
    }

    fn on_text(&mut self, bytes: &[u8]) {
        if matches!(self.phase, Phase::Capturing | Phase::Raw) {
            self.last_output = Some(Instant::now());
            self.scratch.clear();
            self.stripper.strip(bytes, &mut self.scratch);
            self.text.push(&self.scratch);
        }
    }

    fn on_mark(&mut self, mark: Mark) {
        self.phase = match (self.phase, mark) {
            (Phase::AwaitPreviousEnd, Mark::CommandFinished { .. }) => Phase::AwaitOutputStart,
            (Phase::AwaitOutputStart, Mark::OutputStart) => Phase::Capturing,
            // No C: an empty command line.
            (Phase::AwaitOutputStart | Phase::Capturing, Mark::CommandFinished { exit_code }) => {
                Phase::Done(exit_code)
            }
            (phase, _) => phase,
        };
    }
}

/// Output text kept as a head and a tail of at most `cap / 2` bytes each.
struct CappedText {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    /// Bytes pushed in all.
    total: u64,
}

impl CappedText {
    fn new(cap: usize) -> CappedText {
        CappedText {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            half: cap / 2,
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.half {
            let take = bytes.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    fn elided(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The last (up to) `n` bytes kept, and their offset in the whole stream.
    fn recent(&self, n: u64) -> (u64, Vec<u8>) {
        let n = n.min(self.head.len() as u64 + self.tail.len() as u64) as usize;
        let from_tail = n.min(self.tail.len());
        let from_head = if self.elided() == 0 { n - from_tail } else { 0 };
        let mut bytes = Vec::with_capacity(from_head + from_tail);
        bytes.extend_from_slice(&self.head[self.head.len() - from_head..]);
        bytes.extend(self.tail.range(self.tail.len() - from_tail..));
        (self.total - bytes.len() as u64, bytes)
    }

    /// The text (cut at stream offset `cut_at` when given), and the bytes elided.
    fn finish(mut self, cut_at: Option<u64>) -> (String, u64) {
        if let Some(cut_at) = cut_at {
            let head_len = self.head.len() as u64;
            if cut_at <= head_len {
                self.head.truncate(cut_at as usize);
                self.tail.clear();
                self.total = cut_at;
            } else {
                let drop = (self.total - cut_at).min(self.tail.len() as u64) as usize;
                self.tail.truncate(self.tail.len() - drop);
                self.total = cut_at;
            }
        }
        let elided = self.elided();
        let mut bytes = self.head;
        if elided > 0 {
            bytes.extend_from_slice(format!("\n[... {elided} bytes elided ...]\n").as_bytes());
        }
        bytes.extend(self.tail);
        (String::from_utf8_lossy(&bytes).into_owned(), elided)
    }
}

/// Removes escape sequences and turns `\r\n` into `\n`, across chunk boundaries.
#[derive(Default)]
struct AnsiStripper {
    state: StripState,
    pending_cr: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum StripState {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, SOS, PM, APC: until BEL or ST.
    String,
    StringEscape,
}

impl AnsiStripper {
    fn strip(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            match self.state {
                StripState::Ground => {
                    // Fast path: a run of plain bytes.
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| b < 0x20 || b == 0x7f)
                        .unwrap_or(bytes.len() - i);
                    if run > 0 {
                        if self.pending_cr {
                            out.push(b'\r');
                            self.pending_cr = false;
                        }
                        out.extend_from_slice(&bytes[i..i + run]);
                        i += run;
                        continue;
                    }
                    match byte {
                        b'\n' => {
                            self.pending_cr = false;
                            out.push(b'\n');
                        }
                        b'\r' => {
                            if self.pending_cr {
                                out.push(b'\r');
                            }
                            self.pending_cr = true;
                        }
                        0x1b => self.state = StripState::Escape,
                        b'\t' => {
                            if std::mem::take(&mut self.pending_cr) {
                                out.push(b'\r');
                            }
                            out.push(b'\t');
                        }
                        _ => {} // BEL, BS and other controls
                    }
                }
                StripState::Escape => {
                    self.state = match byte {
                        b'[' => StripState::Csi,
                        b']' | b'P' | b'X' | b'^' | b'_' => StripState::String,
                        0x20..=0x2f => StripState::EscapeIntermediate,
                        _ => StripState::Ground,
                    }
                }
                StripState::EscapeIntermediate => {
                    if !(0x20..=0x2f).contains(&byte) {
                        self.state = StripState::Ground;
                    }
                }
                StripState::Csi => {
                    if (0x40..=0x7e).contains(&byte) {
                        self.state = StripState::Ground;
                    }
                }
                StripState::String => match byte {
                    0x07 => self.state = StripState::Ground,
                    0x1b => self.state = StripState::StringEscape,
                    _ => {}
                },
                StripState::StringEscape => {
                    if byte == b'\\' {
                        self.state = StripState::Ground;
                    } else {
                        self.state = StripState::Escape;
                        continue;
                    }
                }
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(chunks: &[&[u8]]) -> String {
        let mut stripper = AnsiStripper::default();
        let mut out = Vec::new();
        for chunk in chunks {
            stripper.strip(chunk, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strips_ansi_and_crlf_across_chunks() {
        let input: &[u8] = b"\x1b[1;31mred\x1b[0m\r\nnext\x1b]0;t\x07 line\r\n\x1b(Bok\rover\r\n";
        assert_eq!(strip(&[input]), "red\nnext line\nok\rover\n");
        for split in 0..input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(
                strip(&[a, b]),
                "red\nnext line\nok\rover\n",
                "split {split}"
            );
        }
    }

    #[test]
    fn capped_text_keeps_head_and_tail() {
        let mut text = CappedText::new(10);
        for chunk in [&b"0123"[..], b"4567", b"89abcdef", b"ghij"] {
            text.push(chunk);
        }
        assert_eq!(text.total, 20);
        let (recent_at, recent) = text.recent(3);
        assert_eq!((recent_at, recent.as_slice()), (17, &b"hij"[..]));
        let (output, elided) = text.finish(None);
        assert_eq!(elided, 10);
        assert_eq!(output, "01234\n[... 10 bytes elided ...]\nfghij");
    }

    #[test]
    fn capped_text_cut_at_a_match() {
        let mut text = CappedText::new(100);
        text.push(b"2\n>>> ");
        assert_eq!(text.finish(Some(2)), ("2\n".to_string(), 0));
    }

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
            )
            .await
            .unwrap();
        assert_eq!(outcome.output, "hi\n");
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(outcome.method, WaitMethod::Mark);
        assert!(outcome.completed);
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
        assert!(core.scrollback(0, 1).1 <= 10_000 + 24);
    }
}
