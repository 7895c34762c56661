//! Every command a shell with integration runs in a terminal, as its OSC 133 marks frame it:
//! the command line (what the screen shows between B and C: the line editor's redraws
//! applied), its output (between C and D, escape codes stripped, a head and a tail within a
//! budget) and its exit code (D). Whoever keeps them (drydock's project memory, through the
//! event feed) is handed each one as it finishes.

use std::time::{Duration, Instant};

use super::capture::{AnsiStripper, CappedText, CursorLine};
use super::marks::Mark;

/// A command's output is kept within this many bytes (as JSON), head and tail.
const OUTPUT_BUDGET: usize = 16 * 1024;
/// A command line longer than this is cut.
const LONGEST_LINE: usize = 4 * 1024;

/// The command line as the screen showed it, within [`LONGEST_LINE`] characters.
fn command_line(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(LONGEST_LINE) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.to_string(),
    }
}

/// A command the shell ran, as it finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedCommand {
    pub command: String,
    /// What it printed: all of it, or its start and end with how much was left out between.
    pub output: String,
    pub exit_code: Option<i32>,
    pub duration: Duration,
}

enum Phase {
    /// At a prompt, or in a program without marks.
    Idle,
    /// The command line is being typed (after B), from `start` on the screen.
    Line { start: CursorLine, since: Instant },
    /// The command runs (after C).
    Output {
        line: String,
        output: CappedText,
        since: Instant,
    },
}

pub(super) struct CommandLog {
    phase: Phase,
    stripper: AnsiStripper,
    scratch: Vec<u8>,
}

impl Default for CommandLog {
    fn default() -> Self {
        CommandLog {
            phase: Phase::Idle,
            stripper: AnsiStripper::default(),
            scratch: Vec::new(),
        }
    }
}

impl CommandLog {
    pub(super) fn on_text(&mut self, bytes: &[u8]) {
        if let Phase::Output { output, .. } = &mut self.phase {
            self.scratch.clear();
            self.stripper.strip(bytes, &mut self.scratch);
            output.push(&self.scratch);
        }
    }

    /// A mark, seen with the cursor at `cursor`: the command that finished with it, if one
    /// did. `screen` gives the screen's text between two positions.
    pub(super) fn on_mark(
        &mut self,
        mark: Mark,
        cursor: CursorLine,
        screen: impl FnOnce(CursorLine, CursorLine) -> Option<String>,
    ) -> Option<FinishedCommand> {
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let (next, finished) = match (phase, mark) {
            (_, Mark::CommandStart) => (
                Phase::Line {
                    start: cursor,
                    since: Instant::now(),
                },
                None,
            ),
            (Phase::Line { start, since }, Mark::OutputStart) => {
                let line = command_line(&screen(start, cursor).unwrap_or_default());
                (
                    Phase::Output {
                        line,
                        output: CappedText::new(OUTPUT_BUDGET),
                        since,
                    },
                    None,
                )
            }
            (
                Phase::Output {
                    line,
                    output,
                    since,
                },
                Mark::CommandFinished { exit_code },
            ) if !line.is_empty() => {
                let kept = output.finish(None);
                let output = match kept.elided_bytes {
                    0 => format!("{}{}", kept.head, kept.tail),
                    n => format!(
                        "{}\n… ({n} bytes, {} lines left out) …\n{}",
                        kept.head, kept.elided_lines, kept.tail
                    ),
                };
                let finished = FinishedCommand {
                    command: line,
                    output,
                    exit_code,
                    duration: since.elapsed(),
                };
                (Phase::Idle, Some(finished))
            }
            // A prompt, an empty command line, or marks out of order: nothing ran.
            _ => (Phase::Idle, None),
        };
        self.phase = next;
        finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A screen whose line 7 is `~/p $ cargo build` (the prompt is 6 columns).
    fn screen(start: CursorLine, end: CursorLine) -> Option<String> {
        assert_eq!((start, end), ((7, 6), (8, 0)));
        Some("cargo build\n".into())
    }

    #[test]
    fn a_command_is_its_line_its_output_and_its_exit_code() {
        let mut log = CommandLog::default();
        assert_eq!(log.on_mark(Mark::PromptStart, (7, 0), screen), None);
        log.on_text(b"~/p $ ");
        assert_eq!(log.on_mark(Mark::CommandStart, (7, 6), screen), None);
        log.on_text(b"cargo bu\rcargo \x1b[1mbuild\x1b[0m\r\n");
        assert_eq!(log.on_mark(Mark::OutputStart, (8, 0), screen), None);
        log.on_text(b"\x1b[31merror\x1b[0m[E0502]: cannot borrow\r\n");
        let end = Mark::CommandFinished {
            exit_code: Some(101),
        };
        let finished = log.on_mark(end, (9, 0), screen).unwrap();
        assert_eq!(finished.command, "cargo build", "as the screen shows it");
        assert_eq!(finished.output, "error[E0502]: cannot borrow\n");
        assert_eq!(finished.exit_code, Some(101));
        // An empty command line runs nothing.
        let blank = |_, _| Some(String::new());
        log.on_mark(Mark::CommandStart, (8, 6), blank);
        log.on_mark(Mark::OutputStart, (9, 0), blank);
        let end = Mark::CommandFinished { exit_code: Some(0) };
        assert_eq!(log.on_mark(end, (9, 0), blank), None);
    }

    #[test]
    fn a_flood_keeps_its_start_and_end() {
        let mut log = CommandLog::default();
        let typed = |_, _| Some("yes | head -c 50000000\n".to_string());
        log.on_mark(Mark::CommandStart, (0, 2), typed);
        log.on_mark(Mark::OutputStart, (1, 0), typed);
        let chunk = vec![b'y'; 64 * 1024];
        for _ in 0..800 {
            log.on_text(&chunk);
        }
        let end = Mark::CommandFinished { exit_code: Some(0) };
        let finished = log.on_mark(end, (2, 0), typed).unwrap();
        assert_eq!(finished.command, "yes | head -c 50000000");
        assert!(
            finished.output.len() <= OUTPUT_BUDGET + 200,
            "{}",
            finished.output.len()
        );
        assert!(
            finished.output.contains("bytes, 0 lines left out"),
            "{}",
            &finished.output[..100]
        );
    }
}
