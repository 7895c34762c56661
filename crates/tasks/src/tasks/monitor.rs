//! Running tasks: each on a coding agent started through agent supervision in a tmux session
//! of its own (`drydock-task-ID`), told its task and how to signal the end, watched from the
//! event feed (its agent's state, its session's exit) and by its deadline, and cleaned up
//! after it ends. A restart adopts what still runs.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::adoption::Adoption;
use super::budgets::Budgets;
use super::ending::Ending;
use super::forecast::Forecaster;
use super::isolation::Isolation;
use super::lander::{Lander, Starter};
use super::launcher::Launcher;
use super::ledger::Ledger;
use super::review::Reviewer;
use super::sessions::{agent_process, task_of_session};
use super::state::TaskState;
use super::store::{Health, Task};
use super::team::{self, TeamHost};
use super::tokens::TaskTokens;
use crate::agents::Agents;
use crate::agents::requests::{AnswerAction, AnswerRequest, OptionNumber};
use crate::call::Call;
use crate::config::Config;
use crate::events::{AgentChange, Event, EventKind, Events, Received};
use crate::millis::unix_millis;
use crate::supervise::{spawn_supervised, supervised};
use crate::terminal::Terminals;

/// How often a running task's spending is counted against its budget: an agent's turn takes
/// longer, so it is stopped within a turn of its budget.
const BUDGET_EVERY: Duration = Duration::from_secs(2);

/// How long starting a task's agent may take (agent supervision waits 30 s for it to show).
const STARTS_WITHIN: Duration = Duration::from_secs(60);
/// How long the monitor waits for the server's endpoint before running tasks anyway.
const ENDPOINT_WITHIN: Duration = Duration::from_secs(10);

/// How Claude Code asks for folder trust (agent-lab.md).
const TRUST_QUESTION: &str = "Is this a project you created or one you trust?";

/// How often the processes of this host's task agents are looked at for sessions to hold at
/// the agents' niceness (each command Claude Code runs is a session of its own).
const YIELD_EVERY: Duration = Duration::from_secs(1);

/// How often merged worktrees past their keeping time are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// Watches this host's running tasks, and keeps the task system's loops going.
pub(super) struct Monitor {
    pub(super) ledger: Arc<Ledger>,
    pub(super) config: Arc<Config>,
    pub(super) agents: Arc<Agents>,
    pub(super) terminals: Arc<Terminals>,
    pub(super) events: Arc<Events>,
    pub(super) tokens: TaskTokens,
    pub(super) budgets: Arc<Budgets>,
    pub(super) forecaster: Arc<Forecaster>,
    pub(super) team: Arc<TeamHost>,
    pub(super) lander: Arc<Lander>,
    pub(super) reviewer: Arc<Reviewer>,
    pub(super) ending: Arc<Ending>,
    pub(super) launcher: Arc<Launcher>,
    pub(super) adoption: Arc<Adoption>,
}

impl Monitor {
    /// Watches running tasks until this drydock stops: adopts the ones an earlier drydock
    /// left, then follows the event feed (agents waiting, sessions ending) and the tasks'
    /// deadlines, and starts queued tasks as slots free up. It listens to the feed only while
    /// a task runs: a listener makes agent supervision look at every terminal change.
    pub(super) async fn monitor(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        self.ledger.run_until(stop.clone());
        // An agent started before the server publishes its endpoint would get no MCP config
        // (no task_complete): the server publishes it right after the app starts, before it
        // takes requests, so only the monitor's own first starts wait for it.
        self.agents.until_reachable(ENDPOINT_WITHIN).await;
        let first_feed = std::sync::Mutex::new(Some(self.events.subscribe()));
        self.report_health(stop.clone());
        let this = self.clone();
        let round: team::Round = Arc::new(move || {
            let this = this.clone();
            Box::pin(async move {
                this.let_go().await;
                // An agent that ended while the database was away was not recorded then.
                this.check_sessions().await;
                this.launcher.fill().await;
            })
        });
        self.team.serve(stop.clone(), round).await;
        self.adoption.adopt_once_readable(&stop).await;
        self.keep_tidy(stop.clone());
        let this = self.clone();
        let starter: Starter = Arc::new(move |id| {
            let this = this.clone();
            tokio::spawn(async move {
                if let Err(error) = this.launcher.start(&id).await {
                    // No free slot: it starts as one frees up (or when a person starts it).
                    tracing::info!("task {id}: its next attempt waits: {error}");
                }
            });
        });
        self.lander.keep_landing(stop.clone(), starter);
        self.forecaster.keep_forecasting(stop.clone());
        self.keep_budgets(stop.clone());
        self.keep_agents_yielding(stop.clone());
        self.launcher.fill().await;
        let this = self.clone();
        let watching = stop.clone();
        supervised("the task monitor", &stop, move || {
            let feed = first_feed.lock().unwrap_or_else(|e| e.into_inner()).take();
            this.clone().watch(feed, watching.clone())
        })
        .await;
    }

    /// The monitor's loop, on the feed it subscribed to before it adopted and filled (or, when
    /// started again after a panic, on a new one, after looking for what ended meanwhile).
    async fn watch(
        self: Arc<Self>,
        mut feed: Option<crate::events::Subscription>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        if feed.is_none() {
            self.check_sessions().await;
        }
        loop {
            if self.ledger.running_tasks().await.is_empty() {
                feed = None;
                tokio::select! {
                    () = self.launcher.started.notified() => continue,
                    () = stop.cancelled() => return,
                }
            }
            let events = feed.get_or_insert_with(|| self.events.subscribe());
            let deadline = self.next_deadline().await;
            tokio::select! {
                received = events.recv() => match received {
                    Some(Received::Event(event)) => self.on_event(event).await,
                    Some(Received::Missed(_)) => self.check_sessions().await,
                    None => return,
                },
                () = sleep_until(deadline) => self.expire().await,
                () = self.launcher.started.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }

    /// Publishes each change of the queue database's health on the event feed, until `stop`.
    fn report_health(&self, stop: tokio_util::sync::CancellationToken) {
        let health = self.ledger.health();
        let events = self.events.clone();
        spawn_supervised("the queue's health report", stop.clone(), move || {
            let (mut health, events, stop) = (health.clone(), events.clone(), stop.clone());
            async move {
                loop {
                    tokio::select! {
                        changed = health.changed() => if changed.is_err() { return },
                        () = stop.cancelled() => return,
                    }
                    let kind = match &*health.borrow_and_update() {
                        Health::Answering => EventKind::QueueHealth {
                            answering: true,
                            why: None,
                        },
                        Health::Failing(why) => EventKind::QueueHealth {
                            answering: false,
                            why: Some(why.clone()),
                        },
                    };
                    match &kind {
                        EventKind::QueueHealth { why: Some(why), .. } => tracing::warn!("{why}"),
                        _ => tracing::info!("the task queue answers again"),
                    }
                    events.publish(kind);
                }
            }
        });
    }

    /// Reviews the results of tasks that ended while no drydock watched, then removes merged
    /// worktrees by policy, now and every hour until `stop`.
    fn keep_tidy(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let (this, tidying) = (self.clone(), stop.clone());
        spawn_supervised("the task results' upkeep", stop, move || {
            this.clone().tidy(tidying.clone())
        });
    }

    /// Every [`BUDGET_EVERY`] until `stop`, stops each of this host's running tasks that
    /// reached its budget: its agent is interrupted and the task fails with the reason, its
    /// work kept for a retry.
    fn keep_budgets(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let (this, until) = (self.clone(), stop.clone());
        spawn_supervised("the tasks' budgets", stop, move || {
            let (this, until) = (this.clone(), until.clone());
            async move {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(BUDGET_EVERY) => {}
                        () = until.cancelled() => return,
                    }
                    for (task, why) in this.budgets.exhausted().await {
                        tracing::info!("task {}: {why}", task.id);
                        this.ending.fail(&task, why, None).await;
                        this.launcher.fill().await;
                    }
                }
            }
        });
    }

    /// Stops the agents of claims that are over, whichever host made them (hosts on one
    /// machine share its tmux server): claims whose task was taken over since, or lost with
    /// the lease of their host; and of this host's tasks cancelled by a person on another
    /// host. The current claims of other hosts are theirs to look after.
    async fn let_go(self: &Arc<Self>) {
        for session in self.terminals.names() {
            let Some((id, claim)) = task_of_session(&session) else {
                continue;
            };
            let Ok(task) = self.ledger.task(id).await else {
                continue;
            };
            let lost = matches!(task.state, TaskState::Queued | TaskState::Lost);
            if claim < task.epoch || (!self.ledger.is_mine(&task) && lost) {
                tracing::warn!(
                    "task {id}: claim {claim} is over ({}); stopping the agent it left running",
                    match &task.host {
                        Some(host) => format!("claim {} {} on {host}", task.epoch, task.state),
                        None => task.state.to_string(),
                    }
                );
                self.ending.abandon(&session).await;
                continue;
            }
            if !self.ledger.is_mine(&task) {
                continue;
            }

            let issued = self.tokens.is_issued(&task.id);
            // Cancelled by a person at another host's dashboard.
            let cancelled_elsewhere = task.state == TaskState::Cancelled && issued;
            // Ended under an earlier drydock of this host, which did not live to close it.
            let left_over = task.state.is_finished() && !issued && !self.config.tasks.keep_sessions;
            if cancelled_elsewhere || left_over {
                self.ending.stop_agent(&task).await;
            } else if matches!(task.state, TaskState::Queued | TaskState::Lost) {
                self.ending.abandon(&session).await;
            }
        }
    }

    /// Holds the autogroup of every process of this host's task agents at `[tasks] nice`, every
    /// [`YIELD_EVERY`] until `stop` (`crate::process::yielding` says why `nice` alone is not
    /// enough).
    fn keep_agents_yielding(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let nice = self.config.tasks.nice;
        if nice == 0 {
            return;
        }
        let this = self.clone();
        spawn_supervised("the task agents' yielding", stop.clone(), move || {
            let (this, stop) = (this.clone(), stop.clone());
            async move {
                loop {
                    let mut agents = Vec::new();
                    for name in this.terminals.names() {
                        if task_of_session(&name).is_some()
                            && let Some(pid) = this.terminals.program_of(&name).await
                        {
                            agents.push(pid);
                        }
                    }
                    if !agents.is_empty() {
                        let held = tokio::task::spawn_blocking(move || {
                            crate::process::yielding::hold_trees_at(&agents, nice)
                        });
                        if let Ok(lowered @ 1..) = held.await {
                            tracing::debug!(
                                "held {lowered} session(s) of task agents at nice {nice}"
                            );
                        }
                    }
                    tokio::select! {
                        () = tokio::time::sleep(YIELD_EVERY) => {}
                        () = stop.cancelled() => return,
                    }
                }
            }
        });
    }

    /// Reviews what no drydock reviewed, then sweeps, now and every hour until `stop`.
    async fn tidy(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let finished = self.ledger.all_tasks().await;
        for task in finished
            .iter()
            .filter(|t| t.state.is_finished() && t.review.is_none() && self.ledger.is_mine(t))
        {
            self.reviewer.review(&task.id).await;
        }
        loop {
            self.reviewer.sweep().await;
            tokio::select! {
                () = tokio::time::sleep(SWEEP_EVERY) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    async fn on_event(self: &Arc<Self>, event: Event) {
        match event.kind {
            EventKind::TerminalSessionExited { session, exit_code } => {
                if let Some((id, claim)) = task_of_session(&session) {
                    self.session_ended(id, claim, exit_code).await;
                }
            }
            EventKind::AgentState(change) => {
                if let Some((id, claim)) = task_of_session(&change.agent) {
                    self.agent_changed(id, claim, &change).await;
                }
            }
            _ => {}
        }
    }

    /// The session of task `id` ended: if the task still runs, its agent exited without
    /// saying how the task ended.
    async fn session_ended(self: &Arc<Self>, id: &str, claim: i64, exit_code: Option<i32>) {
        let Ok(task) = self.ledger.task(id).await else {
            return;
        };
        if task.state != TaskState::Running || !self.ledger.is_mine(&task) || task.epoch != claim {
            return;
        }
        if exit_code.is_none()
            && let Some(pid) = agent_process(&task.id, task.epoch)
        {
            // The terminal said its program ended without a status, and yet the agent runs:
            // a busy machine misled the report. The task goes on (its deadline still holds).
            tracing::warn!(
                "task {id}: its session was reported ended, but its agent (pid {pid}) still runs"
            );
            return;
        }
        let how = match exit_code {
            Some(code) => format!("with code {code}"),
            None => "(killed by a signal)".to_string(),
        };
        let failure = format!("its agent exited {how} without signalling the end of the task");
        tracing::warn!("task {id}: {failure}");
        self.ending.fail(&task, failure, exit_code).await;
        self.launcher.fill().await;
    }

    /// Marks task `id` as needing a person while its agent waits at a prompt; Claude Code's
    /// folder-trust question in a task's worktree is answered (see [`Self::confirm_trust`]).
    async fn agent_changed(self: &Arc<Self>, id: &str, claim: i64, change: &AgentChange) {
        if change.state == "idle" && self.adoption.came_to_rest(&change.agent) {
            let (this, id, session) = (self.clone(), id.to_string(), change.agent.clone());
            tokio::spawn(async move { this.adoption.remind(&id, &session).await });
        }
        let asks_trust = change.state == "waiting"
            && change
                .question
                .as_deref()
                .is_some_and(|q| q.contains(TRUST_QUESTION));
        if asks_trust {
            let (this, id, session) = (self.clone(), id.to_string(), change.agent.clone());
            tokio::spawn(async move { this.confirm_trust(&id, &session).await });
        }
        let why = (change.state == "waiting").then(|| {
            let what = change.waiting.as_deref().unwrap_or("input");
            match &change.question {
                Some(question) => format!("its agent waits for {what}: {question}"),
                None => format!("its agent waits for {what}"),
            }
        });
        let Ok(task) = self.ledger.task(id).await else {
            return;
        };
        let Ok(lease) = self.ledger.lease_here(&task) else {
            return;
        };
        if task.epoch != claim {
            return;
        }
        let Ok(store) = self.ledger.store().await else {
            return;
        };
        let id = id.to_string();
        let marked =
            store.call(
                move |q| match q.set_attention(&id, why.as_deref(), lease.as_ref())? {
                    true => q.get(&id).map(Some),
                    false => Ok(None),
                },
            );
        if let Ok(Some(task)) = marked.await {
            self.ledger.publish(&task, Some(TaskState::Running));
        }
    }

    /// Answers "Yes, I trust this folder" for the agent of task `id` in its worktree, when
    /// Claude Code trusts the project the worktree was made from. drydock wrote that trust
    /// into `.claude.json` before the agent started; another Claude Code exiting meanwhile can
    /// write its own older copy of the file over it, and the agent then asks.
    async fn confirm_trust(self: &Arc<Self>, id: &str, session: &str) {
        let Ok(task) = self.ledger.task(id).await else {
            return;
        };
        let Some(Isolation::Worktree(worktree)) = &task.isolation else {
            return;
        };
        if !crate::agents::trust::trusts(Path::new(&task.project_path)).await {
            return;
        }
        let Ok(agent) = self.agents.one(session).await else {
            return;
        };
        let Some(waiting) = agent.waiting.filter(|w| {
            w.question
                .as_deref()
                .is_some_and(|q| q.contains(TRUST_QUESTION))
        }) else {
            return;
        };
        let Some(yes) = waiting.options.iter().find(|o| o.label.starts_with("Yes")) else {
            return;
        };
        let Some(option) = OptionNumber::new(yes.number.into()) else {
            return;
        };
        let answer = AnswerRequest {
            agent: session.to_string(),
            action: AnswerAction::Choose,
            option: Some(option),
            text: None,
            seen: waiting.prompt_id.clone(),
        };
        let stop = self.ledger.running_until().cloned().unwrap_or_default();
        match self.agents.answer(answer, &Call::silent(stop)).await {
            Ok(_) => {
                let mut tree = worktree.clone();
                tree.notes.push(format!(
                    "Claude Code asked for folder trust all the same (its .claude.json was written over meanwhile); drydock answered \"{}\" as Claude Code trusts {}",
                    yes.label, task.project_path
                ));
                if let Ok(store) = self.ledger.store().await {
                    let (id, noted) = (id.to_string(), Isolation::Worktree(tree));
                    let _ = store.call(move |q| q.set_isolation(&id, &noted)).await;
                }
            }
            Err(error) => tracing::warn!("task {id}: answering the trust question: {error}"),
        }
    }

    /// When the next running task's time is up: none when that is further off than an
    /// `Instant` reaches (a timeout from the config, or stored by another host, can be).
    async fn next_deadline(&self) -> Option<Instant> {
        let soonest = self
            .ledger
            .running_tasks()
            .await
            .iter()
            .map(|task| self.time_left(task))
            .min()?;
        Instant::now().checked_add(soonest)
    }

    fn time_left(&self, task: &Task) -> Duration {
        let started = task.started_at_ms.unwrap_or(task.created_at_ms);
        let elapsed = unix_millis(SystemTime::now()).saturating_sub(started);
        self.timeout_of(task)
            .saturating_sub(Duration::from_millis(elapsed))
    }

    fn timeout_of(&self, task: &Task) -> Duration {
        task.timeout_s
            .map_or(self.config.tasks.timeout, Duration::from_secs)
    }

    /// Fails the running tasks whose time is up.
    async fn expire(self: &Arc<Self>) {
        for task in self.ledger.running_tasks().await {
            if self.time_left(&task).is_zero() {
                let failure = format!("timed out after {} s", self.timeout_of(&task).as_secs());
                self.ending.fail(&task, failure, None).await;
                self.launcher.fill().await;
            }
        }
    }

    /// After missed events: the running tasks whose session is gone or whose program ended.
    pub(super) async fn check_sessions(self: &Arc<Self>) {
        // Until then, a session that is not there may be one the earlier drydock left.
        if !self.ledger.host().adopted() {
            return;
        }
        for task in self.ledger.running_tasks().await {
            let Some(session) = task.session.clone() else {
                continue;
            };
            // A session that does not exist yet may still be being started.
            let starting = Duration::from_millis(
                unix_millis(SystemTime::now()).saturating_sub(task.started_at_ms.unwrap_or(0)),
            ) < STARTS_WITHIN;
            let ended = match self.terminals.core_of(&session).await {
                Ok(core) => core.has_exited(),
                Err(_) => !starting,
            };
            if ended {
                self.session_ended(&task.id, task.epoch, None).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::{Setting, new_task};
    use crate::tasks::sessions::session_of;
    use crate::tasks::store::{NewTask, Queue, SqliteStore};

    /// A task of the setting's project, claimed by this host, with `timeout_s`.
    async fn running(setting: &Setting, monitor: &Monitor, title: &str, timeout_s: u64) -> Task {
        let store = SqliteStore::open(&setting.config.data_dir.join("tasks.sqlite3")).unwrap();
        let new = NewTask {
            timeout_s: Some(timeout_s),
            ..new_task(title, &setting.project())
        };
        let queued = store.add(new).unwrap();
        let claimed = monitor.launcher.claim(&[queued.id]).await.unwrap();
        claimed.expect("a free slot on this host's own queue")
    }

    fn session_exited(session: String, exit_code: Option<i32>) -> Event {
        Event {
            seq: 1,
            at_ms: 0,
            kind: EventKind::TerminalSessionExited { session, exit_code },
        }
    }

    /// Built from the parts alone: a session's end under another claim than the task's
    /// changes nothing; under its own, the task fails with the agent's exit code. A task whose
    /// time is up fails at the deadline; one with time left runs on.
    #[tokio::test]
    async fn a_sessions_end_or_a_deadline_fails_only_the_claim_it_names() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let monitor = setting.monitor(&ledger);
        ledger.host().set_adopted();
        assert_eq!(monitor.next_deadline().await, None, "nothing runs");

        let exits = running(&setting, &monitor, "exits", 3600).await;
        let late = running(&setting, &monitor, "late", 0).await;
        assert!(monitor.next_deadline().await.is_some());

        let later_claim = session_of(&exits.id, exits.epoch + 1);
        monitor.on_event(session_exited(later_claim, Some(3))).await;
        assert_eq!(
            ledger.task(&exits.id).await.unwrap().state,
            TaskState::Running
        );

        let own_claim = session_of(&exits.id, exits.epoch);
        monitor.on_event(session_exited(own_claim, Some(3))).await;
        let failed = ledger.task(&exits.id).await.unwrap();
        assert_eq!(failed.state, TaskState::Failed);
        assert_eq!(
            failed.failure.as_deref(),
            Some("its agent exited with code 3 without signalling the end of the task")
        );
        assert_eq!(failed.exit_code, Some(3));

        let long = running(&setting, &monitor, "long", 3600).await;
        monitor.expire().await;
        let timed_out = ledger.task(&late.id).await.unwrap();
        assert_eq!(timed_out.state, TaskState::Failed);
        assert_eq!(timed_out.failure.as_deref(), Some("timed out after 0 s"));
        assert_eq!(
            ledger.task(&long.id).await.unwrap().state,
            TaskState::Running
        );
    }
}
