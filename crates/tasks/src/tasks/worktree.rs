//! Tasks' git worktrees: one per task and branch (`drydock/task-ID`) under drydock's data
//! directory, never inside the project; made from the project's HEAD or a base the task
//! names; the agent's leftovers committed on its branch when it stops, and the branch's diff
//! against its base; removed with their branch when discarded. Every change to a repository's
//! worktrees and refs goes through one lock, so two tasks never race on git's own locks.
//!
//! Nothing here deletes a person's work: a worktree is removed only when its task is discarded
//! (the person's choice) or its branch was merged, and never with uncommitted changes unless
//! the task is discarded.

use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::isolation::{ChangedFile, Checks, Disposition, Review, Worktree};
use super::submodules;
use crate::config::{RemoteRepositories, TaskDirs};
use crate::git::{Git, GitError};

/// How much of a diff a review keeps.
pub const DIFF_BUDGET: usize = 64 * 1024;
/// How many changed files a review lists.
const MOST_FILES: usize = 500;

/// What became of a merged task's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retired {
    Removed,
    /// Kept, and why: it holds changes made after its merge.
    Kept(String),
}

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "{repo} has no commit yet, so there is nothing to make a worktree from: commit once, or queue the task with in_place"
    )]
    NoCommit { repo: String },
    #[error("base {base:?} names no commit in {repo}")]
    UnknownBase { base: String, repo: String },
    #[error(
        "the branch {branch} exists already in {repo} and is not this task's: rename or delete it (`git branch -m {branch} NEW`), then retry the task"
    )]
    BranchTaken { branch: String, repo: String },
    #[error("{0}")]
    Io(String),
}

/// Held while a repository's worktrees or refs change: against this drydock's other tasks
/// (in process) and against every other drydock of this machine working on the same
/// repository (a file lock in its git directory: a team's hosts can share one checkout).
pub struct Changing<'a> {
    _here: tokio::sync::MutexGuard<'a, ()>,
    _machine: Option<nix::fcntl::Flock<std::fs::File>>,
}

/// The worktrees of this drydock's tasks, under one directory.
pub struct Worktrees {
    dirs: TaskDirs,
    /// Held while a worktree or ref of any repository changes.
    changing: tokio::sync::Mutex<()>,
    /// Where submodules may come from, beyond the URLs the repository's config names.
    remotes: RemoteRepositories,
}

/// The identity drydock's commits for a task carry.
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Author {
    pub fn of_task(id: &str) -> Author {
        Author {
            name: format!("drydock task {id}"),
            email: format!("task-{id}@drydock.invalid"),
        }
    }
}

pub fn branch_of(task_id: &str) -> String {
    format!("drydock/task-{task_id}")
}

impl Worktrees {
    pub fn new(dirs: TaskDirs) -> Worktrees {
        Worktrees {
            dirs,
            changing: tokio::sync::Mutex::new(()),
            remotes: RemoteRepositories::new(Vec::new()).expect("no pattern is valid"),
        }
    }

    /// The same, checking out submodules from the remotes `remotes` allows too.
    pub fn with_remotes(mut self, remotes: RemoteRepositories) -> Worktrees {
        self.remotes = remotes;
        self
    }

    /// The repository `project` is in (its top level), if it is in one.
    pub fn repository_of(project: &Path) -> BoxFuture<'_, Option<PathBuf>> {
        async move { Git::at(project).top_level().await }.boxed()
    }

    /// A worktree for task `id` of `project` (inside repository `repo`), on a new branch from
    /// `base` (default: the project's HEAD), with the untracked paths `copy` copied in. A task
    /// retried after an earlier attempt gets its worktree back.
    pub fn create<'a>(
        &'a self,
        id: &'a str,
        claim: i64,
        project: &'a Path,
        repo: &'a Path,
        base: Option<&'a str>,
        copy: &'a [String],
    ) -> BoxFuture<'a, Result<Worktree, WorktreeError>> {
        async move {
            let source = Git::at(repo);
            let repo_text = repo.display().to_string();
            let base_sha = match base {
                Some(base) => {
                    source
                        .commit_of(base)
                        .await
                        .ok_or_else(|| WorktreeError::UnknownBase {
                            base: base.to_string(),
                            repo: repo_text.clone(),
                        })?
                }
                None => source
                    .commit_of("HEAD")
                    .await
                    .ok_or_else(|| WorktreeError::NoCommit {
                        repo: repo_text.clone(),
                    })?,
            };
            let base_ref = match base {
                Some(base) => {
                    let branch = format!("refs/heads/{base}");
                    source.commit_of(&branch).await.map(|_| base.to_string())
                }
                None => Git::at(project).current_branch().await,
            };
            let branch = branch_of(id);
            let path = self.dirs.worktree(repo, id);
            let subdir = project.strip_prefix(repo).unwrap_or(Path::new(""));
            let mut worktree = Worktree {
                repo: repo_text.clone(),
                path: path.display().to_string(),
                dir: match subdir.as_os_str().is_empty() {
                    true => path.display().to_string(),
                    false => path.join(subdir).display().to_string(),
                },
                branch: branch.clone(),
                base_ref,
                base_sha: base_sha.clone(),
                copied: Vec::new(),
                notes: Vec::new(),
                confinement: None,
            };

            let _changing = self.lock(repo).await;
            source.run(&["worktree", "prune"]).await?;
            if self.is_worktree_on(&source, &path, &branch).await? {
                worktree
                    .notes
                    .push("continues in the worktree of its earlier attempt".into());
                return Ok(worktree);
            }
            let mut branch = branch;
            if source.branch_exists(&branch).await && claim > 1 {
                // Taken over from a host that lost the task: its branch keeps what it did.
                let claimed = format!("{branch}-claim-{claim}");
                let earlier = std::mem::replace(&mut branch, claimed);
                worktree.branch = branch.clone();
                worktree.notes.push(format!(
                    "the branch of its earlier claim, {earlier}, is kept as its host left it"
                ));
            }
            if source.branch_exists(&branch).await {
                return Err(WorktreeError::BranchTaken {
                    branch,
                    repo: repo_text,
                });
            }
            std::fs::create_dir_all(path.parent().expect("a worktree has a parent"))
                .map_err(|e| WorktreeError::Io(format!("cannot create {}: {e}", path.display())))?;
            let path_text = path.display().to_string();
            source
                .run(&[
                    "worktree", "add", "--quiet", "-b", &branch, &path_text, &base_sha,
                ])
                .await?;
            if let Err(error) = self.fill(&mut worktree, project, copy).await {
                // A worktree the agent cannot work in is taken back, with its new branch.
                let _ = source
                    .run(&["worktree", "remove", "--force", &path_text])
                    .await;
                let _ = source.run(&["branch", "-D", &branch]).await;
                return Err(error);
            }
            let left_out = Git::at(project).dirty(true).await?;
            if !left_out.is_empty() {
                worktree.notes.push(format!(
                    "the project had {} uncommitted change(s) ({}) that this task does not have: it starts from {} {}",
                    left_out.len(),
                    first_paths(&left_out, 5),
                    worktree.base_ref.as_deref().unwrap_or("commit"),
                    &base_sha[..12],
                ));
            }
            Ok(worktree)
    }
        .boxed()
    }

    /// Submodules checked out, and the configured untracked files copied in.
    async fn fill(
        &self,
        worktree: &mut Worktree,
        project: &Path,
        copy: &[String],
    ) -> Result<(), WorktreeError> {
        if worktree.path().join(".gitmodules").is_file() {
            Git::in_worktree(Path::new(&worktree.repo), worktree.path()).await?;
            let (checked_out, left_out) =
                submodules::check_out(worktree.path(), &self.remotes).await?;
            if checked_out > 0 {
                worktree.notes.push(format!(
                    "{checked_out} submodule(s) from allowed remotes were checked out (git submodule update --init)"
                ));
            }
            worktree.notes.extend(left_out);
        }
        // Copied on a blocking thread: an entry may be a whole folder (deps, node_modules).
        let (from, into, entries) = (project.to_path_buf(), worktree.dir(), copy.to_vec());
        let copied = tokio::task::spawn_blocking(move || {
            entries
                .into_iter()
                .map(|entry| {
                    let copied = copy_untracked(&from, &into, &entry);
                    (entry, copied)
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| WorktreeError::Io(format!("copying the untracked files: {e}")))?;
        for (entry, copied) in copied {
            match copied {
                Copied::Done => worktree.copied.push(entry),
                Copied::Secret => worktree.notes.push(format!(
                    "{entry} was not copied: it holds secrets (.env files, keys, credentials) an agent should not get"
                )),
                Copied::Missing => worktree.notes.push(format!(
                    "{entry} was not copied: the project has no such file"
                )),
                Copied::Tracked => {}
                Copied::Refused(why) => worktree
                    .notes
                    .push(format!("{entry} was not copied: {why}")),
            }
        }
        Ok(())
    }

    /// Refuses a worktree that is not one drydock makes: a task's row (from a shared queue,
    /// or an older drydock) names the branch deleted and the folder removed with it.
    fn ours(&self, worktree: &Worktree) -> Result<(), WorktreeError> {
        let branch_ok = worktree
            .branch
            .strip_prefix("drydock/task-")
            .is_some_and(|id| {
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        let path = Path::new(&worktree.path);
        let root = self.dirs.worktrees();
        let under = |root: &Path| path.starts_with(root) && path != root;
        let path_ok = path.is_absolute()
            && (under(&root) || root.canonicalize().is_ok_and(|root| under(&root)))
            && !path
                .components()
                .any(|part| part == std::path::Component::ParentDir);
        match (branch_ok, path_ok) {
            (true, true) => Ok(()),
            (false, _) => Err(WorktreeError::Io(format!(
                "{} is not a task's branch (drydock/task-ID): drydock deletes no other",
                worktree.branch
            ))),
            (_, false) => Err(WorktreeError::Io(format!(
                "{} is not under drydock's worktrees ({}): drydock removes no other folder",
                worktree.path,
                self.dirs.worktrees().display()
            ))),
        }
    }

    async fn is_worktree_on(&self, git: &Git, path: &Path, branch: &str) -> Result<bool, GitError> {
        let listing = git.run(&["worktree", "list", "--porcelain"]).await?;
        let wanted = format!("worktree {}", path.display());
        let on = format!("branch refs/heads/{branch}");
        Ok(listing
            .split("\n\n")
            .any(|entry| entry.lines().any(|l| l == wanted) && entry.lines().any(|l| l == on)))
    }

    /// What the task's branch holds once its agent stopped: the agent's uncommitted changes
    /// committed (authored as the task, `message` as the message; the copied files left
    /// out), then the branch's diff against its base.
    pub fn capture<'a>(
        &'a self,
        worktree: &'a Worktree,
        author: &'a Author,
        message: &'a str,
    ) -> BoxFuture<'a, Result<Review, WorktreeError>> {
        async move {
            let repo = Git::at(Path::new(&worktree.repo));
            let mut notes = Vec::new();
            let mut committed_for_agent = false;
            if worktree.path().is_dir() {
                match Git::in_worktree(Path::new(&worktree.repo), worktree.path()).await {
                    Ok(here) => match here.current_branch().await {
                        Some(branch) if branch == worktree.branch => {
                            committed_for_agent =
                                commit_leftovers(&here, worktree, author, message).await?;
                        }
                        other => notes.push(format!(
                            "the agent left the worktree on {} instead of {}: what it left uncommitted there was not committed",
                            other.as_deref().unwrap_or("a detached HEAD"),
                            worktree.branch
                        )),
                    },
                    Err(refused) => notes.push(format!(
                        "{refused}: what the agent left uncommitted there was not committed"
                    )),
                }
            } else {
                notes.push(format!(
                    "the worktree {} was deleted by hand: only what was committed on {} is here",
                    worktree.path, worktree.branch
                ));
            }
            let branch_ref = format!("refs/heads/{}", worktree.branch);
            let head = repo.commit_of(&branch_ref).await.ok_or_else(|| {
                WorktreeError::Io(format!(
                    "the branch {} is gone from {}: nothing to review",
                    worktree.branch, worktree.repo
                ))
            })?;
            let base = repo
                .line(&["merge-base", &worktree.base_sha, &head])
                .await
                .unwrap_or_else(|_| worktree.base_sha.clone());
            let diff = diff_of(&repo, &base, &head).await?;
            let commits = repo
                .line(&["rev-list", "--count", &format!("{base}..{head}")])
                .await?
                .parse()
                .unwrap_or(0);
            Ok(Review {
                head,
                base,
                committed_for_agent,
                commits,
                files: diff.files,
                insertions: diff.insertions,
                deletions: diff.deletions,
                diff: diff.text,
                diff_cut: diff.cut,
                checks: Checks::Running,
                disposition: Disposition::Open,
                notes,
            })
    }
        .boxed()
    }

    /// Removes the task's worktree (with what it holds: the person discards it) and its
    /// branch; returns the branch's last commit.
    pub fn discard<'a>(
        &'a self,
        worktree: &'a Worktree,
    ) -> BoxFuture<'a, Result<Option<String>, WorktreeError>> {
        async move {
            self.ours(worktree)?;
            let repo = Git::at(Path::new(&worktree.repo));
            let _changing = self.lock(Path::new(&worktree.repo)).await;
            if worktree.path().exists() {
                match Git::in_worktree(Path::new(&worktree.repo), worktree.path()).await {
                    Ok(_) => {
                        repo.run(&["worktree", "remove", "--force", "--force", &worktree.path])
                            .await?;
                    }
                    // git refuses a worktree whose .git is not its own: removed as it is.
                    Err(_) => remove_tree(worktree.path()).await?,
                }
            }
            repo.run(&["worktree", "prune"]).await?;
            let branch_ref = format!("refs/heads/{}", worktree.branch);
            let last = repo.commit_of(&branch_ref).await;
            if last.is_some() {
                repo.run(&["branch", "-D", &worktree.branch]).await?;
            }
            Ok(last)
        }
        .boxed()
    }

    /// Removes the worktree of a task whose branch was merged (its work is in the target),
    /// and the branch once it is contained in `merged_into`. A worktree with uncommitted
    /// changes is kept: returns why.
    pub fn retire<'a>(
        &'a self,
        worktree: &'a Worktree,
        merged_into: &'a str,
    ) -> BoxFuture<'a, Result<Retired, WorktreeError>> {
        async move {
            self.ours(worktree)?;
            let repo = Git::at(Path::new(&worktree.repo));
            let _changing = self.lock(Path::new(&worktree.repo)).await;
            if worktree.path().exists() {
                let here = match Git::in_worktree(Path::new(&worktree.repo), worktree.path()).await
                {
                    Ok(here) => here,
                    Err(refused) => return Ok(Retired::Kept(format!("{refused}: kept"))),
                };
                let dirty = here.dirty(true).await?;
                if !dirty.is_empty() {
                    return Ok(Retired::Kept(format!(
                        "{} has uncommitted changes ({}) made after its merge: kept",
                        worktree.path,
                        first_paths(&dirty, 5)
                    )));
                }
                repo.run(&["worktree", "remove", &worktree.path]).await?;
            }
            repo.run(&["worktree", "prune"]).await?;
            let branch_ref = format!("refs/heads/{}", worktree.branch);
            if let Some(head) = repo.commit_of(&branch_ref).await {
                let contained = repo
                    .output(&["merge-base", "--is-ancestor", &head, merged_into])
                    .await?
                    .ok();
                if contained {
                    repo.run(&["branch", "-D", &worktree.branch]).await?;
                }
            }
            Ok(Retired::Removed)
        }
        .boxed()
    }

    /// The scratch worktree where the landing queue tests what merging a result onto
    /// branch `into` of `repo` makes, checked out (detached) at `commit`. One per branch,
    /// kept between landings and cleaned of everything the last one left, ignored build
    /// output included. Also whether it was made just now.
    pub fn scratch<'a>(
        &'a self,
        repo: &'a Path,
        into: &'a str,
        commit: &'a str,
    ) -> BoxFuture<'a, Result<(PathBuf, bool), WorktreeError>> {
        async move {
            let path = self.dirs.landing_worktree(repo, into);
            let source = Git::at(repo);
            let _changing = self.lock(repo).await;
            source.run(&["worktree", "prune"]).await?;
            let made = match Git::in_worktree(repo, &path).await {
                Ok(there) if path.is_dir() => {
                    there
                        .run(&["checkout", "--quiet", "--force", "--detach", commit])
                        .await?;
                    // Ignored files too (mix's _build and deps, an in-tree target): what the last
                    // result's checks built must not decide this one's.
                    there.run(&["clean", "--quiet", "-f", "-d", "-x"]).await?;
                    false
                }
                _ => {
                    if path.exists() {
                        remove_tree(&path).await?;
                    }
                    std::fs::create_dir_all(path.parent().expect("a worktree has a parent"))
                        .map_err(|e| {
                            WorktreeError::Io(format!("cannot create {}: {e}", path.display()))
                        })?;
                    let path_text = path.display().to_string();
                    // The merged tree holds the agent's files: the person's filters (git-lfs's
                    // smudge, which follows the agent's `.lfsconfig`) do not run on them.
                    Git::on_content(repo)
                        .run(&[
                            "worktree", "add", "--quiet", "--force", "--detach", &path_text, commit,
                        ])
                        .await?;
                    true
                }
            };
            Ok((path, made))
        }
        .boxed()
    }

    /// Held by merges, which move the refs the worktrees share.
    pub fn lock<'a>(&'a self, repo: &'a Path) -> BoxFuture<'a, Changing<'a>> {
        async move {
            let here = self.changing.lock().await;
            let machine = match Git::at(repo)
                .output(&["rev-parse", "--git-common-dir"])
                .await
            {
                Ok(out) if out.ok() => {
                    let path = repo.join(out.stdout.trim()).join("drydock.lock");
                    tokio::task::spawn_blocking(move || lock_file(&path))
                        .await
                        .ok()
                        .flatten()
                }
                _ => None,
            };
            Changing {
                _here: here,
                _machine: machine,
            }
        }
        .boxed()
    }
}

/// Removes the folder `path` and all it holds, on a blocking thread.
async fn remove_tree(path: &Path) -> Result<(), WorktreeError> {
    let gone = path.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::remove_dir_all(gone))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
        .map_err(|e| WorktreeError::Io(format!("cannot remove {}: {e}", path.display())))
}

/// An exclusive lock on the file at `path` (made if missing), waited for; None when it cannot
/// be had (a read-only repository: the in-process lock alone then holds).
pub(super) fn lock_file(path: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).ok()
}

/// Commits what the agent left uncommitted on its branch (the copied files left out);
/// whether there was anything. Pathspecs are taken from the worktree's top level.
async fn commit_leftovers(
    here: &Git,
    worktree: &Worktree,
    author: &Author,
    message: &str,
) -> Result<bool, WorktreeError> {
    if here.dirty(true).await?.is_empty() {
        return Ok(false);
    }
    // Copied files git ignores anyway need no exclusion (naming one makes `add` fail).
    let mut excluded = Vec::new();
    for copied in &worktree.copied {
        let path = relative_to_top(worktree, copied);
        if !here.output(&["check-ignore", "-q", &path]).await?.ok() {
            excluded.push(format!(":(exclude){path}"));
        }
    }
    let mut add = vec!["add", "-A", "--", "."];
    add.extend(excluded.iter().map(String::as_str));
    here.run(&add).await?;
    if here.output(&["diff", "--cached", "--quiet"]).await?.ok() {
        return Ok(false);
    }
    here.clone()
        .with_env("GIT_AUTHOR_NAME", &author.name)
        .with_env("GIT_AUTHOR_EMAIL", &author.email)
        .with_env("GIT_COMMITTER_NAME", &author.name)
        .with_env("GIT_COMMITTER_EMAIL", &author.email)
        .run(&["commit", "--quiet", "--no-verify", "-m", message])
        .await?;
    Ok(true)
}

/// A copied path (relative to the project) as a path from the worktree's top level.
fn relative_to_top(worktree: &Worktree, copied: &str) -> String {
    let dir = worktree.dir();
    let inside = dir.strip_prefix(worktree.path()).unwrap_or(Path::new(""));
    inside.join(copied).display().to_string()
}

struct Diff {
    files: Vec<ChangedFile>,
    insertions: u64,
    deletions: u64,
    text: String,
    cut: bool,
}

async fn diff_of(repo: &Git, base: &str, head: &str) -> Result<Diff, GitError> {
    let range = [base, head];
    let mut args = vec!["diff", "--no-renames", "--no-ext-diff", "-z", "--numstat"];
    args.extend(range);
    let numstat = repo.run(&args).await?;
    let mut args = vec![
        "diff",
        "--no-renames",
        "--no-ext-diff",
        "-z",
        "--name-status",
    ];
    args.extend(range);
    let statuses = repo.run(&args).await?;
    let mut args = vec!["diff", "--no-renames", "--no-ext-diff", "--no-color"];
    args.extend(range);
    let text = repo.run(&args).await?;

    let mut files = changed_files(&numstat, &statuses);
    let insertions = files.iter().filter_map(|f| f.insertions).sum();
    let deletions = files.iter().filter_map(|f| f.deletions).sum();
    files.truncate(MOST_FILES);
    let cut = text.len() > DIFF_BUDGET;
    let text = match cut {
        true => {
            let end = (0..=DIFF_BUDGET)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0);
            text[..end].to_string()
        }
        false => text,
    };
    Ok(Diff {
        files,
        insertions,
        deletions,
        text,
        cut,
    })
}

/// Joins `--numstat -z` ("INS\tDEL\tPATH\0", "-" for a binary file) with `--name-status -z`
/// ("S\0PATH\0").
fn changed_files(numstat: &str, statuses: &str) -> Vec<ChangedFile> {
    let mut status_of = std::collections::HashMap::new();
    let mut fields = statuses.split('\0').filter(|f| !f.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        status_of.insert(path.to_string(), status.to_string());
    }
    numstat
        .split('\0')
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| {
            let mut parts = entry.splitn(3, '\t');
            let insertions = parts.next()?.parse().ok();
            let deletions = parts.next()?.parse().ok();
            let path = parts.next()?.to_string();
            let status = match status_of.get(&path).map(String::as_str) {
                Some("A") => "added",
                Some("D") => "deleted",
                Some("T") => "type_changed",
                _ => "modified",
            };
            Some(ChangedFile {
                path,
                status: status.to_string(),
                insertions,
                deletions,
            })
        })
        .collect()
}

enum Copied {
    Done,
    Tracked,
    Missing,
    Secret,
    Refused(String),
}

/// Copies `entry` (a file or folder, relative to the project) from `project` into `dir`,
/// unless it is tracked (the worktree has it), a `.env` file, or outside the project.
fn copy_untracked(project: &Path, dir: &Path, entry: &str) -> Copied {
    let relative = Path::new(entry);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Copied::Refused("give a path inside the project, without `..`".into());
    }
    if crate::private::holds_secrets(relative) {
        return Copied::Secret;
    }
    let from = project.join(relative);
    if !from.exists() {
        return Copied::Missing;
    }
    let to = dir.join(relative);
    if to.exists() {
        return Copied::Tracked;
    }
    match copy_tree(&from, &to) {
        Ok(()) => Copied::Done,
        Err(error) => Copied::Refused(error.to_string()),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let meta = std::fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        // door: the person's project, copied before the agent starts.
        let target = std::fs::read_link(from)?;
        return std::os::unix::fs::symlink(target, to);
    }
    if !meta.is_dir() {
        // door: the person's project, copied before the agent starts.
        return std::fs::copy(from, to).map(|_| ());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

/// The first `n` paths of `git status --porcelain` entries, for a message.
pub fn first_paths(entries: &[String], n: usize) -> String {
    let mut paths: Vec<&str> = entries
        .iter()
        .take(n)
        .map(|e| e.get(3..).unwrap_or(e))
        .collect();
    if entries.len() > n {
        paths.push("…");
    }
    paths.join(", ")
}

#[cfg(test)]
mod tests;
