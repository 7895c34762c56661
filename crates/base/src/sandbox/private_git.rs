//! The git a sandboxed agent sees of its worktree. The repository stays out of its reach: a
//! writable objects directory would let it delete the person's history, a writable refs
//! directory move the person's branches. Instead the agent gets a private repository of its
//! own: its objects borrow the repository's (read-only, through `alternates`), its refs are a
//! copy of the repository's, and its worktree's git directory is a private one mounted where
//! the worktree's `.git` points. What the agent commits comes back on its branch alone,
//! through a fetch that checks every object, when drydock takes up its work.

use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::Mount;
use crate::git::{Git, GitError};
use crate::untrusted::{self, Refused, SMALL_FILE, Tree};

/// The largest index copied into a private git (a repository of a million files has one of
/// about 100 MB).
const LARGEST_INDEX: u64 = 1 << 30;

/// What the agent committed on, kept apart from the repository until brought back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateGit {
    /// The repository (its main work tree or git directory).
    pub repo: PathBuf,
    /// The repository's common git directory.
    pub repo_common: PathBuf,
    /// The worktree's own git directory in the repository (`worktrees/NAME`).
    pub repo_admin: PathBuf,
    /// The private repository: objects, refs, config.
    pub common: PathBuf,
    /// The private git directory of the worktree, seen at `repo_admin` inside.
    pub admin: PathBuf,
    pub branch: String,
}

impl PrivateGit {
    /// The private git of `worktree` (on `branch` of `repo`) in `dir`, made or brought up to
    /// date with the repository: its refs copied, the branch at the repository's tip.
    /// `identity` (name, email) signs the agent's commits when git's config names nobody.
    pub fn prepare<'a>(
        repo: &'a Path,
        worktree: &'a Path,
        branch: &'a str,
        dir: &'a Path,
        identity: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<PrivateGit, GitError>> {
        async move {
            let here = Git::in_worktree(repo, worktree).await?;
            let absolute = |what: &'static str| {
                let here = here.clone();
                async move {
                    here.line(&["rev-parse", "--path-format=absolute", what])
                        .await
                        .map(PathBuf::from)
                }
            };
            let git = PrivateGit {
                repo: repo.to_path_buf(),
                repo_common: absolute("--git-common-dir").await?,
                repo_admin: absolute("--git-dir").await?,
                common: dir.join("common"),
                admin: dir.join("admin"),
                branch: branch.to_string(),
            };
            let tip = here
                .line(&["rev-parse", &format!("refs/heads/{branch}")])
                .await?;
            let refs = here
                .run(&[
                    "for-each-ref",
                    "--format=%(objectname) %(refname)",
                    "refs/heads",
                    "refs/tags",
                    "refs/remotes",
                ])
                .await?;
            let format = here.line(&["rev-parse", "--show-object-format"]).await?;
            let config_of = |name: &'static str| {
                let here = here.clone();
                async move { here.line(&["config", "--get", name]).await.ok() }
            };
            let name = config_of("user.name").await;
            let email = config_of("user.email").await;
            let config = private_config(
                &format,
                name.as_deref().unwrap_or(identity.0),
                email.as_deref().unwrap_or(identity.1),
            );
            let written = {
                let git = git.clone();
                tokio::task::spawn_blocking(move || git.write(&tip, &refs, &config))
            };
            written
                .await
                .map_err(|e| GitError::Missing(std::io::Error::other(e)))?
                .map_err(GitError::Content)?;
            Ok(git)
        }
        .boxed()
    }

    /// Writes the private git. On a retry its folders hold what the agent left there (links to
    /// files outside among them): every file is written through the door, replacing what was
    /// there, never through it.
    fn write(&self, tip: &str, refs: &str, config: &str) -> Result<(), Refused> {
        let branch_ref = format!("refs/heads/{}", self.branch);
        for dir in [&self.common, &self.admin] {
            std::fs::create_dir_all(dir).map_err(|e| Refused::Io(dir.clone(), e))?;
        }
        let (common, admin) = (Tree::open(&self.common)?, Tree::open(&self.admin)?);
        let objects = self.repo_common.join("objects");
        let copied: String = refs
            .lines()
            .filter(|line| {
                line.split_once(' ')
                    .is_some_and(|(_, name)| name != branch_ref)
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let head = format!("ref: {branch_ref}\n");
        for (file, text) in [
            (
                "objects/info/alternates",
                format!("{}\n", objects.display()),
            ),
            ("packed-refs", copied),
            (branch_ref.as_str(), format!("{tip}\n")),
            ("HEAD", head.clone()),
            ("config", config.to_string()),
        ] {
            common.write(Path::new(file), text.as_bytes(), 0o644)?;
        }
        for folder in ["refs/tags", "objects/pack"] {
            common.write(&Path::new(folder).join(".keep"), b"", 0o644)?;
        }
        let settings = Tree::open(self.common.parent().unwrap_or(&self.common))?;
        settings.write(Path::new(SETTINGS), config.as_bytes(), 0o600)?;
        let worktree_git = untrusted::read_file(&self.repo_admin.join("gitdir"), SMALL_FILE)?;
        for (file, bytes) in [
            ("HEAD", head.into_bytes()),
            (
                "commondir",
                format!("{}\n", self.common.display()).into_bytes(),
            ),
            ("gitdir", worktree_git),
            ("logs/.keep", Vec::new()),
        ] {
            admin.write(Path::new(file), &bytes, 0o644)?;
        }
        match admin.copy_in(
            &self.repo_admin.join("index"),
            Path::new("index"),
            LARGEST_INDEX,
            0o644,
        ) {
            Err(refused) if !refused.is_missing() => Err(refused),
            _ => Ok(()),
        }
    }

    /// The repository's objects, read-only.
    pub fn readable(&self) -> Vec<Mount> {
        vec![Mount::same(self.repo_common.join("objects"))]
    }

    /// The private repository, and the private git directory where the worktree's `.git`
    /// points.
    pub fn writable(&self) -> Vec<Mount> {
        vec![
            Mount::same(&self.common),
            Mount {
                source: self.admin.clone(),
                target: self.repo_admin.clone(),
            },
        ]
    }

    /// What drydock's own fetch reads from the private repository: its settings, and where
    /// it borrows objects from.
    pub fn protected(&self) -> Vec<Mount> {
        vec![
            Mount::same(self.common.join("config")),
            Mount::same(self.common.join("objects/info/alternates")),
        ]
    }

    /// Brings what the agent committed on its branch into the repository: see
    /// [`bring_back`].
    pub fn bring_back(&self) -> BoxFuture<'_, Result<Vec<String>, GitError>> {
        bring_back(
            &self.repo,
            &self.branch,
            self.common.parent().unwrap_or(&self.common),
        )
    }
}

/// Brings what a sandboxed agent committed on `branch` in its private git in `dir` (see
/// [`PrivateGit::prepare`]) into `repo`: every object checked, the branch moved to the
/// agent's tip. What to tell the person, if anything was not as expected. Nothing to do
/// when `dir` holds no private git.
pub fn bring_back<'a>(
    repo: &'a Path,
    branch: &'a str,
    dir: &'a Path,
) -> BoxFuture<'a, Result<Vec<String>, GitError>> {
    async move {
        let (common, admin) = (dir.join("common"), dir.join("admin"));
        let mut notes = Vec::new();
        let made = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
        if !made(SETTINGS) && !made("common/HEAD") {
            return Ok(notes);
        }
        let branch_ref = format!("refs/heads/{branch}");
        let admin_head = untrusted::read_text(&admin.join("HEAD"), SMALL_FILE).unwrap_or_default();
        if admin_head.trim() != format!("ref: {branch_ref}") {
            // What the agent wrote there, as a line of a note: short, no control characters.
            let shown: String = admin_head
                .trim()
                .chars()
                .take(200)
                .filter(|c| !c.is_control())
                .collect();
            notes.push(format!(
                "the agent left its worktree on {} instead of {branch}: its commits there are not brought back",
                shown.trim_start_matches("ref: refs/heads/"),
            ));
        }
        let repo = Git::at(repo);
        if let Err(why) = restore(&repo, dir).await {
            notes.push(format!(
                "what the agent committed was not brought back from its sandbox: {why}"
            ));
            return Ok(notes);
        }
        let imported = format!("refs/drydock/sandboxed/{branch}");
        let source = common.display().to_string();
        let fetched = repo
            .run(&[
                "-c",
                "fetch.fsckObjects=true",
                "-c",
                "protocol.file.allow=always",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                &source,
                &format!("+{branch_ref}:{imported}"),
            ])
            .await;
        if let Err(error) = fetched {
            notes.push(format!(
                "what the agent committed could not be brought back from its sandbox: {error}"
            ));
            return Ok(notes);
        }
        let tip = repo.line(&["rev-parse", &imported]).await?;
        let moved = repo.run(&["update-ref", &branch_ref, &tip]).await;
        repo.run(&["update-ref", "-d", &imported]).await?;
        moved?;
        Ok(notes)
}
    .boxed()
}

/// drydock's own copy of the private repository's settings, beside (not in) what the agent
/// may change.
const SETTINGS: &str = "settings";

/// Why the private repository's settings could not be put back.
#[derive(Debug, thiserror::Error)]
enum RestoreError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("its private git holds a {0} of the agent's")]
    AgentsEntry(&'static str),
    #[error("its private git's {0} is not a folder")]
    NotAFolder(&'static str),
    #[error("{0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// Puts back what drydock's fetch reads from the private repository before it reads it: the
/// agent may have moved the read-only settings and `alternates` away with their folder, left
/// a `.git` that git would take for the repository, or made `objects` a link.
async fn restore(repo: &Git, dir: &Path) -> Result<(), RestoreError> {
    let objects = repo
        .line(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .await?;
    let objects = Path::new(&objects).join("objects");
    // A private git made before drydock kept its settings beside it gets them anew.
    let format = repo.line(&["rev-parse", "--show-object-format"]).await?;
    let fallback = private_config(&format, "drydock", "drydock@localhost");
    let dir = dir.to_path_buf();
    let restored = tokio::task::spawn_blocking(move || {
        let common = Tree::open(&dir.join("common"))?;
        for (entry, want_dir) in [
            (".git", None),
            ("objects", Some(true)),
            ("refs", Some(true)),
        ] {
            let kind = std::fs::symlink_metadata(common.path().join(entry)).ok();
            let is_dir = kind.as_ref().map(|meta| meta.file_type().is_dir());
            match (want_dir, is_dir) {
                (None, None) | (Some(true), Some(true)) => {}
                (None, Some(_)) => {
                    return Err(RestoreError::AgentsEntry(entry));
                }
                _ => return Err(RestoreError::NotAFolder(entry)),
            }
        }
        let settings = match untrusted::read_file(&dir.join(SETTINGS), SMALL_FILE) {
            Ok(settings) => settings,
            Err(refused) if refused.is_missing() => fallback.into_bytes(),
            Err(refused) => return Err(refused.into()),
        };
        common
            .write(Path::new("config"), &settings, 0o644)
            .and_then(|()| {
                let alternates = format!("{}\n", objects.display());
                common.write(
                    Path::new("objects/info/alternates"),
                    alternates.as_bytes(),
                    0o644,
                )
            })
            .map_err(RestoreError::from)
    })
    .await;
    restored.unwrap_or_else(|e| Err(e.into()))
}

/// The private repository's settings: drydock's, never the repository's own (no hooks, no
/// filters, no fsmonitor to inherit), with the identity that signs commits.
fn private_config(object_format: &str, name: &str, email: &str) -> String {
    let quoted = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
    let (version, extensions) = match object_format {
        "sha1" => ("0", String::new()),
        other => ("1", format!("[extensions]\n\tobjectformat = {other}\n")),
    };
    format!(
        "[core]\n\trepositoryformatversion = {version}\n\tfilemode = true\n\tbare = false\n\
         \tlogallrefupdates = true\n{extensions}[user]\n\tname = \"{}\"\n\temail = \"{}\"\n",
        quoted(name),
        quoted(email)
    )
}

#[cfg(test)]
mod tests;
