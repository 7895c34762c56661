//! The config file: where it is looked for, and its shape (each section's own in its module).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::agents::FileAgents;
use super::docs::FileDocs;
use super::history::FileHistory;
use super::http::FileHttp;
use super::limits::{FileLimits, FileTimeouts};
use super::paths::user_dir;
use super::secrets::FileEnv;
use super::tasks::FileQueue;
use super::telemetry::FileTelemetry;
use super::terminal::FileTerminal;
use super::{ConfigError, EnvLookup, Overrides};

/// The file's shape. Every key is optional; a key that is none of these must be a
/// toolchain's section (`[cargo]`), or it is refused.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileConfig {
    pub(super) bind: Option<String>,
    pub(super) token: Option<String>,
    pub(super) allowed_roots: Option<Vec<PathBuf>>,
    pub(super) toolsets: Option<Vec<String>>,
    pub(super) disabled_tools: Option<Vec<String>>,
    pub(super) data_dir: Option<PathBuf>,
    #[serde(default)]
    pub(super) agents: FileAgents,
    #[serde(default)]
    pub(super) tasks: FileQueue,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) timeouts: FileTimeouts,
    #[serde(default)]
    pub(super) env: FileEnv,
    #[serde(default)]
    pub(super) terminal: FileTerminal,
    #[serde(default)]
    pub(super) docs: FileDocs,
    #[serde(default)]
    pub(super) http: FileHttp,
    #[serde(default)]
    pub(super) history: FileHistory,
    #[serde(default)]
    pub(super) prices: BTreeMap<String, super::prices::Price>,
    #[serde(default)]
    pub(super) telemetry: FileTelemetry,
    /// Every other key: a toolchain's section (`config::toolchain`).
    #[serde(flatten)]
    pub(super) other: BTreeMap<String, toml::Value>,
}

pub(super) fn read_file_config(
    overrides: &Overrides,
    env: EnvLookup,
    cwd: &Path,
) -> Result<(FileConfig, Option<PathBuf>), ConfigError> {
    let explicit = overrides
        .config_file
        .clone()
        .or_else(|| env("DRYDOCK_CONFIG").map(PathBuf::from));
    let path = match explicit {
        Some(path) => Some(path),
        None => [
            Some(cwd.join("drydock.toml")),
            user_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("drydock/drydock.toml")),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file()),
    };
    let Some(path) = path else {
        return Ok((FileConfig::default(), None));
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    let file = parse_file_config(&text, &path)?;
    Ok((file, Some(path)))
}

fn parse_file_config(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })
}

/// A config file's text as the fuzzers feed it, resolved with no flags and no environment
/// in `cwd`: every error is a `ConfigError`, never a panic.
#[doc(hidden)]
pub fn resolve_file_text(text: &str, cwd: &Path) -> Result<super::Config, ConfigError> {
    let file = parse_file_config(text, Path::new("drydock.toml"))?;
    super::Config::from_file(&Overrides::default(), file, None, &|_| None, cwd)
}
