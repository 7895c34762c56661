//! What a project's files held at a run: a manifest (path → content hash) over content kept
//! once per distinct content. Two runs' manifests say what changed between them, whether or
//! not anything was committed (agents fix things long before they commit).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::git::Git;
use crate::untrusted::Tree;

/// Files larger than this are listed with a hash of their size and time, not kept.
pub const LARGEST_FILE: u64 = 1024 * 1024;
/// A project's first files in path order are kept; the rest are not looked at.
pub const MOST_FILES: usize = 5000;
/// Folders a walk of a project that is not a git repository leaves out: builds, deps.
const BUILD_DIRS: [&str; 7] = [
    "target",
    "_build",
    "deps",
    "node_modules",
    ".git",
    ".elixir_ls",
    ".fingerprint",
];

/// Path (relative to the project, `/`-separated) → content hash.
pub type Manifest = BTreeMap<String, String>;

/// A file's content as kept: its hash and its bytes.
pub struct Content {
    pub hash: String,
    pub bytes: Vec<u8>,
}

/// What was read of a file before: unchanged size and time mean unchanged content.
#[derive(Default)]
pub struct SeenFiles {
    files: HashMap<PathBuf, (SystemTime, u64, String)>,
}

/// The manifest of `paths` (relative to `project`), and the contents not in `known`. It
/// reads up to [`MOST_FILES`] files: call it on a blocking thread. A project may be a task's
/// worktree, its files an agent's: each is read below the project through no link, regular
/// files only (a link to a key outside is not kept, a FIFO not waited on).
pub fn read(
    project: &Path,
    paths: Vec<String>,
    seen: &mut SeenFiles,
    mut known: impl FnMut(&str) -> bool,
) -> (Manifest, Vec<Content>) {
    let mut manifest = Manifest::new();
    let mut new = Vec::new();
    let Ok(tree) = Tree::open(project) else {
        return (manifest, new);
    };
    for relative in paths.into_iter().take(MOST_FILES) {
        // A `.env` or a key is never kept, committed or not.
        if crate::private::holds_secrets(Path::new(&relative)) {
            continue;
        }
        let path = project.join(&relative);
        let Ok(file) = tree.open_file(Path::new(&relative)) else {
            continue;
        };
        let (modified, size) = (file.modified, file.len);
        if size > LARGEST_FILE {
            let stamp = format!("{size}:{modified:?}");
            manifest.insert(relative, format!("large:{}", hash(stamp.as_bytes())));
            continue;
        }
        if let Some((time, length, hash)) = seen.files.get(&path)
            && *time == modified
            && *length == size
        {
            manifest.insert(relative, hash.clone());
            continue;
        }
        let Ok(bytes) = file.read(LARGEST_FILE) else {
            continue;
        };
        let digest = hash(&bytes);
        seen.files.insert(path, (modified, size, digest.clone()));
        if !known(&digest) && !new.iter().any(|c: &Content| c.hash == digest) {
            new.push(Content {
                hash: digest.clone(),
                bytes,
            });
        }
        manifest.insert(relative, digest);
    }
    (manifest, new)
}

/// The project's files, relative: git's tracked and untracked-but-not-ignored ones in a
/// repository, else a walk that leaves build and dependency folders out.
pub fn files_of(project: &Path) -> BoxFuture<'_, Vec<String>> {
    async move {
        let listed = Git::on_content(project)
            .run(&[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .await;
        let mut paths: Vec<String> = match listed {
            // A project without a .gitignore lists its build output as untracked.
            Ok(listing) => listing
                .split('\0')
                .filter(|p| !p.is_empty())
                .filter(|p| !p.split('/').any(|part| BUILD_DIRS.contains(&part)))
                .map(str::to_string)
                .collect(),
            Err(_) => walk(project),
        };
        paths.sort();
        paths.dedup();
        paths
    }
    .boxed()
}

fn walk(project: &Path) -> Vec<String> {
    walkdir::WalkDir::new(project)
        .into_iter()
        .filter_entry(|entry| {
            entry.depth() == 0
                || !(entry.file_type().is_dir()
                    && entry
                        .file_name()
                        .to_str()
                        .is_some_and(|name| BUILD_DIRS.contains(&name) || name.starts_with('.')))
        })
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .take(MOST_FILES)
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(project).ok()?;
            Some(relative.to_str()?.to_string())
        })
        .collect()
}

pub fn hash(bytes: &[u8]) -> String {
    crate::digest::sha256_hex(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manifest_lists_the_projects_files_and_keeps_each_content_once() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::create_dir_all(project.join("target/debug")).unwrap();
        std::fs::write(project.join("src/a.rs"), "same\n").unwrap();
        std::fs::write(project.join("src/b.rs"), "same\n").unwrap();
        std::fs::write(project.join("target/debug/out"), "built\n").unwrap();
        let mut seen = SeenFiles::default();
        let paths = files_of(project).await;
        let (manifest, new) = read(project, paths.clone(), &mut seen, |_| false);
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            ["src/a.rs", "src/b.rs"],
            "build folders are left out"
        );
        assert_eq!(new.len(), 1, "one content for two files");
        let (again, new) = read(project, paths, &mut seen, |h| h == manifest["src/a.rs"]);
        assert_eq!(again, manifest);
        assert!(new.is_empty());
    }

    /// A worktree's link to a key outside, or a FIFO, as git lists them: neither is read.
    #[test]
    fn links_and_fifos_a_task_planted_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_ed25519"), "secret key").unwrap();
        let project = dir.path();
        std::fs::write(project.join("a.rs"), "code\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("id_ed25519"), project.join("key")).unwrap();
        std::os::unix::fs::symlink(outside.path(), project.join("out")).unwrap();
        nix::unistd::mkfifo(
            &project.join("pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        let paths = ["a.rs", "key", "out/id_ed25519", "pipe", "../x"].map(String::from);
        let (manifest, new) = read(project, paths.to_vec(), &mut SeenFiles::default(), |_| {
            false
        });
        assert_eq!(manifest.keys().collect::<Vec<_>>(), ["a.rs"]);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].bytes, b"code\n");
    }
}
