//! The one door for content someone else wrote: a task's worktree, its private git and home, a
//! clone of a remote repository, a landing tree, and any path a tool prints. drydock runs
//! outside the sandbox as the person, so everything here treats that content as an attacker's:
//!
//! - a file is opened beneath a root drydock names, never through a link (`openat2` with
//!   `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), and only when it is a regular file: a FIFO, a
//!   device or a link to one is refused at once, never waited on;
//! - a read is bounded: a file larger than its caller's limit is refused, not read to the end;
//! - a write replaces the entry (a new file renamed over it), so it never writes through a link
//!   or a hard link the agent planted, and it makes missing folders without following links;
//! - a path a tool printed is kept only when it is relative and stays inside its project.
//!
//! git on such content runs with its directories named ([`crate::git::Git::in_worktree`],
//! [`crate::git::Git::on_content`]), never discovered from a directory the agent can write.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

/// What a `.git` file, a `HEAD` or a `gitdir` holds: a line.
pub const SMALL_FILE: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0} is not a path below its folder (absolute, empty or with `..`)")]
    NotBelow(PathBuf),
    #[error("{0} is not a regular file (a link, a FIFO, a device or a folder): not read")]
    NotRegular(PathBuf),
    #[error("{0} is larger than {1} bytes: not read")]
    TooLarge(PathBuf, u64),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl Refused {
    /// Whether the file was simply not there (nothing of it was refused).
    pub fn is_missing(&self) -> bool {
        matches!(self, Refused::Io(_, e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A regular file opened without following links: its size and time, and a bounded read.
pub struct Opened {
    file: File,
    path: PathBuf,
    pub len: u64,
    pub modified: SystemTime,
}

impl Opened {
    /// Its bytes, when it holds at most `limit`.
    pub fn read(mut self, limit: u64) -> Result<Vec<u8>, Refused> {
        if self.len > limit {
            return Err(Refused::TooLarge(self.path, limit));
        }
        let mut bytes = Vec::with_capacity(self.len as usize);
        // The file may grow while it is read: never past the limit.
        (&mut self.file)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Refused::Io(self.path.clone(), e))?;
        if bytes.len() as u64 > limit {
            return Err(Refused::TooLarge(self.path, limit));
        }
        Ok(bytes)
    }
}

/// A folder whose content someone else controls, named by drydock (a worktree, a private git
/// directory): paths below it are opened without leaving it or following a link.
#[derive(Debug)]
pub struct Tree {
    root: OwnedFd,
    path: PathBuf,
}

impl Tree {
    /// `dir`, whose own path drydock chose (its parents are drydock's or the person's).
    pub fn open(dir: &Path) -> Result<Tree, Refused> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
        let root = nix::fcntl::open(dir, flags, Mode::empty())
            .map_err(|e| Refused::Io(dir.to_path_buf(), e.into()))?;
        Ok(Tree {
            root,
            path: dir.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The regular file `relative` below the tree, opened for reading.
    pub fn open_file(&self, relative: &Path) -> Result<Opened, Refused> {
        let shown = self.path.join(relative);
        let fd = self.resolve(relative, read_flags())?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| Refused::Io(shown.clone(), e))?;
        if !meta.is_file() {
            return Err(Refused::NotRegular(shown));
        }
        Ok(Opened {
            file,
            len: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            path: shown,
        })
    }

    /// The bytes of the regular file `relative`, when it holds at most `limit`.
    pub fn read(&self, relative: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
        self.open_file(relative)?.read(limit)
    }

    /// [`Tree::read`] as text (invalid UTF-8 replaced).
    pub fn read_text(&self, relative: &Path, limit: u64) -> Result<String, Refused> {
        let bytes = self.read(relative, limit)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Writes `bytes` as the file `relative` (mode `mode`), making its folders: a new file
    /// renamed over whatever was there, so nothing is written through a link.
    pub fn write(&self, relative: &Path, bytes: &[u8], mode: u32) -> Result<(), Refused> {
        let shown = self.path.join(relative);
        let (parent, name) = split_below(relative).ok_or(Refused::NotBelow(shown.clone()))?;
        let dir = self.make_dirs(&parent)?;
        let staged = format!(".drydock-{}", crate::private::random_hex(8));
        let io = |e: Errno| Refused::Io(shown.clone(), e.into());
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(
            &dir,
            staged.as_str(),
            flags | OFlag::O_NOFOLLOW,
            mode_of(mode),
        )
        .map_err(io)?;
        let written = File::from(fd).write_all(bytes);
        let renamed = written
            .map_err(|e| Refused::Io(shown.clone(), e))
            .and_then(|()| nix::fcntl::renameat(&dir, staged.as_str(), &dir, name).map_err(io));
        if renamed.is_err() {
            let _ = nix::unistd::unlinkat(
                &dir,
                staged.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
        renamed
    }

    /// Copies the regular file `from` (a file of drydock's or the person's, at most `limit`
    /// bytes) to `relative` below the tree, as [`Tree::write`] does.
    pub fn copy_in(
        &self,
        from: &Path,
        relative: &Path,
        limit: u64,
        mode: u32,
    ) -> Result<(), Refused> {
        let bytes = read_file(from, limit)?;
        self.write(relative, &bytes, mode)
    }

    /// The folder `relative` below the tree, made where missing; never through a link.
    fn make_dirs(&self, relative: &Path) -> Result<OwnedFd, Refused> {
        let shown = self.path.join(relative);
        let io = |e: Errno| Refused::Io(shown.clone(), e.into());
        let mut dir =
            nix::fcntl::openat(&self.root, ".", dir_flags(), Mode::empty()).map_err(io)?;
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(Refused::NotBelow(shown.clone()));
            };
            let open = |dir: &OwnedFd| {
                nix::fcntl::openat(dir, name, dir_flags() | OFlag::O_NOFOLLOW, Mode::empty())
            };
            let next = match mkdirat(&dir, name) {
                Ok(()) => open(&dir),
                Err(e) => return Err(io(e)),
            };
            dir = match next {
                // A link or a file where a folder belongs: replaced by the folder.
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
                        .map_err(io)?;
                    mkdirat(&dir, name).map_err(io)?;
                    open(&dir)
                }
                other => other,
            }
            .map_err(io)?;
        }
        Ok(dir)
    }

    /// `relative` opened with `flags`, beneath the tree and through no link.
    fn resolve(&self, relative: &Path, flags: OFlag) -> Result<OwnedFd, Refused> {
        let shown = self.path.join(relative);
        if split_below(relative).is_none() {
            return Err(Refused::NotBelow(shown));
        }
        let how = OpenHow::new().flags(flags).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
        match nix::fcntl::openat2(&self.root, relative, how) {
            Err(Errno::ENOSYS) => walk(self.root.as_fd(), relative, flags),
            other => other,
        }
        .map_err(|e| match e {
            Errno::ELOOP | Errno::EXDEV | Errno::ENXIO => Refused::NotRegular(shown),
            e => Refused::Io(shown, e.into()),
        })
    }
}

/// The bytes of the regular file at `path`, when it holds at most `limit`: its last component
/// is not followed if a link, and a FIFO or device there is refused at once. For a file in a
/// folder of drydock's whose content another may have replaced (a private git's `HEAD`).
pub fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => (parent, name),
        _ => return Err(Refused::NotBelow(path.to_path_buf())),
    };
    let parent = match parent.as_os_str().is_empty() {
        true => Path::new("."),
        false => parent,
    };
    Tree::open(parent)?.read(Path::new(name), limit)
}

/// [`read_file`] as text (invalid UTF-8 replaced).
pub fn read_text(path: &Path, limit: u64) -> Result<String, Refused> {
    Ok(String::from_utf8_lossy(&read_file(path, limit)?).into_owned())
}

/// A path a tool printed (mix's list of files, cargo's target directory), kept only when it is
/// relative and stays below its folder: no root, no `..`, not empty.
pub fn printed_path(printed: &str) -> Option<PathBuf> {
    let path = Path::new(printed);
    split_below(path)?;
    Some(
        path.components()
            .filter(|part| *part != Component::CurDir)
            .collect(),
    )
}

/// `relative`'s folder and name, when every part of it is a plain name (`.` allowed).
fn split_below(relative: &Path) -> Option<(PathBuf, &OsStr)> {
    let mut parts = Vec::new();
    for part in relative.components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let name = parts.pop()?;
    if name.as_bytes().contains(&0) {
        return None;
    }
    Some((parts.iter().collect(), name))
}

/// Component by component, each opened without following a link: for kernels before
/// `openat2` (5.6).
fn walk(root: std::os::fd::BorrowedFd<'_>, relative: &Path, flags: OFlag) -> nix::Result<OwnedFd> {
    let mut parts: Vec<&OsStr> = relative
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let last = parts.pop().ok_or(Errno::EINVAL)?;
    let mut dir = nix::fcntl::openat(root, ".", dir_flags(), Mode::empty())?;
    for name in parts {
        dir = nix::fcntl::openat(&dir, name, dir_flags() | OFlag::O_NOFOLLOW, Mode::empty())?;
    }
    nix::fcntl::openat(&dir, last, flags | OFlag::O_NOFOLLOW, Mode::empty())
}

/// Makes the folder `name` in `dir` unless something is there already.
fn mkdirat(dir: &OwnedFd, name: &OsStr) -> nix::Result<()> {
    match nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(0o755)) {
        Err(Errno::EEXIST) => Ok(()),
        other => other,
    }
}

/// Read-only, and never blocking on a FIFO or taking a terminal.
fn read_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK | OFlag::O_NOCTTY
}

fn dir_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}

fn mode_of(mode: u32) -> Mode {
    Mode::from_bits_truncate(mode as libc::mode_t)
}

#[cfg(test)]
mod tests;
