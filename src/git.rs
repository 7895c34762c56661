//! git as a child process, for what drydock does with repositories (tasks' worktrees, their
//! commits, diffs and merges): no shell, a timeout, the C locale so messages read the same
//! everywhere, no prompt for credentials, and none of the caller's `GIT_*` repository
//! variables (a drydock started from a git hook would otherwise work on the hook's repo).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// How long one git command may take (a worktree of a large repository, a submodule).
const TIMEOUT: Duration = Duration::from_secs(600);
/// Variables that would point git at another repository, index or work tree than `dir`.
const REPOSITORY_VARIABLES: [&str; 6] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
];

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git could not be started ({0}); install git")]
    Missing(std::io::Error),
    #[error("`git {args}` in {dir} failed: {message}")]
    Failed {
        dir: PathBuf,
        args: String,
        message: String,
    },
    #[error("`git {args}` in {dir} took longer than {} s", TIMEOUT.as_secs())]
    Timeout { dir: PathBuf, args: String },
}

/// What a git command left: its exit code and what it printed.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// git run in one directory.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Git {
    pub fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    /// The same git with `name=value` in its environment.
    pub fn with_env(mut self, name: &str, value: &str) -> Git {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Runs `git ARGS`; its standard output when it exits 0, else an error with its message.
    pub async fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let output = self.output(args).await?;
        if output.ok() {
            return Ok(output.stdout);
        }
        let message = match output.stderr.trim() {
            "" => format!("exit code {}: {}", output.code, output.stdout.trim()),
            stderr => stderr.to_string(),
        };
        Err(GitError::Failed {
            dir: self.dir.clone(),
            args: args.join(" "),
            message,
        })
    }

    /// `run`, its output's first line.
    pub async fn line(&self, args: &[&str]) -> Result<String, GitError> {
        let stdout = self.run(args).await?;
        Ok(stdout.lines().next().unwrap_or_default().trim().to_string())
    }

    /// Runs `git ARGS` whatever its exit code (for commands whose code is an answer:
    /// `merge-tree` exits 1 on a conflict, `diff --quiet` on a difference).
    pub async fn output(&self, args: &[&str]) -> Result<Output, GitError> {
        let mut command = tokio::process::Command::new("git");
        command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "true");
        for name in REPOSITORY_VARIABLES {
            command.env_remove(name);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        let child = command.spawn().map_err(GitError::Missing)?;
        let output = tokio::time::timeout(TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| GitError::Timeout {
                dir: self.dir.clone(),
                args: args.join(" "),
            })?
            .map_err(GitError::Missing)?;
        Ok(Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// The repository's top level, if `dir` is inside a work tree.
    pub async fn top_level(&self) -> Option<PathBuf> {
        let output = self.output(&["rev-parse", "--show-toplevel"]).await.ok()?;
        let top = output.stdout.trim();
        (output.ok() && !top.is_empty()).then(|| PathBuf::from(top))
    }

    /// The commit `rev` names, if it names one.
    pub async fn commit_of(&self, rev: &str) -> Option<String> {
        let spec = format!("{rev}^{{commit}}");
        let output = self
            .output(&["rev-parse", "--verify", "--quiet", &spec])
            .await
            .ok()?;
        output.ok().then(|| output.stdout.trim().to_string())
    }

    /// Whether the repository has a local branch `name`.
    pub async fn branch_exists(&self, name: &str) -> bool {
        self.commit_of(&format!("refs/heads/{name}"))
            .await
            .is_some()
    }

    /// The URLs of the repository's remotes.
    pub async fn remote_urls(&self) -> Vec<String> {
        match self
            .run(&["config", "--get-regexp", r"^remote\..*\.url$"])
            .await
        {
            Ok(listing) => listing
                .lines()
                .filter_map(|line| Some(line.split_once(' ')?.1.to_string()))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The branch checked out here, None on a detached HEAD.
    pub async fn current_branch(&self) -> Option<String> {
        let output = self
            .output(&["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await
            .ok()?;
        output.ok().then(|| output.stdout.trim().to_string())
    }

    /// The paths with uncommitted changes (tracked files only when `untracked` is false), as
    /// `git status --porcelain` lists them ("XY path").
    pub async fn dirty(&self, untracked: bool) -> Result<Vec<String>, GitError> {
        let mode = match untracked {
            true => "--untracked-files=all",
            false => "--untracked-files=no",
        };
        let status = self.run(&["status", "--porcelain=v1", "-z", mode]).await?;
        Ok(porcelain_entries(&status))
    }
}

/// `git status --porcelain=v1 -z` entries as "XY path" (a rename's source is dropped).
fn porcelain_entries(status: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut fields = status.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        if entry.starts_with('R') || entry.starts_with('C') {
            fields.next();
        }
        entries.push(entry.to_string());
    }
    entries
}

#[cfg(test)]
pub(crate) mod test_repo {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// A git repository in a temporary directory with one commit, for tests.
    pub struct Repo {
        pub dir: tempfile::TempDir,
        pub path: PathBuf,
    }

    impl Repo {
        pub fn new() -> Repo {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().canonicalize().unwrap().join("project");
            std::fs::create_dir_all(&path).unwrap();
            git(&path, &["init", "-q", "-b", "main"]);
            git(&path, &["config", "user.name", "Test Person"]);
            git(&path, &["config", "user.email", "person@example.test"]);
            let repo = Repo { dir, path };
            repo.write("README.md", "a project\n");
            repo.commit_all("first");
            repo
        }

        pub fn write(&self, name: &str, text: &str) {
            let file = self.path.join(name);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }

        pub fn commit_all(&self, message: &str) {
            git(&self.path, &["add", "-A"]);
            git(&self.path, &["commit", "-q", "-m", message]);
        }

        pub fn git(&self, args: &[&str]) -> String {
            git(&self.path, args)
        }
    }

    pub fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::test_repo::Repo;
    use super::*;

    #[tokio::test]
    async fn reads_a_repository_and_says_what_failed() {
        let repo = Repo::new();
        let git = Git::at(&repo.path);
        assert_eq!(git.top_level().await, Some(repo.path.clone()));
        assert_eq!(git.current_branch().await.as_deref(), Some("main"));
        let head = git.commit_of("HEAD").await.unwrap();
        assert_eq!(head.len(), 40);
        assert_eq!(git.commit_of("no-such-branch").await, None);

        repo.write("README.md", "changed\n");
        repo.write("new file.txt", "new\n");
        assert_eq!(git.dirty(false).await.unwrap(), vec![" M README.md"]);
        assert_eq!(
            git.dirty(true).await.unwrap(),
            vec![" M README.md", "?? new file.txt"]
        );

        let error = git.run(&["checkout", "nowhere"]).await.unwrap_err();
        let message = error.to_string();
        assert!(message.contains("`git checkout nowhere`"), "{message}");
        assert!(message.contains("did not match"), "{message}");

        let outside = tempfile::tempdir().unwrap();
        assert_eq!(Git::at(outside.path()).top_level().await, None);
    }

    #[test]
    fn renames_keep_their_new_path() {
        let status = "R  new.rs\0old.rs\0 M lib.rs\0?? a b.txt\0";
        assert_eq!(
            porcelain_entries(status),
            vec!["R  new.rs", " M lib.rs", "?? a b.txt"]
        );
    }
}
