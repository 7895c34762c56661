//! The MCP tokens of running tasks: the agent on a task gets a token of its own, that may call
//! `task_complete` for that task, the build and docs tools in the task's own directory (its
//! worktree), and nothing else.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A path a task's agent gave that its token does not reach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutsideScope {
    #[error(
        "project_path `{raw}` is outside the directory of task {task}: its agent's token works in {dir} only (the project's own path, {project}, means it too)"
    )]
    Outside {
        raw: String,
        task: String,
        dir: String,
        project: String,
    },
    #[error("project_path `{raw}` does not exist in {dir}")]
    Missing { raw: String, dir: String },
}

/// Whose token a request carried: a task's agent, limited to that task and its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskScope {
    pub task_id: String,
    /// The claim of the task its agent runs under.
    pub claim: i64,
    /// The project the task was queued on.
    pub project: PathBuf,
    /// Where its agent works: its worktree's copy of the project, or the project itself.
    pub dir: PathBuf,
}

impl TaskScope {
    /// `raw`, a project path the agent gave, as a path inside the task's directory: the
    /// project's own path (or a folder of it) means the same folder of the task's worktree,
    /// and a relative path is taken from the task's directory. Anything else is refused.
    pub fn confine(&self, raw: &str) -> Result<String, OutsideScope> {
        let given = Path::new(raw);
        let path = match given.strip_prefix(&self.project) {
            Ok(rest) => self.dir.join(rest),
            Err(_) if given.is_relative() => self.dir.join(given),
            Err(_) => given.to_path_buf(),
        };
        let dir = self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone());
        let outside = || OutsideScope::Outside {
            raw: raw.to_string(),
            task: self.task_id.clone(),
            dir: dir.display().to_string(),
            project: self.project.display().to_string(),
        };
        let resolved = path
            .canonicalize()
            .map_err(|_| match path.starts_with(&self.dir) {
                true => OutsideScope::Missing {
                    raw: raw.to_string(),
                    dir: dir.display().to_string(),
                },
                false => outside(),
            })?;
        match resolved.starts_with(&dir) {
            true => Ok(resolved.display().to_string()),
            false => Err(outside()),
        }
    }
}

impl TaskScope {
    /// `raw`, a project path the agent gave to a tool that knows projects but not tasks'
    /// directories (the docs), as the same folder of the task's project: inside the task's
    /// directory as [`TaskScope::confine`] says, then taken back to the project.
    pub fn confine_to_project(&self, raw: &str) -> Result<String, OutsideScope> {
        let inside = PathBuf::from(self.confine(raw)?);
        let dir = canonical(&self.dir);
        let project = canonical(&self.project);
        let path = match inside.strip_prefix(&dir) {
            Ok(rest) if !rest.as_os_str().is_empty() => project.join(rest),
            _ => project,
        };
        Ok(path.display().to_string())
    }

    /// Whose memory a history search of the agent reads: the project's own (nothing given,
    /// or the project's path) or its directory's (inside it as [`TaskScope::confine`] says).
    pub fn memory_of(&self, raw: Option<&str>) -> Result<String, OutsideScope> {
        let project = canonical(&self.project);
        match raw {
            None => Ok(project.display().to_string()),
            Some(raw) if Path::new(raw).canonicalize().ok() == Some(project.clone()) => {
                Ok(project.display().to_string())
            }
            Some(raw) => self.confine(raw),
        }
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Tokens by value, shared by the task queue (which issues them) and the HTTP guard (which
/// reads them).
#[derive(Clone, Default)]
pub struct TaskTokens(Arc<Mutex<HashMap<String, TaskScope>>>);

impl TaskTokens {
    /// A new token for `scope`'s task (any earlier one of the task is withdrawn).
    pub fn issue(&self, scope: TaskScope) -> String {
        let token = crate::private::random_hex(16);
        self.restore(&token, scope);
        token
    }

    /// Honours `token` for `scope`'s task again (a task adopted after a restart).
    pub fn restore(&self, token: &str, scope: TaskScope) {
        let mut tokens = self.0.lock().expect("tokens lock");
        tokens.retain(|_, held| held.task_id != scope.task_id);
        tokens.insert(token.to_string(), scope);
    }

    pub fn revoke(&self, task_id: &str) {
        self.0
            .lock()
            .expect("tokens lock")
            .retain(|_, scope| scope.task_id != task_id);
    }

    /// The claim of task `task_id` whose agent holds a token here, if one does.
    pub fn claim_of(&self, task_id: &str) -> Option<i64> {
        let tokens = self.0.lock().expect("tokens lock");
        tokens
            .values()
            .find(|scope| scope.task_id == task_id)
            .map(|scope| scope.claim)
    }

    /// Whether task `task_id`'s agent holds a token (it runs, or ran and was not cleaned up).
    pub fn is_issued(&self, task_id: &str) -> bool {
        let tokens = self.0.lock().expect("tokens lock");
        tokens.values().any(|scope| scope.task_id == task_id)
    }

    /// The scope of `token`, if it is a task's.
    pub fn scope_of(&self, token: &str) -> Option<TaskScope> {
        self.0.lock().expect("tokens lock").get(token).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(task_id: &str, project: &Path, dir: &Path) -> TaskScope {
        TaskScope {
            task_id: task_id.into(),
            claim: 1,
            project: project.to_path_buf(),
            dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn a_token_names_its_task_until_withdrawn() {
        let tokens = TaskTokens::default();
        let first = tokens.issue(scope("t1", Path::new("/p"), Path::new("/p")));
        let other = tokens.issue(scope("t2", Path::new("/p"), Path::new("/p")));
        assert_eq!(first.len(), 32);
        assert_eq!(tokens.scope_of(&first).unwrap().task_id, "t1");
        let again = tokens.issue(scope("t1", Path::new("/p"), Path::new("/w")));
        assert_eq!(
            tokens.scope_of(&first),
            None,
            "a new token replaces the old"
        );
        assert_eq!(tokens.scope_of(&again).unwrap().dir, Path::new("/w"));
        tokens.revoke("t1");
        assert_eq!(tokens.scope_of(&again), None);
        assert_eq!(tokens.scope_of(&other).unwrap().task_id, "t2");
        assert_eq!(tokens.scope_of("guess"), None);
    }

    #[test]
    fn project_paths_are_confined_to_the_tasks_directory() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let project = base.join("project");
        let worktree = base.join("data/worktrees/project-1/t1");
        for dir in [project.join("app"), worktree.join("app")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::os::unix::fs::symlink(&project, worktree.join("escape")).unwrap();
        let scope = scope("t1", &project, &worktree);
        let text = |p: &Path| p.display().to_string();

        assert_eq!(scope.confine(&text(&project)), Ok(text(&worktree)));
        assert_eq!(
            scope.confine(&text(&project.join("app"))),
            Ok(text(&worktree.join("app")))
        );
        assert_eq!(scope.confine(&text(&worktree)), Ok(text(&worktree)));
        assert_eq!(scope.confine("app"), Ok(text(&worktree.join("app"))));
        for outside in [
            text(&base),
            "/".to_string(),
            text(&worktree.join("escape")),
            text(&worktree.join("app/../..")),
        ] {
            let refused = scope.confine(&outside).unwrap_err();
            assert!(matches!(refused, OutsideScope::Outside { .. }), "{refused}");
            assert!(
                refused
                    .to_string()
                    .contains("outside the directory of task t1"),
                "{outside}: {refused}"
            );
        }
        let missing = scope.confine("nope").unwrap_err();
        assert!(matches!(missing, OutsideScope::Missing { .. }), "{missing}");
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }

    #[test]
    fn the_docs_and_the_memory_of_an_agent_are_its_projects() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let (project, worktree, other) = (base.join("p"), base.join("w"), base.join("o"));
        for dir in [project.join("app"), worktree.join("app"), other.clone()] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let scope = scope("t1", &project, &worktree);
        let text = |p: &Path| p.display().to_string();

        assert_eq!(
            scope.confine_to_project(&text(&project)),
            Ok(text(&project))
        );
        assert_eq!(
            scope.confine_to_project(&text(&worktree.join("app"))),
            Ok(text(&project.join("app")))
        );
        assert_eq!(
            scope.confine_to_project("app"),
            Ok(text(&project.join("app")))
        );
        assert_eq!(scope.memory_of(None), Ok(text(&project)));
        assert_eq!(scope.memory_of(Some(&text(&project))), Ok(text(&project)));
        assert_eq!(scope.memory_of(Some(&text(&worktree))), Ok(text(&worktree)));
        for outside in [text(&other), text(&base), "/".into()] {
            for refused in [
                scope.confine_to_project(&outside),
                scope.memory_of(Some(&outside)),
            ] {
                let refused = refused.unwrap_err().to_string();
                assert!(
                    refused.contains("outside the directory of task t1"),
                    "{refused}"
                );
            }
        }
    }
}
