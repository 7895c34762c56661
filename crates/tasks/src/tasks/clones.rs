//! A task's project from a git remote, on a host with no copy of its own: the host clones
//! the remote once into its data directory (`clones/NAME-HASH`, only a remote
//! `[tasks] repositories` allows), brings the clone up to date before each task starts there,
//! and the task works in a worktree of that clone like any other. Nothing ever works in the
//! clone itself, so updating it is a fetch and a fast-forward.

use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::remote_url::PROTOCOLS;
use super::worktree::lock_file;
use crate::config::RemoteRepositories;
use crate::digest::folder_name;
use crate::git::{Git, GitError};

#[derive(Debug, thiserror::Error)]
pub enum CloneError {
    #[error(
        "this host clones only the git remotes [tasks] repositories allows ({allowed}), not {url}"
    )]
    NotAllowed { url: String, allowed: String },
    #[error("cloning {url}: {source}")]
    Git { url: String, source: GitError },
    #[error("{0}")]
    Io(String),
    #[error(
        "drydock's clone {dir} has changes nobody made through drydock ({what}): it was left as it is and not updated"
    )]
    Changed { dir: String, what: String },
}

/// This host's clones of git remotes.
pub struct Clones {
    dir: PathBuf,
    allowed: RemoteRepositories,
}

impl Clones {
    pub fn new(dir: PathBuf, allowed: RemoteRepositories) -> Clones {
        Clones { dir, allowed }
    }

    /// Where this host keeps its clone of `url`, when it may clone it.
    pub fn dir_of(&self, url: &str) -> Option<PathBuf> {
        self.allowed
            .allows(url)
            .then(|| self.dir.join(name_of(url)))
    }

    /// Whether `project` is one of this host's clones.
    pub fn holds(&self, project: &Path) -> bool {
        project.parent() == Some(self.dir.as_path())
    }

    pub fn refusal(&self, url: &str) -> CloneError {
        CloneError::NotAllowed {
            url: url.to_string(),
            allowed: match self.allowed.patterns() {
                [] => "none".to_string(),
                patterns => patterns.join(", "),
            },
        }
    }

    /// The clone of `url`, made now or brought up to date with its remote (a fetch and a
    /// fast-forward of its branch), one task at a time per clone on this machine.
    pub fn ensure<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<PathBuf, CloneError>> {
        async move {
            let dir = self.dir_of(url).ok_or_else(|| self.refusal(url))?;
            std::fs::create_dir_all(&self.dir).map_err(|e| {
                CloneError::Io(format!("cannot create {}: {e}", self.dir.display()))
            })?;
            let lock = self.dir.join(format!("{}.lock", name_of(url)));
            let _held = tokio::task::spawn_blocking(move || lock_file(&lock))
                .await
                .ok()
                .flatten();
            match dir.join(".git").exists() {
                true => update(url, &dir).await?,
                false => self.clone_into(url, &dir).await?,
            }
            Ok(dir)
        }
        .boxed()
    }

    /// Clones into a folder beside `dir`, renamed once whole: a clone cut short leaves no
    /// half a repository at `dir`.
    async fn clone_into(&self, url: &str, dir: &Path) -> Result<(), CloneError> {
        let name = dir
            .file_name()
            .expect("a clone has a name")
            .to_string_lossy();
        let partial = self.dir.join(format!(".{name}.partial"));
        if partial.exists() {
            // A clone cut short can be a whole repository's files: removed on a blocking thread.
            let gone = partial.clone();
            tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&gone))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)))
                .map_err(|e| CloneError::Io(format!("cannot remove {}: {e}", partial.display())))?;
        }
        let partial_text = partial.display().to_string();
        git_for(&self.dir)
            .run(&["clone", "--quiet", "--", url, &partial_text])
            .await
            .map_err(|source| CloneError::Git {
                url: url.to_string(),
                source,
            })?;
        std::fs::rename(&partial, dir)
            .map_err(|e| CloneError::Io(format!("cannot move the clone to {}: {e}", dir.display())))
    }
}

/// Fetches `dir`'s remote and fast-forwards its checked-out branch to the remote's.
async fn update(url: &str, dir: &Path) -> Result<(), CloneError> {
    let git = git_for(dir);
    let failed = |source| CloneError::Git {
        url: url.to_string(),
        source,
    };
    let origin = git
        .line(&["remote", "get-url", "origin"])
        .await
        .map_err(failed)?;
    if origin != url {
        return Err(CloneError::Changed {
            dir: dir.display().to_string(),
            what: format!("its origin is {origin}"),
        });
    }
    let dirty = git.dirty(true).await.map_err(failed)?;
    if !dirty.is_empty() {
        return Err(CloneError::Changed {
            dir: dir.display().to_string(),
            what: dirty.join(", "),
        });
    }
    git.run(&["fetch", "--quiet", "--prune", "origin"])
        .await
        .map_err(failed)?;
    if git.current_branch().await.is_some() {
        git.run(&["merge", "--ff-only", "--quiet", "@{upstream}"])
            .await
            .map_err(|e| CloneError::Changed {
                dir: dir.display().to_string(),
                what: format!("its branch does not fast-forward to its remote's: {e}"),
            })?;
    }
    Ok(())
}

/// The commit a task's `base` names in a clone: a branch of the remote's, else what git
/// makes of it (a tag, a commit).
pub fn base_in<'a>(clone: &'a Path, base: &'a str) -> BoxFuture<'a, String> {
    async move {
        let remote = format!("refs/remotes/origin/{base}");
        match Git::at(clone).commit_of(&remote).await {
            Some(_) => format!("origin/{base}"),
            None => base.to_string(),
        }
    }
    .boxed()
}

/// git on a clone: the remote repository's files are content someone else wrote, so no
/// filter or driver of the person's config runs on them (git-lfs's smudge would follow the
/// repository's `.lfsconfig` anywhere).
fn git_for(dir: &Path) -> Git {
    Git::on_content(dir).with_env("GIT_ALLOW_PROTOCOL", PROTOCOLS)
}

/// `NAME-HASH`: the remote's last path segment without `.git`, and a hash of the whole URL.
fn name_of(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or_default()
        .trim_end_matches(".git");
    folder_name(last, url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_reads_parsed_urls_not_raw_strings() {
        let allowed = RemoteRepositories::new(vec![
            "https://allowed.host/**".into(),
            "file:///srv/git/*".into(),
            "git@allowed.host:team/*".into(),
        ])
        .unwrap();
        for good in [
            "https://allowed.host/team/app.git",
            "https://ALLOWED.host/team/app",
            "https://allowed.host:443/team/app",
            "file:///srv/git/app.git",
            "file://localhost/srv/git/app",
            "file:///srv/git/lab%20project",
            "git@allowed.host:team/app.git",
        ] {
            assert!(allowed.allows(good), "{good}");
        }
        for bad in [
            "https://allowed.host/team/app?x@evil/team/app",
            "https://allowed.host/x#@evil/team/app",
            "https://allowed.host/team/%2e%2e/%2e%2e/other",
            "https://allowed.host/team/../other",
            "file:///srv/git/%2e%2e",
            "file:///srv/git/%2e%2e%2fsecret",
            "file:///srv/git/a%2fb",
            "file://evil/srv/git/app",
            "https://allowed.host%2f@evil/team/app",
            "https://evil/allowed.host/team/app",
            "git@allowed.host:team/../../etc",
            // Found by fuzzing (fuzz/regressions/remote_url): one slash after the scheme, then
            // a character of several bytes, panicked.
            "https:/\u{fffd}allowed.host/team/app",
            "https:allowed.host/team/app",
        ] {
            assert!(!allowed.allows(bad), "{bad}");
        }
    }

    #[test]
    fn a_clone_is_named_for_its_remote_and_only_an_allowed_one_is_made() {
        let allowed = RemoteRepositories::new(vec!["https://github.com/team/*".into()]).unwrap();
        let clones = Clones::new(PathBuf::from("/data/clones"), allowed);
        let dir = clones.dir_of("https://github.com/team/app.git").unwrap();
        assert!(dir.starts_with("/data/clones"));
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("app-") && name.len() == "app-".len() + 8,
            "{name}"
        );
        assert_ne!(
            clones.dir_of("https://github.com/team/app"),
            Some(dir.clone()),
            "another URL, another clone"
        );
        assert!(clones.holds(&dir));
        assert_eq!(
            clones.dir_of("https://github.com/team/sub/app"),
            None,
            "* is one segment"
        );
        assert_eq!(clones.dir_of("https://github.com/other/app"), None);
        let refused = clones.refusal("https://github.com/other/app").to_string();
        assert!(refused.contains("https://github.com/team/*"), "{refused}");
    }

    #[tokio::test]
    async fn a_remote_is_cloned_once_then_fetched_and_a_changed_clone_is_left_alone() {
        let origin = crate::git::test_repo::Repo::new();
        origin.write("README.md", "one\n");
        origin.commit_all("one");
        origin.git(&["branch", "feature"]);
        let url = format!("file://{}", origin.path.display());
        let data = tempfile::tempdir().unwrap();
        let allowed = RemoteRepositories::new(vec!["file:///**".into()]).unwrap();
        let clones = Clones::new(data.path().join("clones"), allowed);

        let clone = clones.ensure(&url).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(clone.join("README.md")).unwrap(),
            "one\n"
        );
        assert_eq!(base_in(&clone, "feature").await, "origin/feature");
        assert_eq!(base_in(&clone, "v1").await, "v1");

        origin.write("README.md", "two\n");
        origin.commit_all("two");
        let again = clones.ensure(&url).await.unwrap();
        assert_eq!(again, clone);
        assert_eq!(
            std::fs::read_to_string(clone.join("README.md")).unwrap(),
            "two\n"
        );

        std::fs::write(clone.join("stray.txt"), "someone's\n").unwrap();
        let changed = clones.ensure(&url).await.unwrap_err().to_string();
        assert!(changed.contains("stray.txt"), "{changed}");
        assert!(clone.join("stray.txt").exists(), "nobody's work is lost");

        let missing = format!("file://{}/nothing-here", data.path().display());
        let failed = clones.ensure(&missing).await.unwrap_err().to_string();
        assert!(failed.contains("cloning"), "{failed}");
        let leftovers: Vec<_> = std::fs::read_dir(data.path().join("clones"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".lock"))
            .collect();
        assert_eq!(leftovers.len(), 1, "no half clone is left: {leftovers:?}");
    }
}
