//! drydock.toml + environment + flags, resolved once into a `Config`.
//!
//! Precedence, highest first: command-line flags, environment variables (`DRYDOCK_*`),
//! the config file (`--config FILE`, else `./drydock.toml`, else the user config dir),
//! built-in defaults.

mod access;
mod agents;
mod docs;
mod file;
mod history;
mod http;
mod landing;
mod layout;
mod limits;
mod paths;
pub mod prices;
mod remotes;
mod secrets;
mod tasks;
mod telemetry;
mod terminal;
mod toolchain;
mod values;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use crate::catalog::{ToolName, Toolset};
use crate::process::{self, Policy};
use file::{FileConfig, read_file_config};

pub use access::DEFAULT_BIND;
pub use agents::AgentsConfig;
pub use docs::{DocsConfig, ModelRef};
#[doc(hidden)]
pub use file::resolve_file_text;
pub use history::HistoryConfig;
pub use http::HttpConfig;
pub use landing::{DEFAULT_LAND_BATCH, LandCheck, LandMode, LandWith, LandingConfig};
pub use layout::TaskDirs;
pub use limits::{Limits, MAX_OUTPUT_CAP, Timeouts};
pub use paths::resolve_data_dir;
pub use remotes::{RemoteError, RemoteRepositories, normalised_remote};
pub use secrets::SecretValues;
pub use tasks::{CargoTarget, HostConfig, QueueStore, TasksConfig};
pub use telemetry::TelemetryConfig;
pub use terminal::{TERMINAL_OUTPUT_CAP_MAX, TERMINAL_OUTPUT_CAP_MIN, TerminalConfig};
pub use toolchain::ToolchainConfig;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid bind address `{0}` (expected HOST:PORT, e.g. 127.0.0.1:7878)")]
    Bind(String),
    #[error(
        "refusing to bind {0} without a token: a non-loopback address needs `--token`, DRYDOCK_TOKEN or `token` in the config"
    )]
    NonLoopbackWithoutToken(SocketAddr),
    #[error("allowed root {path} is not usable: {reason}")]
    Root { path: PathBuf, reason: String },
    #[error("unknown key `{0}` in the config file")]
    UnknownKey(String),
    #[error("invalid [{section}] in the config file: {message}")]
    Section { section: String, message: String },
    #[error("unknown toolset `{0}` (known: {known})", known = Toolset::known())]
    UnknownToolset(String),
    #[error("unknown tool `{0}` (known: {known})", known = ToolName::known())]
    UnknownTool(String),
    #[error("invalid glob `{pattern}` in docs.include/exclude: {message}")]
    Glob { pattern: String, message: String },
    #[error(
        "limits.output_cap_bytes is {0}; at most {MAX_OUTPUT_CAP} bytes of each stream fit in a result (a client reads at most 1 MiB of it)"
    )]
    OutputCapTooLarge(usize),
    #[error("{0} must be greater than zero")]
    Zero(&'static str),
    #[error(
        "terminal.output_cap_bytes is {0}; it must be {TERMINAL_OUTPUT_CAP_MIN}-{TERMINAL_OUTPUT_CAP_MAX}"
    )]
    TerminalOutputCap(usize),
    #[error(transparent)]
    Budget(#[from] crate::spend::BudgetError),
    #[error(
        "tasks.land_checks: {name:?} is neither compile, test, lint nor type_check, nor a command of [tasks.land_commands]{}",
        listed(commands)
    )]
    UnknownLandCheck { name: String, commands: Vec<String> },
    #[error("{0}")]
    Invalid(String),
}

/// ` (a, b)`, or nothing for no names.
fn listed(names: &[String]) -> String {
    match names.is_empty() {
        true => String::new(),
        false => format!(" ({})", names.join(", ")),
    }
}

/// The resolved configuration every part of drydock reads.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub token: Option<String>,
    /// Canonical directories projects must lie in.
    pub allowed_roots: Vec<PathBuf>,
    /// True when no root was configured and the working directory was used.
    pub roots_defaulted: bool,
    pub toolsets: Vec<Toolset>,
    pub disabled_tools: Vec<ToolName>,
    pub limits: Limits,
    pub timeouts: Timeouts,
    pub env_remove: Vec<String>,
    /// What `env_remove`'s variables held when the config was read, before drydock takes
    /// them out of its environment: what the project memory scrubs from what it records.
    pub secret_values: SecretValues,
    pub toolchain: ToolchainConfig,
    pub terminal: TerminalConfig,
    pub docs: DocsConfig,
    pub http: HttpConfig,
    /// drydock's own state: the hook endpoint of the running server, the task queue.
    pub data_dir: PathBuf,
    pub agents: AgentsConfig,
    pub tasks: TasksConfig,
    pub history: HistoryConfig,
    /// What a model's tokens cost (`[prices]` over the defaults).
    pub prices: prices::Prices,
    /// Where drydock's traces go (`[telemetry]`).
    pub telemetry: TelemetryConfig,
    /// Where the configuration was read from, for the banner.
    pub source: Option<PathBuf>,
}

/// What the command line says; `None` leaves the decision to env, file and defaults.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub bind: Option<String>,
    pub token: Option<String>,
    pub allow_roots: Vec<PathBuf>,
    pub index_dir: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
}

/// Environment variables drydock reads, as a lookup function so tests need not mutate the process env.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Config {
    /// The process policy of one call of `tool`: its timeout (the caller's wish, else the
    /// tool's default, never above the ceiling), the configured output cap and kill grace,
    /// and the configured secrets removed.
    pub fn policy_for(&self, tool: ToolName, requested_ms: Option<u64>) -> Policy {
        Policy {
            limits: process::Limits {
                timeout: self.timeouts.for_call(tool, requested_ms),
                output_cap: self.limits.output_cap,
                kill_grace: self.limits.kill_grace,
            },
            env_remove: self.env_remove.clone(),
        }
    }

    /// Resolve flags, environment and file, with the process's real environment and working directory.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        let cwd = std::env::current_dir().map_err(|e| ConfigError::Root {
            path: PathBuf::from("."),
            reason: e.to_string(),
        })?;
        Self::resolve(overrides, &|name| std::env::var(name).ok(), &cwd)
    }

    pub fn resolve(
        overrides: &Overrides,
        env: EnvLookup,
        cwd: &Path,
    ) -> Result<Config, ConfigError> {
        let (file, source) = read_file_config(overrides, env, cwd)?;
        Self::from_file(overrides, file, source, env, cwd)
    }

    fn from_file(
        overrides: &Overrides,
        file: FileConfig,
        source: Option<PathBuf>,
        env: EnvLookup,
        cwd: &Path,
    ) -> Result<Config, ConfigError> {
        let (allowed_roots, roots_defaulted) =
            paths::resolve_roots(overrides, file.allowed_roots, env, cwd)?;
        let (toolsets, disabled_tools) = access::resolve_tools(file.toolsets, file.disabled_tools)?;
        let env_remove = secrets::resolve_env_remove(file.env);
        Ok(Config {
            bind: access::resolve_bind(overrides, file.bind, env)?,
            token: access::resolve_token(overrides, file.token, env),
            allowed_roots,
            roots_defaulted,
            toolsets,
            disabled_tools,
            limits: limits::resolve_limits(file.limits)?,
            timeouts: limits::resolve_timeouts(file.timeouts)?,
            secret_values: SecretValues::of(&env_remove, env),
            env_remove,
            toolchain: ToolchainConfig::resolve(file.other)?,
            terminal: terminal::resolve(file.terminal)?,
            docs: docs::resolve(overrides, file.docs, env, cwd)?,
            http: http::resolve(file.http)?,
            data_dir: resolve_data_dir(overrides.data_dir.as_deref(), file.data_dir, env, cwd),
            agents: agents::resolve(file.agents, env, cwd)?,
            tasks: tasks::resolve(file.tasks, env, cwd)?,
            history: history::resolve(file.history, env, cwd)?,
            prices: prices::resolve(file.prices)?,
            telemetry: telemetry::resolve(file.telemetry)?,
            source,
        })
    }

    /// What serving HTTP needs beyond a valid config: a token, unless only this machine can
    /// connect.
    pub fn check_servable(&self) -> Result<(), ConfigError> {
        match self.bind.ip().is_loopback() || self.token.is_some() {
            true => Ok(()),
            false => Err(ConfigError::NonLoopbackWithoutToken(self.bind)),
        }
    }

    /// Where tasks' worktrees, their cargo targets and this host's clones live.
    pub fn task_dirs(&self) -> TaskDirs {
        TaskDirs::new(&self.data_dir, self.tasks.cargo_target)
    }

    /// Whether a tool is served: its toolset is on and it is not disabled by name.
    pub fn tool_enabled(&self, tool: ToolName) -> bool {
        self.toolsets.contains(&tool.toolset()) && !self.disabled_tools.contains(&tool)
    }

    /// The tools this configuration serves, in catalog order.
    pub fn enabled_tools(&self) -> impl Iterator<Item = ToolName> + '_ {
        ToolName::ALL
            .iter()
            .copied()
            .filter(|tool| self.tool_enabled(*tool))
    }
}
