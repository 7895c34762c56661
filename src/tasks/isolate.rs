//! Where a starting task's agent works: a worktree of its own for a git project (made here,
//! before the agent starts, with the agent's folder trust), or the project itself, where one
//! task at a time may run.

use std::path::Path;

use super::isolation::Isolation;
use super::service::{TaskError, Tasks};
use super::store::Task;
use super::worktree::Worktrees;
use crate::agents::trust;

impl Tasks {
    /// Why `task` would run in the project's own directory, or None when it gets a worktree.
    pub(super) async fn in_place_because(&self, task: &Task) -> Option<String> {
        if let Some(isolation) = &task.isolation {
            return match isolation {
                Isolation::InPlace { why } => Some(why.clone()),
                Isolation::Worktree(_) => None,
            };
        }
        if task.in_place {
            return Some("the task was queued with in_place".into());
        }
        if !self.config.tasks.worktrees {
            return Some("worktrees are switched off ([tasks] worktrees = false)".into());
        }
        match Worktrees::repository_of(Path::new(&task.project_path)).await {
            Some(_) => None,
            None => Some("the project is not in a git repository".into()),
        }
    }

    /// The running task that occupies `task`'s project in place, when `task` would run in
    /// place too: then it must wait.
    pub(super) async fn blocked_in_place(&self, task: &Task) -> Result<Option<Task>, TaskError> {
        if self.in_place_because(task).await.is_none() {
            return Ok(None);
        }
        for running in self.running_tasks() {
            if running.id != task.id
                && running.project_path == task.project_path
                && self.in_place_because(&running).await.is_some()
            {
                return Ok(Some(running));
            }
        }
        Ok(None)
    }

    /// Makes (or finds again, for a retry) the directory `task`'s agent works in, records it
    /// with the task, and grants the agent's folder trust to a new worktree.
    pub(super) async fn isolate(&self, task: &Task) -> Result<Isolation, TaskError> {
        let isolation = match self.in_place_because(task).await {
            Some(why) => Isolation::InPlace { why },
            None => {
                let project = Path::new(&task.project_path);
                let repo = Worktrees::repository_of(project).await.ok_or_else(|| {
                    TaskError::InvalidArgument(format!(
                        "{} is no longer in a git repository",
                        task.project_path
                    ))
                })?;
                let mut worktree = self
                    .worktrees
                    .create(
                        &task.id,
                        project,
                        &repo,
                        task.base.as_deref(),
                        &self.config.tasks.copy,
                    )
                    .await
                    .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
                let (top, dir) = (worktree.path().to_path_buf(), worktree.dir());
                let mut dirs = vec![top.as_path()];
                if dir != top {
                    dirs.push(&dir);
                }
                let trusted = trust::trust_worktree(&task.agent_kind, project, &dirs, &task.id);
                worktree.notes.push(trusted);
                Isolation::Worktree(worktree)
            }
        };
        let store = self.store()?;
        store.set_isolation(&task.id, &isolation)?;
        // An earlier attempt's result no longer says what the branch holds.
        store.clear_review(&task.id)?;
        Ok(isolation)
    }
}
