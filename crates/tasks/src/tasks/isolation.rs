//! Where a task's agent works, and what came of it: its own git worktree and branch (or the
//! project itself), then the branch's change to review with the project's checks run on it,
//! until it is merged or discarded.

use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a task's agent works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Isolation {
    /// In the project's own directory: one such task at a time per project.
    InPlace {
        /// Why: the project is not a git repository, or the task asked for it.
        why: String,
        /// How its agent was confined.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confinement: Option<String>,
    },
    /// In a git worktree and branch of its own.
    Worktree(Worktree),
}

impl Isolation {
    /// The directory the agent works in.
    pub fn dir<'a>(&'a self, project: &'a str) -> &'a str {
        match self {
            Isolation::InPlace { .. } => project,
            Isolation::Worktree(worktree) => &worktree.dir,
        }
    }

    /// How its agent was confined (its sandbox, or why it had none).
    pub fn confinement(&self) -> Option<&str> {
        match self {
            Isolation::InPlace { confinement, .. } => confinement.as_deref(),
            Isolation::Worktree(worktree) => worktree.confinement.as_deref(),
        }
    }

    pub fn confine(&mut self, how: String) {
        match self {
            Isolation::InPlace { confinement, .. } => *confinement = Some(how),
            Isolation::Worktree(worktree) => worktree.confinement = Some(how),
        }
    }

    pub fn worktree(&self) -> Option<&Worktree> {
        match self {
            Isolation::InPlace { .. } => None,
            Isolation::Worktree(worktree) => Some(worktree),
        }
    }
}

/// A task's worktree: made from the project's repository, under drydock's data directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Worktree {
    /// The project's repository (its top level; the project is it or a folder in it).
    pub repo: String,
    /// The worktree's top level.
    pub path: String,
    /// The project's folder inside the worktree: where the agent works and the checks run.
    pub dir: String,
    /// The task's branch, `drydock/task-ID`.
    pub branch: String,
    /// The branch it started from; None when the project was on a detached HEAD or the task
    /// named a commit.
    pub base_ref: Option<String>,
    /// The commit it started from.
    pub base_sha: String,
    /// Untracked files copied from the project into the worktree (config `[tasks] copy`).
    pub copied: Vec<String>,
    /// What the person should know about how it was made (uncommitted changes of the project
    /// it does not have, submodules, the agent's trust in the folder, files not copied).
    pub notes: Vec<String>,
    /// How its agent was confined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
}

/// A result with no branch to land on.
#[derive(Debug, thiserror::Error)]
#[error(
    "it started from commit {} and its project is on a detached HEAD, so no branch is there to land on: merge it with task_merge and `into`",
    base_sha.get(..12).unwrap_or(base_sha)
)]
pub struct DetachedHead {
    base_sha: String,
}

impl Worktree {
    /// The branch the result of the task working here lands on: the one this worktree
    /// started from, else the one `project` has checked out.
    pub fn landing_branch<'a>(
        &'a self,
        project: &'a Path,
    ) -> BoxFuture<'a, Result<String, DetachedHead>> {
        async move {
            if let Some(base) = &self.base_ref {
                return Ok(base.clone());
            }
            let current = crate::git::Git::at(project).current_branch().await;
            current.ok_or_else(|| DetachedHead {
                base_sha: self.base_sha.clone(),
            })
        }
        .boxed()
    }

    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }

    pub fn dir(&self) -> PathBuf {
        PathBuf::from(&self.dir)
    }
}

/// The change a task's branch holds, once its agent stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    /// The branch's commit this review is of.
    pub head: String,
    /// What the diff is taken against (the merge base of the branch and its base).
    pub base: String,
    /// drydock committed what the agent left uncommitted (its own commits are kept as
    /// they are).
    pub committed_for_agent: bool,
    /// Commits on the branch since its base, the agent's and drydock's.
    pub commits: u32,
    pub files: Vec<ChangedFile>,
    pub insertions: u64,
    pub deletions: u64,
    /// The diff itself, cut to its first part when long (`diff_cut`).
    pub diff: String,
    pub diff_cut: bool,
    /// The project's checks on the branch's commit.
    pub checks: Checks,
    pub disposition: Disposition,
    /// What went differently (the worktree was deleted by hand, the agent left another branch
    /// checked out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Review {
    /// The files this result and `other` both changed.
    pub fn shared_files(&self, other: &Review) -> Vec<String> {
        self.files
            .iter()
            .filter(|f| other.files.iter().any(|g| g.path == f.path))
            .map(|f| f.path.clone())
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangedFile {
    pub path: String,
    /// added, modified, deleted, or type_changed.
    pub status: String,
    /// None for a binary file.
    pub insertions: Option<u64>,
    pub deletions: Option<u64>,
}

/// The project's checks (compile, then test) on a task's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Checks {
    /// They run now.
    Running,
    Done {
        results: Vec<CheckResult>,
    },
    /// They were not run, and why (not a cargo or mix project, a task that did not end done).
    Skipped {
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckResult {
    /// compile or test.
    pub tool: String,
    /// The tool's own status (ok, failed, build_failed, …) or `error` when it could not run.
    pub status: String,
    /// Its result in one line (counts, the first problems).
    pub summary: String,
    /// What failed, as drydock's report of the tool says it (errors first, no warnings),
    /// for a check that did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl CheckResult {
    /// It passed: built, or its tests ran and none failed (a project without tests fails
    /// none).
    pub fn is_green(&self) -> bool {
        matches!(self.status.as_str(), "ok" | "passed" | "no_tests")
    }
}

impl Checks {
    /// Every check ran and passed.
    pub fn are_green(&self) -> bool {
        match self {
            Checks::Done { results } => results.iter().all(CheckResult::is_green),
            Checks::Running | Checks::Skipped { .. } => false,
        }
    }

    /// The first check that did not pass.
    pub fn first_failed(&self) -> Option<&CheckResult> {
        match self {
            Checks::Done { results } => results.iter().find(|r| !r.is_green()),
            Checks::Running | Checks::Skipped { .. } => None,
        }
    }
}

/// What became of a task's branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Disposition {
    /// Waiting for a person: merge or discard.
    Open,
    Merged {
        /// The branch it went into.
        into: String,
        /// The commit that branch now points at.
        commit: String,
        /// fast_forward or merge_commit.
        how: String,
        at_ms: u64,
    },
    Discarded {
        /// The branch's last commit (recoverable with `git branch NAME SHA` until git's
        /// garbage collection removes it).
        commit: String,
        at_ms: u64,
    },
}

impl Disposition {
    pub fn is_open(&self) -> bool {
        matches!(self, Disposition::Open)
    }
}
