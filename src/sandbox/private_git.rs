//! The git a sandboxed agent sees of its worktree. The repository stays out of its reach: a
//! writable objects directory would let it delete the person's history, a writable refs
//! directory move the person's branches. Instead the agent gets a private repository of its
//! own: its objects borrow the repository's (read-only, through `alternates`), its refs are a
//! copy of the repository's, and its worktree's git directory is a private one mounted where
//! the worktree's `.git` points. What the agent commits comes back on its branch alone,
//! through a fetch that checks every object, when drydock takes up its work.

use std::path::{Path, PathBuf};

use super::Mount;
use crate::git::{Git, GitError};

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
    pub async fn prepare(
        repo: &Path,
        worktree: &Path,
        branch: &str,
        dir: &Path,
        identity: (&str, &str),
    ) -> Result<PrivateGit, GitError> {
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
            .map_err(GitError::Missing)?;
        Ok(git)
    }

    fn write(&self, tip: &str, refs: &str, config: &str) -> std::io::Result<()> {
        let branch_ref = format!("refs/heads/{}", self.branch);
        std::fs::create_dir_all(self.common.join("objects/info"))?;
        std::fs::create_dir_all(self.common.join("refs/tags"))?;
        std::fs::create_dir_all(self.admin.join("logs"))?;
        let loose = self.common.join(&branch_ref);
        std::fs::create_dir_all(loose.parent().expect("a ref has a folder"))?;
        let objects = self.repo_common.join("objects");
        std::fs::write(
            self.common.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )?;
        let copied: String = refs
            .lines()
            .filter(|line| {
                line.split_once(' ')
                    .is_some_and(|(_, name)| name != branch_ref)
            })
            .map(|line| format!("{line}\n"))
            .collect();
        std::fs::write(self.common.join("packed-refs"), copied)?;
        std::fs::write(&loose, format!("{tip}\n"))?;
        std::fs::write(self.common.join("HEAD"), format!("ref: {branch_ref}\n"))?;
        std::fs::write(self.common.join("config"), config)?;
        std::fs::write(self.admin.join("HEAD"), format!("ref: {branch_ref}\n"))?;
        std::fs::write(
            self.admin.join("commondir"),
            format!("{}\n", self.common.display()),
        )?;
        let worktree_git = std::fs::read_to_string(self.repo_admin.join("gitdir"))?;
        std::fs::write(self.admin.join("gitdir"), worktree_git)?;
        match std::fs::copy(self.repo_admin.join("index"), self.admin.join("index")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        Ok(())
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
    pub async fn bring_back(&self) -> Result<Vec<String>, GitError> {
        bring_back(
            &self.repo,
            &self.branch,
            self.common.parent().unwrap_or(&self.common),
        )
        .await
    }
}

/// Brings what a sandboxed agent committed on `branch` in its private git in `dir` (see
/// [`PrivateGit::prepare`]) into `repo`: every object checked, the branch moved to the
/// agent's tip. What to tell the person, if anything was not as expected. Nothing to do
/// when `dir` holds no private git.
pub async fn bring_back(repo: &Path, branch: &str, dir: &Path) -> Result<Vec<String>, GitError> {
    let (common, admin) = (dir.join("common"), dir.join("admin"));
    let mut notes = Vec::new();
    if !common.join("HEAD").is_file() {
        return Ok(notes);
    }
    let branch_ref = format!("refs/heads/{branch}");
    let admin_head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
    if admin_head.trim() != format!("ref: {branch_ref}") {
        notes.push(format!(
            "the agent left its worktree on {} instead of {branch}: its commits there are not brought back",
            admin_head.trim().trim_start_matches("ref: refs/heads/"),
        ));
    }
    let repo = Git::at(repo);
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
