//! A result merged onto a branch's tip without touching any working tree: the result itself
//! when the tip is in its history (a fast-forward, whose tree its own checks tested), else a
//! merge commit built by `git merge-tree`, or the conflicting hunks when it does not merge.

use std::path::Path;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{is_ancestor, with_identity};
use crate::git::{Git, GitError};

/// How much of the conflicting hunks is kept.
const HUNKS_BUDGET: usize = 1_500;
/// Lines of each side kept around a conflict's markers.
const CONTEXT_LINES: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// The tip holds the result already.
    AlreadyIn,
    /// The tip is in the result's history: the branch moves to the result itself.
    FastForward(String),
    /// A merge commit of the tip and the result, to be tested.
    Merge(String),
    /// The result's commits replayed onto the tip: the last of them, to be tested.
    Rebased(String),
    Conflicts {
        files: Vec<String>,
        hunks: String,
    },
}

impl Candidate {
    /// `head` onto `tip` in `repo`; `always_merge` makes a merge commit even where a
    /// fast-forward would do.
    pub fn of<'a>(
        repo: &'a Path,
        tip: &'a str,
        head: &'a str,
        always_merge: bool,
        message: &'a str,
    ) -> BoxFuture<'a, Result<Candidate, GitError>> {
        async move {
            let git = Git::at(repo);
            if is_ancestor(&git, head, tip).await? {
                return Ok(Candidate::AlreadyIn);
            }
            if !always_merge && is_ancestor(&git, tip, head).await? {
                return Ok(Candidate::FastForward(head.to_string()));
            }
            let args = ["merge-tree", "--write-tree", "--no-messages", tip, head];
            let output = git.output(&args).await?;
            let mut lines = output.stdout.lines();
            let tree = lines.next().unwrap_or_default().to_string();
            match output.code {
                0 => {
                    let commit = with_identity(git)
                        .await
                        .line(&["commit-tree", &tree, "-p", tip, "-p", head, "-m", message])
                        .await?;
                    Ok(Candidate::Merge(commit))
                }
                1 => {
                    // `<mode> <object> <stage>\t<path>` per conflicted stage.
                    let mut files: Vec<String> = lines
                        .take_while(|l| !l.is_empty())
                        .filter_map(|l| l.split_once('\t').map(|(_, path)| path.to_string()))
                        .collect();
                    files.dedup();
                    let hunks = conflicting_hunks(&git, &tree, &files).await;
                    Ok(Candidate::Conflicts { files, hunks })
                }
                // Neither merged nor conflicted: git's own error.
                _ => git.run(&args).await.and_then(|_| {
                    Err(GitError::Failed {
                        dir: repo.to_path_buf(),
                        args: args.join(" "),
                        message: format!("exit code {}", output.code),
                    })
                }),
            }
        }
        .boxed()
    }
}

impl Candidate {
    /// `head`, the tip of `branch`, replayed onto `tip` (`git replay`: no working tree
    /// touched, no ref moved). Where it cannot be (merge commits of its own, or a commit that
    /// does not replay alone), it is merged: `Merge` or `Conflicts` as `of` says.
    pub fn rebased<'a>(
        repo: &'a Path,
        tip: &'a str,
        head: &'a str,
        branch: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<Candidate, GitError>> {
        async move {
            let git = Git::at(repo);
            if is_ancestor(&git, head, tip).await? {
                return Ok(Candidate::AlreadyIn);
            }
            if is_ancestor(&git, tip, head).await? {
                return Ok(Candidate::FastForward(head.to_string()));
            }
            let range = format!("{tip}..{head}");
            let merges = git
                .line(&["rev-list", "--merges", "--count", &range])
                .await?;
            if merges == "0" {
                let branch_ref = format!("refs/heads/{branch}");
                let commits = format!("{tip}..{branch_ref}");
                let replayed = with_identity(git.clone())
                    .await
                    .output(&["replay", "--onto", tip, &commits])
                    .await?;
                // `update refs/heads/BRANCH NEW OLD`: NEW is the replayed head, OLD the result.
                let update = replayed.stdout.lines().find_map(|line| {
                    let mut words = line.strip_prefix("update ")?.split(' ');
                    let (name, new, old) = (words.next()?, words.next()?, words.next()?);
                    (name == branch_ref && old == head).then(|| new.to_string())
                });
                if let (true, Some(new)) = (replayed.ok(), update) {
                    return Ok(Candidate::Rebased(new));
                }
                tracing::info!(
                    "{branch} does not replay onto {tip} commit by commit: it is merged instead"
                );
            }
            Candidate::of(repo, tip, head, true, message).await
        }
        .boxed()
    }
}

/// The conflicted parts of `files` as `tree` (merge-tree's, with conflict markers) has
/// them, a few lines around each, within a budget.
async fn conflicting_hunks(git: &Git, tree: &str, files: &[String]) -> String {
    let mut out = String::new();
    for file in files {
        let Ok(text) = git
            .run(&["cat-file", "-p", &format!("{tree}:{file}")])
            .await
        else {
            out.push_str(&format!("--- {file}: conflicts (not a text file)\n"));
            continue;
        };
        out.push_str(&format!("--- {file}\n"));
        for hunk in marked_hunks(&text) {
            out.push_str(&hunk);
            out.push('\n');
        }
        if out.len() > HUNKS_BUDGET {
            break;
        }
    }
    match out.char_indices().nth(HUNKS_BUDGET) {
        Some((cut, _)) => format!("{}\n… (cut)", &out[..cut]),
        None => out,
    }
}

/// Each `<<<<<<<` … `>>>>>>>` region of `text`, with its line number and a few lines of
/// context before and after.
fn marked_hunks(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with("<<<<<<< ") {
            i += 1;
            continue;
        }
        let start = i;
        let end = (start..lines.len())
            .find(|&j| lines[j].starts_with(">>>>>>> "))
            .unwrap_or(lines.len() - 1);
        let from = start.saturating_sub(CONTEXT_LINES);
        let to = (end + 1 + CONTEXT_LINES).min(lines.len());
        let mut hunk = format!("@@ line {}", start + 1);
        for line in &lines[from..to] {
            hunk.push('\n');
            hunk.push_str(line);
        }
        hunks.push(hunk);
        i = end + 1;
    }
    hunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_repo::{Repo, git};

    fn branch_with(repo: &Repo, branch: &str, file: &str, text: &str) -> String {
        repo.git(&["branch", branch, "main"]);
        let tree = repo.dir.path().join(branch);
        repo.git(&["worktree", "add", "-q", &tree.display().to_string(), branch]);
        std::fs::write(tree.join(file), text).unwrap();
        git(&tree, &["add", "-A"]);
        git(&tree, &["commit", "-qm", branch]);
        git(&tree, &["rev-parse", "HEAD"]).trim().to_string()
    }

    #[tokio::test]
    async fn a_result_onto_a_tip_fast_forwards_merges_or_names_its_conflicting_hunks() {
        let repo = Repo::new();
        repo.write("lib.rs", "fn one() -> u32 {\n    1\n}\n\nfn two() {}\n");
        repo.commit_all("base");
        let tip = repo.git(&["rev-parse", "main"]).trim().to_string();
        let a = branch_with(
            &repo,
            "a",
            "lib.rs",
            "fn uno() -> u32 {\n    1\n}\n\nfn two() {}\n",
        );
        let c = branch_with(&repo, "c", "other.rs", "fn other() {}\n");
        let d = branch_with(
            &repo,
            "d",
            "lib.rs",
            "fn eins() -> u32 {\n    1\n}\n\nfn two() {}\n",
        );

        let same = Candidate::rebased(&repo.path, &tip, &a, "a", "m")
            .await
            .unwrap();
        assert_eq!(same, Candidate::FastForward(a.clone()));
        let ff = Candidate::of(&repo.path, &tip, &a, false, "m")
            .await
            .unwrap();
        assert_eq!(ff, Candidate::FastForward(a.clone()));
        let forced = Candidate::of(&repo.path, &tip, &a, true, "m")
            .await
            .unwrap();
        assert!(matches!(forced, Candidate::Merge(_)), "{forced:?}");
        assert_eq!(
            Candidate::of(&repo.path, &a, &tip, false, "m")
                .await
                .unwrap(),
            Candidate::AlreadyIn
        );

        let Candidate::Merge(merged) = Candidate::of(&repo.path, &a, &c, false, "land c")
            .await
            .unwrap()
        else {
            panic!("c merges onto a cleanly");
        };
        let parents = repo.git(&["log", "-1", "--format=%P", &merged]);
        assert_eq!(
            parents.split_whitespace().collect::<Vec<_>>(),
            vec![a.as_str(), c.as_str()]
        );
        let files = repo.git(&["ls-tree", "--name-only", &merged]);
        assert!(
            files.contains("other.rs") && files.contains("lib.rs"),
            "{files}"
        );

        // Rebased: c's commit replayed onto a, a line; d conflicts as it does merged.
        let Candidate::Rebased(replayed) = Candidate::rebased(&repo.path, &a, &c, "c", "m")
            .await
            .unwrap()
        else {
            panic!("c replays onto a");
        };
        assert_eq!(repo.git(&["log", "-1", "--format=%P", &replayed]).trim(), a);
        assert_eq!(
            repo.git(&["log", "-1", "--format=%s", &replayed]).trim(),
            "c"
        );
        assert_eq!(repo.git(&["rev-parse", "c"]).trim(), c, "no ref moved");
        let rebased_conflict = Candidate::rebased(&repo.path, &a, &d, "d", "m")
            .await
            .unwrap();
        assert!(
            matches!(&rebased_conflict, Candidate::Conflicts { files, .. } if files == &["lib.rs"]),
            "{rebased_conflict:?}"
        );

        let conflict = Candidate::of(&repo.path, &a, &d, false, "m").await.unwrap();
        let Candidate::Conflicts { files, hunks } = conflict else {
            panic!("{conflict:?}");
        };
        assert_eq!(files, vec!["lib.rs"]);
        assert!(
            hunks.starts_with("--- lib.rs\n@@ line 1\n<<<<<<< "),
            "{hunks}"
        );
        assert!(
            hunks.contains("fn uno()") && hunks.contains("fn eins()"),
            "{hunks}"
        );
        assert!(
            !hunks.contains("fn two"),
            "only the hunk and its context: {hunks}"
        );
        assert_eq!(
            repo.git(&["status", "--porcelain"]),
            "",
            "no working tree touched"
        );
    }

    #[test]
    fn hunks_keep_a_few_lines_around_each_conflict() {
        let text = "a\nb\nc\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\nd\ne\nf\n";
        assert_eq!(
            marked_hunks(text),
            vec!["@@ line 4\nb\nc\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\nd\ne"]
        );
        assert!(marked_hunks("no conflict here\n").is_empty());
        assert_eq!(marked_hunks("<<<<<<< open\nnever closed").len(), 1);
    }
}
