//! The landing queue of this host: done results, oldest first, each merged onto its branch's
//! current tip in a scratch worktree, the project's checks run there, and the branch moved
//! only when they pass (by compare-and-swap, or by a fast-forward of the person's clean
//! checkout of it). A result that does not land goes back to its agent, with why.

mod batch;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agents::Agents;
use crate::config::{Config, LandMode, LandWith};
use crate::git::Git;
use crate::millis::unix_millis;
use crate::supervise::spawn_supervised;
use crate::tasks::checks::Checker;
use crate::tasks::error::TaskError;
use crate::tasks::isolation::{Checks, Disposition, Review, Worktree};
use crate::tasks::landing::{Failure, Landing, LandingState, SentBack};
use crate::tasks::ledger::Ledger;
use crate::tasks::merge::{self, Candidate, MergeError, Merged, Strategy};
use crate::tasks::state::{TaskState, Transition};
use crate::tasks::store::{Record, Task};
use crate::tasks::worktree::Worktrees;
use crate::toolchain::warm_start;

/// How often the queue looks again at what waits: a held branch whose checkout was cleaned
/// up, a result whose store write failed.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// Starts the next attempt of a task sent back to its agent (the launcher's, which the
/// monitor hands to the landing queue when it starts).
pub(in crate::tasks) type Starter = Arc<dyn Fn(String) + Send + Sync>;

/// The landing queue of this host, and `task_merge`'s tested merge.
pub(in crate::tasks) struct Lander {
    pub(super) ledger: Arc<Ledger>,
    pub(super) config: Arc<Config>,
    agents: Arc<Agents>,
    worktrees: Arc<Worktrees>,
    checker: Arc<Checker>,
    /// Something may be ready to land.
    wake: Notify,
    /// Held while a merged tree is made and tested: the queue's and `task_merge`'s take
    /// turns on the scratch worktrees.
    pub(super) testing: tokio::sync::Mutex<()>,
    starter: OnceLock<Starter>,
}

/// Why a result did not land now.
#[derive(Debug)]
pub(in crate::tasks) enum LandError {
    /// Its agent can fix it.
    Failed(Failure),
    /// The branch moved while its merged tree was tested: test again on the new tip.
    Moved,
    /// Green, but the branch cannot advance now (the person's checkout of it is dirty).
    Held(String),
    /// Nothing an agent can fix: a person decides.
    Other(String),
}

/// What became of one result in a pass.
pub(super) enum Step {
    Settled,
    Held,
}

impl Lander {
    pub(in crate::tasks) fn new(
        ledger: Arc<Ledger>,
        config: Arc<Config>,
        agents: Arc<Agents>,
        worktrees: Arc<Worktrees>,
        checker: Arc<Checker>,
    ) -> Lander {
        Lander {
            ledger,
            config,
            agents,
            worktrees,
            checker,
            wake: Notify::new(),
            testing: tokio::sync::Mutex::new(()),
            starter: OnceLock::new(),
        }
    }

    /// Something may be ready to land.
    pub(in crate::tasks) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs the landing queue until `stop`, when `[tasks] land = "when_green"`; a result
    /// sent back to its agent is started again by `starter`.
    pub(in crate::tasks) fn keep_landing(
        self: &Arc<Self>,
        stop: CancellationToken,
        starter: Starter,
    ) {
        if self.config.tasks.landing.mode != LandMode::WhenGreen {
            return;
        }
        let _ = self.starter.set(starter);
        let (this, landing) = (self.clone(), stop.clone());
        spawn_supervised("the landing queue", stop, move || {
            this.clone().land_until(landing.clone())
        });
    }

    async fn land_until(self: Arc<Self>, stop: CancellationToken) {
        loop {
            self.land_waiting(&stop).await;
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(LOOK_AGAIN) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    /// Puts done task `task`'s tested result in line to land, when results land by
    /// themselves.
    pub(in crate::tasks) async fn line_up(&self, task: &Task) {
        if self.config.tasks.landing.mode != LandMode::WhenGreen || task.state != TaskState::Done {
            return;
        }
        let into = match task.isolation.as_ref().and_then(|i| i.worktree()) {
            Some(worktree) => worktree
                .landing_branch(Path::new(&task.project_path))
                .await
                .unwrap_or_default(),
            None => return,
        };
        let now = unix_millis(SystemTime::now());
        let landing = match task.landing.clone() {
            Some(mut landing) => {
                landing.state = LandingState::Waiting {
                    into,
                    since_ms: now,
                };
                landing
            }
            None => Landing::waiting(&into, now),
        };
        if self.store_landing(task, &landing).await.is_ok() {
            self.ledger.publish(task, Some(task.state));
            self.wake();
        }
    }

    /// Lands what waits, oldest result first. A branch whose first result is held, or still
    /// has its own checks running, holds the ones behind it: results land in the order they
    /// were done.
    async fn land_waiting(self: &Arc<Self>, stop: &CancellationToken) {
        let mut done: Vec<Task> = self
            .ledger
            .all_tasks()
            .await
            .into_iter()
            .filter(|task| {
                self.ledger.is_mine(task)
                    && task.state == TaskState::Done
                    && task.open_result().is_some()
            })
            .collect();
        done.sort_by_key(|task| (task.finished_at_ms, task.created_at_ms));
        let mut lanes: Vec<((String, String), Vec<Task>)> = Vec::new();
        let mut held: HashSet<(String, String)> = HashSet::new();
        for task in done {
            let Some((worktree, review)) = task.open_result() else {
                continue;
            };
            let into = worktree
                .landing_branch(Path::new(&task.project_path))
                .await
                .unwrap_or_default();
            let lane = (worktree.repo.clone(), into);
            if held.contains(&lane) {
                continue;
            }
            if review.checks == Checks::Running {
                held.insert(lane);
                continue;
            }
            if !waits_to_land(&task) {
                continue;
            }
            match lanes.iter_mut().find(|(l, _)| *l == lane) {
                Some((_, waiting)) => waiting.push(task),
                None => lanes.push((lane, vec![task])),
            }
        }
        for (_, waiting) in lanes {
            if stop.is_cancelled() {
                return;
            }
            self.land_lane(waiting, stop).await;
        }
    }

    /// One result: sent back when its own checks failed, else merged onto its branch's tip,
    /// tested there, and landed, held, or sent back.
    pub(super) async fn land(self: &Arc<Self>, task: &Task) -> Step {
        let Some((worktree, review)) = task.open_result() else {
            return Step::Settled;
        };
        let now = unix_millis(SystemTime::now());
        let mut landing = landing_of(task);
        let into = match worktree.landing_branch(Path::new(&task.project_path)).await {
            Ok(into) => into,
            Err(why) => return self.to_person(task, landing, why.to_string()).await,
        };
        let tip_before = Git::at(Path::new(&worktree.repo))
            .commit_of(&format!("refs/heads/{into}"))
            .await
            .unwrap_or_default();
        if let Some(failed) = review.checks.first_failed() {
            let failure = Failure::Red {
                on_merged_tree: false,
                check: failed.tool.clone(),
                status: failed.status.clone(),
                detail: failed.detail.clone().unwrap_or(failed.summary.clone()),
            };
            return self
                .send_back(task, worktree, review, landing, &into, &tip_before, failure)
                .await;
        }
        if let Checks::Skipped { why } = &review.checks {
            let why = format!(
                "its checks were not run ({why}), and only a tested result lands by itself: merge it with task_merge, or discard it"
            );
            return self.to_person(task, landing, why).await;
        }

        let _testing = self.testing.lock().await;
        let testing = |tip: String, merged: String| {
            let mut landing = landing.clone();
            let into = into.clone();
            async move {
                landing.state = LandingState::Testing {
                    into,
                    tip,
                    merged,
                    since_ms: unix_millis(SystemTime::now()),
                    together: Vec::new(),
                };
                let stored = self.store_landing(task, &landing).await;
                if stored.is_ok() {
                    self.ledger.publish(task, Some(task.state));
                }
            }
        };
        let strategy = match self.config.tasks.landing.with {
            LandWith::Rebase => Strategy::Rebase,
            LandWith::Merge => match one_commit_on(worktree, &tip_before, &review.head).await {
                true => Strategy::Auto,
                false => Strategy::MergeCommit,
            },
        };
        match self
            .land_tested(task, worktree, review, &into, strategy, false, testing)
            .await
        {
            Ok(merged) => {
                tracing::info!(
                    "task {}: landed on {} at {} ({})",
                    task.id,
                    merged.into,
                    merged.commit,
                    merged.how
                );
                let recorded = self
                    .record_landed(task, review, Some(landing), &merged)
                    .await;
                if let Err(error) = recorded {
                    // The branch moved: the next pass finds the result in it and says so.
                    tracing::warn!(
                        "task {}: its landing could not be recorded: {error}",
                        task.id
                    );
                }
                Step::Settled
            }
            Err(LandError::Failed(failure)) => {
                self.send_back(task, worktree, review, landing, &into, &tip_before, failure)
                    .await
            }
            Err(LandError::Moved) => {
                tracing::info!(
                    "task {}: {into} moved while its merged tree was tested: it is tested again on the new tip",
                    task.id
                );
                landing.state = LandingState::Waiting {
                    into,
                    since_ms: now,
                };
                let _ = self.store_landing(task, &landing).await;
                self.wake();
                Step::Settled
            }
            Err(LandError::Held(why)) => self.hold(task, landing, &into, why).await,
            Err(LandError::Other(why)) => self.to_person(task, landing, why).await,
        }
    }

    /// Marks `task`'s green result as held from `into`, saying why.
    pub(super) async fn hold(
        &self,
        task: &Task,
        mut landing: Landing,
        into: &str,
        why: String,
    ) -> Step {
        let state = LandingState::Held {
            into: into.to_string(),
            why: why.clone(),
        };
        if landing.state != state {
            landing.state = state;
            let stored = self.store_landing(task, &landing).await;
            if stored.is_ok() {
                self.ledger.publish(task, Some(task.state));
            }
        }
        Step::Held
    }

    /// `review`'s result merged onto the tip of `into`, tested there unless the merge is the
    /// result itself (a fast-forward: its own checks tested that very tree), and `into`
    /// moved to it. `testing` hears of a merged tree about to be tested. Where the project
    /// has no checks drydock can run, `untested_ok` lets it land untested (a person's own
    /// merge).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::tasks) async fn land_tested<F, Fut>(
        &self,
        task: &Task,
        worktree: &Worktree,
        review: &Review,
        into: &str,
        strategy: Strategy,
        untested_ok: bool,
        testing: F,
    ) -> Result<Merged, LandError>
    where
        F: FnOnce(String, String) -> Fut,
        Fut: Future<Output = ()>,
    {
        let repo = Path::new(&worktree.repo);
        let git = Git::at(repo);
        let tip = git
            .commit_of(&format!("refs/heads/{into}"))
            .await
            .ok_or_else(|| {
                LandError::Other(format!(
                    "{into} is not a branch of {} (any more)",
                    worktree.repo
                ))
            })?;
        let message = format!("Merge task {}: {}", task.id, task.title);
        let always_merge = strategy == Strategy::MergeCommit;
        let candidate = match strategy {
            Strategy::Rebase => {
                Candidate::rebased(repo, &tip, &review.head, &worktree.branch, &message).await
            }
            _ => Candidate::of(repo, &tip, &review.head, always_merge, &message).await,
        }
        .map_err(|e| LandError::Other(e.to_string()))?;
        let (new, how) = match candidate {
            Candidate::AlreadyIn => {
                return Ok(Merged {
                    into: into.to_string(),
                    commit: tip,
                    how: "already_merged",
                });
            }
            Candidate::FastForward(head) => (head, "fast_forward"),
            Candidate::Conflicts { files, hunks } => {
                return Err(LandError::Failed(Failure::Conflicts { files, hunks }));
            }
            Candidate::Merge(_) if strategy == Strategy::FastForward => {
                return Err(LandError::Other(
                    MergeError::NotFastForward {
                        branch: worktree.branch.clone(),
                        into: into.to_string(),
                    }
                    .to_string(),
                ));
            }
            Candidate::Merge(commit) if same_tree(&git, &commit, &review.head).await => {
                // What its own checks passed on, under a merge commit.
                (commit, "merge_commit")
            }
            Candidate::Merge(commit) => {
                testing(tip.clone(), commit.clone()).await;
                self.green_or_not(worktree, into, &commit, untested_ok)
                    .await?;
                (commit, "merge_commit")
            }
            Candidate::Rebased(commit) => {
                testing(tip.clone(), commit.clone()).await;
                self.green_or_not(worktree, into, &commit, untested_ok)
                    .await?;
                (commit, "rebased")
            }
        };
        self.advance(repo, into, &tip, &new).await?;
        Ok(Merged {
            into: into.to_string(),
            commit: new,
            how,
        })
    }

    /// Moves `into` from `tip` to tested commit `new`: by compare-and-swap, or by a
    /// fast-forward of the person's clean checkout of it.
    pub(super) async fn advance(
        &self,
        repo: &Path,
        into: &str,
        tip: &str,
        new: &str,
    ) -> Result<(), LandError> {
        let _changing = self.worktrees.lock(repo).await;
        merge::advance(repo, &Git::at(repo), into, tip, new)
            .await
            .map_err(LandError::from)
    }

    /// The branch `task`'s green result lands on and why it cannot advance now (the
    /// person's checkout of it is dirty), so that nothing is tested until it can.
    pub(super) async fn held_back(&self, task: &Task) -> Option<(String, String)> {
        let (worktree, _) = task.open_result()?;
        let into = worktree
            .landing_branch(Path::new(&task.project_path))
            .await
            .ok()?;
        let repo = Path::new(&worktree.repo);
        match merge::held_back(repo, &Git::at(repo), &into).await {
            Ok(Some(dirty)) => match LandError::from(dirty) {
                LandError::Held(why) => Some((into, why)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The project's checks on `commit` (a result on the tip of `into`): Ok when green, or
    /// untested where the project has none and `untested_ok`.
    async fn green_or_not(
        &self,
        worktree: &Worktree,
        into: &str,
        commit: &str,
        untested_ok: bool,
    ) -> Result<(), LandError> {
        match self.test_merged(worktree, into, commit).await? {
            Checks::Done { results } => match results.iter().find(|r| !r.is_green()) {
                Some(failed) => Err(LandError::Failed(Failure::Red {
                    on_merged_tree: true,
                    check: failed.tool.clone(),
                    status: failed.status.clone(),
                    detail: failed.detail.clone().unwrap_or(failed.summary.clone()),
                })),
                None => Ok(()),
            },
            Checks::Skipped { .. } if untested_ok => Ok(()),
            Checks::Skipped { why } => Err(LandError::Other(format!(
                "its merged tree could not be tested: {why}"
            ))),
            Checks::Running => unreachable!("checks are awaited"),
        }
    }

    /// A person's merge (`task_merge` without force): tested like the queue's, while the
    /// queue waits.
    pub(in crate::tasks) async fn land_by_hand(
        &self,
        task: &Task,
        worktree: &Worktree,
        review: &Review,
        into: &str,
        strategy: Strategy,
    ) -> Result<Merged, LandError> {
        let _testing = self.testing.lock().await;
        let testing = |_, _| std::future::ready(());
        self.land_tested(task, worktree, review, into, strategy, true, testing)
            .await
    }

    /// The project's checks on `commit`, checked out in the scratch worktree of `into`.
    pub(super) async fn test_merged(
        &self,
        worktree: &Worktree,
        into: &str,
        commit: &str,
    ) -> Result<Checks, LandError> {
        let repo = Path::new(&worktree.repo);
        let (scratch, _made) = self
            .worktrees
            .scratch(repo, into, commit)
            .await
            .map_err(|e| {
                LandError::Other(format!("its merged tree could not be checked out: {e}"))
            })?;
        let inside = worktree.dir();
        let below = inside
            .strip_prefix(worktree.path())
            .unwrap_or(Path::new(""));
        let dir = scratch.join(below);
        // Every landing's builds start from the project's own (as a task's do), never from
        // what an earlier result's checks built.
        let target = self.config.task_dirs().cargo_target_for(&dir);
        if let Some(target) = &target {
            remove_target(target).await?;
        }
        if self.config.tasks.warm_start {
            let limit = self.config.tasks.warm_start_limit;
            let project = repo.join(below);
            let warmed = warm_start::warm(&project, &dir, target.as_deref(), limit).await;
            tracing::info!("the scratch worktree of {into}: {}", warmed.note());
        }
        Ok(self.checker.run(&dir).await)
    }

    /// Records `task`'s result as merged, and its landing, when it has one, as landed.
    pub(in crate::tasks) async fn record_landed(
        &self,
        task: &Task,
        review: &Review,
        landing: Option<Landing>,
        merged: &Merged,
    ) -> Result<(), TaskError> {
        let at_ms = unix_millis(SystemTime::now());
        let mut review = review.clone();
        review.disposition = Disposition::Merged {
            into: merged.into.clone(),
            commit: merged.commit.clone(),
            how: merged.how.to_string(),
            at_ms,
        };
        let landing = landing.map(|landing| Landing {
            state: LandingState::Landed {
                into: merged.into.clone(),
                commit: merged.commit.clone(),
                how: merged.how.to_string(),
                at_ms,
            },
            ..landing
        });
        // The branch moved: its record must follow, through a short outage too.
        let (id, review) = (task.id.clone(), review.clone());
        self.ledger
            .persistently(move |q| {
                q.set_review(&id, &review)?;
                match &landing {
                    Some(landing) => q.set_landing(&id, landing),
                    None => Ok(()),
                }
            })
            .await?;
        self.ledger.publish(task, Some(task.state));
        Ok(())
    }

    /// Gives `task`'s agent another attempt with `failure` as its context, on its branch
    /// brought up to the tip of `into`; or, with its attempts used up or its agent or
    /// worktree gone, leaves it to a person.
    #[allow(clippy::too_many_arguments)]
    async fn send_back(
        self: &Arc<Self>,
        task: &Task,
        worktree: &Worktree,
        review: &Review,
        mut landing: Landing,
        into: &str,
        tip: &str,
        failure: Failure,
    ) -> Step {
        let headline = failure.headline(into);
        landing.sent_back.push(SentBack {
            attempt: landing.sent_back.len() as u32 + 1,
            head: review.head.clone(),
            into: into.to_string(),
            tip: tip.to_string(),
            failure,
            at_ms: unix_millis(SystemTime::now()),
        });
        let failed = landing.sent_back.len() as u32;
        let allowed = self.config.tasks.landing.attempts;
        if failed >= allowed {
            let why = format!(
                "its result did not land in {failed} attempt(s), the last because {headline}: a person decides (task_show has every attempt)"
            );
            return self.to_person(task, landing, why).await;
        }
        // A send-back is one more attempt: it counts against the task's budget.
        if let Some(why) = task.usage.as_ref().and_then(|usage| usage.exhausted()) {
            return self
                .to_person(task, landing, format!("{headline}, and {why}"))
                .await;
        }
        if !worktree.path().is_dir() {
            let why = format!(
                "{headline}, and its worktree {} is gone, so its agent cannot take it up again",
                worktree.path
            );
            return self.to_person(task, landing, why).await;
        }
        if let Err(error) = self.agents.launchable_profile(&task.agent_kind) {
            let why = format!("{headline}, and its agent cannot be started again: {error}");
            return self.to_person(task, landing, why).await;
        }
        if let Err(why) = bring_up_to(worktree, into, tip).await {
            return self.to_person(task, landing, why).await;
        }
        landing.state = LandingState::SentBack {
            attempt: failed + 1,
        };
        let sent = self.send_back_with(&task.id, landing).await;
        let requeued = match sent {
            Ok(requeued) => requeued,
            Err(error) => {
                tracing::warn!("task {}: it could not be sent back: {error}", task.id);
                return Step::Settled;
            }
        };
        tracing::info!(
            "task {}: sent back to its agent as attempt {}: {headline}",
            task.id,
            failed + 1
        );
        self.ledger.publish(&requeued, Some(TaskState::Done));
        if let Some(start) = self.starter.get() {
            start(task.id.clone());
        }
        Step::Settled
    }

    /// One more attempt for done `task`, whose result waits for a person after the landing
    /// queue gave up on it: its agent gets the last failure as its context again.
    /// Returns the task, queued again.
    pub(in crate::tasks) async fn once_more(&self, task: Task) -> Result<Task, TaskError> {
        let landing = match &task.landing {
            Some(
                landing @ Landing {
                    state: LandingState::WaitsForPerson { .. },
                    ..
                },
            ) if !landing.sent_back.is_empty() => landing.clone(),
            _ => {
                return Err(TaskError::NotAllowed(format!(
                    "task {} is done: only a result that did not land and waits for a person goes back to its agent (task_show says where it is)",
                    task.id
                )));
            }
        };
        let Some(worktree) = task.isolation.as_ref().and_then(|i| i.worktree()) else {
            return Err(TaskError::NotAllowed(format!(
                "task {} has no worktree to work on again",
                task.id
            )));
        };
        if !worktree.path().is_dir() {
            return Err(TaskError::NotAllowed(format!(
                "task {}: its worktree {} is gone",
                task.id, worktree.path
            )));
        }
        self.agents
            .launchable_profile(&task.agent_kind)
            .map_err(|error| {
                TaskError::NotAllowed(format!(
                    "task {}: its agent cannot be started again: {error}",
                    task.id
                ))
            })?;
        let last = landing.sent_back.last().expect("checked above");
        bring_up_to(worktree, &last.into, &last.tip)
            .await
            .map_err(TaskError::NotAllowed)?;
        let landing = Landing {
            state: LandingState::SentBack {
                attempt: landing.sent_back.len() as u32 + 1,
            },
            ..landing
        };
        let requeued = self.send_back_with(&task.id, landing).await?;
        self.ledger.publish(&requeued, Some(TaskState::Done));
        Ok(requeued)
    }

    /// Records `landing` as `task`'s, through a short outage of the queue too.
    pub(super) async fn store_landing(
        &self,
        task: &Task,
        landing: &Landing,
    ) -> Result<(), TaskError> {
        let (id, landing) = (task.id.clone(), landing.clone());
        self.ledger
            .persistently(move |q| q.set_landing(&id, &landing))
            .await
    }

    /// Records `landing` and sends task `id` back to its agent, through a short outage too.
    async fn send_back_with(&self, id: &str, landing: Landing) -> Result<Task, TaskError> {
        let id = id.to_string();
        self.ledger
            .persistently(move |q| {
                q.set_landing(&id, &landing)?;
                q.transition(&id, Transition::SendBack, Record::default(), None)
            })
            .await
    }

    /// Leaves `task`'s result to a person, saying why.
    async fn to_person(&self, task: &Task, mut landing: Landing, why: String) -> Step {
        let state = LandingState::WaitsForPerson { why: why.clone() };
        if landing.state == state {
            return Step::Settled;
        }
        tracing::info!("task {}: its result waits for a person: {why}", task.id);
        landing.state = state;
        let stored = self.store_landing(task, &landing).await;
        if stored.is_ok() {
            self.ledger.publish(task, Some(task.state));
        }
        Step::Settled
    }
}

/// The landing a task has, or a new one.
pub(super) fn landing_of(task: &Task) -> Landing {
    task.landing
        .clone()
        .unwrap_or_else(|| Landing::waiting("", unix_millis(SystemTime::now())))
}

/// A done result in line: tested on its own, open, and not settled by the queue.
pub(super) fn waits_to_land(task: &Task) -> bool {
    let Some((_, review)) = task.open_result() else {
        return false;
    };
    let in_line = match task.landing.as_ref().map(|l| &l.state) {
        None => true,
        // Testing: a landing a restart interrupted; its branch did not move.
        Some(
            LandingState::Waiting { .. } | LandingState::Testing { .. } | LandingState::Held { .. },
        ) => true,
        Some(
            LandingState::Landed { .. }
            | LandingState::SentBack { .. }
            | LandingState::WaitsForPerson { .. },
        ) => false,
    };
    task.state == TaskState::Done && review.checks != Checks::Running && in_line
}

/// Whether `head` is one commit on top of `tip`: a fast-forward to it puts on the branch
/// only what was tested. Else the branch gets a merge commit, so that every commit in its
/// first-parent history is one the checks passed (the agent's work in progress and the
/// attempts that were sent back stay behind the merge's second parent).
async fn one_commit_on(worktree: &Worktree, tip: &str, head: &str) -> bool {
    let git = Git::at(Path::new(&worktree.repo));
    let range = format!("{tip}..{head}");
    let parent = format!("{head}^");
    let count = git.line(&["rev-list", "--count", &range]).await;
    let on_tip = git.commit_of(&parent).await.is_some_and(|p| p == tip);
    count.is_ok_and(|n| n == "1") && on_tip
}

/// Whether commits `a` and `b` have the same tree.
pub(super) async fn same_tree(git: &Git, a: &str, b: &str) -> bool {
    let tree = |c: &str| format!("{c}^{{tree}}");
    match (
        git.line(&["rev-parse", &tree(a)]).await,
        git.line(&["rev-parse", &tree(b)]).await,
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Merges the tip of `into` into the task's branch in its worktree, so its next attempt
/// starts from what it must land on. Where they conflict nothing is changed: the agent
/// merges and resolves (its prompt says so).
async fn bring_up_to(worktree: &Worktree, into: &str, tip: &str) -> Result<(), String> {
    if tip.is_empty() {
        return Ok(());
    }
    let git = Git::in_worktree(Path::new(&worktree.repo), worktree.path())
        .await
        .map_err(|e| e.to_string())?;
    let git = merge::with_identity(git).await;
    let message = format!("Merge {into} into {}", worktree.branch);
    let merged = git
        .output(&["merge", "--no-edit", "--no-verify", "-m", &message, tip])
        .await
        .map_err(|e| e.to_string())?;
    if !merged.ok() {
        let aborted = git.output(&["merge", "--abort"]).await;
        if !aborted.is_ok_and(|o| o.ok()) {
            return Err(format!(
                "bringing its branch up to {into} failed and could not be undone in {}: {}",
                worktree.path,
                merged.stderr.trim()
            ));
        }
    }
    Ok(())
}

impl From<MergeError> for LandError {
    fn from(error: MergeError) -> LandError {
        match error {
            MergeError::Moved { .. } => LandError::Moved,
            MergeError::DirtyTarget {
                into,
                worktree,
                files,
            } => LandError::Held(format!(
                "{into} is checked out in {worktree} with uncommitted changes ({}): it lands once they are committed or stashed",
                files.join(", ")
            )),
            other => LandError::Other(other.to_string()),
        }
    }
}

impl LandError {
    /// Why a person's merge of `task`'s `branch` into `into` was refused.
    pub(in crate::tasks) fn refusal(self, task: &Task, branch: &str, into: &str) -> TaskError {
        let why = match self {
            LandError::Failed(Failure::Conflicts { files, hunks }) => format!(
                "{branch} conflicts with {into} in: {}. Nothing was changed: resolve it on the task's branch (in its worktree), or discard the task. The conflicting parts:\n{hunks}",
                files.join(", ")
            ),
            LandError::Failed(failure) => format!(
                "{}. Nothing was changed: have its agent fix it, or merge it anyway with force",
                failure.for_prompt(into)
            ),
            LandError::Moved => format!(
                "{into} moved while the merged tree was tested; nothing was changed: merge again"
            ),
            LandError::Held(why) => format!("{why}. Nothing was changed"),
            LandError::Other(why) => why,
        };
        TaskError::NotAllowed(format!("task {}: {why}", task.id))
    }
}

/// Empties a landing's cargo target (off the runtime: it can hold gigabytes).
async fn remove_target(target: &Path) -> Result<(), LandError> {
    let gone = target.to_path_buf();
    let removed = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&gone) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    removed.map_err(|e| {
        LandError::Other(format!(
            "its checks' cargo target {} could not be emptied: {e}",
            target.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;

    /// Built alone: a result lines up to land only when results land by themselves, and a
    /// task goes back to its agent once more only when its landing gave up on it.
    #[tokio::test]
    async fn nothing_lines_up_by_hand_and_once_more_needs_a_landing_that_gave_up() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let lander = setting.lander(&ledger);
        let task = setting.queued_task("tidy the imports");
        lander.line_up(&task).await;
        assert!(ledger.task(&task.id).await.unwrap().landing.is_none());
        let refused = lander.once_more(task).await.unwrap_err();
        assert!(matches!(refused, TaskError::NotAllowed(_)), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("only a result that did not land"),
            "{refused}"
        );
    }
}
