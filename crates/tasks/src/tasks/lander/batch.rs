//! Several results of one branch tested at once, bors-style: each merged in turn onto the
//! tip, the lot under one merge commit whose parents are the tip and every result, so the
//! branch's first-parent history stays a line of tested commits. A red batch is split in
//! halves, each tested on its own, until the result that broke it is alone: that one is
//! sent back like any result tested alone.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::{LandError, Lander, Step, landing_of, waits_to_land};
use crate::config::LandWith;
use crate::git::Git;
use crate::millis::unix_millis;
use crate::tasks::isolation::Checks;
use crate::tasks::landing::LandingState;
use crate::tasks::merge::Candidate;
use crate::tasks::merge::{self, Merged};
use crate::tasks::store::Task;
use crate::tasks::traces;

/// What became of a batch.
enum Batch {
    /// It landed, every result in it.
    Landed,
    /// Red: its halves are tried on their own.
    Split,
    /// These results go one at a time: their batch could not be made or tested.
    OneByOne,
    /// These merge with the tip but `alone` do not (conflicts, or in it already): the batch
    /// is tried again without them, and they go alone after it.
    Without {
        together: Vec<Task>,
        alone: Vec<Task>,
    },
    /// The branch cannot advance now: the lane waits.
    Held,
    /// The branch moved during the test: the next pass tests again.
    Moved,
}

impl Lander {
    /// Lands `waiting`, one branch's results in the order they were done:
    /// `[tasks] land_batch` at a time where their own checks passed, one at a time where
    /// they did not (those go back to their agents).
    pub(super) async fn land_lane(self: &Arc<Self>, waiting: Vec<Task>, stop: &CancellationToken) {
        // Rebased results go one at a time: each replayed onto the tip the one before made.
        let batch = match self.config.tasks.landing.with {
            LandWith::Merge => self.config.tasks.landing.batch,
            LandWith::Rebase => 1,
        };
        let mut groups = groups(waiting, batch);
        // Once the branch cannot move, green results wait behind the held one; a red one
        // still goes back to its agent.
        let mut held = false;
        while let Some(mut group) = groups.pop_front() {
            if stop.is_cancelled() {
                return;
            }
            let green = group[0]
                .open_result()
                .is_some_and(|(_, review)| review.checks.are_green());
            if green && let Some((into, why)) = self.held_back(&group[0]).await {
                // Nothing is tested while the branch cannot move.
                for task in &group {
                    self.hold(task, landing_of(task), &into, why.clone()).await;
                }
                held = true;
                continue;
            }
            if green && held {
                continue;
            }
            let started = SystemTime::now();
            if group.len() == 1 {
                held |= matches!(self.land(&group[0]).await, Step::Held);
                self.trace_landings(&group, started).await;
                continue;
            }
            let batch = self.land_together(&group).await;
            self.trace_landings(&group, started).await;
            match batch {
                Batch::Landed => {}
                Batch::Split => {
                    let second = group.split_off(group.len() / 2);
                    groups.push_front(second);
                    groups.push_front(group);
                }
                Batch::OneByOne => {
                    for task in group.into_iter().rev() {
                        groups.push_front(vec![task]);
                    }
                }
                Batch::Without { together, alone } => {
                    for task in alone.into_iter().rev() {
                        groups.push_front(vec![task]);
                    }
                    groups.push_front(together);
                }
                Batch::Held => held = true,
                Batch::Moved => {
                    self.wake();
                    return;
                }
            }
        }
    }

    /// Each of `group`'s landing pass since `started`, in its task's trace.
    async fn trace_landings(&self, group: &[Task], started: SystemTime) {
        if !crate::telemetry::on() {
            return;
        }
        for task in group {
            if let Ok(now) = self.ledger.task(&task.id).await {
                traces::landing_ended(&now, started);
                traces::task_so_far(&now);
            }
        }
    }

    /// `group` merged onto its branch's tip under one merge commit, tested, and landed.
    async fn land_together(self: &Arc<Self>, group: &[Task]) -> Batch {
        let _testing = self.testing.lock().await;
        // A person may have merged or discarded one meanwhile.
        let mut tasks = Vec::with_capacity(group.len());
        for task in group {
            if let Ok(task) = self.ledger.task(&task.id).await
                && waits_to_land(&task)
            {
                tasks.push(task);
            }
        }
        if tasks.len() < 2 {
            return Batch::OneByOne;
        }
        let Some(worktree) = tasks[0].open_result().map(|(w, _)| w.clone()) else {
            return Batch::OneByOne;
        };
        let repo = Path::new(&worktree.repo);
        let git = Git::at(repo);
        let Ok(into) = worktree
            .landing_branch(Path::new(&tasks[0].project_path))
            .await
        else {
            return Batch::OneByOne;
        };
        let Some(tip) = git.commit_of(&format!("refs/heads/{into}")).await else {
            return Batch::OneByOne;
        };

        let (mut merged, mut together, mut alone) = (tip.clone(), Vec::new(), Vec::new());
        for task in tasks {
            let head = &task.open_result().expect("waits to land").1.head;
            match Candidate::of(repo, &merged, head, true, "a step of a batch").await {
                Ok(Candidate::Merge(commit)) => {
                    merged = commit;
                    together.push(task);
                }
                Ok(_) => alone.push(task),
                Err(error) => {
                    tracing::warn!("task {}: merging it into a batch: {error}", task.id);
                    alone.push(task);
                }
            }
        }
        if !alone.is_empty() {
            return match together.len() {
                0 | 1 => Batch::OneByOne,
                _ => Batch::Without { together, alone },
            };
        }
        let Ok(commit) = octopus(&git, &tip, &merged, &together).await else {
            return Batch::OneByOne;
        };

        let ids: Vec<String> = together.iter().map(|t| t.id.clone()).collect();
        for task in &together {
            let others = ids.iter().filter(|id| **id != task.id).cloned().collect();
            self.set_testing(task, &into, &tip, &commit, others).await;
        }
        tracing::info!(
            "testing {} results together on {into}: {}",
            together.len(),
            ids.join(", ")
        );
        match self.test_merged(&worktree, &into, &commit).await {
            Ok(Checks::Done { results }) if results.iter().all(|r| r.is_green()) => {}
            Ok(Checks::Done { .. }) => {
                tracing::info!("the batch {} is red: its halves are tested", ids.join(", "));
                return Batch::Split;
            }
            Ok(_) | Err(_) => return Batch::OneByOne,
        }
        match self.advance(repo, &into, &tip, &commit).await {
            Ok(()) => {}
            Err(LandError::Moved) => return Batch::Moved,
            Err(LandError::Held(why)) => {
                for task in &together {
                    self.hold(task, landing_of(task), &into, why.clone()).await;
                }
                return Batch::Held;
            }
            Err(_) => return Batch::OneByOne,
        }
        let merged = Merged {
            into: into.clone(),
            commit,
            how: "merged_together",
        };
        tracing::info!(
            "landed {} results together on {into} at {}",
            together.len(),
            merged.commit
        );
        for task in &together {
            let (_, review) = task.open_result().expect("waits to land");
            if let Err(error) = self
                .record_landed(task, review, Some(landing_of(task)), &merged)
                .await
            {
                tracing::warn!(
                    "task {}: its landing could not be recorded: {error}",
                    task.id
                );
            }
        }
        Batch::Landed
    }

    async fn set_testing(
        &self,
        task: &Task,
        into: &str,
        tip: &str,
        merged: &str,
        together: Vec<String>,
    ) {
        let mut landing = landing_of(task);
        landing.state = LandingState::Testing {
            into: into.to_string(),
            tip: tip.to_string(),
            merged: merged.to_string(),
            since_ms: unix_millis(SystemTime::now()),
            together,
        };
        if self.store_landing(task, &landing).await.is_ok() {
            self.ledger.publish(task, Some(task.state));
        }
    }
}

/// `waiting` in order, in groups: runs of up to `batch` results whose own checks passed and
/// that build in the same folder of the repository, and each other result alone.
fn groups(waiting: Vec<Task>, batch: usize) -> VecDeque<Vec<Task>> {
    let mut groups: VecDeque<Vec<Task>> = VecDeque::new();
    let mut run: Vec<Task> = Vec::new();
    for task in waiting {
        let green = task
            .open_result()
            .is_some_and(|(_, review)| review.checks.are_green());
        let fits = run.first().is_none_or(|first| same_folder(first, &task));
        if green && batch > 1 && fits && run.len() < batch {
            run.push(task);
            continue;
        }
        if !run.is_empty() {
            groups.push_back(std::mem::take(&mut run));
        }
        match green && batch > 1 {
            true => run.push(task),
            false => groups.push_back(vec![task]),
        }
    }
    if !run.is_empty() {
        groups.push_back(run);
    }
    groups
}

/// Whether `a` and `b` are the same project of one repository (their checks run in the same
/// folder of the merged tree).
fn same_folder(a: &Task, b: &Task) -> bool {
    let below = |task: &Task| {
        task.open_result().map(|(worktree, _)| {
            let dir = worktree.dir();
            dir.strip_prefix(worktree.path())
                .map(Path::to_path_buf)
                .ok()
        })
    };
    below(a) == below(b)
}

/// One merge commit of `tip` and every result of `together`, with the tree of `merged`
/// (them merged in turn).
async fn octopus(git: &Git, tip: &str, merged: &str, together: &[Task]) -> Result<String, ()> {
    let tree = git
        .line(&["rev-parse", &format!("{merged}^{{tree}}")])
        .await
        .map_err(drop)?;
    let titles: Vec<String> = together
        .iter()
        .map(|t| format!("- task {}: {}", t.id, t.title))
        .collect();
    let message = format!(
        "Merge {} tasks, tested together\n\n{}",
        together.len(),
        titles.join("\n")
    );
    let mut args = vec!["commit-tree".to_string(), tree, "-p".into(), tip.into()];
    for task in together {
        let (_, review) = task.open_result().expect("waits to land");
        args.extend(["-p".into(), review.head.clone()]);
    }
    args.extend(["-m".into(), message]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    merge::with_identity(git.clone())
        .await
        .line(&args)
        .await
        .map_err(drop)
}
