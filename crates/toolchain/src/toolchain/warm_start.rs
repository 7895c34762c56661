//! Every task starts warm: a new task worktree's build output is seeded from the project's
//! own checkout (cargo's target directory; mix's `_build` and `deps`), so a task's first build
//! compiles only what differs from what the checkout already built.
//!
//! - **Never a hard link.** cargo and mix rewrite their output files in place (fingerprints,
//!   manifests), so a linked file would change the checkout's build too. Each file is cloned
//!   with copy-on-write (`FICLONE`) where the filesystem has it, and copied otherwise; every
//!   copy is a file of its own.
//! - **Times kept.** cargo and mix decide what is stale by comparing sources' modification
//!   times with their outputs': copies keep the outputs' times, and every tracked file of the
//!   worktree whose content is the checkout's (not changed in the checkout against the
//!   worktree's commit, per `git diff BASE`) is given the checkout's file's time. A file that
//!   differs keeps the new time `git worktree add` gave it, so it (and only it) rebuilds.
//! - **Paths compiled in rebuild.** A cargo unit whose build took one of the checkout's paths
//!   from the environment (`env!("CARGO_MANIFEST_DIR")`, `CARGO_BIN_EXE_*`, per rustc's
//!   dep-info) has its fingerprint dropped: cargo would not notice the path moved, and the
//!   worktree's code would read (or write) the checkout. mix cannot tell (`__DIR__`), so only
//!   its dependencies' builds are copied: the project's own apps compile anew.
//! - **Bounded.** Nothing is copied beyond a cap and the filesystem's free space (less a
//!   reserve); cargo's `incremental` caches (only for the project's own crates) and profiles
//!   other than `debug` are the first thing left out, then everything. What was done, or why not, is returned for the task's
//!   notes.
//!
//! The per-task cargo target is removed with the worktree by the task queue; mix's `_build`
//! and `deps` are inside the worktree (and ignored by git: nothing else is copied there).

use std::fs::{File, FileTimes, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::git::{Git, GitError};
use crate::process::{CommandSpec, Limits, Policy, RunError};
use crate::sandbox::{Confinement, confinement};

/// Free space a warm start always leaves on the filesystem it copies to.
const RESERVE: u64 = 1024 * 1024 * 1024;
/// How long `cargo metadata` may take to name the checkout's target directory.
const METADATA_TIMEOUT: Duration = Duration::from_secs(60);

/// How the build output was brought over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Copy-on-write clones: no data written until either side changes a file.
    Reflink,
    /// Real copies (the filesystem has no copy-on-write).
    Copy,
    /// Nothing was copied.
    None,
}

/// What a warm start did, for the worktree's notes.
#[derive(Debug, Clone)]
pub struct Warmed {
    pub method: Method,
    /// Bytes of build output brought over (cloned or copied).
    pub bytes: u64,
    /// Files brought over.
    pub files: u64,
    /// What was brought over: "cargo target /x/target (120.3 MB)".
    pub parts: Vec<String>,
    /// Tracked files given the checkout's modification time (their content is the same).
    pub kept_times: usize,
    /// How long it took.
    pub took: Duration,
    /// Why something was left out, or why copy-on-write was not used.
    pub why_not: Vec<String>,
}

impl Warmed {
    fn nothing(why: Vec<String>) -> Warmed {
        Warmed {
            method: Method::None,
            bytes: 0,
            files: 0,
            parts: Vec::new(),
            kept_times: 0,
            took: Duration::ZERO,
            why_not: why,
        }
    }

    /// One line for the worktree's notes.
    pub fn note(&self) -> String {
        let why = match self.why_not.is_empty() {
            true => String::new(),
            false => format!(" ({})", self.why_not.join("; ")),
        };
        if self.method == Method::None {
            return format!("warm start: no build output was copied from the checkout{why}");
        }
        let how = match self.method {
            Method::Reflink => "copy-on-write clones",
            _ => "plain copies (no hard links)",
        };
        format!(
            "warm start: the checkout's build output was copied in as {how}: {}, {} file(s), {} in {:.1} s; {} unchanged tracked file(s) were given the checkout's modification times, so only what differs rebuilds{why}",
            self.parts.join(", "),
            self.files,
            megabytes(self.bytes),
            self.took.as_secs_f64(),
            self.kept_times,
        )
    }
}

/// Seeds the new worktree directory `worktree_dir` (the project's directory inside a task's
/// worktree) from the checkout's project directory `checkout`: cargo's target directory into
/// `cargo_target` (the task's own, outside the worktree; none: cargo is left alone), mix's
/// `_build` and `deps` into the worktree, copying at most `limit` bytes.
pub fn warm<'a>(
    checkout: &'a Path,
    worktree_dir: &'a Path,
    cargo_target: Option<&'a Path>,
    limit: u64,
) -> BoxFuture<'a, Warmed> {
    warm_with(checkout, worktree_dir, cargo_target, limit, &[])
}

/// `warm`, running `cargo metadata` with `cargo_env` changed (`None` removes a variable).
pub fn warm_with<'a>(
    checkout: &'a Path,
    worktree_dir: &'a Path,
    cargo_target: Option<&'a Path>,
    limit: u64,
    cargo_env: &'a [(&'a str, Option<&'a str>)],
) -> BoxFuture<'a, Warmed> {
    async move {
        let started = Instant::now();
        let mut why_not = Vec::new();
        let mut parts = Vec::new();
        let (cargo, mix) = (
            checkout.join("Cargo.toml").is_file(),
            checkout.join("mix.exs").is_file(),
        );
        if !cargo && !mix {
            why_not.push("neither a cargo nor a mix project".into());
        }
        if cargo && cargo_target.is_none() {
            why_not
                .push("cargo builds into a target shared by tasks, not one of the task's own".into());
        }
        if let Some(into) = cargo_target
            && cargo
        {
            let checkout_top = Git::at(checkout)
                .top_level()
                .await
                .unwrap_or_else(|| checkout.to_path_buf());
            match cargo_target_of(checkout, cargo_env).await {
                Ok(from) if !from.is_dir() => why_not.push(format!(
                    "the checkout has not built with cargo yet ({} does not exist)",
                    from.display()
                )),
                Ok(from) if into.starts_with(&from) || from.starts_with(into) => why_not.push(format!(
                    "the task's cargo target is the checkout's ({})",
                    from.display()
                )),
                Ok(_) if has_entries(into) => why_not.push(format!(
                    "the task's cargo target {} has build output already",
                    into.display()
                )),
                Ok(from) => parts.push(Part {
                    label: "cargo target",
                    from: from.clone(),
                    to: into.to_path_buf(),
                    cargo: true,
                    from_root: checkout.to_path_buf(),
                    to_root: worktree_dir.to_path_buf(),
                    skip: Vec::new(),
                    checkout_paths: vec![checkout_top, from],
                }),
                Err(why) => why_not.push(why.to_string()),
            }
        }
        if mix {
            for name in ["_build", "deps"] {
                let (from, to) = (checkout.join(name), worktree_dir.join(name));
                if !from.is_dir() || to.exists() {
                    continue;
                }
                // A folder git does not ignore would show up in the task's changes.
                if !is_ignored(worktree_dir, name).await {
                    why_not.push(format!("mix's {name} is not ignored by git here"));
                    continue;
                }
                parts.push(Part {
                    label: if name == "deps" {
                        "mix deps"
                    } else {
                        "mix _build"
                    },
                    from,
                    to,
                    cargo: false,
                    from_root: checkout.to_path_buf(),
                    to_root: worktree_dir.to_path_buf(),
                    skip: match name {
                        "_build" => own_apps(checkout),
                        _ => Vec::new(),
                    },
                    checkout_paths: Vec::new(),
                });
            }
        }
        if parts.is_empty() {
            return Warmed::nothing(why_not);
        }
        let differing = match same_as_checkout(checkout, worktree_dir).await {
            Ok(same) => same,
            Err(why) => {
                why_not.push(format!(
                    "the worktree's files could not be matched with the checkout's ({why}), so its own code rebuilds"
                ));
                None
            }
        };
        let copied = tokio::task::spawn_blocking(move || {
            let mut warmed = copy_parts(parts, limit);
            if warmed.method != Method::None
                && let Some(same) = differing
            {
                warmed.kept_times = keep_times(&same);
            }
            warmed
        })
        .await;
        let mut warmed = match copied {
            Ok(warmed) => warmed,
            Err(e) => Warmed::nothing(vec![format!("the copy stopped: {e}")]),
        };
        warmed.took = started.elapsed();
        why_not.append(&mut warmed.why_not);
        warmed.why_not = why_not;
        warmed
}
    .boxed()
}

/// Why the checkout's cargo target or files could not be used for a warm start.
#[derive(Debug, thiserror::Error)]
pub enum WarmStartError {
    #[error(
        "cargo runs on a repository's files in a sandbox alone, and this host cannot make one (install bubblewrap)"
    )]
    NoSandbox,
    #[error("`cargo metadata` did not run: {0}")]
    MetadataDidNotRun(#[source] RunError),
    #[error("`cargo metadata` failed in the checkout: {0}")]
    MetadataFailed(String),
    #[error("`cargo metadata` answered no JSON: {0}")]
    MetadataNotJson(#[source] serde_json::Error),
    #[error("`cargo metadata` named no target directory")]
    NoTargetDirectory,
    #[error(
        "the checkout's cargo target {} is not inside it ({}) nor the person's CARGO_TARGET_DIR: its build output is not copied",
        named.display(),
        top.display()
    )]
    TargetOutside { named: PathBuf, top: PathBuf },
    #[error("a cargo build was running in the checkout ({}: {errno})", lock.display())]
    CargoBuilding {
        lock: PathBuf,
        errno: nix::errno::Errno,
    },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// The checkout's cargo target directory, as cargo itself names it (its config and
/// `CARGO_TARGET_DIR` honoured). cargo reads the repository's `rust-toolchain.toml` (whose
/// `path` may name any program) and `.cargo/config.toml`: it runs in a sandbox that sees the
/// checkout read-only and no network, and the directory it names is kept only when it lies
/// in the checkout (through no link) or is the person's own `CARGO_TARGET_DIR`.
pub fn cargo_target_of<'a>(
    checkout: &'a Path,
    cargo_env: &'a [(&'a str, Option<&'a str>)],
) -> BoxFuture<'a, Result<PathBuf, WarmStartError>> {
    async move {
        let bwrap = tokio::task::spawn_blocking(|| {
            crate::sandbox::support::host()
                .bwrap()
                .map(Path::to_path_buf)
        })
        .await
        .ok()
        .flatten()
        .ok_or(WarmStartError::NoSandbox)?;
        let mut env: Vec<(String, Option<String>)> = std::env::var("CARGO_TARGET_DIR")
            .ok()
            .map(|dir| ("CARGO_TARGET_DIR".to_string(), Some(dir)))
            .into_iter()
            .collect();
        env.extend(
            cargo_env
                .iter()
                .map(|(name, value)| (name.to_string(), value.map(str::to_string))),
        );
        let persons_target = env
            .iter()
            .rev()
            .find(|(name, _)| name == "CARGO_TARGET_DIR")
            .and_then(|(_, value)| value.clone())
            .map(PathBuf::from);
        let confinement = Confinement {
            work: checkout.to_path_buf(),
            work_read_only: true,
            readable: confinement::readable(
                confinement::toolchain_dirs(),
                dirs::home_dir().as_deref(),
                &[],
            ),
            blanked: confinement::toolchain_secrets(),
            passed: confinement::passed_env(&[]),
            env: vec![("CARGO_NET_OFFLINE".into(), "true".into())],
            ..Confinement::default()
        };
        let spec = CommandSpec::new(
            "cargo",
            [
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ],
            checkout,
        );
        let mut spec = confinement::confine(spec, &bwrap, &confinement);
        spec.env_set
            .retain(|(name, _)| !env.iter().any(|(changed, _)| changed == name));
        spec.env_set.extend(
            env.iter()
                .filter_map(|(name, value)| Some((name.clone(), value.clone()?))),
        );
        let policy = Policy {
            limits: Limits {
                timeout: METADATA_TIMEOUT,
                output_cap: 16 * 1024 * 1024,
                kill_grace: Duration::from_secs(1),
            },
            env_remove: Vec::new(),
        };
        let output = policy
            .run(spec, &CancellationToken::new(), &mut |_, _| {})
            .await
            .map_err(WarmStartError::MetadataDidNotRun)?;
        if !output.termination.success() {
            let first = output
                .stderr
                .text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            return Err(WarmStartError::MetadataFailed(first));
        }
        let metadata: serde_json::Value =
            serde_json::from_str(&output.stdout.text).map_err(WarmStartError::MetadataNotJson)?;
        let named = metadata["target_directory"]
            .as_str()
            .map(PathBuf::from)
            .ok_or(WarmStartError::NoTargetDirectory)?;
        let top = Git::at(checkout)
            .top_level()
            .await
            .unwrap_or_else(|| checkout.to_path_buf());
        kept_target(named, &top, persons_target.as_deref())
    }
    .boxed()
}

/// The target directory cargo named, when it is the person's own (`CARGO_TARGET_DIR`) or lies
/// in the checkout at `top` with no link on the way: a repository's config that names a
/// folder elsewhere (`target-dir = "../../.ssh"`) would have it copied to the agent.
fn kept_target(
    named: PathBuf,
    top: &Path,
    persons: Option<&Path>,
) -> Result<PathBuf, WarmStartError> {
    if persons.is_some_and(|persons| persons == named) {
        return Ok(named);
    }
    let below = named.strip_prefix(top).ok().filter(|below| {
        below
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
    });
    let linked = below.is_some_and(|below| {
        below
            .components()
            .scan(top.to_path_buf(), |path, part| {
                path.push(part);
                Some(path.clone())
            })
            .any(|path| std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()))
    });
    match (below, linked) {
        (Some(_), false) => Ok(named),
        _ => Err(WarmStartError::TargetOutside {
            named,
            top: top.to_path_buf(),
        }),
    }
}

/// Whether git ignores the folder `name` of `dir` (asked as `name/`: a pattern for folders
/// only does not match a path git cannot see is one).
async fn is_ignored(dir: &Path, name: &str) -> bool {
    let folder = format!("{name}/");
    Git::at(dir)
        .output(&["check-ignore", "-q", "--", &folder])
        .await
        .is_ok_and(|output| output.ok())
}

/// Pairs of (checkout file, worktree file) whose content is the same: every file tracked in
/// the worktree (made at BASE) that the checkout has not changed against BASE.
async fn same_as_checkout(
    checkout: &Path,
    worktree_dir: &Path,
) -> Result<Option<Vec<(PathBuf, PathBuf)>>, GitError> {
    let (Some(checkout_top), Some(worktree_top)) = (
        Git::at(checkout).top_level().await,
        Git::at(worktree_dir).top_level().await,
    ) else {
        return Ok(None);
    };
    let worktree = Git::at(&worktree_top);
    let base = worktree.line(&["rev-parse", "HEAD"]).await?;
    let changed = Git::at(&checkout_top)
        .run(&[
            "--no-optional-locks",
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            &base,
            "--",
        ])
        .await?;
    let changed: std::collections::HashSet<&str> =
        changed.split('\0').filter(|p| !p.is_empty()).collect();
    let tracked = worktree.run(&["ls-files", "-z"]).await?;
    Ok(Some(
        tracked
            .split('\0')
            .filter(|path| !path.is_empty() && !changed.contains(path))
            .map(|path| (checkout_top.join(path), worktree_top.join(path)))
            .collect(),
    ))
}

/// Gives each worktree file of `same` its checkout twin's modification time; how many.
fn keep_times(same: &[(PathBuf, PathBuf)]) -> usize {
    same.iter()
        .filter(|(checkout, worktree)| {
            let (Ok(theirs), Ok(ours)) = (
                std::fs::symlink_metadata(checkout),
                std::fs::symlink_metadata(worktree),
            ) else {
                return false;
            };
            if !theirs.is_file() || !ours.is_file() || theirs.len() != ours.len() {
                return false;
            }
            let Ok(modified) = theirs.modified() else {
                return false;
            };
            // door: not a link (above), in a worktree whose agent has not started.
            File::open(worktree)
                .and_then(|file| file.set_times(FileTimes::new().set_modified(modified)))
                .is_ok()
        })
        .count()
}

/// One folder of build output to bring over.
struct Part {
    label: &'static str,
    from: PathBuf,
    to: PathBuf,
    /// A cargo target: its `incremental` caches and other profiles than `debug` are
    /// optional, and it is not copied while a build of the checkout runs (locked).
    cargo: bool,
    /// The checkout's project directory and the worktree's: a symbolic link to a path inside
    /// the one points to the same path inside the other.
    from_root: PathBuf,
    to_root: PathBuf,
    /// Paths (relative to `from`) left out: mix's builds of the project's own apps.
    skip: Vec<PathBuf>,
    /// The checkout's paths (its repository, its cargo target): a cargo unit whose build
    /// took one of them from the environment (`env!("CARGO_MANIFEST_DIR")`,
    /// `CARGO_BIN_EXE_*`) holds it compiled in, and must rebuild for the worktree.
    checkout_paths: Vec<PathBuf>,
}

impl Part {
    /// Whether the path `relative` (to `from`) is copied: `Some(optional)`, where `optional`
    /// says it is copied only when room allows; `None`: never.
    fn holds(&self, relative: &Path) -> Option<bool> {
        if self.skip.iter().any(|skip| relative.starts_with(skip)) {
            return None;
        }
        Some(self.cargo && is_optional(relative))
    }
}

/// Sizes of a part: everything, and its optional share.
struct Sized {
    part: Part,
    needed: u64,
    optional: u64,
}

fn copy_parts(parts: Vec<Part>, limit: u64) -> Warmed {
    let mut warmed = Warmed::nothing(Vec::new());
    // Locks of running cargo builds, held while their profiles are copied.
    let mut locks = Vec::new();
    let mut sized = Vec::new();
    for part in parts {
        if part.cargo {
            match lock_cargo(&part.from) {
                Ok(held) => locks.extend(held),
                Err(why) => {
                    warmed.why_not.push(why.to_string());
                    continue;
                }
            }
        }
        let (needed, optional) = size_of(&part);
        sized.push(Sized {
            part,
            needed,
            optional,
        });
    }
    let Some(first) = sized.first() else {
        return warmed;
    };
    let room = limit.min(free_space(&first.part.to).saturating_sub(RESERVE));
    let needed: u64 = sized.iter().map(|s| s.needed).sum();
    let optional: u64 = sized.iter().map(|s| s.optional).sum();
    if needed > room {
        warmed.why_not.push(format!(
            "the checkout's build output is {} ({}), more than the {} a task may use ([tasks] warm_start_limit_mb, and the free space less {})",
            megabytes(needed),
            sized
                .iter()
                .map(|s| format!("{} {}", s.part.label, megabytes(s.needed)))
                .collect::<Vec<_>>()
                .join(", "),
            megabytes(room),
            megabytes(RESERVE),
        ));
        return warmed;
    }
    let with_optional = needed + optional <= room;
    if !with_optional {
        warmed.why_not.push(format!(
            "cargo's incremental caches and profiles other than debug ({}) were left out to stay within {}",
            megabytes(optional),
            megabytes(room)
        ));
    }
    let mut reflink = Reflink::Untried;
    for sized in sized {
        let part = &sized.part;
        let mut counts = (0u64, 0u64);
        match copy_tree(part, with_optional, &mut reflink, &mut counts) {
            Ok(()) => {
                warmed.bytes += counts.0;
                warmed.files += counts.1;
                let rebuilt = forget_units_naming(&part.to, &part.checkout_paths);
                if !rebuilt.is_empty() {
                    warmed.why_not.push(format!(
                        "{} unit(s) compiled with the checkout's paths in them (env!(\"CARGO_MANIFEST_DIR\") and the like) rebuild: {}",
                        rebuilt.len(),
                        rebuilt.join(", ")
                    ));
                }
                warmed.parts.push(format!(
                    "{} {} ({})",
                    part.label,
                    part.from.display(),
                    megabytes(counts.0)
                ));
            }
            Err(e) => {
                // Half a copy could pair a fingerprint with a missing or cut output.
                let _ = std::fs::remove_dir_all(&part.to);
                warmed.why_not.push(format!(
                    "copying the {} {} failed and was taken back: {e}",
                    part.label,
                    part.from.display()
                ));
            }
        }
    }
    drop(locks);
    warmed.method = match (warmed.files, &reflink) {
        (0, _) => Method::None,
        (_, Reflink::Works) => Method::Reflink,
        (_, Reflink::Unsupported(why)) => {
            warmed
                .why_not
                .push(format!("this filesystem has no copy-on-write: {why}"));
            Method::Copy
        }
        (_, Reflink::Untried) => Method::Copy,
    };
    warmed
}

/// Whether a path inside a cargo target may be left out when room is short: one of its
/// `incremental` caches (only for the project's own crates), or anything of a profile other
/// than `debug` (the one drydock's `compile` and `test` build).
fn is_optional(relative: &Path) -> bool {
    let mut components = relative.components();
    let top_folder = match (components.next(), components.next()) {
        (Some(Component::Normal(top)), Some(_)) => top != "debug",
        _ => false,
    };
    top_folder
        || relative
            .components()
            .any(|c| matches!(c, Component::Normal(name) if name == "incremental"))
}

fn size_of(part: &Part) -> (u64, u64) {
    let (mut needed, mut optional) = (0, 0);
    for entry in walkdir::WalkDir::new(&part.from).follow_links(false) {
        let Ok(entry) = entry else { continue };
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(&part.from)
            .unwrap_or(Path::new(""));
        match part.holds(relative) {
            Some(true) => optional += metadata.len(),
            Some(false) => needed += metadata.len(),
            None => {}
        }
    }
    (needed, optional)
}

/// Holds every profile's build lock of the cargo target `target` (`debug/.cargo-lock`),
/// so no build of the checkout writes while it is copied; refused while one runs.
fn lock_cargo(target: &Path) -> Result<Vec<nix::fcntl::Flock<File>>, WarmStartError> {
    let mut held = Vec::new();
    let Ok(profiles) = std::fs::read_dir(target) else {
        return Ok(held);
    };
    for profile in profiles.flatten() {
        let lock = profile.path().join(".cargo-lock");
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&lock) else {
            continue;
        };
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(flock) => held.push(flock),
            Err((_, errno)) => {
                return Err(WarmStartError::CargoBuilding { lock, errno });
            }
        }
    }
    Ok(held)
}

/// Whether copy-on-write works between the two folders.
enum Reflink {
    Untried,
    Works,
    Unsupported(String),
}

fn copy_tree(
    part: &Part,
    with_optional: bool,
    reflink: &mut Reflink,
    counts: &mut (u64, u64),
) -> io::Result<()> {
    let walk = walkdir::WalkDir::new(&part.from)
        .follow_links(false)
        .into_iter()
        .filter_entry(|entry| {
            let relative = entry
                .path()
                .strip_prefix(&part.from)
                .unwrap_or(Path::new(""));
            part.holds(relative)
                .is_some_and(|optional| with_optional || !optional)
        });
    for entry in walk {
        let entry = entry.map_err(io::Error::other)?;
        let relative = entry
            .path()
            .strip_prefix(&part.from)
            .unwrap_or(Path::new(""));
        let to = part.to.join(relative);
        let metadata = entry.path().symlink_metadata()?;
        if metadata.is_dir() {
            std::fs::create_dir_all(&to)?;
        } else if metadata.is_symlink() {
            // mix links `priv` relatively; a link into the checkout would let a task write there.
            // door: the checkout's build output, the person's.
            let link = std::fs::read_link(entry.path())?;
            let link = match link.strip_prefix(&part.from_root) {
                Ok(inside) => part.to_root.join(inside),
                Err(_) => link,
            };
            std::os::unix::fs::symlink(link, &to)?;
        } else if metadata.is_file() {
            // Cargo's build lock: a new, empty file of this target, never the checkout's.
            if relative.file_name().is_some_and(|n| n == ".cargo-lock") {
                File::create(&to)?;
                continue;
            }
            copy_file(entry.path(), &to, &metadata, reflink)?;
            counts.0 += metadata.len();
            counts.1 += 1;
        }
    }
    Ok(())
}

/// One file, as a file of its own (clone or copy), with its permissions and times.
fn copy_file(from: &Path, to: &Path, metadata: &Metadata, reflink: &mut Reflink) -> io::Result<()> {
    // door: the checkout's build output, the person's.
    let mut source = File::open(from)?;
    let mut target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)?;
    let mut cloned = false;
    if !matches!(reflink, Reflink::Unsupported(_)) {
        // SAFETY: FICLONE takes the source's descriptor; both files stay open for the call.
        let result = unsafe { libc::ioctl(target.as_raw_fd(), libc::FICLONE, source.as_raw_fd()) };
        if result == 0 {
            cloned = true;
            *reflink = Reflink::Works;
        } else {
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::EXDEV | libc::EINVAL | libc::ENOTTY) => {
                    *reflink = Reflink::Unsupported(format!("FICLONE: {error}"));
                }
                _ => return Err(error),
            }
        }
    }
    if !cloned {
        io::copy(&mut source, &mut target)?;
    }
    target.set_permissions(std::fs::Permissions::from_mode(metadata.mode() & 0o7777))?;
    target.set_times(
        FileTimes::new()
            .set_accessed(metadata.accessed()?)
            .set_modified(metadata.modified()?),
    )?;
    Ok(())
}

/// Forgets (removes the fingerprint of) every unit of the cargo target `target` whose
/// build took one of `paths` from the environment, as rustc's dep-info (`deps/NAME-HASH.d`:
/// `# env-dep:NAME=VALUE`) records: compiled in, it would point the worktree's code at the
/// checkout. `OUT_DIR` is not counted: it is what `include!` reads at compile time, and cargo
/// records such files relative to the target. Returns the units' names.
fn forget_units_naming(target: &Path, paths: &[PathBuf]) -> Vec<String> {
    let mut forgotten = Vec::new();
    if paths.is_empty() {
        return forgotten;
    }
    let Ok(profiles) = std::fs::read_dir(target) else {
        return forgotten;
    };
    for profile in profiles.flatten().map(|p| p.path()) {
        let Ok(infos) = std::fs::read_dir(profile.join("deps")) else {
            continue;
        };
        let mut hashes = Vec::new();
        for info in infos.flatten().map(|i| i.path()) {
            if info.extension().is_none_or(|e| e != "d") {
                continue;
            }
            // door: the task's copied target, before its agent starts.
            let Ok(text) = std::fs::read_to_string(&info) else {
                continue;
            };
            let names_checkout = text
                .lines()
                .filter_map(|line| line.strip_prefix("# env-dep:"))
                .filter_map(|dep| dep.split_once('='))
                .any(|(name, value)| {
                    name != "OUT_DIR" && paths.iter().any(|p| Path::new(value).starts_with(p))
                });
            let stem = info.file_stem().unwrap_or_default().to_string_lossy();
            if let Some((name, hash)) = stem.rsplit_once('-')
                && names_checkout
            {
                hashes.push(hash.to_string());
                forgotten.push(name.to_string());
            }
        }
        let Ok(units) = std::fs::read_dir(profile.join(".fingerprint")) else {
            continue;
        };
        for unit in units.flatten() {
            let name = unit.file_name().to_string_lossy().into_owned();
            if hashes.iter().any(|h| name.ends_with(&format!("-{h}"))) {
                let _ = std::fs::remove_dir_all(unit.path());
            }
        }
    }
    forgotten.sort();
    forgotten.dedup();
    forgotten
}

/// mix's builds of the project's own apps in `_build` (relative to it): every
/// `ENV/lib/APP` whose app is not a dependency in `deps`. Compiled code may hold the
/// checkout's paths (`__DIR__`), and mix would not notice they moved: these compile anew.
fn own_apps(checkout: &Path) -> Vec<PathBuf> {
    let mut own = Vec::new();
    let Ok(envs) = std::fs::read_dir(checkout.join("_build")) else {
        return own;
    };
    for env in envs.flatten() {
        let Ok(apps) = std::fs::read_dir(env.path().join("lib")) else {
            continue;
        };
        for app in apps.flatten() {
            if !checkout.join("deps").join(app.file_name()).is_dir() {
                own.push(
                    Path::new(&env.file_name())
                        .join("lib")
                        .join(app.file_name()),
                );
            }
        }
    }
    own
}

fn has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
}

/// Free bytes (for an unprivileged user) on the filesystem `path` would be on.
fn free_space(path: &Path) -> u64 {
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    nix::sys::statvfs::statvfs(existing)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()))
        .unwrap_or(0)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests;
