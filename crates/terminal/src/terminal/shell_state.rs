//! Where a shell stands, as its shell-integration marks tell it: not known to send marks,
//! expected to send them but not yet heard from, or drawing a prompt, reading a command
//! line, running a command.

use super::marks::Mark;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShellState {
    /// No mark seen, and none expected: a program without drydock's integration (a REPL,
    /// a pane drydock did not start). Marks may still come, and are then followed.
    NoMarksExpected,
    /// A shell drydock started with its integration, before its first prompt mark.
    AwaitingFirstPrompt,
    /// A prompt is on its way: the last mark was A (prompt start) or D (command finished).
    PromptStarted {
        /// The shell marks the end of its prompt (B): until B, typing would be echoed twice.
        sends_prompt_end: bool,
    },
    /// The prompt is drawn and the line editor reads a command line (B: the shell sends B).
    ReadingCommand,
    /// A command runs: its output started (C).
    CommandRunning { sends_prompt_end: bool },
}

impl ShellState {
    /// The state a new terminal starts in: `expect_marks` for a shell started with drydock's
    /// integration.
    pub(super) fn new(expect_marks: bool) -> ShellState {
        match expect_marks {
            true => ShellState::AwaitingFirstPrompt,
            false => ShellState::NoMarksExpected,
        }
    }

    /// Whether the program is a shell started with drydock's integration; marks already
    /// seen are kept either way.
    pub(super) fn expect_marks(&mut self, expect: bool) {
        if !self.has_marks() {
            *self = ShellState::new(expect);
        }
    }

    pub(super) fn on_mark(&mut self, mark: Mark) {
        let sends_prompt_end = match *self {
            ShellState::PromptStarted { sends_prompt_end }
            | ShellState::CommandRunning { sends_prompt_end } => sends_prompt_end,
            ShellState::ReadingCommand => true,
            ShellState::NoMarksExpected | ShellState::AwaitingFirstPrompt => false,
        };
        *self = match mark {
            Mark::PromptStart | Mark::CommandFinished { .. } => {
                ShellState::PromptStarted { sends_prompt_end }
            }
            Mark::CommandStart => ShellState::ReadingCommand,
            // Output before any prompt tells nothing of where the shell stands.
            Mark::OutputStart if !self.has_marks() => *self,
            Mark::OutputStart => ShellState::CommandRunning { sends_prompt_end },
        };
    }

    /// At least one prompt or end-of-command mark was seen: this shell is integrated.
    pub(super) fn has_marks(&self) -> bool {
        !matches!(
            self,
            ShellState::NoMarksExpected | ShellState::AwaitingFirstPrompt
        )
    }

    /// The shell shows a prompt (the last mark was A, B or D, not C).
    pub(super) fn at_prompt(&self) -> bool {
        matches!(
            self,
            ShellState::PromptStarted { .. } | ShellState::ReadingCommand
        )
    }

    /// A prompt is being drawn: typing now would be echoed twice (once by the terminal,
    /// once by the line editor). Only known for shells that send B.
    pub(super) fn drawing_prompt(&self) -> bool {
        matches!(
            self,
            ShellState::PromptStarted {
                sends_prompt_end: true
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(expect_marks: bool, marks: &[Mark]) -> ShellState {
        let mut state = ShellState::new(expect_marks);
        for &mark in marks {
            state.on_mark(mark);
        }
        state
    }

    const D0: Mark = Mark::CommandFinished { exit_code: Some(0) };

    #[test]
    fn marks_move_the_shell_between_prompt_and_command() {
        use Mark::*;
        assert_eq!(after(true, &[]), ShellState::AwaitingFirstPrompt);
        assert_eq!(after(false, &[OutputStart]), ShellState::NoMarksExpected);
        let drawing = after(true, &[D0, PromptStart, CommandStart, OutputStart, D0]);
        assert!(drawing.drawing_prompt() && drawing.at_prompt());
        let reading = after(false, &[PromptStart, CommandStart]);
        assert_eq!(reading, ShellState::ReadingCommand);
        assert!(reading.at_prompt() && !reading.drawing_prompt());
        let running = after(false, &[PromptStart, OutputStart]);
        assert!(running.has_marks() && !running.at_prompt());
        // A shell that never sends B is never seen drawing its prompt.
        let without_b = after(false, &[PromptStart, OutputStart, D0, PromptStart]);
        assert!(without_b.at_prompt() && !without_b.drawing_prompt());
    }

    #[test]
    fn expecting_marks_changes_nothing_once_they_came() {
        let mut state = after(false, &[Mark::PromptStart, Mark::CommandStart]);
        state.expect_marks(true);
        assert_eq!(state, ShellState::ReadingCommand);
        state.expect_marks(false);
        assert_eq!(state, ShellState::ReadingCommand);
        let mut fresh = ShellState::new(false);
        fresh.expect_marks(true);
        assert_eq!(fresh, ShellState::AwaitingFirstPrompt);
    }
}
