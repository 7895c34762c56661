//! Tasks for agents: a persistent queue of work that drydock runs coding agents on, a few at
//! a time, each in a tmux session of its own, with the agent's own signal of how it ended.
//!
//! The work is done by parts that own their state and take the parts below them;
//! ARCHITECTURE.md's table "The task system's parts" orders them, and imports follow it:
//!
//! - the records: [`state`] (a task's states and the only legal transitions), [`isolation`]
//!   (where a task works, its result to review), [`landing`] (what the landing queue keeps),
//!   [`spending`] (what each attempt spent), `sessions`, [`tokens`] (the MCP tokens of tasks'
//!   agents, limited to their own task and directory), `files`;
//! - git: [`remote_url`], [`merge`], `submodules`, [`worktree`], [`clones`];
//! - the queue: [`store`] (an SQLite file in drydock's data directory, or PostgreSQL shared
//!   by a team's hosts, with migrations, behind one async call with a deadline), `error`,
//!   `ledger` (the queue as every part reads and writes it), [`requests`], `traces`,
//!   `briefing` (what a task's agent is told);
//! - the parts: `sandboxing` (the sandbox a task's agent runs in, and its two ways out),
//!   `budgets`, `checks`, [`forecast`] (the conflicts running tasks are heading for), `team`
//!   (this drydock as one host of a queue), `placement` (where a task's agent works),
//!   `lander` (the landing queue), `review` (a finished task's result, merged or discarded),
//!   `ending` (a run's end), `launcher` (claims and starts), `adoption` (what an earlier
//!   drydock left running), `monitor` (the event feed, deadlines and the parts' loops);
//! - the front: [`Tasks`], the task queue as the tools see it (add, list, show, start,
//!   cancel, retry, complete, merge, discard, configure, clear), and [`reports`], what they
//!   answer.

mod adoption;
mod briefing;
mod budgets;
mod checks;
pub mod clones;
mod ending;
mod error;
mod files;
pub mod forecast;
#[doc(hidden)]
pub mod fuzzing;
pub mod isolation;
mod lander;
pub mod landing;
mod launcher;
mod ledger;
pub mod merge;
mod monitor;
#[cfg(test)]
mod parts_for_tests;
mod placement;
pub mod remote_url;
pub mod reports;
pub mod requests;
mod review;
mod sandboxing;
mod sessions;
pub mod spending;
pub mod state;
pub mod store;
mod submodules;
mod team;
pub mod tokens;
mod traces;
pub mod worktree;

pub use error::TaskError;
pub use sandboxing::Door;
pub use sessions::session_of;
pub use state::{IllegalTransition, Outcome, TaskState, Transition};
pub use store::{
    Added, HostStatus, NewTask, QueueMode, QueueSettings, Record, StoreError, StoreLocation, Task,
    TaskStore, local_queue,
};
pub use tokens::{OutsideScope, TaskScope, TaskTokens};

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::Notify;

use self::clones::Clones;
use self::reports::{AddReport, ListReport, QueueReport, QueueStatus, TaskLine, TaskReport};
use self::requests::{
    AddRequest, BudgetRequest, CompleteRequest, ConfigureRequest, DailyBudgetRequest, ListRequest,
    MergeRequest, NewTaskRequest, RetryRequest, TaskRequest,
};
use self::spending::{Budget, DailyBudgets};
use self::worktree::Worktrees;
use crate::agents::{AgentError, Agents};
use crate::config::Config;
use crate::events::{EventKind, Events};
use crate::git::Git;
use crate::terminal::Terminals;
use crate::toolchain::Toolchains;
use crate::workspace::{PathArgument, Workspace};

const LONGEST_TITLE: usize = 200;
/// The longest key a task may have, in characters.
const LONGEST_KEY: usize = 128;

/// The task queue of this drydock: the tools' front, wiring the parts that do the work.
pub struct Tasks {
    config: Arc<Config>,
    workspace: Workspace,
    terminals: Arc<Terminals>,
    events: Arc<Events>,
    tokens: TaskTokens,
    agents: Arc<Agents>,
    /// The queue, this host's standing in it, and its changes' feed.
    ledger: Arc<ledger::Ledger>,
    /// Where its tasks work.
    placement: Arc<placement::Placement>,
    /// Its agents' sandboxes.
    sandboxes: Arc<sandboxing::Sandboxes>,
    /// What its agents spent, against their budgets.
    budgets: Arc<budgets::Budgets>,
    /// The running tasks' likely conflicts.
    forecaster: Arc<forecast::Forecaster>,
    /// Finished tasks' results.
    reviewer: Arc<review::Reviewer>,
    /// Results on their way to their branches.
    lander: Arc<lander::Lander>,
    /// This drydock as a host of its queue.
    team: Arc<team::TeamHost>,
    /// Ends tasks' runs.
    ending: Arc<ending::Ending>,
    /// Starts tasks.
    launcher: Arc<launcher::Launcher>,
    /// Watches the running tasks.
    monitor: Arc<monitor::Monitor>,
}

impl Tasks {
    pub fn new(
        config: Arc<Config>,
        agents: Arc<Agents>,
        terminals: Arc<Terminals>,
        events: Arc<Events>,
        toolchains: Toolchains,
    ) -> Arc<Tasks> {
        let tokens = TaskTokens::default();
        let workspace = Workspace::new(config.allowed_roots.clone());
        let ledger = Arc::new(ledger::Ledger::new(
            StoreLocation::configured(&config),
            &config.tasks,
            events.clone(),
        ));
        let worktrees = Arc::new(
            Worktrees::new(config.task_dirs()).with_remotes(config.tasks.repositories.clone()),
        );
        let clones = Arc::new(Clones::new(
            config.task_dirs().clones(),
            config.tasks.repositories.clone(),
        ));
        let placement = Arc::new(placement::Placement::new(
            ledger.clone(),
            config.clone(),
            agents.clone(),
            worktrees.clone(),
            clones.clone(),
        ));
        let sandboxes = Arc::new(sandboxing::Sandboxes::new(config.clone(), agents.clone()));
        let budgets = Arc::new(budgets::Budgets::new(
            ledger.clone(),
            config.clone(),
            agents.clone(),
        ));
        let forecaster = Arc::new(forecast::Forecaster::new(ledger.clone(), config.clone()));
        let checker = Arc::new(checks::Checker::new(
            ledger.clone(),
            config.clone(),
            toolchains,
        ));
        let lander = Arc::new(lander::Lander::new(
            ledger.clone(),
            config.clone(),
            agents.clone(),
            worktrees.clone(),
            checker.clone(),
        ));
        let reviewer = Arc::new(review::Reviewer::new(
            ledger.clone(),
            config.clone(),
            worktrees,
            clones,
            checker,
            lander.clone(),
        ));
        let team = Arc::new(team::TeamHost::new(
            ledger.clone(),
            config.clone(),
            agents.clone(),
            events.clone(),
        ));
        let ending = Arc::new(ending::Ending {
            ledger: ledger.clone(),
            config: config.clone(),
            agents: agents.clone(),
            terminals: terminals.clone(),
            tokens: tokens.clone(),
            sandboxes: sandboxes.clone(),
            budgets: budgets.clone(),
            reviewer: reviewer.clone(),
        });
        let launcher = Arc::new(launcher::Launcher {
            ledger: ledger.clone(),
            config: config.clone(),
            agents: agents.clone(),
            tokens: tokens.clone(),
            workspace: workspace.clone(),
            placement: placement.clone(),
            sandboxes: sandboxes.clone(),
            budgets: budgets.clone(),
            forecaster: forecaster.clone(),
            ending: ending.clone(),
            starting: tokio::sync::Mutex::new(()),
            started: Notify::new(),
        });
        let adoption = Arc::new(adoption::Adoption {
            ledger: ledger.clone(),
            config: config.clone(),
            agents: agents.clone(),
            terminals: terminals.clone(),
            tokens: tokens.clone(),
            sandboxes: sandboxes.clone(),
            ending: ending.clone(),
            launcher: launcher.clone(),
            taken_up: Default::default(),
        });
        let monitor = Arc::new(monitor::Monitor {
            ledger: ledger.clone(),
            config: config.clone(),
            agents: agents.clone(),
            terminals: terminals.clone(),
            events: events.clone(),
            tokens: tokens.clone(),
            budgets: budgets.clone(),
            forecaster: forecaster.clone(),
            team: team.clone(),
            lander: lander.clone(),
            reviewer: reviewer.clone(),
            ending: ending.clone(),
            launcher: launcher.clone(),
            adoption,
        });
        Arc::new(Tasks {
            config,
            workspace,
            terminals,
            events,
            tokens,
            agents,
            ledger,
            placement,
            sandboxes,
            budgets,
            forecaster,
            reviewer,
            lander,
            team,
            ending,
            launcher,
            monitor,
        })
    }

    /// Watches running tasks until this drydock stops (see [`monitor::Monitor::monitor`]).
    pub fn monitor(
        self: Arc<Self>,
        stop: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'static, ()> {
        async move {
            self.monitor.clone().monitor(stop).await;
        }
        .boxed()
    }

    /// Where a person who may see this host's dashboard opens host `name`'s.
    pub fn viewer_link<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<String, TaskError>> {
        async move { self.team.viewer_link(name).await }.boxed()
    }

    /// Whether `code` is a one-time code another host of the queue issued for this one.
    pub fn admits_viewer<'a>(&'a self, code: &'a str) -> BoxFuture<'a, bool> {
        async move { self.team.admits_viewer(code).await }.boxed()
    }

    /// Merges finished task `req.task_id`'s branch into the project's branch.
    pub fn merge(&self, req: MergeRequest) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let task_id = self.reviewer.merge(req).await?;
            self.show(TaskRequest { task_id }).await
        }
        .boxed()
    }

    /// Removes finished task `req.task_id`'s worktree and branch.
    pub fn discard(&self, req: TaskRequest) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let task_id = self.reviewer.discard(req).await?;
            self.show(TaskRequest { task_id }).await
        }
        .boxed()
    }

    /// The tokens the HTTP guard honours for tasks' agents.
    pub fn tokens(&self) -> &TaskTokens {
        &self.tokens
    }

    /// From now on tasks' sandboxes reach drydock through `door` (the HTTP server's).
    pub fn open_sandbox_door(&self, door: Door) {
        self.sandboxes.open_door(door);
    }

    /// Where the queue lives, as configured.
    pub fn location(&self) -> StoreLocation {
        StoreLocation::configured(&self.config)
    }

    pub fn add(self: &Arc<Self>, req: AddRequest) -> BoxFuture<'_, Result<AddReport, TaskError>> {
        async move {
            if req.tasks.is_empty() {
                return Err(TaskError::InvalidArgument(
                    "tasks: give at least one task".into(),
                ));
            }
            let mut checked = Vec::new();
            for (index, task) in req.tasks.iter().enumerate() {
                let new = self.check_new(task).await.map_err(|e| match e {
                    TaskError::InvalidArgument(m) if req.tasks.len() > 1 => {
                        TaskError::InvalidArgument(format!("tasks[{index}]: {m}"))
                    }
                    other => other,
                })?;
                checked.push(new);
            }
            let store = self.ledger.store().await?;
            let keyed = checked.iter().all(|new| new.key.is_some());
            let added = store
                .call(|q| q.add_all(checked))
                .await
                .map_err(|error| retry_advice(error, keyed))?;
            let mut known = Vec::new();
            for added in &added {
                match added {
                    Added::Queued(task) => self.ledger.publish(task, None),
                    Added::Known(task) => known.push(task.id.clone()),
                }
            }
            self.launcher.fill().await;
            let ids: Vec<String> = added.iter().map(|added| added.task().id.clone()).collect();
            let lines = store
                .call(move |q| {
                    ids.iter()
                        .map(|id| Ok(TaskLine::from(&q.get(id)?)))
                        .collect()
                })
                .await?;
            Ok(AddReport {
                added: lines,
                known,
                queue: self.status().await?,
            })
        }
        .boxed()
    }

    async fn check_new(&self, req: &NewTaskRequest) -> Result<NewTask, TaskError> {
        let invalid = |m: String| TaskError::InvalidArgument(m);
        let title = req.title.trim();
        if title.is_empty() {
            return Err(invalid("title: a task needs a title".into()));
        }
        if title.chars().count() > LONGEST_TITLE {
            return Err(invalid(format!(
                "title: at most {LONGEST_TITLE} characters; put the details in description"
            )));
        }
        if let Some(key) = &req.key {
            check_key(key).map_err(|why| invalid(format!("key: {why}")))?;
        }
        let (project, repository) = self.placement.project_of(req).await?;
        let agent = req
            .agent
            .clone()
            .unwrap_or_else(|| self.config.tasks.default_agent.clone());
        self.agents
            .launchable_profile(&agent)
            .map_err(|e| match e {
                AgentError::InvalidArgument(why) => invalid(format!("agent: {why}")),
                other => TaskError::Agent(other),
            })?;
        if let Some(policy) = &req.auto_approve
            && !self.config.tasks.policies.contains_key(policy)
        {
            let known: Vec<&str> = self
                .config
                .tasks
                .policies
                .keys()
                .map(String::as_str)
                .collect();
            return Err(invalid(format!(
                "auto_approve: no policy {policy:?} in drydock's config ([tasks.policies]); known: {}",
                match known.is_empty() {
                    true => "none".to_string(),
                    false => known.join(", "),
                }
            )));
        }
        self.sandboxes
            .refuse_unsandboxed_commands(req.auto_approve.as_deref())
            .await
            .map_err(|why| invalid(format!("auto_approve: {why}")))?;
        let in_place = req.in_place.unwrap_or(false);
        if let Some(base) = &req.base {
            if in_place {
                return Err(invalid(
                    "base: a task in place works on the project as it is; give base or in_place, not both".into(),
                ));
            }
            // A remote alone is not looked at here: the host that clones it finds the base.
            if let Some(project) = &project
                && Git::at(project).commit_of(base).await.is_none()
            {
                return Err(invalid(format!(
                    "base: {base:?} names no commit of the project's repository"
                )));
            }
        }
        let description = req
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .unwrap_or(title);
        Ok(NewTask {
            title: title.to_string(),
            description: description.to_string(),
            // A remote alone stands for its project until a host's claim puts it in its clone.
            project_path: match &project {
                Some(project) => project.display().to_string(),
                None => repository.clone().expect("a project or a remote"),
            },
            place: project.as_ref().and_then(|p| self.workspace.place_of(p)),
            repository,
            agent_kind: agent,
            priority: req.priority.map_or(0, |p| p.get()),
            timeout_s: req.timeout_s.map(|s| s.get()),
            policy: req.auto_approve.clone(),
            base: req.base.clone(),
            in_place,
            touches: forecast::checked_touches(req.touches.as_deref().unwrap_or_default())
                .map_err(|why| invalid(format!("touches: {why}")))?,
            key: req.key.clone(),
            budget: self.budget_for(req.budget.as_ref()).map_err(invalid)?,
        })
    }

    /// The budget of a task that asks for `asked`: its bounds, the configured ones where it
    /// names none, each no more than `[tasks] budget_max` allows (or, without one, `[tasks]
    /// budget`).
    fn budget_for(&self, asked: Option<&BudgetRequest>) -> Result<Option<Budget>, String> {
        let tasks = &self.config.tasks;
        let Some(asked) = asked else {
            return Ok(tasks.budget);
        };
        let most = tasks.budget_max.or(tasks.budget);
        let budget = Budget::checked(asked.tokens, asked.usd, "budget")
            .map_err(|e| e.to_string())?
            .filled_from(tasks.budget)
            .filled_from(most);
        match most {
            Some(most) if !budget.within(&most) => Err(format!(
                "budget: {} is more than a task may ask for here ({}: [tasks] budget_max)",
                budget.line(),
                most.line()
            )),
            _ => Ok(Some(budget)),
        }
    }

    pub fn list(&self, req: ListRequest) -> BoxFuture<'_, Result<ListReport, TaskError>> {
        async move {
            let project = match &req.project_path {
                Some(path) => Some(
                    self.workspace
                        .resolve_dir(PathArgument::ProjectPath, path)
                        .map_err(|e| TaskError::InvalidArgument(e.to_string()))?
                        .display()
                        .to_string(),
                ),
                None => None,
            };
            let all = self.ledger.store().await?.call(|q| q.list(None)).await?;
            let tasks = all
                .iter()
                .filter(|t| req.state.is_none_or(|state| t.state == state))
                .filter(|t| project.as_ref().is_none_or(|p| *p == t.project_path))
                .map(|task| TaskLine {
                    overlaps_with: overlapping(task, &all),
                    collisions: self
                        .forecaster
                        .of(&task.id)
                        .iter()
                        .map(forecast::Collision::line)
                        .collect(),
                    ..TaskLine::from(task)
                })
                .collect();
            Ok(ListReport {
                tasks,
                queue: self.status().await?,
            })
        }
        .boxed()
    }

    /// One task in full, with what its open result would meet if merged now.
    pub fn show(&self, req: TaskRequest) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let task = self.ledger.task(&req.task_id).await?;
            let (target, overlaps) = self.reviewer.conflicts(&task).await;
            let mut report = self.report(task);
            report.target = target;
            report.overlaps = overlaps;
            report.forecast = self.forecaster.of(&report.task.id);
            Ok(report)
        }
        .boxed()
    }

    /// Starts queued task `req.task_id` now, in either mode, if the cap allows.
    pub fn start(&self, req: TaskRequest) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let task = self.launcher.start(&req.task_id).await?;
            Ok(self.report(self.ledger.task(&task.id).await?))
        }
        .boxed()
    }

    /// Cancels a queued task, or a running one: its agent is interrupted, then killed.
    pub fn cancel(
        self: &Arc<Self>,
        req: TaskRequest,
    ) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let before = self.ledger.task(&req.task_id).await?;
            let record = Record {
                failure: Some("cancelled".into()),
                ..Record::default()
            };
            let id = req.task_id.clone();
            let task = self
                .ledger
                .store()
                .await?
                .call(move |q| q.transition(&id, Transition::Cancel, record, None))
                .await?;
            self.ledger.publish(&task, Some(before.state));
            // A task running on another host is stopped there, when that host hears of it.
            if before.state == TaskState::Running && self.ledger.is_mine(&before) {
                self.ending.stop_agent(&task).await;
                self.launcher.fill().await;
            }
            Ok(self.report(self.ledger.task(&task.id).await?))
        }
        .boxed()
    }

    /// Queues a failed or cancelled task again; a done one whose result waits for a person
    /// goes back to its agent for one more attempt.
    pub fn retry(
        self: &Arc<Self>,
        req: RetryRequest,
    ) -> BoxFuture<'_, Result<TaskReport, TaskError>> {
        async move {
            let store = self.ledger.store().await?;
            let before = self.ledger.task(&req.task_id).await?;
            if let Some(asked) = &req.budget {
                let budget = self
                    .budget_for(Some(asked))
                    .map_err(TaskError::InvalidArgument)?;
                let mut usage = before.usage.clone().unwrap_or_default();
                usage.budget = budget;
                if let Some(why) = usage.exhausted() {
                    return Err(TaskError::InvalidArgument(format!(
                        "budget: not enough to go on; {why}"
                    )));
                }
                if !before.state.is_finished() {
                    return Err(TaskError::InvalidArgument(format!(
                        "task {} is {}: its budget changes with a retry once it ended",
                        before.id,
                        before.state.name()
                    )));
                }
                let id = before.id.clone();
                store.call(move |q| q.set_usage(&id, &usage)).await?;
            } else if let Some(why) = before.usage.as_ref().and_then(|u| u.exhausted()) {
                return Err(TaskError::InvalidArgument(format!(
                    "task {} may spend no more: {why}",
                    before.id
                )));
            }
            if before.state == TaskState::Done {
                let requeued = self.lander.once_more(before).await?;
                self.launcher.fill().await;
                return self
                    .show(TaskRequest {
                        task_id: requeued.id,
                    })
                    .await;
            }
            let id = req.task_id.clone();
            let task = store
                .call(move |q| q.transition(&id, Transition::Retry, Record::default(), None))
                .await?;
            self.ledger.publish(&task, Some(before.state));
            self.launcher.fill().await;
            Ok(self.report(self.ledger.task(&task.id).await?))
        }
        .boxed()
    }

    /// The agent's own word on how its task ended. A task's token may only complete its own
    /// task.
    pub fn complete<'a>(
        self: &'a Arc<Self>,
        req: CompleteRequest,
        scope: Option<&'a TaskScope>,
    ) -> BoxFuture<'a, Result<TaskReport, TaskError>> {
        async move {
            if let Some(scope) = scope
                && scope.task_id != req.task_id
            {
                return Err(TaskError::NotAllowed(format!(
                    "this agent works on task {}, not {}: it may only complete its own",
                    scope.task_id, req.task_id
                )));
            }
            if req.summary.trim().is_empty() {
                return Err(TaskError::InvalidArgument(
                    "summary: say in a few words what was done, or why not".into(),
                ));
            }
            let id = &req.task_id;
            let lease = {
                let id = id.clone();
                self.ledger
                    .lease_here(&self.ledger.persistently(move |q| q.get(&id)).await?)?
            };
            let record = Record {
                summary: Some(req.summary.trim().to_string()),
                ..Record::default()
            };
            let complete = Transition::Complete(req.outcome);
            let completed = self
                .ledger
                .change(id, complete, record.clone(), lease)
                .await;
            let task = match completed {
                Ok(task) => task,
                // An attempt that got no answer may have been made all the same: then the
                // attempt after it found the task already ended, as this word said.
                Err(TaskError::Store(StoreError::Illegal { .. })) => {
                    let task = self.ledger.task(id).await?;
                    let said = TaskState::Running.after(complete).ok();
                    if Some(task.state) != said || task.summary != record.summary {
                        return Err(completed.unwrap_err());
                    }
                    task
                }
                Err(error) => return Err(error),
            };

            self.ledger.publish(&task, Some(TaskState::Running));
            self.launcher.fill().await;
            self.ending.after_run(&task, self.config.tasks.grace);
            Ok(self.report(task))
        }
        .boxed()
    }

    pub fn configure(
        self: &Arc<Self>,
        req: ConfigureRequest,
    ) -> BoxFuture<'_, Result<QueueReport, TaskError>> {
        async move {
            let store = self.ledger.store().await?;
            if let Some(daily) = &req.daily_budget {
                let mut budgets = store.call(|q| q.daily_budgets()).await?;
                self.set_daily_budget(&mut budgets, daily)
                    .map_err(TaskError::InvalidArgument)?;
                store.call(move |q| q.set_daily_budgets(&budgets)).await?;
            }
            let settings = store
                .call(move |q| {
                    let before = q.settings()?;
                    let settings = QueueSettings {
                        mode: req.mode.unwrap_or(before.mode),
                        max_concurrent: req
                            .max_concurrent
                            .map_or(before.max_concurrent, |n| n.get() as u32),
                    };
                    q.set_settings(settings)?;
                    Ok(settings)
                })
                .await?;
            self.events.publish(EventKind::QueueConfigured {
                mode: settings.mode.name(),
                max_concurrent: settings.max_concurrent,
            });
            let started = self.launcher.fill().await;
            Ok(QueueReport {
                queue: self.status().await?,
                started,
                cancelled: Vec::new(),
            })
        }
        .boxed()
    }

    /// `budgets` with `daily`'s change: the queue's daily budget, or a project's.
    fn set_daily_budget(
        &self,
        budgets: &mut DailyBudgets,
        daily: &DailyBudgetRequest,
    ) -> Result<(), String> {
        let budget = match daily.off {
            Some(true) if daily.tokens.is_some() || daily.usd.is_some() => {
                return Err("daily_budget: off removes it; give tokens or usd, or off".into());
            }
            Some(true) => None,
            _ => Some(
                Budget::checked(daily.tokens, daily.usd, "daily_budget")
                    .map_err(|e| e.to_string())?,
            ),
        };
        let Some(path) = &daily.project_path else {
            budgets.team = budget;
            return Ok(());
        };
        let dir = self
            .workspace
            .resolve_dir(PathArgument::ProjectPath, path)
            .map_err(|e| format!("daily_budget.project_path: {e}"))?;
        let key = match self.workspace.place_of(&dir) {
            Some(place) => spending::place_key(&place),
            None => dir.display().to_string(),
        };
        match budget {
            Some(budget) => budgets.projects.insert(key, budget),
            None => budgets.projects.remove(&key),
        };
        Ok(())
    }

    /// Cancels every queued task; running ones go on.
    pub fn clear(&self) -> BoxFuture<'_, Result<QueueReport, TaskError>> {
        async move {
            let cancelled = self.ledger.store().await?.call(|q| q.clear_queue()).await?;
            for task in &cancelled {
                self.ledger.publish(task, Some(TaskState::Queued));
            }
            Ok(QueueReport {
                queue: self.status().await?,
                started: Vec::new(),
                cancelled: cancelled.into_iter().map(|t| t.id).collect(),
            })
        }
        .boxed()
    }

    /// The queue's settings, counts and hosts, read in one call on the store's thread (one
    /// wait and one deadline, not four).
    pub(super) async fn status(&self) -> Result<QueueStatus, TaskError> {
        let status = self.ledger.store().await?.call(|queue| {
            let mut status = QueueStatus::new(
                queue.settings()?,
                queue.count(TaskState::Running)?,
                queue.count(TaskState::Queued)?,
                queue.hosts()?,
            );
            status.daily_budgets = queue.daily_budgets()?;
            Ok(status)
        });
        let mut status = status.await?;
        status.held = self.budgets.daily_holds().await.lines();
        Ok(status)
    }

    fn report(&self, task: Task) -> TaskReport {
        let attach = (task.state == TaskState::Running)
            .then(|| self.terminals.attach_command(task.session.as_deref()?))
            .flatten();
        TaskReport::new(task, attach)
    }
}

/// A task's key as its author may write it.
fn check_key(key: &str) -> Result<(), String> {
    let length = key.chars().count();
    if !(1..=LONGEST_KEY).contains(&length) {
        return Err(format!("1 to {LONGEST_KEY} characters, not {length}"));
    }
    if key.chars().any(char::is_control) {
        return Err("no control characters".into());
    }
    Ok(())
}

/// `error` of a task_add, with what to do about a queue that did not answer: a retry of
/// keyed tasks is safe, one of tasks without keys may queue them twice.
fn retry_advice(error: StoreError, keyed: bool) -> TaskError {
    if !matches!(error, StoreError::NotAnswering { .. }) {
        return TaskError::Store(error);
    }
    let advice = match keyed {
        true => "call task_add again with the same keys: what was queued is not queued twice",
        false => {
            "task_list shows whether they were queued; give each task a key, and a retry never queues one twice"
        }
    };
    TaskError::NotAnswering(format!("{error}; {advice}"))
}

/// The other tasks whose open result changed a file `task`'s open result changed.
fn overlapping(task: &Task, all: &[Task]) -> Vec<String> {
    let Some((worktree, review)) = task.open_result() else {
        return Vec::new();
    };
    all.iter()
        .filter(|other| other.id != task.id)
        .filter(|other| {
            other.open_result().is_some_and(|(theirs, their_review)| {
                theirs.repo == worktree.repo && !review.shared_files(their_review).is_empty()
            })
        })
        .map(|other| other.id.clone())
        .collect()
}
