//! How a task's run ends: its agent stopped (interrupted, then killed), its session kept as
//! its transcript and closed, its token withdrawn, its sandbox's ways out closed, what it
//! spent counted and its result reviewed.

use std::sync::Arc;
use std::time::Duration;

use super::budgets::Budgets;
use super::ledger::Ledger;
use super::review::Reviewer;
use super::sandboxing::Sandboxes;
use super::sessions::task_of_session;
use super::state::{TaskState, Transition};
use super::store::{Record, Task};
use super::tokens::TaskTokens;
use crate::agents::Agents;
use crate::agents::requests::KillRequest;
use crate::call::Call;
use crate::config::Config;
use crate::terminal::Terminals;
use crate::terminal::requests::{ManageAction, ManageRequest};

/// Ends tasks' runs.
pub(super) struct Ending {
    pub(super) ledger: Arc<Ledger>,
    pub(super) config: Arc<Config>,
    pub(super) agents: Arc<Agents>,
    pub(super) terminals: Arc<Terminals>,
    pub(super) tokens: TaskTokens,
    pub(super) sandboxes: Arc<Sandboxes>,
    pub(super) budgets: Arc<Budgets>,
    pub(super) reviewer: Arc<Reviewer>,
}

impl Ending {
    /// Fails running `task` (if it still runs) with `failure`, stops its agent and frees its
    /// slot.
    pub(super) async fn fail(
        self: &Arc<Self>,
        task: &Task,
        failure: String,
        exit_code: Option<i32>,
    ) {
        let Ok(lease) = self.ledger.lease_here(task) else {
            return;
        };
        let record = Record {
            failure: Some(failure),
            exit_code,
            ..Record::default()
        };
        let failed = self
            .ledger
            .change(&task.id, Transition::Fail, record, lease)
            .await;
        match failed {
            Ok(failed) => {
                self.ledger.publish(&failed, Some(TaskState::Running));
                self.stop_agent(&failed).await;
            }
            Err(error) => tracing::debug!("task {} not failed: {error}", task.id),
        }
    }

    /// Interrupts the agent of `task`, then terminates and kills whatever is left of it,
    /// keeps its transcript and closes its session.
    pub(super) async fn stop_agent(self: &Arc<Self>, task: &Task) {
        let Some(session) = task.session.clone() else {
            return;
        };
        let kill = KillRequest {
            agent: session.clone(),
            force: false,
        };
        // Read before the agent is stopped: a TUI erases what it drew as it exits.
        let shown = self.terminals.read_text(&session, true).await.ok();
        let call = Call::silent(Default::default());
        if let Err(error) = self.agents.kill(kill, &call).await {
            tracing::debug!("task {}: {error}", task.id);
        }
        self.after_run_from(task, Duration::ZERO, shown);
    }

    /// Kills the agent in `session` and closes the session, keeping nothing of it: its task
    /// is no longer this host's.
    pub(super) async fn abandon(&self, session: &str) {
        // Its token is withdrawn only when it is this claim's (a later claim of the task may
        // run here under a token of its own).
        if let Some((id, claim)) = task_of_session(session)
            && self
                .tokens
                .claim_of(id)
                .is_none_or(|issued| issued <= claim)
        {
            self.tokens.revoke(id);
        }
        let kill = KillRequest {
            agent: session.to_string(),
            force: true,
        };
        let call = Call::silent(Default::default());
        if let Err(error) = self.agents.kill(kill, &call).await {
            tracing::debug!("{session}: {error}");
        }
        let close = ManageRequest {
            session: session.to_string(),
            action: ManageAction::Kill,
            new_name: None,
            rows: None,
            cols: None,
        };
        let _ = self.terminals.manage(close).await;
    }

    /// After `delay`, keeps what the session showed as the task's transcript, withdraws its
    /// token and closes the session (unless config keeps them).
    pub(super) fn after_run(self: &Arc<Self>, task: &Task, delay: Duration) {
        self.after_run_from(task, delay, None);
    }

    /// `after_run`, where `shown` is what the session showed before its agent was stopped
    /// (read now when not given): the transcript is that, then what the agent left after it.
    fn after_run_from(self: &Arc<Self>, task: &Task, delay: Duration, shown: Option<String>) {
        let this = self.clone();
        let (id, run) = (task.id.clone(), task.clone());
        let Some(session) = task.session.clone() else {
            return;
        };
        tokio::spawn(async move {
            let shown = match shown {
                Some(shown) => Some(shown),
                None => this.terminals.read_text(&session, true).await.ok(),
            };
            tokio::time::sleep(delay).await;
            let left = this.terminals.read_text(&session, true).await.ok();
            if let Some(text) = transcript_of(shown, left)
                && this
                    .ledger
                    .task(&id)
                    .await
                    .is_ok_and(|task| this.ledger.is_mine(&task))
                && let Err(error) = this.ledger.keep_transcript(&id, text.trim_end()).await
            {
                tracing::warn!("task {id}: keeping its transcript: {error}");
            }
            if !this.config.tasks.keep_sessions {
                let close = ManageRequest {
                    session: session.clone(),
                    action: ManageAction::Kill,
                    new_name: None,
                    rows: None,
                    cols: None,
                };
                let _ = this.terminals.manage(close).await;
            }
            // Counted once the session is closed: its agent has written its last turn.
            if this.ledger.is_mine(&run) {
                let spending = this.budgets.count_spending(&run).await;
                super::traces::attempt_ended(&run, &spending);
                if crate::telemetry::on()
                    && let Ok(now) = this.ledger.task(&id).await
                {
                    super::traces::task_so_far(&now);
                }
            }
            // Withdrawn once the session is closed: a finished task's session without a token
            // is one an earlier drydock left (see `let_go`). Only this run's: a retry that
            // started meanwhile holds a token of its own claim.
            if this
                .tokens
                .claim_of(&id)
                .is_none_or(|issued| issued <= run.epoch)
            {
                this.tokens.revoke(&id);
            }
            this.sandboxes.close(&session);
            this.reviewer.review(&id).await;
        });
    }
}

/// What a session holds after its agent ended (`left`), then the screen the agent showed
/// while it ran (`shown`) past the lines the two share from the top. A TUI on the alternate
/// screen (Claude Code) or one that erases what it drew as it exits leaves nothing of its
/// last screen but its last words below the command that started it.
fn transcript_of(shown: Option<String>, left: Option<String>) -> Option<String> {
    let (shown, left) = match (shown, left) {
        (Some(shown), Some(left)) => (shown, left),
        (one, other) => return one.or(other),
    };
    let shared = shown
        .lines()
        .zip(left.lines())
        .take_while(|(a, b)| a == b)
        .count();
    let lines: Vec<&str> = left.lines().chain(shown.lines().skip(shared)).collect();
    Some(lines.join("\n").trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tasks::parts_for_tests::Setting;
    use crate::tasks::tokens::TaskScope;

    #[test]
    fn a_transcript_keeps_what_the_agent_left_then_its_last_screen() {
        let tui = "> Think\n  thinking...\n\n".to_string();
        let left = "$ claude 'Think'\nResume this session with:\nclaude --resume 1".to_string();
        assert_eq!(
            transcript_of(Some(tui.clone()), Some(left.clone())).unwrap(),
            format!("{left}\n> Think\n  thinking...")
        );
        let erased = "$ claude 'Think'\n> Think\n".to_string();
        assert_eq!(
            transcript_of(Some(erased), Some(left.clone())).unwrap(),
            format!("{left}\n> Think")
        );
        let shown = "$ cargo test\nrunning 1 test\n".to_string();
        let more = format!("{shown}ok\n");
        assert_eq!(
            transcript_of(Some(shown.clone()), Some(more)).unwrap(),
            "$ cargo test\nrunning 1 test\nok"
        );
        assert_eq!(
            transcript_of(Some(shown.clone()), Some(shown.clone())).unwrap(),
            shown.trim_end()
        );
        assert_eq!(transcript_of(None, Some("x\n".into())).unwrap(), "x\n");
        assert_eq!(transcript_of(None, None), None);
    }

    /// Built alone: abandoning a claim's session withdraws that claim's token, never a later
    /// claim's; failing a task that does not run changes nothing.
    #[tokio::test]
    async fn an_abandoned_claim_loses_its_token_and_a_task_not_running_is_not_failed() {
        let setting = Setting::new("");
        let (ledger, tokens) = (setting.ledger(), TaskTokens::default());
        let ending = setting.ending(&ledger, &tokens);
        let scope = |claim| TaskScope {
            task_id: "t1".into(),
            claim,
            project: setting.project(),
            dir: setting.project(),
        };
        tokens.issue(scope(2));
        ending.abandon("task-t1").await;
        assert_eq!(
            tokens.claim_of("t1"),
            Some(2),
            "a later claim keeps its token"
        );
        ending.abandon("task-t1-2").await;
        assert_eq!(tokens.claim_of("t1"), None);

        let task = setting.queued_task("tidy the imports");
        ending.fail(&task, "no reason".into(), None).await;
        assert_eq!(
            ledger.task(&task.id).await.unwrap().state,
            TaskState::Queued
        );
    }
}
