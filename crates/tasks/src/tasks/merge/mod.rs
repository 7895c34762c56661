//! A task's branch into the project's branch: a fast-forward or a merge commit built without
//! touching any working tree (`git merge-tree --write-tree`), then the branch moved, by a
//! compare-and-swap of its ref, or by a fast-forward in the worktree that has it checked
//! out when that one is clean. Conflicts are found the same way before anything changes, so a
//! refused merge changes nothing.

mod candidate;

pub use candidate::Candidate;

use std::path::Path;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::git::{Git, GitError};

/// How a branch goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// A fast-forward when the target has not moved, else a merge commit.
    #[default]
    Auto,
    /// Only a fast-forward; refused when the target moved on.
    FastForward,
    /// Always a merge commit.
    MergeCommit,
    /// The result's commits replayed onto the target's tip, a line with no merge commit
    /// (`git replay`); the last one's tree is what the checks test. A result with merge
    /// commits of its own, or whose commits do not replay one by one, lands under a merge
    /// commit instead.
    Rebase,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub into: String,
    pub commit: String,
    /// fast_forward, merge_commit, or already_merged.
    pub how: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "the project is on a detached HEAD, so there is no branch to merge into: name one with `into`"
    )]
    NoTarget,
    #[error("`into`: {into:?} is not a branch of {repo}")]
    UnknownTarget { into: String, repo: String },
    #[error(
        "{branch} conflicts with {into} in: {}. Nothing was changed: resolve it on the task's branch (in its worktree), or discard the task",
        files.join(", ")
    )]
    Conflicts {
        branch: String,
        into: String,
        files: Vec<String>,
    },
    #[error(
        "{into} moved on since {branch} started, so it cannot be fast-forwarded: merge with strategy auto or merge_commit"
    )]
    NotFastForward { branch: String, into: String },
    #[error(
        "{into} is checked out in {worktree} with uncommitted changes ({}): commit or stash them first, or merge `into` another branch. Nothing was changed",
        files.join(", ")
    )]
    DirtyTarget {
        into: String,
        worktree: String,
        files: Vec<String>,
    },
    #[error("{into} moved while the merge was made; nothing was changed: merge again")]
    Moved { into: String },
    #[error("git refused to move {into} in {worktree}: {message}. Nothing was changed")]
    Refused {
        into: String,
        worktree: String,
        message: String,
    },
}

/// Merges commit `head` of task branch `branch` into `into` (default: the branch checked out
/// in `project`) of repository `repo`.
pub fn merge<'a>(
    repo: &'a Path,
    project: &'a Path,
    branch: &'a str,
    head: &'a str,
    into: Option<&'a str>,
    strategy: Strategy,
    message: &'a str,
) -> BoxFuture<'a, Result<Merged, MergeError>> {
    async move {
        let git = Git::at(repo);
        let into = match into {
            Some(into) => into.to_string(),
            None => Git::at(project)
                .current_branch()
                .await
                .ok_or(MergeError::NoTarget)?,
        };
        let target_ref = format!("refs/heads/{into}");
        let old = git
            .commit_of(&target_ref)
            .await
            .ok_or_else(|| MergeError::UnknownTarget {
                into: into.clone(),
                repo: repo.display().to_string(),
            })?;
        if is_ancestor(&git, head, &old).await? {
            return Ok(Merged {
                into,
                commit: old,
                how: "already_merged",
            });
        }
        let fast_forward = is_ancestor(&git, &old, head).await?;
        let (new, how) = match (strategy, fast_forward) {
            (Strategy::Auto | Strategy::FastForward | Strategy::Rebase, true) => {
                (head.to_string(), "fast_forward")
            }
            (Strategy::Rebase, false) => {
                match Candidate::rebased(repo, &old, head, branch, message).await? {
                    Candidate::Rebased(commit) => (commit, "rebased"),
                    Candidate::Merge(commit) => (commit, "merge_commit"),
                    Candidate::Conflicts { files, .. } => {
                        return Err(MergeError::Conflicts {
                            branch: branch.to_string(),
                            into,
                            files,
                        });
                    }
                    Candidate::AlreadyIn | Candidate::FastForward(_) => {
                        unreachable!("both were looked at above")
                    }
                }
            }
            (Strategy::FastForward, false) => {
                return Err(MergeError::NotFastForward {
                    branch: branch.to_string(),
                    into,
                });
            }
            (Strategy::Auto | Strategy::MergeCommit, _) => {
                let tree = match merged_tree(&git, &old, head).await? {
                    Ok(tree) => tree,
                    Err(files) => {
                        return Err(MergeError::Conflicts {
                            branch: branch.to_string(),
                            into,
                            files,
                        });
                    }
                };
                let commit = with_identity(git.clone())
                    .await
                    .line(&["commit-tree", &tree, "-p", &old, "-p", head, "-m", message])
                    .await?;
                (commit, "merge_commit")
            }
        };
        advance(repo, &git, &into, &old, &new).await?;
        Ok(Merged {
            into,
            commit: new,
            how,
        })
    }
    .boxed()
}

/// The files in which merging commits `a` and `b` would conflict (none: it merges cleanly).
pub fn conflicts<'a>(
    repo: &'a Path,
    a: &'a str,
    b: &'a str,
) -> BoxFuture<'a, Result<Vec<String>, GitError>> {
    async move {
        Ok(merged_tree(&Git::at(repo), a, b)
            .await?
            .err()
            .unwrap_or_default())
    }
    .boxed()
}

/// The tree of `a` and `b` merged, or the conflicted files.
async fn merged_tree(git: &Git, a: &str, b: &str) -> Result<Result<String, Vec<String>>, GitError> {
    let args = [
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        a,
        b,
    ];
    let output = git.output(&args).await?;
    let mut lines = output.stdout.lines();
    let tree = lines.next().unwrap_or_default().to_string();
    match output.code {
        0 => Ok(Ok(tree)),
        1 => {
            let mut files: Vec<String> = lines
                .take_while(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            Ok(Err(files))
        }
        _ => git.run(&args).await.map(|_| Ok(tree)),
    }
}

pub(super) async fn is_ancestor(git: &Git, ancestor: &str, of: &str) -> Result<bool, GitError> {
    let output = git
        .output(&["merge-base", "--is-ancestor", ancestor, of])
        .await?;
    match output.code {
        0 => Ok(true),
        1 => Ok(false),
        _ => git
            .run(&["merge-base", "--is-ancestor", ancestor, of])
            .await
            .map(|_| true),
    }
}

/// The worktree that has branch `into` checked out, and its path.
async fn checkout_of(
    repo: &Path,
    git: &Git,
    into: &str,
) -> Result<Option<(Git, String)>, MergeError> {
    let target = format!("branch refs/heads/{into}");
    let listing = git.run(&["worktree", "list", "--porcelain"]).await?;
    let checked_out = listing.split("\n\n").enumerate().find_map(|(i, entry)| {
        let on_target = entry.lines().any(|l| l == target);
        let path = entry.lines().find_map(|l| l.strip_prefix("worktree "))?;
        on_target.then(|| (i, path.to_string()))
    });
    let Some((index, worktree)) = checked_out else {
        return Ok(None);
    };
    // The first is the repository's own work tree; a linked one is checked before use.
    let there = match index {
        0 => Git::at(Path::new(&worktree)),
        _ => Git::in_worktree(repo, Path::new(&worktree)).await?,
    };
    Ok(Some((there, worktree)))
}

/// `DirtyTarget` when checkout `there` of `into` has uncommitted changes.
async fn dirty_checkout(
    there: &Git,
    into: &str,
    worktree: &str,
) -> Result<Option<MergeError>, MergeError> {
    let dirty = there.dirty(false).await?;
    Ok((!dirty.is_empty()).then(|| MergeError::DirtyTarget {
        into: into.to_string(),
        worktree: worktree.to_string(),
        files: dirty
            .iter()
            .map(|e| e.get(3..).unwrap_or(e).to_string())
            .collect(),
    }))
}

/// Why `into` cannot advance now, before anything is tested for it: the person's checkout
/// of it has uncommitted changes.
pub(super) async fn held_back(
    repo: &Path,
    git: &Git,
    into: &str,
) -> Result<Option<MergeError>, MergeError> {
    match checkout_of(repo, git, into).await? {
        Some((there, worktree)) => dirty_checkout(&there, into, &worktree).await,
        None => Ok(None),
    }
}

/// Moves branch `into` from `old` to `new`: a fast-forward in the worktree that has it
/// checked out (refused when that one has uncommitted changes), else a compare-and-swap of
/// the ref.
pub(super) async fn advance(
    repo: &Path,
    git: &Git,
    into: &str,
    old: &str,
    new: &str,
) -> Result<(), MergeError> {
    let target_ref = format!("refs/heads/{into}");
    let Some((there, worktree)) = checkout_of(repo, git, into).await? else {
        let moved = git
            .output(&[
                "update-ref",
                "-m",
                "drydock: merge a task",
                &target_ref,
                new,
                old,
            ])
            .await?;
        return match moved.ok() {
            true => Ok(()),
            false => Err(MergeError::Moved {
                into: into.to_string(),
            }),
        };
    };
    let moved = || async {
        match there.commit_of(&target_ref).await {
            Some(now) => now != old,
            None => true,
        }
    };
    if moved().await {
        return Err(MergeError::Moved {
            into: into.to_string(),
        });
    }
    if let Some(dirty) = dirty_checkout(&there, into, &worktree).await? {
        return Err(dirty);
    }
    let merged = there
        .output(&["merge", "--ff-only", "--quiet", new])
        .await?;
    match merged.ok() {
        true => Ok(()),
        // The person committed on it meanwhile.
        false if moved().await => Err(MergeError::Moved {
            into: into.to_string(),
        }),
        false => Err(MergeError::Refused {
            into: into.to_string(),
            worktree,
            message: merged.stderr.trim().replace('\n', " "),
        }),
    }
}

/// `git` with drydock's identity when the person has none configured (a merge commit needs
/// a committer); the person's own otherwise.
pub(super) async fn with_identity(git: Git) -> Git {
    let known = git
        .output(&["var", "GIT_COMMITTER_IDENT"])
        .await
        .is_ok_and(|o| o.ok());
    match known {
        true => git,
        false => git
            .with_env("GIT_AUTHOR_NAME", "drydock")
            .with_env("GIT_AUTHOR_EMAIL", "drydock@drydock.invalid")
            .with_env("GIT_COMMITTER_NAME", "drydock")
            .with_env("GIT_COMMITTER_EMAIL", "drydock@drydock.invalid"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_repo::{Repo, git};

    /// A task branch with a commit changing `file`.
    fn task_branch(repo: &Repo, branch: &str, file: &str, text: &str) -> String {
        repo.git(&["branch", branch, "main"]);
        let tree = repo.dir.path().join(branch.replace('/', "-"));
        let tree_text = tree.display().to_string();
        repo.git(&["worktree", "add", "-q", &tree_text, branch]);
        std::fs::write(tree.join(file), text).unwrap();
        git(&tree, &["add", "-A"]);
        git(&tree, &["commit", "-qm", branch]);
        git(&tree, &["rev-parse", "HEAD"]).trim().to_string()
    }

    async fn merge_into_main(
        repo: &Repo,
        branch: &str,
        head: &str,
        strategy: Strategy,
    ) -> Result<Merged, MergeError> {
        merge(
            &repo.path, &repo.path, branch, head, None, strategy, "merge it",
        )
        .await
    }

    #[tokio::test]
    async fn fast_forward_then_merge_commit_then_a_conflict_that_changes_nothing() {
        let repo = Repo::new();
        repo.write("shared.txt", "one\n");
        repo.commit_all("shared");
        let a = task_branch(&repo, "drydock/task-a", "shared.txt", "one\nfrom a\n");
        let b = task_branch(&repo, "drydock/task-b", "b.txt", "b\n");
        let c = task_branch(&repo, "drydock/task-c", "shared.txt", "one\nfrom c\n");
        assert_eq!(
            conflicts(&repo.path, &a, &c).await.unwrap(),
            vec!["shared.txt"]
        );
        assert!(conflicts(&repo.path, &a, &b).await.unwrap().is_empty());

        let first = merge_into_main(&repo, "drydock/task-a", &a, Strategy::Auto)
            .await
            .unwrap();
        assert_eq!(
            (first.how, first.commit.as_str()),
            ("fast_forward", a.as_str())
        );
        assert_eq!(
            std::fs::read_to_string(repo.path.join("shared.txt")).unwrap(),
            "one\nfrom a\n"
        );

        let refused = merge_into_main(&repo, "drydock/task-b", &b, Strategy::FastForward)
            .await
            .unwrap_err();
        assert!(
            matches!(refused, MergeError::NotFastForward { .. }),
            "{refused}"
        );
        let second = merge_into_main(&repo, "drydock/task-b", &b, Strategy::Auto)
            .await
            .unwrap();
        assert_eq!(second.how, "merge_commit");
        assert!(repo.path.join("b.txt").is_file(), "the checkout follows");
        let parents = repo.git(&["log", "-1", "--format=%P"]);
        assert_eq!(parents.split_whitespace().count(), 2);

        let before = repo.git(&["rev-parse", "main"]);
        let conflict = merge_into_main(&repo, "drydock/task-c", &c, Strategy::Auto)
            .await
            .unwrap_err();
        match &conflict {
            MergeError::Conflicts { files, .. } => {
                assert_eq!(files, &vec!["shared.txt".to_string()])
            }
            other => panic!("{other}"),
        }
        assert!(conflict.to_string().contains("Nothing was changed"));
        assert_eq!(repo.git(&["rev-parse", "main"]), before);
        assert_eq!(repo.git(&["status", "--porcelain"]), "");

        let again = merge_into_main(&repo, "drydock/task-a", &a, Strategy::Auto)
            .await
            .unwrap();
        assert_eq!(again.how, "already_merged");
    }

    #[tokio::test]
    async fn a_rebase_lands_a_line_and_a_conflicting_one_changes_nothing() {
        let repo = Repo::new();
        repo.write("shared.txt", "one\n");
        repo.commit_all("shared");
        let a = task_branch(&repo, "drydock/task-a", "a.txt", "a\n");
        let b = task_branch(&repo, "drydock/task-b", "b.txt", "b\n");
        let c = task_branch(&repo, "drydock/task-c", "a.txt", "c\n");
        let first = merge_into_main(&repo, "drydock/task-a", &a, Strategy::Rebase)
            .await
            .unwrap();
        assert_eq!(first.how, "fast_forward");

        let second = merge_into_main(&repo, "drydock/task-b", &b, Strategy::Rebase)
            .await
            .unwrap();
        assert_eq!(second.how, "rebased");
        assert_eq!(repo.git(&["rev-parse", "main"]).trim(), second.commit);
        assert_eq!(repo.git(&["log", "-1", "--format=%P"]).trim(), a, "a line");
        assert!(repo.path.join("b.txt").is_file(), "the checkout follows");
        assert_eq!(
            repo.git(&["rev-parse", "drydock/task-b"]).trim(),
            b,
            "the task's branch is left as it was"
        );

        let before = repo.git(&["rev-parse", "main"]);
        let conflict = merge_into_main(&repo, "drydock/task-c", &c, Strategy::Rebase)
            .await
            .unwrap_err();
        assert!(
            matches!(&conflict, MergeError::Conflicts { files, .. } if files == &["a.txt"]),
            "{conflict}"
        );
        assert_eq!(repo.git(&["rev-parse", "main"]), before);
        assert_eq!(repo.git(&["status", "--porcelain"]), "");
    }

    #[tokio::test]
    async fn a_dirty_checkout_of_the_target_is_never_touched() {
        let repo = Repo::new();
        let a = task_branch(&repo, "drydock/task-a", "a.txt", "a\n");
        repo.write("README.md", "the person's unsaved work\n");

        let refused = merge_into_main(&repo, "drydock/task-a", &a, Strategy::Auto)
            .await
            .unwrap_err();

        assert!(
            matches!(refused, MergeError::DirtyTarget { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("README.md"), "{refused}");
        assert_eq!(
            std::fs::read_to_string(repo.path.join("README.md")).unwrap(),
            "the person's unsaved work\n"
        );
        assert!(!repo.path.join("a.txt").exists());

        // A branch checked out nowhere moves by compare-and-swap, the dirty checkout aside.
        repo.git(&["branch", "release", "main"]);
        let merged = merge(
            &repo.path,
            &repo.path,
            "drydock/task-a",
            &a,
            Some("release"),
            Strategy::Auto,
            "m",
        )
        .await
        .unwrap();
        assert_eq!(merged.how, "fast_forward");
        assert_eq!(repo.git(&["rev-parse", "release"]).trim(), a);
        assert_eq!(
            std::fs::read_to_string(repo.path.join("README.md")).unwrap(),
            "the person's unsaved work\n"
        );

        repo.git(&["checkout", "-q", "--detach"]);
        let detached = merge_into_main(&repo, "drydock/task-a", &a, Strategy::Auto)
            .await
            .unwrap_err();
        assert!(matches!(detached, MergeError::NoTarget), "{detached}");
        let unknown = merge(
            &repo.path,
            &repo.path,
            "drydock/task-a",
            &a,
            Some("nope"),
            Strategy::Auto,
            "m",
        )
        .await
        .unwrap_err();
        assert!(
            unknown.to_string().contains("\"nope\" is not a branch"),
            "{unknown}"
        );
    }

    #[tokio::test]
    async fn a_target_worktree_whose_git_was_swapped_is_not_merged_in() {
        let repo = Repo::new();
        let a = task_branch(&repo, "drydock/task-a", "a.txt", "from a\n");
        repo.git(&["branch", "release", "main"]);
        let release = repo.dir.path().join("release");
        repo.git(&[
            "worktree",
            "add",
            "-q",
            &release.display().to_string(),
            "release",
        ]);
        std::fs::remove_file(release.join(".git")).unwrap();
        git(&release, &["init", "-q"]);

        let refused = merge(
            &repo.path,
            &repo.path,
            "drydock/task-a",
            &a,
            Some("release"),
            Strategy::Auto,
            "m",
        )
        .await
        .unwrap_err();

        let message = refused.to_string();
        assert!(
            message.contains("not a worktree of the repository"),
            "{message}"
        );
        let old = repo.git(&["rev-parse", "main"]);
        assert_eq!(repo.git(&["rev-parse", "release"]), old, "release moved");
    }
}
