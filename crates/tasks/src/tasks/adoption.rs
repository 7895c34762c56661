//! Taking up what an earlier drydock of this host left running: the agents that still run
//! are watched again (and reminded of `task_complete` when at rest), the others failed, or
//! handed back to the team on a shared queue.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::briefing::prompt;
use super::ending::Ending;
use super::error::TaskError;
use super::files;
use super::isolation::Isolation;
use super::launcher::Launcher;
use super::ledger::Ledger;
use super::sandboxing::Sandboxes;
use super::sessions::session_of;
use super::state::{TaskState, Transition};
use super::store::{Record, Task};
use super::tokens::TaskTokens;
use crate::agents::Agents;
use crate::agents::requests::SendRequest;
use crate::call::Call;
use crate::config::Config;
use crate::terminal::Terminals;

/// How often taking up what an earlier drydock left running is tried while the queue
/// cannot be read.
const ADOPT_RETRY: Duration = Duration::from_secs(1);

/// Takes up the tasks an earlier drydock left running.
pub(super) struct Adoption {
    pub(super) ledger: Arc<Ledger>,
    pub(super) config: Arc<Config>,
    pub(super) agents: Arc<Agents>,
    pub(super) terminals: Arc<Terminals>,
    pub(super) tokens: TaskTokens,
    pub(super) sandboxes: Arc<Sandboxes>,
    pub(super) ending: Arc<Ending>,
    pub(super) launcher: Arc<Launcher>,
    /// The sessions of adopted agents that have not come to rest under this drydock yet
    /// (see [`Adoption::remind`]).
    pub(super) taken_up: std::sync::Mutex<HashSet<String>>,
}

impl Adoption {
    /// [`Self::adopt`] as soon as the queue can be read (a restart while its database is
    /// away must not leave the earlier drydock's tasks to nobody), until `stop`.
    pub(super) async fn adopt_once_readable(
        self: &Arc<Self>,
        stop: &tokio_util::sync::CancellationToken,
    ) {
        loop {
            match self.adopt().await {
                Ok(()) => break,
                Err(error) => tracing::debug!("taking up the tasks left running: {error}"),
            }
            tokio::select! {
                () = tokio::time::sleep(ADOPT_RETRY) => {}
                () = stop.cancelled() => return,
            }
        }
        self.ledger.host().set_adopted();
    }

    /// Takes up the tasks an earlier drydock of this host left running: those whose agent
    /// still runs in its session are watched again (and reminded of `task_complete` when at
    /// rest, see [`Self::remind`]). The others are failed on a machine's own queue; on a
    /// shared one they go back to the team as a lost host's do ([`Self::hand_back`]), for
    /// this host or another to do.
    async fn adopt(self: &Arc<Self>) -> Result<(), TaskError> {
        let running = self.ledger.store().await?;
        let running = running.call(|q| q.list(Some(TaskState::Running))).await?;
        for task in running.into_iter().filter(|t| self.ledger.is_mine(t)) {
            let session = task
                .session
                .clone()
                .unwrap_or_else(|| session_of(&task.id, task.epoch));
            let agent = self
                .agents
                .one(&session)
                .await
                .ok()
                .filter(|agent| agent.state != "exited");
            let token_file = files::task_dir(&self.config, &task.id).join("token");
            // door: the task's token, in drydock's own task folder.
            let token = std::fs::read_to_string(token_file);
            let why = match (agent, token) {
                (Some(agent), Ok(token)) => {
                    let scope = self.launcher.scope_of(&task, Path::new(task.work_dir()));
                    self.tokens.restore(token.trim(), scope);
                    if let Err(error) = self.sandboxes.reopen_sandbox(&task, &session, token.trim())
                    {
                        tracing::warn!("task {}: {error}", task.id);
                    }
                    self.agents
                        .adopt_run(&session, self.launcher.allowed_tools(&task));
                    tracing::info!("task {} runs on in {session}", task.id);
                    self.taken_up_lock().insert(session.clone());
                    if agent.state == "idle" && self.came_to_rest(&session) {
                        self.remind(&task.id, &session).await;
                    }
                    continue;
                }
                (Some(_), Err(_)) => {
                    "its agent runs, but without the token it was started with (this drydock's data directory is not the one it was started from)"
                }
                (None, _) if self.terminals.names().contains(&session) => {
                    "its agent ended while drydock was down"
                }
                (None, _) => "session lost while drydock was down",
            };
            match self.ledger.host().shared {
                true => self.hand_back(&task, &session, why).await,
                false => self.ending.fail(&task, why.to_string(), None).await,
            }
        }
        Ok(())
    }

    fn taken_up_lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.taken_up.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the adopted agent in `session` comes to rest for the first time under this
    /// drydock.
    pub(super) fn came_to_rest(&self, session: &str) -> bool {
        self.taken_up_lock().remove(session)
    }

    /// Asks the adopted agent in `session`, at rest while its task still runs, to say how
    /// the task ended: a `task_complete` it called while no drydock answered at this
    /// address was lost. Its task's prompt again, after a word on why.
    pub(super) async fn remind(self: &Arc<Self>, id: &str, session: &str) {
        let Ok(task) = self.ledger.task(id).await else {
            return;
        };
        if task.state != TaskState::Running
            || !self.ledger.is_mine(&task)
            || task.session.as_deref() != Some(session)
        {
            return;
        }
        let isolation = task.isolation.clone().unwrap_or(Isolation::InPlace {
            why: String::new(),
            confinement: None,
        });
        let drydock = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "drydock".into());
        let text = format!(
            "drydock was restarted while you worked on this task; if you called task_complete while it was down, the call was lost: call it again. {}",
            prompt(&task, &isolation, &drydock)
        );
        let send = SendRequest {
            agent: session.to_string(),
            text,
        };
        let stop = self.ledger.running_until().cloned().unwrap_or_default();
        match self.agents.send(send, &Call::silent(stop)).await {
            Ok(_) => tracing::info!("task {id}: its adopted agent was reminded of task_complete"),
            Err(error) => tracing::warn!("task {id}: reminding its adopted agent: {error}"),
        }
    }

    /// Gives running `task`, which this drydock cannot carry on, back to the team as the
    /// claim of a host whose lease ran out is (see `team`): its agent stopped if it runs, the
    /// task lost, and queued again unless `[tasks.host] requeue_lost = false`.
    async fn hand_back(self: &Arc<Self>, task: &Task, session: &str, why: &str) {
        let Ok(lease) = self.ledger.lease_here(task) else {
            return;
        };
        if self.terminals.names().iter().any(|s| s == session) {
            self.ending.abandon(session).await;
        }
        let record = Record {
            failure: Some(format!(
                "lost: its host {} was restarted and could not take it up ({why})",
                self.ledger.host().name
            )),
            ..Record::default()
        };
        let lost = self
            .ledger
            .change(&task.id, Transition::Lose, record.clone(), lease)
            .await;
        let mut now = match lost {
            Ok(lost) => lost,
            Err(error) => {
                tracing::debug!("task {} not handed back: {error}", task.id);
                return;
            }
        };
        tracing::warn!("task {}: {why}; handed back to the queue", task.id);
        if self.config.tasks.host.requeue_lost {
            match self
                .ledger
                .change(&task.id, Transition::Retry, record, None)
                .await
            {
                Ok(queued) => now = queued,
                Err(error) => tracing::debug!("task {}: queueing it again: {error}", task.id),
            }
        }
        self.ledger.publish(&now, Some(TaskState::Running));
        self.launcher.fill().await;
    }
}

#[cfg(test)]
mod tests {
    use crate::tasks::parts_for_tests::Setting;
    use tokio_util::sync::CancellationToken;

    /// Built alone: with nothing left running, taking up is done at once and lets the host
    /// claim; a session it did not take up never counts as come to rest.
    #[tokio::test]
    async fn an_empty_queue_is_taken_up_at_once() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let adoption = setting.adoption(&setting.launcher(&ledger));
        assert!(!ledger.host().adopted());
        adoption
            .adopt_once_readable(&CancellationToken::new())
            .await;
        assert!(ledger.host().adopted());
        assert!(!adoption.came_to_rest("task-t1"));
    }
}
