//! Where a task's files live under the data directory. This is the layout's one owner: the
//! tasks make their worktrees where it says, and a build finds a worktree's cargo target
//! through it.

use std::path::{Path, PathBuf};

use crate::digest::folder_name;

use super::CargoTarget;

/// `<data dir>/worktrees/<repository's name>-<hash of its path>/<task id>` for worktrees,
/// `<data dir>/task-targets/<task id>` (or `shared`) for their cargo targets, and
/// `<data dir>/clones` for a host's clones of tasks' remotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDirs {
    data_dir: PathBuf,
    cargo_target: CargoTarget,
}

impl TaskDirs {
    pub fn new(data_dir: &Path, cargo_target: CargoTarget) -> TaskDirs {
        TaskDirs {
            data_dir: data_dir.to_path_buf(),
            cargo_target,
        }
    }

    /// Where every task's worktree is made.
    pub fn worktrees(&self) -> PathBuf {
        self.data_dir.join("worktrees")
    }

    /// Where this host keeps its clones of tasks' git remotes.
    pub fn clones(&self) -> PathBuf {
        self.data_dir.join("clones")
    }

    /// The scratch worktree where the landing queue checks what merging into branch `into`
    /// of `repo` makes.
    pub fn landing_worktree(&self, repo: &Path, into: &str) -> PathBuf {
        let name: String = into
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                    true => c,
                    false => '-',
                },
            )
            .collect();
        self.worktree(repo, &format!("{LANDING_PREFIX}{name}"))
    }

    /// The worktree of task `task` on the repository at `repo`.
    pub fn worktree(&self, repo: &Path, task: &str) -> PathBuf {
        let name = repo
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = repo.display().to_string();
        self.worktrees().join(folder_name(&name, &key)).join(task)
    }

    /// The top of the task's worktree that `dir` is (in), if it is in one, and the task's id.
    pub fn worktree_of(&self, dir: &Path) -> Option<(PathBuf, String)> {
        let worktrees = self.worktrees();
        let worktrees = worktrees.canonicalize().unwrap_or(worktrees);
        let mut inside = dir.strip_prefix(&worktrees).ok()?.components();
        let (repository, task) = (inside.next()?, inside.next()?);
        let top = worktrees.join(repository).join(task);
        Some((top, task.as_os_str().to_string_lossy().into_owned()))
    }

    /// The cargo target directory of a build in `dir`, when it is (in) a task's worktree:
    /// outside the worktree (so nothing built is ever committed), the task's own or the
    /// shared one as `[tasks] cargo_target` says.
    pub fn cargo_target_for(&self, dir: &Path) -> Option<PathBuf> {
        let (_, task) = self.worktree_of(dir)?;
        let targets = self.data_dir.join("task-targets");
        // A landing's checks never share a target with the tasks whose results they judge.
        Some(match self.cargo_target {
            CargoTarget::Shared if !task.starts_with(LANDING_PREFIX) => targets.join("shared"),
            _ => targets.join(task),
        })
    }
}

/// How a landing's scratch worktree is named among the tasks' (whose ids are hex).
const LANDING_PREFIX: &str = "landing-";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_is_found_again_with_its_task_and_cargo_target() {
        let data = tempfile::tempdir().unwrap();
        let data = data.path().canonicalize().unwrap();
        let dirs = TaskDirs::new(&data, CargoTarget::PerTask);
        let tree = dirs.worktree(Path::new("/src/my app"), "t7");
        assert!(tree.starts_with(data.join("worktrees")));
        assert_eq!(tree.file_name().unwrap(), "t7");

        let (top, task) = dirs.worktree_of(&tree.join("crates/core")).unwrap();
        assert_eq!((top, task.as_str()), (tree.clone(), "t7"));
        assert_eq!(
            dirs.cargo_target_for(&tree.join("crates/core")),
            Some(data.join("task-targets/t7"))
        );
        let shared = TaskDirs::new(&data, CargoTarget::Shared);
        assert_eq!(
            shared.cargo_target_for(&tree),
            Some(data.join("task-targets/shared"))
        );
        // Issue 48: a landing's checks build in a target of their own, even where tasks share.
        let landing = shared.landing_worktree(Path::new("/src/my app"), "release/1.x");
        assert!(
            landing.ends_with("landing-release-1.x"),
            "{}",
            landing.display()
        );
        assert_eq!(
            shared.cargo_target_for(&landing),
            Some(data.join("task-targets/landing-release-1.x"))
        );

        assert_eq!(dirs.worktree_of(&data.join("worktrees")), None);
        assert_eq!(dirs.worktree_of(&data.join("worktrees/repo-abc")), None);
        assert_eq!(dirs.cargo_target_for(Path::new("/src/my app")), None);
    }
}
