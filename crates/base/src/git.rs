//! git as a child process, for what drydock does with repositories (tasks' worktrees, their
//! commits, diffs and merges): no shell, a timeout, the C locale so messages read the same
//! everywhere, no prompt for credentials, and none of the caller's `GIT_*` repository
//! variables (a drydock started from a git hook would otherwise work on the hook's repo).
//! It runs no code of the repository's: no hooks, no fsmonitor, and a task's worktree is
//! checked to be the one drydock made before git is run in it ([`Git::in_worktree`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::untrusted::{self, Refused};

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

/// Settings that would run a program the repository names: hooks (post-checkout,
/// prepare-commit-msg, post-commit, post-merge...) and a file system monitor. Given with `-c`,
/// they win over every config file and reach the git processes git itself starts
/// (submodules).
const NO_REPOSITORY_CODE: [&str; 4] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
];

/// Signing runs the person's key (and `gpg.program`) on what an agent wrote.
const NO_SIGNING: [&str; 4] = ["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"];

/// Lists the drivers the config defines: content's attributes may name any of them.
const DRIVERS: &[&str] = &[
    "config",
    "--get-regexp",
    "--name-only",
    r"^(filter|diff|merge)\.",
];

/// `-c` settings that switch off every program the config names for content: each filter
/// (empty, a filter's command is no command) and merge driver (git's own text merge instead)
/// that `listing` (`git config --name-only`) defines. Diff drivers (textconv, a command) and
/// the external diff are switched off by the diff's own options ([`with_internal_diff`]): an
/// empty one would be run.
///
/// Err: the config name of a driver that cannot be switched off.
fn switched_off(listing: &str) -> Result<Vec<String>, &str> {
    let mut settings = Vec::new();
    for name in listing.lines() {
        let Some((section, rest)) = name.split_once('.') else {
            continue;
        };
        let Some((driver, _)) = rest.rsplit_once('.') else {
            continue;
        };
        // `-c` splits at the first `=`: a driver named with one could not be switched off.
        if driver.contains('=') {
            return Err(name);
        }
        match section {
            "filter" => settings.extend(
                ["clean", "smudge", "process"].map(|key| format!("filter.{driver}.{key}=")),
            ),
            "merge" => settings.push(format!("merge.{driver}.driver={TEXT_MERGE}")),
            _ => {}
        }
    }
    settings.sort();
    settings.dedup();
    Ok(settings
        .into_iter()
        .flat_map(|setting| ["-c".to_string(), setting])
        .collect())
}

/// git's own three-way text merge, as a merge driver: what a file without one gets.
const TEXT_MERGE: &str = "git merge-file --marker-size=%L %A %O %B";

/// `args` with `--no-ext-diff --no-textconv` after a `diff`, `log` or `show` subcommand: the
/// config's external diff, a diff driver's command and its textconv are programs, run on
/// content by the diffs these make.
fn with_internal_diff(args: &[&str]) -> Vec<String> {
    let mut words: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    let at = subcommand_at(args);
    if args
        .get(at)
        .is_some_and(|sub| matches!(*sub, "diff" | "log" | "show"))
    {
        for flag in ["--no-textconv", "--no-ext-diff"] {
            if !args.contains(&flag) {
                words.insert(at + 1, flag.into());
            }
        }
    }
    words
}

/// Where `args`'s subcommand is, after git's own options (`-c NAME=VALUE` among them).
fn subcommand_at(args: &[&str]) -> usize {
    let mut at = 0;
    while at < args.len() && args[at].starts_with('-') {
        at += if args[at] == "-c" { 2 } else { 1 };
    }
    at
}

/// Subcommands that read refs, names and config and never a file's content through a driver:
/// on content they need no listing of the config's drivers (one git process fewer).
const DRIVERLESS: &[&str] = &[
    "rev-parse",
    "symbolic-ref",
    "for-each-ref",
    "rev-list",
    "merge-base",
    "config",
    "ls-files",
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
    #[error("{0}")]
    Content(#[from] Refused),
    #[error(
        "`git {args}` in {dir} failed: its config names a driver git cannot switch off ({name})"
    )]
    Driver {
        dir: PathBuf,
        args: String,
        name: String,
    },
    #[error(
        "{dir} is not a worktree of the repository as git made it: {why}; drydock runs no git in it"
    )]
    NotOurWorktree { dir: PathBuf, why: NotAWorktree },
}

/// Why a folder's `.git` is not the one git made for a linked worktree.
#[derive(Debug, thiserror::Error)]
pub enum NotAWorktree {
    #[error("its .git is not the file git writes in a worktree")]
    NotAFile,
    #[error("its .git cannot be read ({0})")]
    Unreadable(Refused),
    #[error("its .git names no git directory")]
    NoGitDir,
    #[error("its .git names {}, not a worktree of {}", admin.display(), common.display())]
    Elsewhere { admin: PathBuf, common: PathBuf },
    #[error("{} belongs to another worktree", admin.display())]
    OtherWorktree { admin: PathBuf },
    #[error("checking its .git failed: {0}")]
    CheckFailed(String),
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
    /// Set on content a task or a repository wrote: see [`Git::on_content`].
    content: Option<Content>,
}

/// How git runs on content someone else wrote.
#[derive(Debug, Clone)]
struct Content {
    /// The git directory and work tree, named: never discovered from a directory the agent
    /// can write (a `.git` of its own brings its config, `core.worktree`, `include.path`).
    named: Option<(PathBuf, PathBuf)>,
}

impl Git {
    /// git in the person's own repository at `dir` (its main work tree, a clone of
    /// drydock's): its config and attributes are the person's.
    pub fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            env: Vec::new(),
            content: None,
        }
    }

    /// git in `dir`, whose files a task or a repository wrote: every program its config could
    /// name for that content (filter, textconv and merge drivers, an external diff, a signing
    /// key) is switched off for the call, as are hooks and the fsmonitor.
    pub fn on_content(dir: &Path) -> Git {
        Git {
            content: Some(Content { named: None }),
            ..Git::at(dir)
        }
    }

    /// git in `worktree`, a linked worktree of `repo`, once its `.git` is checked to be the
    /// one git made for it (see [`linked_worktree_check`]), with the git directory that check
    /// found named on every call: the agent may replace `.git` after the check, git never
    /// reads it. Its content is the agent's ([`Git::on_content`]).
    pub fn in_worktree<'a>(
        repo: &'a Path,
        worktree: &'a Path,
    ) -> BoxFuture<'a, Result<Git, GitError>> {
        async move {
            let common = Git::at(repo)
                .line(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
                .await?;
            let (dir, common) = (worktree.to_path_buf(), PathBuf::from(common));
            // Reads the worktree's files, so on a blocking thread like every other file read.
            let checked = tokio::task::spawn_blocking(move || linked_worktree_check(&dir, &common))
                .await
                .unwrap_or_else(|failed| Err(NotAWorktree::CheckFailed(failed.to_string())));
            let admin = checked.map_err(|why| GitError::NotOurWorktree {
                dir: worktree.to_path_buf(),
                why,
            })?;
            Ok(Git {
                content: Some(Content {
                    named: Some((admin, worktree.to_path_buf())),
                }),
                ..Git::at(worktree)
            })
        }
        .boxed()
    }

    /// The same git with `name=value` in its environment.
    pub fn with_env(mut self, name: &str, value: &str) -> Git {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Runs `git ARGS`; its standard output when it exits 0, else an error with its message.
    pub fn run<'a>(&'a self, args: &'a [&'a str]) -> BoxFuture<'a, Result<String, GitError>> {
        async move {
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
        .boxed()
    }

    /// `run`, its output's first line.
    pub fn line<'a>(&'a self, args: &'a [&'a str]) -> BoxFuture<'a, Result<String, GitError>> {
        async move {
            let stdout = self.run(args).await?;
            Ok(stdout.lines().next().unwrap_or_default().trim().to_string())
        }
        .boxed()
    }

    /// Runs `git ARGS` whatever its exit code (for commands whose code is an answer:
    /// `merge-tree` exits 1 on a conflict, `diff --quiet` on a difference).
    pub fn output<'a>(&'a self, args: &'a [&'a str]) -> BoxFuture<'a, Result<Output, GitError>> {
        async move {
            let mut prefix: Vec<String> = NO_REPOSITORY_CODE.map(String::from).to_vec();
            let Some(content) = &self.content else {
                return self.spawn(&prefix, args).await;
            };
            if let Some((git_dir, work_tree)) = &content.named {
                prefix.push(format!("--git-dir={}", git_dir.display()));
                prefix.push(format!("--work-tree={}", work_tree.display()));
            }
            prefix.extend(NO_SIGNING.map(String::from));
            let driverless = args
                .get(subcommand_at(args))
                .is_some_and(|sub| DRIVERLESS.contains(sub));
            if !driverless {
                let drivers = self.spawn(&prefix, DRIVERS).await?;
                let off = switched_off(&drivers.stdout).map_err(|name| GitError::Driver {
                    dir: self.dir.clone(),
                    args: args.join(" "),
                    name: name.to_string(),
                })?;
                prefix.extend(off);
            }
            prefix.extend(with_internal_diff(args));
            self.spawn(&prefix, &[]).await
        }
        .boxed()
    }

    async fn spawn(&self, prefix: &[String], args: &[&str]) -> Result<Output, GitError> {
        let shown = || {
            let tail = prefix
                .iter()
                .skip(NO_REPOSITORY_CODE.len())
                .map(String::as_str);
            tail.chain(args.iter().copied())
                .collect::<Vec<_>>()
                .join(" ")
        };
        // From PATH's absolute folders: `.` on PATH would run the worktree's own `git`.
        let program = crate::process::find_program("git").ok_or_else(|| {
            GitError::Missing(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no git in PATH's folders",
            ))
        })?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(prefix)
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
                args: shown(),
            })?
            .map_err(GitError::Missing)?;
        Ok(Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// The repository's top level, if `dir` is inside a work tree.
    pub fn top_level(&self) -> BoxFuture<'_, Option<PathBuf>> {
        async move {
            let output = self.output(&["rev-parse", "--show-toplevel"]).await.ok()?;
            let top = output.stdout.trim();
            (output.ok() && !top.is_empty()).then(|| PathBuf::from(top))
        }
        .boxed()
    }

    /// The commit `rev` names, if it names one.
    pub fn commit_of<'a>(&'a self, rev: &'a str) -> BoxFuture<'a, Option<String>> {
        async move {
            let spec = format!("{rev}^{{commit}}");
            let output = self
                .output(&["rev-parse", "--verify", "--quiet", &spec])
                .await
                .ok()?;
            output.ok().then(|| output.stdout.trim().to_string())
        }
        .boxed()
    }

    /// Whether the repository has a local branch `name`.
    pub fn branch_exists<'a>(&'a self, name: &'a str) -> BoxFuture<'a, bool> {
        async move {
            self.commit_of(&format!("refs/heads/{name}"))
                .await
                .is_some()
        }
        .boxed()
    }

    /// The URLs of the repository's remotes.
    pub fn remote_urls(&self) -> BoxFuture<'_, Vec<String>> {
        async move {
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
        .boxed()
    }

    /// The branch checked out here, None on a detached HEAD.
    pub fn current_branch(&self) -> BoxFuture<'_, Option<String>> {
        async move {
            let output = self
                .output(&["symbolic-ref", "--quiet", "--short", "HEAD"])
                .await
                .ok()?;
            output.ok().then(|| output.stdout.trim().to_string())
        }
        .boxed()
    }

    /// The paths with uncommitted changes (tracked files only when `untracked` is false), as
    /// `git status --porcelain` lists them ("XY path").
    pub fn dirty(&self, untracked: bool) -> BoxFuture<'_, Result<Vec<String>, GitError>> {
        async move {
            let mode = match untracked {
                true => "--untracked-files=all",
                false => "--untracked-files=no",
            };
            let status = self.run(&["status", "--porcelain=v1", "-z", mode]).await?;
            Ok(porcelain_entries(&status))
        }
        .boxed()
    }
}

/// Whether `worktree` is a linked worktree of the repository whose git directory is
/// `common`: its `.git` is a file (not a directory, not a link, not a FIFO) naming an entry of
/// `common/worktrees`, and that entry's `gitdir` names `worktree/.git` back. The entry, when
/// it is.
pub fn linked_worktree_check(worktree: &Path, common: &Path) -> Result<PathBuf, NotAWorktree> {
    let dot_git = worktree.join(".git");
    let text =
        untrusted::read_text(&dot_git, untrusted::SMALL_FILE).map_err(|refused| match refused {
            Refused::NotRegular(_) => NotAWorktree::NotAFile,
            other => NotAWorktree::Unreadable(other),
        })?;
    let admin = text
        .strip_prefix("gitdir: ")
        .map(|rest| PathBuf::from(rest.trim_end_matches(['\n', '\r'])))
        .ok_or(NotAWorktree::NoGitDir)?;
    // git >= 2.48 may write both links relative (worktree.useRelativePaths).
    let admin = worktree.join(admin);
    let canonical = |path: &Path| path.canonicalize().ok();
    let entries = canonical(&common.join("worktrees"));
    let entry =
        canonical(&admin).filter(|entry| entries.is_some() && entry.parent() == entries.as_deref());
    let Some(admin) = entry else {
        return Err(NotAWorktree::Elsewhere {
            admin,
            common: common.to_path_buf(),
        });
    };
    let back =
        untrusted::read_text(&admin.join("gitdir"), untrusted::SMALL_FILE).unwrap_or_default();
    let named = admin.join(back.trim_end());
    let worktree_named = named.parent().and_then(canonical);
    let dot_git_named = named.file_name() == Some(std::ffi::OsStr::new(".git"));
    if !dot_git_named || worktree_named != canonical(worktree) {
        return Err(NotAWorktree::OtherWorktree { admin });
    }
    Ok(admin)
}

/// The work tree of the repository `dir` is a linked worktree of (`dir` or a folder above it
/// being the worktree), when its `.git` checks out as [`linked_worktree_check`] wants.
/// Read from the files git keeps, without running git, and bounded: a `.git` that is a FIFO or
/// a link to `/dev/zero` is no worktree.
pub fn main_work_tree_of(dir: &Path) -> Option<PathBuf> {
    let top = dir.ancestors().find(|d| d.join(".git").exists())?;
    let text = untrusted::read_text(&top.join(".git"), untrusted::SMALL_FILE).ok()?;
    let admin = top.join(text.strip_prefix("gitdir: ")?.trim_end());
    let common = admin.parent()?.parent()?;
    linked_worktree_check(top, common).ok()?;
    let common = common.canonicalize().ok()?;
    match common.file_name()? == ".git" {
        true => common.parent().map(Path::to_path_buf),
        false => Some(common),
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

/// A git repository to test against (for the tests of every layer).
#[cfg(any(test, feature = "test-support"))]
pub mod test_repo {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// A git repository in a temporary directory with one commit, for tests.
    pub struct Repo {
        pub dir: tempfile::TempDir,
        pub path: PathBuf,
    }

    impl Repo {
        // Each makes a repository on disk: not a default value.
        #[allow(clippy::new_without_default)]
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
    use super::test_repo::{Repo, git};
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

    /// An executable script at `path` that leaves `marker` when it runs.
    fn marking_script(path: &Path, marker: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let script = format!("#!/bin/sh\ntouch '{}'\n", marker.display());
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[tokio::test]
    async fn the_repositorys_hooks_and_fsmonitor_do_not_run() {
        let repo = Repo::new();
        let marker = repo.dir.path().join("ran");
        for hook in [
            "post-checkout",
            "prepare-commit-msg",
            "post-commit",
            "post-merge",
        ] {
            marking_script(&repo.path.join(".git/hooks").join(hook), &marker);
        }
        let monitor = repo.dir.path().join("fsmonitor.sh");
        marking_script(&monitor, &marker);
        let git = Git::at(&repo.path);
        git.run(&["checkout", "-q", "-b", "side"]).await.unwrap();
        git.run(&["commit", "-q", "--allow-empty", "-m", "two"])
            .await
            .unwrap();
        git.run(&["checkout", "-q", "main"]).await.unwrap();
        git.run(&["merge", "-q", "--ff-only", "side"])
            .await
            .unwrap();
        repo.git(&["config", "core.fsmonitor", &monitor.display().to_string()]);
        git.dirty(true).await.unwrap();
        assert!(!marker.exists(), "drydock's git ran the repository's code");

        // The same repository's code, run by git as a person runs it.
        repo.git(&["status"]);
        assert!(marker.exists(), "the fsmonitor is the repository's code");
        std::fs::remove_file(&marker).unwrap();
        repo.git(&["config", "--unset", "core.fsmonitor"]);
        repo.git(&["checkout", "-q", "side"]);
        assert!(marker.exists(), "post-checkout is the repository's code");
    }

    #[tokio::test]
    async fn a_worktree_whose_git_was_swapped_is_refused() {
        let repo = Repo::new();
        let tree = repo.dir.path().join("tree");
        repo.git(&["worktree", "add", "-q", &tree.display().to_string()]);
        let other = Repo::new();
        let other_tree = other.dir.path().join("tree");
        other.git(&["worktree", "add", "-q", &other_tree.display().to_string()]);
        let ours = std::fs::read_to_string(tree.join(".git")).unwrap();
        assert!(Git::in_worktree(&repo.path, &tree).await.is_ok());

        std::fs::copy(other_tree.join(".git"), tree.join(".git")).unwrap();
        let refused = Git::in_worktree(&repo.path, &tree).await.unwrap_err();
        assert!(
            refused.to_string().contains("not a worktree of"),
            "{refused}"
        );

        std::fs::remove_file(tree.join(".git")).unwrap();
        git(
            repo.dir.path(),
            &["init", "-q", &tree.display().to_string()],
        );
        let refused = Git::in_worktree(&repo.path, &tree).await.unwrap_err();
        assert!(refused.to_string().contains("is not the file"), "{refused}");

        // A .git file naming a worktree entry of the repository that is not this one's.
        std::fs::remove_dir_all(tree.join(".git")).unwrap();
        let second = repo.dir.path().join("second");
        repo.git(&["worktree", "add", "-q", &second.display().to_string()]);
        std::fs::copy(second.join(".git"), tree.join(".git")).unwrap();
        let refused = Git::in_worktree(&repo.path, &tree).await.unwrap_err();
        assert!(
            refused.to_string().contains("another worktree"),
            "{refused}"
        );

        std::fs::write(tree.join(".git"), ours).unwrap();
        assert!(Git::in_worktree(&repo.path, &tree).await.is_ok());
    }

    #[test]
    fn a_linked_worktree_knows_its_repository() {
        let repo = Repo::new();
        let tree = repo.dir.path().join("tree");
        repo.git(&["worktree", "add", "-q", &tree.display().to_string()]);
        std::fs::create_dir_all(tree.join("src")).unwrap();
        assert_eq!(
            main_work_tree_of(&tree.join("src")),
            Some(repo.path.clone())
        );
        assert_eq!(main_work_tree_of(&repo.path), None, "not a linked worktree");
        assert_eq!(
            main_work_tree_of(repo.dir.path()),
            None,
            "not in a repository"
        );
    }

    #[test]
    fn a_git_file_that_never_ends_is_no_worktree_and_stalls_nothing() {
        let repo = Repo::new();
        let tree = repo.dir.path().join("tree");
        repo.git(&["worktree", "add", "-q", &tree.display().to_string()]);
        let common = repo.path.join(".git");
        std::fs::remove_file(tree.join(".git")).unwrap();
        nix::unistd::mkfifo(
            &tree.join(".git"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        let refused = linked_worktree_check(&tree, &common).unwrap_err();
        assert!(matches!(refused, NotAWorktree::NotAFile), "{refused}");
        assert_eq!(main_work_tree_of(&tree), None);
        std::fs::remove_file(tree.join(".git")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", tree.join(".git")).unwrap();
        let refused = linked_worktree_check(&tree, &common).unwrap_err();
        assert!(matches!(refused, NotAWorktree::NotAFile), "{refused}");
        assert_eq!(main_work_tree_of(&tree), None);
    }

    /// A repository of the agent's own in place of the worktree's `.git`, made after drydock
    /// checked it, with a filter, an external diff and a `core.worktree` elsewhere: git still
    /// works on the worktree drydock made, through the git directory it checked.
    #[tokio::test]
    async fn a_git_swapped_after_the_check_is_never_read() {
        let repo = Repo::new();
        let tree = repo.dir.path().join("tree");
        repo.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            "task",
            &tree.display().to_string(),
        ]);
        let here = Git::in_worktree(&repo.path, &tree).await.unwrap();

        let marker = repo.dir.path().join("ran");
        std::fs::remove_file(tree.join(".git")).unwrap();
        git(&tree, &["init", "-q"]);
        git(
            &tree,
            &[
                "config",
                "filter.x.clean",
                &format!("touch {}; cat", marker.display()),
            ],
        );
        git(
            &tree,
            &[
                "config",
                "diff.external",
                &format!("touch {}", marker.display()),
            ],
        );
        git(&tree, &["config", "core.worktree", "/"]);
        std::fs::write(tree.join(".gitattributes"), "* filter=x\n").unwrap();
        std::fs::write(tree.join("README.md"), "changed by the agent\n").unwrap();

        assert_eq!(here.current_branch().await.as_deref(), Some("task"));
        let diff = here
            .run(&["diff", "HEAD", "--", "README.md"])
            .await
            .unwrap();
        assert!(diff.contains("+changed by the agent"), "{diff}");
        assert!(!marker.exists(), "drydock ran the agent's git config");
    }

    /// The person's own filter and diff drivers (git-lfs, nbstripout) never run on what an
    /// agent wrote, whatever its `.gitattributes` names; in the person's own checkout they do.
    #[tokio::test]
    async fn the_persons_drivers_do_not_run_on_content() {
        let repo = Repo::new();
        let marker = repo.dir.path().join("ran");
        let touch = |what: &str| format!("touch {}-{what}; cat", marker.display());
        repo.git(&["config", "filter.lfs.clean", &touch("clean")]);
        repo.git(&["config", "filter.lfs.process", &touch("process")]);
        repo.git(&["config", "diff.nb.textconv", &touch("textconv")]);
        repo.git(&["config", "diff.nb.command", &touch("command")]);
        repo.git(&["config", "commit.gpgSign", "true"]);
        repo.write(".gitattributes", "* filter=lfs diff=nb\n");
        repo.write("README.md", "an agent's\n");
        let content = Git::on_content(&repo.path);
        content.run(&["diff", "HEAD"]).await.unwrap();
        content.run(&["add", "-A"]).await.unwrap();
        content
            .run(&["commit", "-q", "-m", "the agent's leftovers"])
            .await
            .unwrap();
        let ran: Vec<_> = std::fs::read_dir(repo.dir.path())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("ran"))
            .collect();
        assert!(ran.is_empty(), "drivers ran on content: {ran:?}");

        repo.write("README.md", "the person's\n");
        // The process filter here does not speak git's protocol: only that it ran counts.
        let _ = Git::at(&repo.path).output(&["diff", "HEAD"]).await;
        assert!(
            std::fs::read_dir(repo.dir.path()).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("ran")),
            "the person's own checkout keeps its drivers"
        );
    }

    /// A tree of the agent's checked out (the landing's scratch worktree, a clone): the
    /// person's smudge filter, which git-lfs points at the tree's own `.lfsconfig`, does not
    /// run; git itself would run it.
    #[tokio::test]
    async fn checking_out_content_runs_no_smudge_filter() {
        let repo = Repo::new();
        repo.write(".gitattributes", "*.bin filter=lfs\n");
        repo.write("model.bin", "weights\n");
        repo.commit_all("an agent's tree");
        let marker = repo.dir.path().join("smudged");
        let smudge = format!("touch {}; cat", marker.display());
        repo.git(&["config", "filter.lfs.smudge", &smudge]);
        let commit = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
        let add = |name: &str| {
            let path = repo.dir.path().join(name).display().to_string();
            ["worktree", "add", "--quiet", "--detach", &path, &commit].map(String::from)
        };
        let args = add("content");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Git::on_content(&repo.path).run(&args).await.unwrap();
        assert!(
            !marker.exists(),
            "the person's filter ran on the agent's tree"
        );
        let args = add("person");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Git::at(&repo.path).run(&args).await.unwrap();
        assert!(
            marker.exists(),
            "the person's own checkout keeps its filter"
        );
    }

    #[test]
    fn a_driver_git_cannot_switch_off_refuses_the_call() {
        let listing = "filter.lfs.clean\ndiff.nb.textconv\nfilter.a.b.smudge\nmerge.union.driver\n";
        let off = switched_off(listing).unwrap();
        for setting in [
            "filter.lfs.clean=",
            "filter.lfs.smudge=",
            "filter.lfs.process=",
            "filter.a.b.clean=",
            "merge.union.driver=git merge-file --marker-size=%L %A %O %B",
        ] {
            assert!(off.iter().any(|arg| arg == setting), "{setting} in {off:?}");
        }
        assert!(!off.iter().any(|arg| arg.starts_with("diff.")), "{off:?}");
        assert_eq!(switched_off("filter.x=y.clean\n"), Err("filter.x=y.clean"));
        assert_eq!(
            with_internal_diff(&["-c", "core.quotePath=false", "diff", "HEAD"]),
            [
                "-c",
                "core.quotePath=false",
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "HEAD"
            ]
        );
        assert_eq!(
            with_internal_diff(&["diff", "--no-ext-diff", "--no-textconv"]),
            ["diff", "--no-ext-diff", "--no-textconv"]
        );
        assert_eq!(with_internal_diff(&["status", "diff"]), ["status", "diff"]);
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
