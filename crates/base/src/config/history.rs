//! `[history]`: the project memory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::paths::absolute;
use super::values::{DAY, duration, positive, scaled};
use super::{ConfigError, EnvLookup};

/// The project memory (`[history]` in the file): the build tools' results, their problems
/// and the changes that fixed them.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    /// Recording on (the default) or off everywhere.
    pub enabled: bool,
    /// Projects (and the folders below them) never recorded.
    pub off: Vec<PathBuf>,
    /// Runs older than this are dropped, oldest first.
    pub max_age: Duration,
    /// The memory's file is kept under this size by dropping the oldest runs.
    pub max_bytes: u64,
}

impl HistoryConfig {
    /// Whether the results of `project` are recorded.
    pub fn records(&self, project: &Path) -> bool {
        self.enabled && !self.off.iter().any(|dir| project.starts_with(dir))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileHistory {
    enabled: Option<bool>,
    off: Option<Vec<PathBuf>>,
    max_age_days: Option<u64>,
    max_mb: Option<u64>,
}

pub(super) fn resolve(
    file: FileHistory,
    env: EnvLookup,
    cwd: &Path,
) -> Result<HistoryConfig, ConfigError> {
    Ok(HistoryConfig {
        enabled: file.enabled.unwrap_or(true),
        off: file
            .off
            .unwrap_or_default()
            .into_iter()
            .map(|dir| {
                let dir = absolute(&dir, env, cwd);
                dir.canonicalize().unwrap_or(dir)
            })
            .collect(),
        max_age: duration(file.max_age_days.unwrap_or(90), DAY, "history.max_age_days")?,
        max_bytes: scaled(
            positive(file.max_mb.unwrap_or(256), "history.max_mb")?,
            1024 * 1024,
            "history.max_mb",
        )?,
    })
}
