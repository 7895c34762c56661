//! Where a starting task's agent works: a worktree of its own for a git project (made here,
//! before the agent starts, with the agent's folder trust), or the project itself, where one
//! task at a time may run.

use std::path::{Path, PathBuf};

use super::clones;
use super::isolation::Isolation;
use super::store::Task;
use super::worktree::Worktrees;
use super::{TaskError, Tasks};
use crate::agents::trust;
use crate::toolchain::warm_start;

/// Where a task is to work, before its worktree is made.
enum Placement {
    /// In a worktree of the repository at this path.
    Worktree(PathBuf),
    /// In the project itself, for this reason.
    InPlace(String),
}

impl Tasks {
    /// Where `task` works.
    async fn placement(&self, task: &Task) -> Placement {
        let in_place = |why: &str| Placement::InPlace(why.to_string());
        match &task.isolation {
            Some(Isolation::InPlace { why, .. }) => return in_place(why),
            Some(Isolation::Worktree(worktree)) => {
                return Placement::Worktree(PathBuf::from(&worktree.repo));
            }
            None => {}
        }
        if task.in_place {
            return in_place("the task was queued with in_place");
        }
        if !self.config.tasks.worktrees {
            return in_place("worktrees are switched off ([tasks] worktrees = false)");
        }
        match Worktrees::repository_of(Path::new(&task.project_path)).await {
            Some(repo) => Placement::Worktree(repo),
            None => in_place("the project is not in a git repository"),
        }
    }

    /// The running task that occupies `task`'s project in place, when `task` would run in
    /// place too: then it must wait.
    pub(super) async fn blocked_in_place(&self, task: &Task) -> Result<Option<Task>, TaskError> {
        if let Placement::Worktree(_) = self.placement(task).await {
            return Ok(None);
        }
        for running in self.running_tasks().await {
            if running.id != task.id
                && running.project_path == task.project_path
                && matches!(self.placement(&running).await, Placement::InPlace(_))
            {
                return Ok(Some(running));
            }
        }
        Ok(None)
    }

    /// Clones `task`'s remote, or brings the clone up to date, when the task works in this
    /// host's clone of it.
    pub(super) async fn update_clone(&self, task: &Task) -> Result<(), TaskError> {
        let Some(url) = &task.repository else {
            return Ok(());
        };
        if !self.clones.holds(Path::new(&task.project_path)) {
            return Ok(());
        }
        self.clones
            .ensure(url)
            .await
            .map(drop)
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))
    }

    /// Makes (or finds again, for a retry) the directory `task`'s agent works in, records it
    /// with the task, and grants the agent's folder trust to a new worktree.
    pub(super) async fn isolate(&self, task: &Task) -> Result<Isolation, TaskError> {
        let isolation = match self.placement(task).await {
            Placement::InPlace(why) => Isolation::InPlace {
                why,
                confinement: None,
            },
            Placement::Worktree(repo) => {
                let project = Path::new(&task.project_path);
                let in_clone = self.clones.holds(project);
                let base = match &task.base {
                    Some(base) if in_clone => Some(clones::base_in(&repo, base).await),
                    base => base.clone(),
                };
                // A worktree of an earlier attempt keeps its own build output.
                let earlier =
                    matches!(&task.isolation, Some(Isolation::Worktree(w)) if w.path().is_dir());
                let mut worktree = self
                    .worktrees
                    .create(
                        &task.id,
                        task.epoch,
                        project,
                        &repo,
                        base.as_deref(),
                        &self.config.tasks.copy,
                    )
                    .await
                    .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
                let (top, dir) = (worktree.path().to_path_buf(), worktree.dir());
                if !earlier && self.config.tasks.warm_start {
                    // Only a target of the task's own is seeded: a shared one is warm already.
                    let target = self.config.task_dirs().cargo_target_for(&dir);
                    let own = target.filter(|target| target.ends_with(&task.id));
                    let limit = self.config.tasks.warm_start_limit;
                    let warmed = warm_start::warm(project, &dir, own.as_deref(), limit).await;
                    worktree.notes.push(warmed.note());
                }
                let mut dirs = vec![top.as_path()];
                if dir != top {
                    dirs.push(&dir);
                }
                if in_clone && let Err(why) = trust::vouch(&task.agent_kind, project).await {
                    worktree.notes.push(why.to_string());
                }
                let trusted =
                    trust::trust_worktree(&task.agent_kind, project, &dirs, &task.id).await;
                worktree.notes.push(trusted);
                Isolation::Worktree(worktree)
            }
        };
        self.persistently(|store| async {
            store.set_isolation(&task.id, &isolation).await?;
            // An earlier attempt's result no longer says what the branch holds.
            store.clear_review(&task.id).await
        })
        .await?;
        Ok(isolation)
    }
}
