//! `TerminalCore::run`: a command typed into the shell, and its own output and exit code
//! once it is done: at its end-of-command mark when the shell sends marks, else when the
//! caller's fallback (a pattern, a quiet period) says so.

use std::io;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{Cancelled, Check, Life, ShellState, TerminalCore, WaitMethod, Waited};
use crate::terminal::capture::{Capture, Kept, Phase, line_after};

/// Quiet period used by `run` when there are no marks and the caller gave no fallback.
const DEFAULT_QUIET_MS: u64 = 1000;
/// How long `run` waits for the first prompt of a shell expected to emit marks.
const FIRST_PROMPT_WAIT: Duration = Duration::from_secs(10);
/// How long `run` waits for a prompt being drawn to finish before typing.
const PROMPT_DRAW_WAIT: Duration = Duration::from_millis(500);

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

/// Why `run` has no outcome to give.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Typing the command failed.
    #[error(transparent)]
    Input(#[from] io::Error),
    /// The caller cancelled; the command, if it was typed, keeps running.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
}

/// How the command being run ended.
struct End {
    method: WaitMethod,
    exit_code: Option<i32>,
    /// Where in the output the fallback's pattern matched.
    matched_at: Option<u64>,
}

impl End {
    fn by(method: WaitMethod, exit_code: Option<i32>) -> End {
        End {
            method,
            exit_code,
            matched_at: None,
        }
    }
}

/// The capture of the command being run. Dropped unfinished (the command could not be
/// typed, the run was cancelled or dropped), it stops capturing.
struct ArmedCapture<'a> {
    core: &'a TerminalCore,
    /// The command's end will be known from marks.
    use_marks: bool,
}

impl ArmedCapture<'_> {
    /// Ends the capture: the output kept (cut where a pattern matched), and the lines it
    /// took on the terminal.
    fn finish(self, matched_at: Option<u64>) -> (Kept, OutputLines) {
        let (capture, cursor, oldest_kept) = {
            let mut state = self.core.lock();
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

impl Drop for ArmedCapture<'_> {
    fn drop(&mut self) {
        self.core.lock().capture = None;
    }
}

impl TerminalCore {
    /// Types `command` and Enter through `input`, and returns when the command is done:
    /// at its D mark when the shell emits marks (no quiet period), else when the fallback
    /// pattern matches the new output or the output has been quiet for the fallback period.
    /// At `timeout` it returns what was printed so far with `completed: false`; the command
    /// keeps running and the terminal stays usable (interrupt it, then run again). The
    /// output returned costs about `output_cap` bytes as JSON at most. When `cancel` fires
    /// it returns at once, the command left running.
    pub fn run<'a>(
        &'a self,
        input: &'a (dyn Fn(&[u8]) -> io::Result<()> + Sync),
        command: &'a str,
        timeout: Duration,
        fallback: Fallback,
        output_cap: usize,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<RunOutcome, RunError>> {
        async move {
            let _one_at_a_time = tokio::select! {
                guard = self.run_lock.lock() => guard,
                _ = cancel.cancelled() => return Err(Cancelled.into()),
            };
            let start = Instant::now();
            let deadline = start + timeout;
            self.await_ready_shell(deadline, cancel).await?;

            let capture = self.arm_capture(&fallback, output_cap);
            let use_marks = capture.use_marks;
            let mut line = command.as_bytes().to_vec();
            line.push(b'\r');
            input(&line)?;
            let end = self
                .await_end(use_marks, &fallback, deadline, cancel)
                .await?;
            let (kept, scrollback) = capture.finish(end.matched_at);
            let (elided_bytes, elided_lines) = (kept.elided_bytes, kept.elided_lines);
            let mut output = output_text(kept, &scrollback);
            if !use_marks {
                output = drop_echoed_command(&output, command);
            }
            Ok(RunOutcome {
                output,
                exit_code: end.exit_code,
                duration_ms: crate::millis::millis(start.elapsed()),
                completed: end.method != WaitMethod::Timeout,
                method: end.method,
                elided_bytes,
                elided_lines,
                scrollback,
            })
        }
        .boxed()
    }

    /// Before the command is typed: a shell expected to send marks gets up to 10 s to draw
    /// its first prompt, and a prompt being drawn gets up to half a second to finish.
    async fn await_ready_shell(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(), Cancelled> {
        let first_prompt = Instant::now() + FIRST_PROMPT_WAIT;
        let waited = self
            .wait_until(deadline.min(first_prompt), cancel, |state, _| {
                Check::done_if(state.shell != ShellState::AwaitingFirstPrompt || self.has_exited())
            })
            .await;
        if waited.is_cancelled() {
            return Err(Cancelled);
        }
        let prompt_drawn = Instant::now() + PROMPT_DRAW_WAIT;
        let waited = self
            .wait_until(deadline.min(prompt_drawn), cancel, |state, _| {
                Check::done_if(!state.shell.drawing_prompt() || self.has_exited())
            })
            .await;
        match waited.is_cancelled() {
            true => Err(Cancelled),
            false => Ok(()),
        }
    }

    /// Starts capturing the output of the command about to be typed.
    fn arm_capture(&self, fallback: &Fallback, output_cap: usize) -> ArmedCapture<'_> {
        let mut state = self.lock();
        let at_prompt = state.shell.at_prompt();
        // A program in the foreground (a REPL started from the shell) gets the command,
        // not the shell: its end is the fallback's to find, when the caller gave one.
        let foreground_program =
            !at_prompt && (fallback.pattern.is_some() || fallback.quiet_ms.is_some());
        let use_marks = state.shell.has_marks() && !foreground_program;
        let phase = if !use_marks {
            Phase::Raw
        } else if at_prompt {
            Phase::AwaitOutputStart
        } else {
            Phase::AwaitPreviousEnd
        };
        let cursor = state.screen.cursor_line();
        state.capture = Some(Capture::new(phase, output_cap, cursor));
        ArmedCapture {
            core: self,
            use_marks,
        }
    }

    /// Waits for the end of the command being captured: its D mark, the fallback's pattern
    /// or quiet period, the process's exit, or the deadline.
    async fn await_end(
        &self,
        use_marks: bool,
        fallback: &Fallback,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<End, Cancelled> {
        let quiet_ms = match (fallback.quiet_ms, &fallback.pattern) {
            _ if use_marks => None,
            (Some(ms), _) => Some(ms),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_QUIET_MS),
        };
        let quiet = quiet_ms.map(Duration::from_millis);
        let pattern = fallback.pattern.as_ref().filter(|_| !use_marks);
        let mut pattern_checked: u64 = 0;
        let waited = self
            .wait_until(deadline, cancel, |state, _| {
                let capture = state.capture.as_mut().expect("capture armed by run");
                if let Phase::Done(exit_code) = capture.phase {
                    return Check::Done(End::by(WaitMethod::Mark, exit_code));
                }
                if let Some(pattern) = pattern
                    && capture.text.total > pattern_checked
                {
                    let (window_start, window) = capture
                        .text
                        .recent(capture.text.total - pattern_checked + 1024);
                    pattern_checked = capture.text.total;
                    let (skipped, text) = utf8_window(&window);
                    if let Some(found) = last_match(pattern, &text) {
                        let found = byte_offset(&window[skipped..], found);
                        return Check::Done(End {
                            method: WaitMethod::Pattern,
                            exit_code: None,
                            matched_at: Some(window_start + (skipped + found) as u64),
                        });
                    }
                }
                if let Life::Exited(status) = self.life() {
                    return Check::Done(End::by(WaitMethod::Exited, status.code()));
                }
                let Some(quiet) = quiet else {
                    return Check::NotYet { recheck_at: None };
                };
                let quiet_until = capture.last_output.unwrap_or(capture.started) + quiet;
                if Instant::now() >= quiet_until {
                    return Check::Done(End::by(WaitMethod::Quiet, None));
                }
                Check::NotYet {
                    recheck_at: Some(quiet_until),
                }
            })
            .await;
        match waited {
            Waited::Done(end) => Ok(end),
            Waited::TimedOut { .. } => Ok(End::by(WaitMethod::Timeout, None)),
            Waited::Cancelled => Err(Cancelled),
        }
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

/// The window as text, starting at a character boundary: (bytes skipped, text). Where the
/// output is not UTF-8, each invalid sequence is a U+FFFD in the text, so offsets in the
/// text are not offsets in the window: [`byte_offset`] maps them back.
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

/// Where offset `at` of the text `utf8_window` read from `bytes` lies in `bytes`: an offset
/// past an invalid sequence counts the sequence's bytes, not its U+FFFD's three (a match
/// after many invalid bytes lay beyond the end of the output, and cutting the output there
/// overflowed).
fn byte_offset(bytes: &[u8], at: usize) -> usize {
    let (mut text, mut byte) = (0, 0);
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().len();
        if at <= text + valid {
            return byte + (at - text);
        }
        text += valid;
        byte += valid;
        if !chunk.invalid().is_empty() {
            if at < text + char::REPLACEMENT_CHARACTER.len_utf8() {
                return byte;
            }
            text += char::REPLACEMENT_CHARACTER.len_utf8();
            byte += chunk.invalid().len();
        }
    }
    byte
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
    use std::sync::Arc;

    #[test]
    fn echo_is_dropped_without_marks() {
        assert_eq!(drop_echoed_command(">>> 1+1\n2\n", "1+1"), "2\n");
        assert_eq!(drop_echoed_command("1+1\n2\n", "1+1"), "2\n");
        assert_eq!(drop_echoed_command("other\n2\n", "1+1"), "other\n2\n");
    }

    /// `core.run` of `command`, not cancelled, without a fallback.
    async fn run(
        core: &TerminalCore,
        input: &(dyn Fn(&[u8]) -> io::Result<()> + Sync),
        command: &str,
        timeout: Duration,
        cap: usize,
    ) -> RunOutcome {
        let never = CancellationToken::new();
        let outcome = core.run(input, command, timeout, Fallback::default(), cap, &never);
        outcome.await.unwrap()
    }

    fn feed_all(core: &TerminalCore, chunks: &[&[u8]]) {
        for chunk in chunks {
            core.feed(chunk);
        }
    }

    #[test]
    fn offsets_in_text_read_from_bytes_that_are_not_utf8_map_back_to_the_bytes() {
        let bytes = b"a\xffb\xe2\x82";
        let (skipped, text) = utf8_window(bytes);
        assert_eq!((skipped, text.as_ref()), (0, "a\u{fffd}b\u{fffd}"));
        assert_eq!(byte_offset(bytes, 0), 0);
        assert_eq!(byte_offset(bytes, text.find('b').unwrap()), 2);
        assert_eq!(byte_offset(bytes, text.len()), bytes.len());
        let valid = "é>>> ".as_bytes();
        assert_eq!(byte_offset(valid, 2), 2);
    }

    #[tokio::test]
    async fn a_pattern_after_bytes_that_are_not_utf8_cuts_the_output_where_it_matched() {
        // Each invalid byte reads as a three-byte U+FFFD: the match's offset in that text lay
        // far beyond the end of the output, and cutting the output there overflowed.
        let core = TerminalCore::new(24, 80, 100);
        let feeder = core.clone();
        let input = move |_: &[u8]| -> io::Result<()> {
            let mut output = b"x\r\n".to_vec();
            output.extend([0xff; 200]);
            output.extend(b"\r\nok\r\n>>> ");
            let feeder = feeder.clone();
            tokio::spawn(async move { feeder.feed(&output) });
            Ok(())
        };
        let fallback = Fallback {
            quiet_ms: None,
            pattern: Some(Regex::new("(?m)>>> $").unwrap()),
        };
        let never = CancellationToken::new();
        let outcome = core
            .run(&input, "x", Duration::from_secs(5), fallback, 4096, &never)
            .await
            .unwrap();
        assert_eq!(outcome.method, WaitMethod::Pattern);
        assert_eq!(outcome.output, format!("{}\nok\n", "\u{fffd}".repeat(200)));
    }

    #[tokio::test]
    async fn run_with_marks_split_across_feeds() {
        let core = TerminalCore::new(24, 80, 100);
        core.feed(b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07");
        assert_eq!(core.lock().shell, ShellState::ReadingCommand);
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
        let outcome = run(&core, &input, "echo hi", Duration::from_secs(5), 1024).await;
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
        let outcome = run(&core, &input, "seq 1 100000", Duration::from_secs(10), 4096).await;

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

    #[tokio::test]
    async fn a_cancelled_run_returns_at_once_and_the_next_run_waits_for_its_command() {
        let core = TerminalCore::new(24, 80, 100);
        core.feed(b"\x1b]133;A\x07$ \x1b]133;B\x07");
        let typed = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let keys = typed.clone();
        let input = move |bytes: &[u8]| -> io::Result<()> {
            keys.lock().unwrap().extend_from_slice(bytes);
            Ok(())
        };
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        let echo = core.clone();
        tokio::spawn(async move {
            echo.feed(b"sleep 9\r\n\x1b]133;C\x07");
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let cancelled = core
            .run(
                &input,
                "sleep 9",
                Duration::from_secs(30),
                Fallback::default(),
                1024,
                &cancel,
            )
            .await;
        assert!(matches!(cancelled, Err(RunError::Cancelled(Cancelled))));
        assert!(
            core.lock().capture.is_none(),
            "the capture ends with the run"
        );
        assert_eq!(typed.lock().unwrap().as_slice(), b"sleep 9\r");

        // The command still runs: the next run's output comes after its D mark.
        let finisher = core.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            finisher.feed(b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07");
            finisher.feed(b"echo hi\r\n\x1b]133;C\x07hi\r\n\x1b]133;D;0\x07");
        });
        let outcome = run(&core, &input, "echo hi", Duration::from_secs(5), 1024).await;
        assert_eq!(
            (outcome.output.as_str(), outcome.method),
            ("hi\n", WaitMethod::Mark)
        );
    }
}
