//! Every command a shell with integration runs in a terminal, as its OSC 133 marks frame it:
//! the command line (typed between B and C), its output (between C and D, escape codes
//! stripped, a head and a tail within a budget) and its exit code (D). Whoever keeps them
//! (drydock's project memory, through the event feed) is handed each one as it finishes.

use std::time::{Duration, Instant};

use super::capture::{AnsiStripper, CappedText};
use super::marks::Mark;

/// A command's output is kept within this many bytes (as JSON), head and tail.
const OUTPUT_BUDGET: usize = 16 * 1024;
/// A command line longer than this is cut.
const LONGEST_LINE: usize = 4 * 1024;

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
    /// The command line is being typed (after B).
    Line { line: Vec<u8>, since: Instant },
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
    pub fn on_text(&mut self, bytes: &[u8]) {
        if matches!(self.phase, Phase::Idle) {
            return;
        }
        self.scratch.clear();
        self.stripper.strip(bytes, &mut self.scratch);
        match &mut self.phase {
            Phase::Line { line, .. } => {
                let room = LONGEST_LINE.saturating_sub(line.len());
                line.extend_from_slice(&self.scratch[..self.scratch.len().min(room)]);
            }
            Phase::Output { output, .. } => output.push(&self.scratch),
            Phase::Idle => {}
        }
    }

    /// A mark: the command that finished with it, if one did.
    pub fn on_mark(&mut self, mark: Mark) -> Option<FinishedCommand> {
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let (next, finished) = match (phase, mark) {
            (_, Mark::CommandStart) => (
                Phase::Line {
                    line: Vec::new(),
                    since: Instant::now(),
                },
                None,
            ),
            (Phase::Line { line, since }, Mark::OutputStart) => {
                let line = String::from_utf8_lossy(&line).trim().to_string();
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

    #[test]
    fn a_command_is_its_line_its_output_and_its_exit_code() {
        let mut log = CommandLog::default();
        assert_eq!(log.on_mark(Mark::PromptStart), None);
        log.on_text(b"$ ");
        assert_eq!(log.on_mark(Mark::CommandStart), None);
        log.on_text(b"cargo \x1b[1mbuild\x1b[0m\r\n");
        assert_eq!(log.on_mark(Mark::OutputStart), None);
        log.on_text(b"\x1b[31merror\x1b[0m[E0502]: cannot borrow\r\n");
        let finished = log
            .on_mark(Mark::CommandFinished {
                exit_code: Some(101),
            })
            .unwrap();
        assert_eq!(finished.command, "cargo build");
        assert_eq!(finished.output, "error[E0502]: cannot borrow\n");
        assert_eq!(finished.exit_code, Some(101));
        // An empty command line runs nothing.
        log.on_mark(Mark::CommandStart);
        log.on_mark(Mark::OutputStart);
        assert_eq!(
            log.on_mark(Mark::CommandFinished { exit_code: Some(0) }),
            None
        );
    }

    #[test]
    fn a_flood_keeps_its_start_and_end() {
        let mut log = CommandLog::default();
        log.on_mark(Mark::CommandStart);
        log.on_text(b"yes | head -c 50000000");
        log.on_mark(Mark::OutputStart);
        let chunk = vec![b'y'; 64 * 1024];
        for _ in 0..800 {
            log.on_text(&chunk);
        }
        let finished = log
            .on_mark(Mark::CommandFinished { exit_code: Some(0) })
            .unwrap();
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
