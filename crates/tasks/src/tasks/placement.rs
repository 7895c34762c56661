//! Where a starting task's agent works: a worktree of its own for a git project (made here,
//! before the agent starts, with the agent's folder trust), or the project itself, where one
//! task at a time may run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::clones::{self, Clones};
use super::error::TaskError;
use super::isolation::Isolation;
use super::ledger::Ledger;
use super::remote_url;
use super::requests::NewTaskRequest;
use super::store::Task;
use super::worktree::Worktrees;
use crate::agents::{Agents, trust};
use crate::config::Config;
use crate::git::Git;
use crate::toolchain::warm_start;
use crate::workspace::{PathArgument, Workspace};

/// Where a task is to work, before its worktree is made.
enum Site {
    /// In a worktree of the repository at this path.
    Worktree(PathBuf),
    /// In the project itself, for this reason.
    InPlace(String),
}

/// Where tasks work on this host: which it can run, in which project, in a worktree of
/// their own or in place.
pub(super) struct Placement {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    agents: Arc<Agents>,
    workspace: Workspace,
    worktrees: Arc<Worktrees>,
    clones: Arc<Clones>,
}

impl Placement {
    pub(super) fn new(
        ledger: Arc<Ledger>,
        config: Arc<Config>,
        agents: Arc<Agents>,
        worktrees: Arc<Worktrees>,
        clones: Arc<Clones>,
    ) -> Placement {
        Placement {
            workspace: Workspace::new(config.allowed_roots.clone()),
            ledger,
            config,
            agents,
            worktrees,
            clones,
        }
    }

    /// Where `task` works.
    async fn site(&self, task: &Task) -> Site {
        let in_place = |why: &str| Site::InPlace(why.to_string());
        match &task.isolation {
            Some(Isolation::InPlace { why, .. }) => return in_place(why),
            Some(Isolation::Worktree(worktree)) => {
                return Site::Worktree(PathBuf::from(&worktree.repo));
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
            Some(repo) => Site::Worktree(repo),
            None => in_place("the project is not in a git repository"),
        }
    }

    /// The running task that occupies `task`'s project in place, when `task` would run in
    /// place too: then it must wait.
    pub(super) async fn blocked_in_place(&self, task: &Task) -> Result<Option<Task>, TaskError> {
        if let Site::Worktree(_) = self.site(task).await {
            return Ok(None);
        }
        for running in self.ledger.running_tasks().await {
            if running.id != task.id
                && running.project_path == task.project_path
                && matches!(self.site(&running).await, Site::InPlace(_))
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
        let isolation = match self.site(task).await {
            Site::InPlace(why) => Isolation::InPlace {
                why,
                confinement: None,
            },
            Site::Worktree(repo) => {
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
        let (id, placed) = (task.id.clone(), isolation.clone());
        self.ledger
            .persistently(move |q| {
                q.set_isolation(&id, &placed)?;
                // An earlier attempt's result no longer says what the branch holds.
                q.clear_review(&id)
            })
            .await?;
        Ok(isolation)
    }

    /// Whether this host can run `task`: on a shared queue, its project is here and its
    /// agent's CLI is installed (on a machine's own queue `task_add` checked both, and a
    /// start that fails says why).
    pub(super) fn can_run(&self, task: &Task) -> bool {
        !self.ledger.host().shared
            || (self.project_here(task).is_some()
                && self.agents.launchable_profile(&task.agent_kind).is_ok())
    }

    /// `task`'s project on this host: its path, when it lies inside this host's allowed
    /// roots, else the directory its place names below this host's root of that name, else
    /// this host's clone of its remote (made when the task starts), if it may clone it.
    pub(super) fn project_here(&self, task: &Task) -> Option<PathBuf> {
        self.workspace
            .resolve_dir(PathArgument::ProjectPath, &task.project_path)
            .ok()
            .or_else(|| self.workspace.find_place(task.place.as_ref()?))
            .or_else(|| {
                let url = task.repository.as_ref()?;
                self.why_not_clone(url)
                    .is_none()
                    .then(|| self.clones.dir_of(url))?
            })
    }

    /// Why this host would not run a task from remote `url` in a clone of its own.
    fn why_not_clone(&self, url: &str) -> Option<String> {
        if self.clones.dir_of(url).is_none() {
            return Some(format!("repository: {}", self.clones.refusal(url)));
        }
        (!self.config.tasks.worktrees).then(|| {
            "repository: a task from a remote works in a worktree of this host's clone, and worktrees are switched off here ([tasks] worktrees = false)".to_string()
        })
    }

    /// A new task's project here and its remote, one of them at least. A remote with a
    /// project must be one of the project's; a remote alone must be one this host may clone,
    /// unless the queue is shared (another host may).
    pub(super) async fn project_of(
        &self,
        req: &NewTaskRequest,
    ) -> Result<(Option<PathBuf>, Option<String>), TaskError> {
        let repository = req
            .repository
            .as_deref()
            .map(remote_url::check_url)
            .transpose()
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        let project = req
            .project_path
            .as_deref()
            .map(|path| self.workspace.resolve_dir(PathArgument::ProjectPath, path))
            .transpose()
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        let refusal = match (&project, &repository) {
            (None, None) => Some(
                "project_path: give the project (a directory inside the allowed roots), or repository (a git remote a host clones)".to_string(),
            ),
            (Some(project), Some(url)) => {
                let remotes = Git::at(project).remote_urls().await;
                (!remotes.contains(url)).then(|| {
                    format!(
                        "repository: {url} is not a remote of {} (its remotes: {})",
                        project.display(),
                        match remotes.is_empty() {
                            true => "none".to_string(),
                            false => remotes.join(", "),
                        }
                    )
                })
            }
            (None, Some(_)) if req.in_place == Some(true) => Some(
                "in_place: a task from a remote works in a worktree of a host's clone, never in the clone itself".to_string(),
            ),
            (None, Some(url)) if !self.ledger.host().shared => self.why_not_clone(url),
            _ => None,
        };
        match refusal {
            Some(why) => Err(TaskError::InvalidArgument(why)),
            None => Ok((project, repository)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;
    use crate::tasks::requests::NewTaskRequest;

    /// Built alone: a task of a project outside git works in the project itself, and that
    /// is recorded with it; a new task that names neither a project nor a remote is refused.
    #[tokio::test]
    async fn a_project_outside_git_is_worked_in_place_and_a_task_needs_a_project() {
        let setting = Setting::new("");
        let ledger = setting.ledger();
        let placement = setting.placement(&ledger);
        let task = setting.queued_task("tidy the imports");
        assert!(placement.can_run(&task));
        assert_eq!(placement.project_here(&task), Some(setting.project()));

        let isolation = placement.isolate(&task).await.unwrap();
        let Isolation::InPlace { why, .. } = &isolation else {
            panic!("in place: {isolation:?}");
        };
        assert_eq!(why, "the project is not in a git repository");
        assert_eq!(
            ledger.task(&task.id).await.unwrap().isolation,
            Some(isolation)
        );

        let nowhere: NewTaskRequest =
            serde_json::from_value(serde_json::json!({"title": "somewhere"})).unwrap();
        let refused = placement.project_of(&nowhere).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("project_path: give the project"),
            "{refused}"
        );
    }
}
