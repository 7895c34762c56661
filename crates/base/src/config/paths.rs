//! The paths a config names: the user's directories, the data directory, the allowed roots.

use std::path::{Path, PathBuf};

use crate::workspace::expand_home;

use super::{ConfigError, EnvLookup, Overrides};

/// `path` as the config means it: `~` is the user's home, and a relative path is relative to
/// the working directory.
pub(super) fn absolute(path: &Path, env: EnvLookup, cwd: &Path) -> PathBuf {
    cwd.join(expand_home(path, env))
}

pub(super) fn canonical_roots(
    raw: &[PathBuf],
    env: EnvLookup,
    cwd: &Path,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut roots = Vec::new();
    for path in raw {
        let canonical = absolute(path, env, cwd)
            .canonicalize()
            .map_err(|e| ConfigError::Root {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if !canonical.is_dir() {
            return Err(ConfigError::Root {
                path: path.clone(),
                reason: "not a directory".into(),
            });
        }
        if !roots.contains(&canonical) {
            roots.push(canonical);
        }
    }
    Ok(roots)
}

/// The user's directory that `variable` (an XDG base directory) names, else `~/fallback`:
/// from the environment as `env` gives it, so a caller that gives none (a test) reads
/// nothing of the machine's user.
pub(super) fn user_dir(env: EnvLookup, variable: &str, fallback: &str) -> Option<PathBuf> {
    let from_xdg = env(variable).map(PathBuf::from).filter(|d| d.is_absolute());
    from_xdg.or_else(|| env("HOME").map(|home| PathBuf::from(home).join(fallback)))
}

/// drydock's data directory: `flag`, else `DRYDOCK_DATA_DIR`, else `file`, else the user's
/// local data directory (`~/.local/share/drydock`).
pub fn resolve_data_dir(
    flag: Option<&Path>,
    file: Option<PathBuf>,
    env: EnvLookup,
    cwd: &Path,
) -> PathBuf {
    let chosen = flag
        .map(Path::to_path_buf)
        .or_else(|| env("DRYDOCK_DATA_DIR").map(PathBuf::from))
        .or(file);
    match chosen {
        Some(path) => absolute(&path, env, cwd),
        None => user_dir(env, "XDG_DATA_HOME", ".local/share")
            .map(|d| d.join("drydock"))
            .unwrap_or_else(|| cwd.join(".drydock")),
    }
}

/// The canonical allowed roots, and whether none was configured (the working directory).
pub(super) fn resolve_roots(
    overrides: &Overrides,
    file: Option<Vec<PathBuf>>,
    env: EnvLookup,
    cwd: &Path,
) -> Result<(Vec<PathBuf>, bool), ConfigError> {
    let configured = if !overrides.allow_roots.is_empty() {
        overrides.allow_roots.clone()
    } else if let Some(list) = env("DRYDOCK_ALLOW_ROOTS") {
        std::env::split_paths(&list).collect()
    } else {
        file.unwrap_or_default()
    };
    let defaulted = configured.is_empty();
    let raw = if defaulted {
        vec![cwd.to_path_buf()]
    } else {
        configured
    };
    Ok((canonical_roots(&raw, env, cwd)?, defaulted))
}
