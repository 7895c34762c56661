//! A task's states and the only transitions between them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    Running,
    /// The agent said it did the task.
    Done,
    /// The agent said the task should wait.
    Deferred,
    /// The agent said the task should not be done.
    WontDo,
    /// The agent said the task should be thrown away.
    Discarded,
    /// The session died without a signal, the agent exited non-zero, or it timed out.
    Failed,
    /// A person or client cancelled it.
    Cancelled,
    /// The host running it stopped renewing its lease (a team's shared queue): where its
    /// agent got to is unknown.
    Lost,
}

/// How the agent itself says a task ended (`task_complete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Done,
    Deferred,
    WontDo,
    Discard,
}

/// What can happen to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Start,
    Complete(Outcome),
    Fail,
    Cancel,
    /// Queue a failed, cancelled or lost task again.
    Retry,
    /// Queue a done task again: its result did not land, and its agent gets another
    /// attempt.
    SendBack,
    /// Its host's lease ran out.
    Lose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a {from} task cannot be {what}")]
pub struct IllegalTransition {
    pub from: &'static str,
    pub what: &'static str,
}

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        TaskState::Queued,
        TaskState::Running,
        TaskState::Done,
        TaskState::Deferred,
        TaskState::WontDo,
        TaskState::Discarded,
        TaskState::Failed,
        TaskState::Cancelled,
        TaskState::Lost,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Done => "done",
            TaskState::Deferred => "deferred",
            TaskState::WontDo => "wont_do",
            TaskState::Discarded => "discarded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
            TaskState::Lost => "lost",
        }
    }

    pub fn parse(name: &str) -> Option<TaskState> {
        TaskState::ALL
            .into_iter()
            .find(|state| state.name() == name)
    }

    /// Nothing more happens to it unless it is retried.
    pub fn is_finished(self) -> bool {
        !matches!(self, TaskState::Queued | TaskState::Running)
    }

    /// The state `transition` leads to, if it is legal from this one.
    pub fn after(self, transition: Transition) -> Result<TaskState, IllegalTransition> {
        use TaskState::*;
        let next = match (self, transition) {
            (Queued, Transition::Start) => Running,
            (Running, Transition::Complete(outcome)) => match outcome {
                Outcome::Done => Done,
                Outcome::Deferred => Deferred,
                Outcome::WontDo => WontDo,
                Outcome::Discard => Discarded,
            },
            (Running, Transition::Fail) => Failed,
            (Queued | Running, Transition::Cancel) => Cancelled,
            (Running, Transition::Lose) => Lost,
            (Failed | Cancelled | Lost, Transition::Retry) => Queued,
            (Done, Transition::SendBack) => Queued,
            (from, transition) => {
                return Err(IllegalTransition {
                    from: from.name(),
                    what: transition.past(),
                });
            }
        };
        Ok(next)
    }
}

impl Transition {
    fn past(self) -> &'static str {
        match self {
            Transition::Start => "started",
            Transition::Complete(_) => "completed",
            Transition::Fail => "failed",
            Transition::Cancel => "cancelled",
            Transition::Retry => "retried (only failed, cancelled and lost tasks are)",
            Transition::SendBack => "sent back to its agent (only done tasks are)",
            Transition::Lose => "lost (only a running task is)",
        }
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_legal_transitions_are_allowed() {
        use TaskState::*;
        let all_transitions = [
            Transition::Start,
            Transition::Complete(Outcome::Done),
            Transition::Complete(Outcome::Deferred),
            Transition::Complete(Outcome::WontDo),
            Transition::Complete(Outcome::Discard),
            Transition::Fail,
            Transition::Cancel,
            Transition::Retry,
            Transition::SendBack,
            Transition::Lose,
        ];
        let legal = [
            (Queued, Transition::Start, Running),
            (Running, Transition::Complete(Outcome::Done), Done),
            (Running, Transition::Complete(Outcome::Deferred), Deferred),
            (Running, Transition::Complete(Outcome::WontDo), WontDo),
            (Running, Transition::Complete(Outcome::Discard), Discarded),
            (Running, Transition::Fail, Failed),
            (Queued, Transition::Cancel, Cancelled),
            (Running, Transition::Cancel, Cancelled),
            (Failed, Transition::Retry, Queued),
            (Cancelled, Transition::Retry, Queued),
            (Running, Transition::Lose, Lost),
            (Lost, Transition::Retry, Queued),
            (Done, Transition::SendBack, Queued),
        ];
        for state in TaskState::ALL {
            for transition in all_transitions {
                let expected = legal
                    .iter()
                    .find(|(from, t, _)| *from == state && *t == transition)
                    .map(|(_, _, to)| *to);
                assert_eq!(
                    state.after(transition).ok(),
                    expected,
                    "{state} then {transition:?}"
                );
            }
        }
        assert_eq!(
            Done.after(Transition::Complete(Outcome::Done))
                .unwrap_err()
                .to_string(),
            "a done task cannot be completed"
        );
        assert_eq!(
            Done.after(Transition::Retry).unwrap_err().to_string(),
            "a done task cannot be retried (only failed, cancelled and lost tasks are)"
        );
    }

    #[test]
    fn names_round_trip() {
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.name()), Some(state));
        }
        assert_eq!(TaskState::parse("finished"), None);
        assert!(!TaskState::Running.is_finished());
        assert!(TaskState::Cancelled.is_finished());
    }
}
