//! A task's result to review: once its agent stopped, what it left is committed on its branch
//! and the branch's diff recorded, the project's checks run on it (for a task done), and the
//! person merges it or discards it. Conflicts with the project's branch and with other tasks'
//! results are looked at whenever the task is shown; merged worktrees are removed by policy.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::Serialize;

use super::checks::Checker;
use super::clones::Clones;
use super::error::TaskError;
use super::files;
use super::isolation::{Checks, Disposition, Isolation, Review, Worktree};
use super::lander::Lander;
use super::ledger::Ledger;
use super::merge;
use super::requests::{MergeRequest, TaskRequest};
use super::state::TaskState;
use super::store::Task;
use super::worktree::{Author, Retired, Worktrees};
use crate::agents::trust;
use crate::config::Config;
use crate::git::Git;
use crate::millis::unix_millis;

/// Another task's open result that changed some of the same files.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Overlap {
    pub task_id: String,
    /// The files both changed.
    pub files: Vec<String>,
    /// The files in which the two would conflict when both are merged (empty: they merge
    /// cleanly together).
    pub conflicts: Vec<String>,
}

/// What merging the result into the project's branch would meet now.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TargetCheck {
    /// The branch the project has checked out.
    pub into: String,
    /// The files that would conflict (empty: it merges cleanly).
    pub files: Vec<String>,
}

/// Finished tasks' results: captured and checked, merged or discarded by a person, their
/// worktrees swept once merged long enough ago.
pub(super) struct Reviewer {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    worktrees: Arc<Worktrees>,
    clones: Arc<Clones>,
    checker: Arc<Checker>,
    lander: Arc<Lander>,
}

impl Reviewer {
    pub(super) fn new(
        ledger: Arc<Ledger>,
        config: Arc<Config>,
        worktrees: Arc<Worktrees>,
        clones: Arc<Clones>,
        checker: Arc<Checker>,
        lander: Arc<Lander>,
    ) -> Reviewer {
        Reviewer {
            ledger,
            config,
            worktrees,
            clones,
            checker,
            lander,
        }
    }

    /// After `id`'s agent stopped: its branch's change, then, for a task done, the project's
    /// checks on it; recorded with the task and published at each step.
    pub(super) async fn review(&self, id: &str) {
        let Ok(store) = self.ledger.store().await else {
            return;
        };
        let Ok(task) = self.ledger.task(id).await else {
            return;
        };
        let Some(Isolation::Worktree(worktree)) = &task.isolation else {
            return;
        };
        if task.review.is_some() || !task.state.is_finished() || !self.ledger.is_mine(&task) {
            return;
        }
        let brought = crate::sandbox::private_git::bring_back(
            Path::new(&worktree.repo),
            &worktree.branch,
            &files::task_dir(&self.config, &task.id).join("git"),
        )
        .await;
        let brought = brought.unwrap_or_else(|error| {
            vec![format!(
                "what the agent committed in its sandbox could not be brought back: {error}"
            )]
        });
        let author = Author::of_task(&task.id);
        let mut review = match self
            .worktrees
            .capture(worktree, &author, &commit_message(&task))
            .await
        {
            Ok(review) => review,
            Err(error) => {
                tracing::warn!("task {id}: its result could not be captured: {error}");
                return;
            }
        };
        review.notes.extend(brought);
        if task.state != TaskState::Done {
            review.checks = Checks::Skipped {
                why: format!("the task ended {}, not done", task.state),
            };
        }
        // A retry may have started while this attempt was captured: its result is not the
        // new attempt's, and a review kept for it would keep the new one from being made.
        let kept = {
            let (id, attempt, kept) = (task.id.clone(), task.clone(), review.clone());
            store.call(move |q| {
                let now = q.get(&id)?;
                let same_attempt = now.attempts == attempt.attempts
                    && now.state == attempt.state
                    && now.review.is_none();
                if same_attempt {
                    q.set_review(&id, &kept)?;
                }
                Ok(same_attempt)
            })
        };
        if !kept.await.unwrap_or(false) {
            return;
        }
        self.ledger.publish(&task, Some(task.state));
        if review.checks == Checks::Running {
            let started = SystemTime::now();
            review.checks = self.checker.run(&worktree.dir()).await;
            super::traces::checks_ended(&task, started, &review.checks);
            let (id, checked) = (task.id.clone(), review.clone());
            if store
                .call(move |q| q.set_review(&id, &checked))
                .await
                .is_ok()
            {
                self.ledger.publish(&task, Some(task.state));
            }
        }
        let task = Task {
            review: Some(review),
            ..task
        };
        self.lander.line_up(&task).await;
    }

    /// Merges finished task `req.task_id`'s branch into the project's branch; returns the
    /// task's id.
    pub(super) async fn merge(&self, req: MergeRequest) -> Result<String, TaskError> {
        let task = self.ledger.task(&req.task_id).await?;
        let (worktree, review) = reviewable(&task)?;
        if let Some(url) = &task.repository
            && self.clones.holds(Path::new(&task.project_path))
        {
            // Nobody works in a clone: a result merged there would reach no one.
            return Err(TaskError::NotAllowed(format!(
                "task {}: it worked in this host's clone of {url}, so its result goes back to that remote, not into a checkout here: push its branch (git -C {} push origin {}) and merge it where the team merges",
                task.id, worktree.repo, worktree.branch
            )));
        }
        if review.checks == Checks::Running {
            return Err(TaskError::NotAllowed(format!(
                "task {}: its checks still run; merge once they finished (task_show)",
                task.id
            )));
        }
        if let Some(failed) = review.checks.first_failed()
            && !req.force
        {
            return Err(TaskError::NotAllowed(format!(
                "task {}: its {} check failed on its own branch ({}): merged, it would make the branch red. Nothing was changed: send it back to its agent (task_retry after a cancel, or a new task), or merge it anyway with force",
                task.id, failed.tool, failed.summary
            )));
        }
        let merged = match req.force {
            true => {
                let _changing = self.worktrees.lock(Path::new(&worktree.repo)).await;
                merge::merge(
                    Path::new(&worktree.repo),
                    Path::new(&task.project_path),
                    &worktree.branch,
                    &review.head,
                    req.into.as_deref(),
                    req.strategy.unwrap_or_default(),
                    &format!("Merge task {}: {}", task.id, task.title),
                )
                .await
                .map_err(|e| TaskError::NotAllowed(format!("task {}: {e}", task.id)))?
            }
            false => {
                let into = match &req.into {
                    Some(into) => into.clone(),
                    None => Git::at(Path::new(&task.project_path))
                        .current_branch()
                        .await
                        .ok_or_else(|| {
                            TaskError::NotAllowed(format!(
                                "task {}: {}",
                                task.id,
                                merge::MergeError::NoTarget
                            ))
                        })?,
                };
                let strategy = req.strategy.unwrap_or_default();
                self.lander
                    .land_by_hand(&task, worktree, &review, &into, strategy)
                    .await
                    .map_err(|e| e.refusal(&task, &worktree.branch, &into))?
            }
        };
        self.lander
            .record_landed(&task, &review, task.landing.clone(), &merged)
            .await?;
        Ok(task.id)
    }

    /// Removes finished task `req.task_id`'s worktree and branch (what they held is thrown
    /// away: the person's choice), its folder trust and its cargo target; returns the task's
    /// id.
    pub(super) async fn discard(&self, req: TaskRequest) -> Result<String, TaskError> {
        let task = self.ledger.task(&req.task_id).await?;
        let worktree = worktree_of(&task)?;
        if let Some(Review {
            disposition: Disposition::Discarded { .. },
            ..
        }) = &task.review
        {
            return Err(TaskError::NotAllowed(format!(
                "task {} was discarded already",
                task.id
            )));
        }
        let last = self
            .worktrees
            .discard(worktree)
            .await
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        self.forget_worktree(&task, worktree).await;
        let commit = last.unwrap_or_else(|| worktree.base_sha.clone());
        let disposition = Disposition::Discarded {
            commit: commit.clone(),
            at_ms: unix_millis(SystemTime::now()),
        };
        let review = match task.review.clone() {
            Some(
                mut review @ Review {
                    disposition: Disposition::Merged { .. },
                    ..
                },
            ) => {
                review
                    .notes
                    .push("its worktree and branch were removed after its merge".into());
                review
            }
            Some(review) => Review {
                disposition,
                ..review
            },
            None => Review {
                head: commit,
                base: worktree.base_sha.clone(),
                committed_for_agent: false,
                commits: 0,
                files: Vec::new(),
                insertions: 0,
                deletions: 0,
                diff: String::new(),
                diff_cut: false,
                checks: Checks::Skipped {
                    why: "discarded before it was reviewed".into(),
                },
                disposition,
                notes: Vec::new(),
            },
        };
        let (id, kept) = (task.id.clone(), review.clone());
        self.ledger
            .persistently(move |q| q.set_review(&id, &kept))
            .await?;
        self.ledger.publish(&task, Some(task.state));
        Ok(task.id)
    }

    /// The folder trust and cargo target of a worktree that is gone.
    async fn forget_worktree(&self, task: &Task, worktree: &Worktree) {
        let (top, dir) = (worktree.path().to_path_buf(), worktree.dir());
        trust::withdraw(&[top.as_path(), dir.as_path()], &task.id).await;
        if let Some(target) = self.config.task_dirs().cargo_target_for(&dir)
            && target.ends_with(&task.id)
        {
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(target)).await;
        }
    }

    /// What `task`'s open result would meet: the project's branch (conflicting files, if
    /// any), and other tasks' open results that changed the same files.
    pub(super) async fn conflicts(&self, task: &Task) -> (Option<TargetCheck>, Vec<Overlap>) {
        let Some((worktree, review)) = task.open_result() else {
            return (None, Vec::new());
        };
        let repo = Path::new(&worktree.repo);
        let target = match Git::at(Path::new(&task.project_path))
            .current_branch()
            .await
        {
            Some(into) => match Git::at(repo).commit_of(&format!("refs/heads/{into}")).await {
                Some(head) => merge::conflicts(repo, &head, &review.head)
                    .await
                    .ok()
                    .map(|files| TargetCheck { into, files }),
                None => None,
            },
            None => None,
        };
        let mut overlaps = Vec::new();
        let others = self.ledger.all_tasks().await;
        for other in others.iter().filter(|o| o.id != task.id) {
            let Some((theirs, their_review)) = other.open_result() else {
                continue;
            };
            let files = review.shared_files(their_review);
            if theirs.repo != worktree.repo || files.is_empty() {
                continue;
            }
            let conflicts = merge::conflicts(repo, &review.head, &their_review.head)
                .await
                .unwrap_or_default();
            overlaps.push(Overlap {
                task_id: other.id.clone(),
                files,
                conflicts,
            });
        }
        (target, overlaps)
    }

    /// Removes the worktrees of tasks merged longer ago than `[tasks] keep_merged_days`
    /// (never one with uncommitted changes, never an unmerged one).
    pub(super) async fn sweep(&self) {
        let keep = self.config.tasks.keep_merged;
        let now = unix_millis(SystemTime::now());
        let tasks = self.ledger.all_tasks().await;
        for task in tasks.into_iter().filter(|task| self.ledger.is_mine(task)) {
            let (Some(Isolation::Worktree(worktree)), Some(review)) =
                (&task.isolation, &task.review)
            else {
                continue;
            };
            let Disposition::Merged { commit, at_ms, .. } = &review.disposition else {
                continue;
            };
            let old = Duration::from_millis(now.saturating_sub(*at_ms)) >= keep;
            if !old || !worktree.path().exists() {
                continue;
            }
            match self.worktrees.retire(worktree, commit).await {
                Ok(Retired::Removed) => {
                    self.forget_worktree(&task, worktree).await;
                    tracing::info!("task {}: its merged worktree was removed", task.id);
                }
                Ok(Retired::Kept(why)) => tracing::info!("task {}: {why}", task.id),
                Err(error) => tracing::warn!("task {}: removing its worktree: {error}", task.id),
            }
        }
    }
}

/// The worktree of a finished task.
fn worktree_of(task: &Task) -> Result<&Worktree, TaskError> {
    if !task.state.is_finished() {
        return Err(TaskError::NotAllowed(format!(
            "task {} is {}: cancel it first, or wait until it ends",
            task.id, task.state
        )));
    }
    match &task.isolation {
        Some(Isolation::Worktree(worktree)) => Ok(worktree),
        Some(Isolation::InPlace { .. }) | None => Err(TaskError::NotAllowed(format!(
            "task {} ran in the project itself, not in a worktree: its changes are in {} already",
            task.id, task.project_path
        ))),
    }
}

/// The worktree and the open result of a finished task.
fn reviewable(task: &Task) -> Result<(&Worktree, Review), TaskError> {
    let worktree = worktree_of(task)?;
    let review = task.review.clone().ok_or_else(|| {
        TaskError::NotAllowed(format!(
            "task {}: its result is still being captured; try again in a moment",
            task.id
        ))
    })?;
    match &review.disposition {
        Disposition::Open => Ok((worktree, review)),
        Disposition::Merged { into, .. } => Err(TaskError::NotAllowed(format!(
            "task {} was merged into {into} already",
            task.id
        ))),
        Disposition::Discarded { .. } => Err(TaskError::NotAllowed(format!(
            "task {} was discarded: there is nothing to merge",
            task.id
        ))),
    }
}

/// The commit message of what drydock commits for a task: its title, then the agent's
/// summary.
fn commit_message(task: &Task) -> String {
    let title = task.title.split_whitespace().collect::<Vec<_>>().join(" ");
    match &task.summary {
        Some(summary) => format!("{title}\n\n{summary}\n\ndrydock task {}", task.id),
        None => format!("{title}\n\ndrydock task {} ({})", task.id, task.state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;

    /// Built alone: a task that has not ended has no result to merge or discard, and asking
    /// changes nothing.
    #[tokio::test]
    async fn a_task_that_has_not_ended_is_neither_merged_nor_discarded() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let reviewer = setting.reviewer(&ledger);
        let task = setting.queued_task("tidy the imports");
        let merge: MergeRequest =
            serde_json::from_value(serde_json::json!({"task_id": task.id})).unwrap();
        let refused = reviewer.merge(merge).await.unwrap_err();
        let said = format!(
            "task {} is queued: cancel it first, or wait until it ends",
            task.id
        );
        assert_eq!(refused.to_string(), said);
        let discard = TaskRequest {
            task_id: task.id.clone(),
        };
        assert_eq!(
            reviewer.discard(discard).await.unwrap_err().to_string(),
            said
        );
        assert_eq!(ledger.task(&task.id).await.unwrap(), task);
    }
}
