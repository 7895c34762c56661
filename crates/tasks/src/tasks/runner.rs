//! Running tasks: each on a coding agent started through agent supervision in a tmux session
//! of its own (`drydock-task-ID`), told its task and how to signal the end, watched from the
//! event feed (its agent's state, its session's exit) and by its deadline, and cleaned up
//! after it ends. A restart adopts what still runs.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;

use super::briefing::{context, prompt};
use super::files;
use super::isolation::Isolation;
use super::landing::Starter;
use super::requests::TaskRequest;
use super::state::{TaskState, Transition};
use super::store::{Health, QueueMode, Record, StoreError, Task};
use super::team;
use super::tokens::TaskScope;
use super::{TaskError, Tasks};
use crate::agents::requests::{
    AnswerAction, AnswerRequest, KillRequest, OptionNumber, SendRequest, SpawnBackend,
};
use crate::agents::{Launched, Run};
use crate::call::Call;
use crate::supervise::{spawn_supervised, supervised};

use crate::events::{AgentChange, Event, EventKind, Received};
use crate::millis::unix_millis;
use crate::terminal::requests::{ManageAction, ManageRequest};

/// Terminal sessions of tasks are `task-ID` for a task's first claim and `task-ID-N` for
/// its Nth (the tmux session `drydock-task-…`): an agent a lost claim left running never
/// stands in the way of the claim that took its task over.
/// How often a running task's spending is counted against its budget: an agent's turn takes
/// longer, so it is stopped within a turn of its budget.
const BUDGET_EVERY: Duration = Duration::from_secs(2);
const SESSION_PREFIX: &str = "task-";
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
/// How many startable tasks a host offers one claim.
const CANDIDATES: usize = 8;
/// The variable that names the claim a task's agent runs under.
const CLAIM_VARIABLE: &str = "DRYDOCK_TASK_CLAIM";
/// How often taking up what an earlier drydock left running is tried while the queue
/// cannot be read.
const ADOPT_RETRY: Duration = Duration::from_secs(1);
/// The MCP tool a task's agent may call without asking.
const COMPLETE_TOOL: &str = "mcp__drydock__task_complete";

/// The session of claim `epoch` of task `task_id` (the stores name it the same way when they
/// claim).
pub fn session_of(task_id: &str, epoch: i64) -> String {
    match epoch {
        ..=1 => format!("{SESSION_PREFIX}{task_id}"),
        n => format!("{SESSION_PREFIX}{task_id}-{n}"),
    }
}

/// The task and claim a task's session was started for.
pub(super) fn task_of_session(session: &str) -> Option<(&str, i64)> {
    let rest = session.strip_prefix(SESSION_PREFIX)?;
    match rest.split_once('-') {
        None => Some((rest, 1)),
        Some((id, n)) => Some((id, n.parse().ok().filter(|n| *n > 1)?)),
    }
}

impl Tasks {
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
        if !self.ledger.host().may_claim() || !self.has_adopted() {
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
        self.wake.notify_one();
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
        if !self.has_adopted() {
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
        self.fail(&task, failure, None).await;
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
    fn scope_of(&self, task: &Task, work_dir: &Path) -> TaskScope {
        TaskScope {
            task_id: task.id.clone(),
            claim: task.epoch,
            project: PathBuf::from(&task.project_path),
            dir: work_dir.to_path_buf(),
        }
    }

    /// task_complete, and the tools of the task's approval policy.
    fn allowed_tools(&self, task: &Task) -> Vec<String> {
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
                self.fill().await;
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

    /// Watches running tasks until this drydock stops: adopts the ones an earlier drydock
    /// left, then follows the event feed (agents waiting, sessions ending) and the tasks'
    /// deadlines, and starts queued tasks as slots free up. It listens to the feed only while
    /// a task runs: a listener makes agent supervision look at every terminal change.
    pub async fn monitor(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
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
                this.fill().await;
            })
        });
        self.team.serve(stop.clone(), round).await;
        self.adopt_once_readable(&stop).await;
        self.keep_tidy(stop.clone());
        let this = self.clone();
        let starter: Starter = Arc::new(move |id| {
            let this = this.clone();
            tokio::spawn(async move {
                if let Err(error) = this
                    .start(TaskRequest {
                        task_id: id.clone(),
                    })
                    .await
                {
                    // No free slot: it starts as one frees up (or when a person starts it).
                    tracing::info!("task {id}: its next attempt waits: {error}");
                }
            });
        });
        self.lander.keep_landing(stop.clone(), starter);
        self.forecaster.keep_forecasting(stop.clone());
        self.keep_budgets(stop.clone());
        self.keep_agents_yielding(stop.clone());
        self.fill().await;
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
                    () = self.wake.notified() => continue,
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
                () = self.wake.notified() => {}
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
                        this.fail(&task, why, None).await;
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
                self.abandon(&session).await;
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
                self.stop_agent(&task).await;
            } else if matches!(task.state, TaskState::Queued | TaskState::Lost) {
                self.abandon(&session).await;
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
        self.fail(&task, failure, exit_code).await;
    }

    /// Marks task `id` as needing a person while its agent waits at a prompt; Claude Code's
    /// folder-trust question in a task's worktree is answered (see [`Self::confirm_trust`]).
    async fn agent_changed(self: &Arc<Self>, id: &str, claim: i64, change: &AgentChange) {
        if change.state == "idle" && self.came_to_rest(&change.agent) {
            let (this, id, session) = (self.clone(), id.to_string(), change.agent.clone());
            tokio::spawn(async move { this.remind(&id, &session).await });
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
                self.fail(&task, failure, None).await;
            }
        }
    }

    /// Whether this drydock took up what an earlier one of this host left running.
    fn has_adopted(&self) -> bool {
        self.adopted.load(Ordering::Relaxed)
    }

    /// [`Self::adopt`] as soon as the queue can be read (a restart while its database is
    /// away must not leave the earlier drydock's tasks to nobody), until `stop`.
    async fn adopt_once_readable(self: &Arc<Self>, stop: &tokio_util::sync::CancellationToken) {
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
        self.adopted.store(true, Ordering::Relaxed);
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
            // door: the task's token, in drydock's own task folder.
            let token =
                std::fs::read_to_string(files::task_dir(&self.config, &task.id).join("token"));
            let why = match (agent, token) {
                (Some(agent), Ok(token)) => {
                    let scope = self.scope_of(&task, Path::new(task.work_dir()));
                    self.tokens.restore(token.trim(), scope);
                    if let Err(error) = self.sandboxes.reopen_sandbox(&task, &session, token.trim())
                    {
                        tracing::warn!("task {}: {error}", task.id);
                    }
                    self.agents.adopt_run(&session, self.allowed_tools(&task));
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
                false => self.fail(&task, why.to_string(), None).await,
            }
        }
        Ok(())
    }

    fn taken_up_lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.taken_up.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the adopted agent in `session` comes to rest for the first time under this
    /// drydock.
    fn came_to_rest(&self, session: &str) -> bool {
        self.taken_up_lock().remove(session)
    }

    /// Asks the adopted agent in `session`, at rest while its task still runs, to say how
    /// the task ended: a `task_complete` it called while no drydock answered at this
    /// address was lost. Its task's prompt again, after a word on why.
    async fn remind(self: &Arc<Self>, id: &str, session: &str) {
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
            self.abandon(session).await;
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
        self.fill().await;
    }

    /// After missed events: the running tasks whose session is gone or whose program ended.
    pub(super) async fn check_sessions(self: &Arc<Self>) {
        // Until then, a session that is not there may be one the earlier drydock left.
        if !self.has_adopted() {
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

/// A live process started for claim `epoch` of task `id` (its agent, or what the agent
/// runs): every one carries `DRYDOCK_TASK_ID=id` and `DRYDOCK_TASK_CLAIM=epoch` in its
/// environment.
fn agent_process(id: &str, epoch: i64) -> Option<i32> {
    let (task, claim) = (
        format!("DRYDOCK_TASK_ID={id}"),
        format!("{CLAIM_VARIABLE}={epoch}"),
    );
    crate::process::procfs::all_processes()
        .into_iter()
        .filter(|p| !p.is_gone())
        .find(|p| {
            crate::process::procfs::environ_contains(p.pid, &task)
                && crate::process::procfs::environ_contains(p.pid, &claim)
        })
        .map(|p| p.pid)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
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

    #[test]
    fn a_tasks_session_names_the_task_and_its_claim() {
        assert_eq!(
            task_of_session(&session_of("0a1b2c3d", 1)),
            Some(("0a1b2c3d", 1))
        );
        assert_eq!(session_of("0a1b2c3d", 3), "task-0a1b2c3d-3");
        assert_eq!(task_of_session("task-0a1b2c3d-3"), Some(("0a1b2c3d", 3)));
        assert_eq!(task_of_session("agent-x"), None);
        assert_eq!(task_of_session("task-0a1b2c3d-x"), None);
        assert_eq!(task_of_session("task-0a1b2c3d-1"), None);
    }

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
}
