//! Starting tasks: the queued ones this host may start claimed under the caps, each in the
//! place it works, its sandbox and its token made, its agent launched in its session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Notify;

use super::briefing::{context, prompt};
use super::budgets::Budgets;
use super::ending::Ending;
use super::error::TaskError;
use super::files;
use super::forecast::Forecaster;
use super::ledger::Ledger;
use super::placement::Placement;
use super::sandboxing::Sandboxes;
use super::sessions::{CLAIM_VARIABLE, session_of};
use super::state::{TaskState, Transition};
use super::store::{QueueMode, StoreError, Task};
use super::tokens::{TaskScope, TaskTokens};
use crate::agents::requests::SpawnBackend;
use crate::agents::{Agents, Launched, Run};
use crate::call::Call;
use crate::config::Config;
use crate::workspace::Workspace;

/// How many startable tasks a host offers one claim.
const CANDIDATES: usize = 8;

/// The MCP tool a task's agent may call without asking.
const COMPLETE_TOOL: &str = "mcp__drydock__task_complete";

/// Starts tasks.
pub(super) struct Launcher {
    pub(super) ledger: Arc<Ledger>,
    pub(super) config: Arc<Config>,
    pub(super) agents: Arc<Agents>,
    pub(super) tokens: TaskTokens,
    pub(super) workspace: Workspace,
    pub(super) placement: Arc<Placement>,
    pub(super) sandboxes: Arc<Sandboxes>,
    pub(super) budgets: Arc<Budgets>,
    pub(super) forecaster: Arc<Forecaster>,
    pub(super) ending: Arc<Ending>,
    /// Held while choosing and starting tasks, so the cap holds.
    pub(super) starting: tokio::sync::Mutex<()>,
    /// Told when a task started: a new deadline to watch.
    pub(super) started: Notify,
}

impl Launcher {
    /// Starts queued task `id` now, in either mode, if the cap allows; returns it running.
    pub(super) async fn start(self: &Arc<Self>, id: &str) -> Result<Task, TaskError> {
        if self.ledger.running_until().is_none() {
            return Err(TaskError::NotAllowed(
                "tasks run in `drydock serve` (their agents reach drydock through its HTTP endpoint); this drydock only keeps the queue".into(),
            ));
        }
        let task = {
            let _choosing = self.starting.lock().await;
            let task = self.ledger.task(id).await?;
            task.state
                .after(Transition::Start)
                .map_err(|source| StoreError::Illegal {
                    id: task.id.clone(),
                    source,
                })?;
            if let Some(other) = self.placement.blocked_in_place(&task).await? {
                return Err(TaskError::NotAllowed(format!(
                    "task {} runs in {} itself already, and so would this one: one task at a time works in a project's own directory; wait for it, or queue this one without in_place on a git project",
                    other.id, task.project_path
                )));
            }
            match self.claim(std::slice::from_ref(&task.id)).await? {
                Some(task) => task,
                None => return Err(self.why_not_started(&task.id).await?),
            }
        };
        self.launch(task.clone()).await;
        Ok(task)
    }

    /// Starts as many queued tasks as the mode and cap allow; returns their ids. (Boxed:
    /// a start that fails fills the slot again.)
    pub(super) fn fill(self: &Arc<Self>) -> BoxFuture<'_, Vec<String>> {
        Box::pin(self.fill_now())
    }

    async fn fill_now(self: &Arc<Self>) -> Vec<String> {
        if self.ledger.running_until().is_none() {
            return Vec::new();
        }
        let mut started = Vec::new();
        let _choosing = self.starting.lock().await;
        let Ok(store) = self.ledger.store().await else {
            return started;
        };
        while store
            .call(|q| q.settings())
            .await
            .is_ok_and(|settings| settings.mode == QueueMode::Auto)
        {
            let candidates = self.startable().await;
            if candidates.is_empty() {
                break;
            }
            match self.claim(&candidates).await {
                Ok(Some(task)) => {
                    started.push(task.id.clone());
                    let this = self.clone();
                    tokio::spawn(async move { this.launch(task).await });
                }
                Ok(None) => break,
                Err(error) => {
                    tracing::warn!("starting a queued task: {error}");
                    break;
                }
            }
        }
        started
    }

    /// The queued tasks this host could start now, in queue order: those whose project is
    /// here and whose agent it has, passing over those that would work in a project's own
    /// directory while another task does.
    async fn startable(&self) -> Vec<String> {
        let Ok(store) = self.ledger.store().await else {
            return Vec::new();
        };
        let Ok(queued) = store.call(|q| q.queued_in_order()).await else {
            return Vec::new();
        };
        let holds = self.budgets.daily_holds().await;
        let mut startable = Vec::new();
        for task in queued {
            if self.placement.can_run(&task)
                && holds.of(&task).is_none()
                && matches!(self.placement.blocked_in_place(&task).await, Ok(None))
                && !self.forecaster.held_by_collision(&task).await
            {
                startable.push(task.id);
            }
            // Enough for a claim to find one another host has not taken meanwhile, without
            // looking at every project of a long queue on every poll.
            if startable.len() == CANDIDATES {
                break;
            }
        }
        startable
    }

    /// Claims the first of `candidates` this host may start under the caps, and marks it
    /// running in its session (the agent is started next, by `launch`).
    pub(super) async fn claim(&self, candidates: &[String]) -> Result<Option<Task>, TaskError> {
        if !self.ledger.host().may_claim() || !self.ledger.host().adopted() {
            return Ok(None);
        }
        let claimer = self.ledger.host().claimer(self.config.tasks.host.cap);
        let store = self.ledger.store().await?;
        let candidates = candidates.to_vec();
        let claimed = store.call(move |q| q.claim(&candidates, &claimer));
        let Some(mut running) = claimed.await? else {
            return Ok(None);
        };
        // Claimed from another host's queue entry: its project is this host's copy.
        if let (Some(here), Some(lease)) = (self.placement.project_here(&running), running.lease())
            && here.display().to_string() != running.project_path
            && self.ledger.is_mine(&running)
        {
            let (id, here) = (running.id.clone(), here.display().to_string());
            running = store.call(move |q| q.relocate(&id, &lease, &here)).await?;
        }
        self.ledger.publish(&running, Some(TaskState::Queued));
        self.started.notify_one();
        Ok(Some(running))
    }

    /// Why queued task `id` could not be claimed just now.
    pub(super) async fn why_not_started(&self, id: &str) -> Result<TaskError, TaskError> {
        let task = self.ledger.task(id).await?;
        if let Err(source) = task.state.after(Transition::Start) {
            return Ok(StoreError::Illegal {
                id: id.to_string(),
                source,
            }
            .into());
        }
        if !self.ledger.host().adopted() {
            return Ok(TaskError::NotAllowed(
                "this drydock is still taking up the tasks it ran before it was restarted (it waits for the task queue to answer)".into(),
            ));
        }
        if !self.ledger.host().may_claim() {
            return Ok(TaskError::NotAllowed(format!(
                "this host ({}) has no current lease on the shared queue (its database is unreachable, or another drydock took its name); another host can start it",
                self.ledger.host().name
            )));
        }
        let counted = self.ledger.store().await?.call(|q| {
            let running = q.count(TaskState::Running)?;
            Ok((running, q.settings()?.max_concurrent))
        });
        let (running, cap) = counted.await?;
        Ok(TaskError::NotAllowed(match running >= cap {
            true => format!(
                "{running} task(s) run already, the queue's cap; raise it with queue_configure (max_concurrent) or wait for one to end"
            ),
            false => format!(
                "this host runs {} task(s) already, its own cap ([tasks] host_cap); wait for one to end, or let another host start it",
                self.ledger.running_tasks().await.len()
            ),
        }))
    }

    /// Starts the agent of running `task`; a task whose agent cannot start fails.
    pub(super) async fn launch(self: &Arc<Self>, task: Task) {
        let failure = match self.start_agent(&task).await {
            Ok(true) => return,
            Ok(false) => "its agent did not show up in its terminal within 30 s".to_string(),
            Err(error) => format!("its agent could not start: {error}"),
        };
        tracing::warn!("task {}: {failure}", task.id);
        self.ending.fail(&task, failure, None).await;
        self.fill().await;
    }

    async fn start_agent(&self, task: &Task) -> Result<bool, TaskError> {
        // Queued while its root was allowed; the server may have been started with others.
        if self.placement.project_here(task).is_none() {
            return Err(TaskError::NotAllowed(format!(
                "its project {} is not inside this drydock's allowed roots ({}) any more; nothing was started there",
                task.project_path,
                self.workspace
                    .roots()
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let stop = self.ledger.running_until().cloned().unwrap_or_default();
        self.placement.update_clone(task).await?;
        let isolation = self.placement.isolate(task).await?;
        let work_dir = PathBuf::from(isolation.dir(&task.project_path));
        let dir = files::task_dir(&self.config, &task.id);
        let token = self.tokens.issue(self.scope_of(task, &work_dir));
        let drydock = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "drydock".into());
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| crate::private::write_private(&dir.join("token"), token.as_bytes()))
            .and_then(|()| {
                std::fs::write(dir.join("context.md"), context(task, &isolation, &drydock))
            });
        written.map_err(|e| {
            TaskError::InvalidArgument(format!(
                "cannot write the task's files in {}: {e}",
                dir.display()
            ))
        })?;
        let session = task
            .session
            .clone()
            .unwrap_or_else(|| session_of(&task.id, task.epoch));
        let (sandbox, confinement) = self
            .sandboxes
            .sandbox_for(task, &isolation, &session, &token)
            .await?;
        let mut isolation = isolation;
        isolation.confine(confinement);
        let (id, placed) = (task.id.clone(), isolation.clone());
        self.ledger
            .persistently(move |q| q.set_isolation(&id, &placed))
            .await?;
        let mut env = BTreeMap::new();
        if sandbox.is_none() {
            env.insert(
                "DRYDOCK_DATA_DIR".to_string(),
                self.config.data_dir.display().to_string(),
            );
        }
        env.insert("DRYDOCK_TASK_ID".to_string(), task.id.clone());
        env.insert(CLAIM_VARIABLE.to_string(), task.epoch.to_string());
        if let Some(target) = self.config.task_dirs().cargo_target_for(&work_dir) {
            env.insert("CARGO_TARGET_DIR".into(), target.display().to_string());
        }
        let run = Run {
            kind: task.agent_kind.clone(),
            prompt: prompt(task, &isolation, &drydock),
            cwd: work_dir,
            session: session.clone(),
            backend: SpawnBackend::Tmux,
            env,
            allow: self.allowed_tools(task),
            mcp_token: Some(token),
            replace_shell: true,
            sandbox,
            nice: self.config.tasks.nice,
        };
        let launched = self.agents.launch(run, &Call::silent(stop)).await;
        if !matches!(launched, Ok(Launched { agent: Some(_), .. })) {
            self.sandboxes.close(&session);
        }
        Ok(launched?.agent.is_some())
    }

    /// What `task`'s token may reach: the directory its agent works in.
    pub(super) fn scope_of(&self, task: &Task, work_dir: &Path) -> TaskScope {
        TaskScope {
            task_id: task.id.clone(),
            claim: task.epoch,
            project: PathBuf::from(&task.project_path),
            dir: work_dir.to_path_buf(),
        }
    }

    /// task_complete, and the tools of the task's approval policy.
    pub(super) fn allowed_tools(&self, task: &Task) -> Vec<String> {
        let mut allow = vec![COMPLETE_TOOL.to_string()];
        if let Some(tools) = task
            .policy
            .as_ref()
            .and_then(|p| self.config.tasks.policies.get(p))
        {
            allow.extend(tools.iter().cloned());
        }
        allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;
    use tokio_util::sync::CancellationToken;

    /// Built alone: a drydock that does not run tasks starts none; one that does starts
    /// none before it took up what an earlier drydock of its host left running, and says so.
    #[tokio::test]
    async fn no_start_outside_serve_or_before_adoption_and_each_refusal_says_why() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let launcher = setting.launcher(&ledger);
        let task = setting.queued_task("tidy the imports");
        let refused = launcher.start(&task.id).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("tasks run in `drydock serve`"),
            "{refused}"
        );

        ledger.run_until(CancellationToken::new());
        let refused = launcher.start(&task.id).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("still taking up the tasks it ran before"),
            "{refused}"
        );
        assert!(launcher.fill().await.is_empty());
        assert_eq!(
            ledger.task(&task.id).await.unwrap().state,
            TaskState::Queued
        );
    }
}
