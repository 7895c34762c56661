//! `[tasks]`: the task queue, where it lives and this drydock as one of its hosts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::landing::{self, FileLanding, LandMode, LandWith, LandingConfig};
use super::paths::absolute;
use super::remotes::RemoteRepositories;
use super::values::{DAY, SECOND, duration, duration_from_zero, positive, scaled};
use super::{ConfigError, EnvLookup};
use crate::spend::Budget;

/// The niceness of tasks' agents when the file names none.
const DEFAULT_NICE: u8 = 10;

/// The task queue (`[tasks]` in the file).
#[derive(Debug, Clone)]
pub struct TasksConfig {
    /// The agent a task runs when it names none.
    pub default_agent: String,
    /// How long a task may run when it sets no timeout of its own.
    pub timeout: Duration,
    /// How long a finished task's session stays for a person to look at.
    pub grace: Duration,
    /// Keep finished tasks' sessions instead of closing them after the grace period.
    pub keep_sessions: bool,
    /// Approval policies a task can be queued with: a name, and the tools whose permission
    /// prompts are allowed without a person.
    pub policies: BTreeMap<String, Vec<String>>,
    /// Tasks on git projects work in a worktree and branch of their own (else in place).
    pub worktrees: bool,
    /// Untracked files or folders (relative to the project) copied into each task's worktree.
    pub copy: Vec<String>,
    /// Where cargo builds in a task's worktree.
    pub cargo_target: CargoTarget,
    /// A new worktree's build output starts as a copy of the project's own (cargo's target,
    /// mix's `_build` and `deps`).
    pub warm_start: bool,
    /// A queued task that names the files it touches does not start while a running task
    /// of its repository changes (or is to change) any of them.
    pub hold_colliding: bool,
    /// The most bytes one warm start copies.
    pub warm_start_limit: u64,
    /// Days a merged task's worktree is kept before it is removed (unmerged ones stay until
    /// they are merged or discarded).
    pub keep_merged: Duration,
    /// Where the queue lives.
    pub store: QueueStore,
    /// This drydock as one host of a queue.
    pub host: HostConfig,
    /// The git remotes this host clones a task's project from when it has no copy of it.
    pub repositories: RemoteRepositories,
    /// Whether tasks' agents run in a sandbox (on unless turned off by name).
    pub sandbox: bool,
    /// Hosts (`host:port`, `*.domain:port`) a sandboxed agent reaches besides its model API.
    pub sandbox_hosts: Vec<String>,
    /// More directories a sandboxed agent sees, read-only (toolchains in unusual places).
    pub sandbox_read: Vec<PathBuf>,
    /// More of drydock's variables a sandbox starts with (names; `PREFIX_*` for a prefix),
    /// besides the locale, toolchain and agent settings every sandbox gets: a provider key
    /// named in an agent's own config, say.
    pub sandbox_env: Vec<String>,
    /// Variables that hold a model API's key, each with the URL of the API it is for: the
    /// sandbox gets a placeholder in each, and the proxy puts the key in the requests to that
    /// API alone (the agent's profile names its own, `ANTHROPIC_API_KEY` and the like).
    pub sandbox_keys: BTreeMap<String, url::Url>,
    /// What a task may spend unless its task_add asks for another budget.
    pub budget: Option<Budget>,
    /// The most a task_add may ask for; None: no more than `budget`.
    pub budget_max: Option<Budget>,
    /// Whether an allowed host's name may lead to a loopback or private address (a model
    /// gateway on the local network); off, a name is connected to public addresses alone.
    pub sandbox_private_names: bool,
    /// The niceness (0 to 19) a task's agent, and everything it starts, runs at: agents at
    /// work yield the CPU to drydock and to the person's own work.
    pub nice: u8,
    /// How results reach their branch.
    pub landing: LandingConfig,
}

/// Where the task queue lives (`[tasks] store`, `DRYDOCK_TASKS_STORE`). `Debug` does not
/// show a PostgreSQL URL: it may hold the database's password.
#[derive(Clone, PartialEq, Eq)]
pub enum QueueStore {
    /// An SQLite file in the data directory: this machine's queue.
    Sqlite,
    /// A PostgreSQL database (a `postgres://` URL) that a team's hosts share.
    Postgres(String),
}

impl std::fmt::Debug for QueueStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueStore::Sqlite => f.write_str("Sqlite"),
            QueueStore::Postgres(_) => f.write_str("Postgres(hidden)"),
        }
    }
}

/// This drydock as a host of a shared queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// Its name among the team's hosts (default: the machine's host name).
    pub name: String,
    /// How many tasks it runs at most (None: the queue's cap alone).
    pub cap: Option<u32>,
    /// Where other hosts' dashboards reach it (default: its bind address).
    pub url: Option<String>,
    /// How long its claim on running tasks outlives its last heartbeat.
    pub lease: Duration,
    /// Tasks of a host whose lease ran out are queued again (else left `lost`).
    pub requeue_lost: bool,
}

/// Where cargo builds in tasks' worktrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CargoTarget {
    /// A target directory per task: no task waits for another's build lock or links its
    /// artifacts, and each starts cold.
    PerTask,
    /// One target directory for every task: warm builds, one build at a time.
    Shared,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileQueue {
    default_agent: Option<String>,
    timeout_s: Option<u64>,
    grace_s: Option<u64>,
    keep_sessions: Option<bool>,
    policies: Option<BTreeMap<String, Vec<String>>>,
    worktrees: Option<bool>,
    copy: Option<Vec<String>>,
    cargo_target: Option<CargoTarget>,
    warm_start: Option<bool>,
    hold_colliding: Option<bool>,
    warm_start_limit_mb: Option<u64>,
    keep_merged_days: Option<u64>,
    store: Option<String>,
    host: Option<String>,
    host_cap: Option<u32>,
    host_url: Option<String>,
    lease_s: Option<u64>,
    requeue_lost: Option<bool>,
    repositories: Option<Vec<String>>,
    sandbox: Option<bool>,
    sandbox_hosts: Option<Vec<String>>,
    sandbox_read: Option<Vec<PathBuf>>,
    sandbox_env: Option<Vec<String>>,
    sandbox_keys: Option<BTreeMap<String, String>>,
    budget: Option<FileBudget>,
    budget_max: Option<FileBudget>,
    sandbox_private_names: Option<bool>,
    nice: Option<u8>,
    land: Option<LandMode>,
    land_checks: Option<Vec<String>>,
    land_commands: Option<BTreeMap<String, Vec<String>>>,
    land_attempts: Option<u32>,
    land_check_timeout_s: Option<u64>,
    land_batch: Option<usize>,
    land_with: Option<LandWith>,
}

pub(super) fn resolve(
    file: FileQueue,
    env: EnvLookup,
    cwd: &Path,
) -> Result<TasksConfig, ConfigError> {
    let store = match env("DRYDOCK_TASKS_STORE").or(file.store) {
        None => QueueStore::Sqlite,
        Some(value) if value == "sqlite" => QueueStore::Sqlite,
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            QueueStore::Postgres(url)
        }
        Some(other) => {
            // Not shown: a mistyped URL may still hold a password.
            let scheme = other.split_once("://").map_or("no scheme", |(s, _)| s);
            return Err(ConfigError::Invalid(format!(
                "tasks.store is neither \"sqlite\" nor a postgres:// URL (its scheme: {scheme:?})"
            )));
        }
    };
    let host = HostConfig {
        name: match file.host {
            Some(name) if name.trim().is_empty() => {
                return Err(ConfigError::Invalid("tasks.host: a name, not blank".into()));
            }
            Some(name) => name,
            None => machine_name(),
        },
        cap: file
            .host_cap
            .map(|cap| positive(cap, "tasks.host_cap"))
            .transpose()?,
        url: file.host_url,
        lease: duration(file.lease_s.unwrap_or(30), SECOND, "tasks.lease_s")?,
        requeue_lost: file.requeue_lost.unwrap_or(true),
    };
    let budget = file
        .budget
        .map(|b| Budget::checked(b.tokens, b.usd, "tasks.budget"))
        .transpose()?;
    let budget_max = file
        .budget_max
        .map(|b| Budget::checked(b.tokens, b.usd, "tasks.budget_max"))
        .transpose()?;
    if let (Some(budget), Some(max)) = (budget, budget_max)
        && !budget.within(&max)
    {
        return Err(ConfigError::Invalid(format!(
            "tasks.budget ({}) is over tasks.budget_max ({})",
            budget.line(),
            max.line()
        )));
    }
    Ok(TasksConfig {
        store,
        host,
        repositories: RemoteRepositories::new(file.repositories.unwrap_or_default())?,
        default_agent: file.default_agent.unwrap_or_else(|| "claude".into()),
        timeout: duration(file.timeout_s.unwrap_or(1800), SECOND, "tasks.timeout_s")?,
        grace: duration_from_zero(file.grace_s.unwrap_or(5), SECOND, "tasks.grace_s")?,
        keep_sessions: file.keep_sessions.unwrap_or(false),
        policies: file.policies.unwrap_or_default(),
        worktrees: file.worktrees.unwrap_or(true),
        copy: file.copy.unwrap_or_default(),
        cargo_target: file.cargo_target.unwrap_or(CargoTarget::PerTask),
        warm_start: file.warm_start.unwrap_or(true),
        hold_colliding: file.hold_colliding.unwrap_or(false),
        warm_start_limit: scaled(
            positive(
                file.warm_start_limit_mb.unwrap_or(8192),
                "tasks.warm_start_limit_mb",
            )?,
            1024 * 1024,
            "tasks.warm_start_limit_mb",
        )?,
        keep_merged: duration_from_zero(
            file.keep_merged_days.unwrap_or(7),
            DAY,
            "tasks.keep_merged_days",
        )?,
        sandbox: file.sandbox.unwrap_or(true),
        sandbox_hosts: file.sandbox_hosts.unwrap_or_default(),
        sandbox_read: file
            .sandbox_read
            .unwrap_or_default()
            .into_iter()
            .map(|dir| absolute(&dir, env, cwd))
            .collect(),
        sandbox_env: checked_env_names(file.sandbox_env.unwrap_or_default())?,
        sandbox_keys: checked_keys(file.sandbox_keys.unwrap_or_default())?,
        // A default bounds what the most bounds, too.
        budget: budget.map(|b| b.filled_from(budget_max)),
        budget_max,
        sandbox_private_names: file.sandbox_private_names.unwrap_or(false),
        nice: match file.nice.unwrap_or(DEFAULT_NICE) {
            nice @ 0..=19 => nice,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "tasks.nice is {other}: a niceness is 0 (as drydock) to 19 (the lowest priority)"
                )));
            }
        },
        landing: landing::resolve(FileLanding {
            land: file.land,
            land_checks: file.land_checks,
            land_commands: file.land_commands,
            land_attempts: file.land_attempts,
            land_check_timeout_s: file.land_check_timeout_s,
            land_batch: file.land_batch,
            land_with: file.land_with,
        })?,
    })
}

/// This machine's host name, as the kernel has it.
fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A budget as the file writes it (`{ tokens = 2000000 }`, `{ usd = 5.0 }`), checked by
/// [`Budget::checked`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBudget {
    tokens: Option<i64>,
    usd: Option<f64>,
}

/// `[tasks] sandbox_keys` once each is a variable's name with the http(s) URL of an API.
fn checked_keys(keys: BTreeMap<String, String>) -> Result<BTreeMap<String, url::Url>, ConfigError> {
    keys.into_iter()
        .map(|(name, url)| {
            let named = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !named {
                return Err(ConfigError::Invalid(format!(
                    "tasks.sandbox_keys: {name:?} is not a variable's name (LETTERS_DIGITS_)"
                )));
            }
            let parsed = url::Url::parse(&url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            match parsed {
                Some(parsed) => Ok((name, parsed)),
                None => Err(ConfigError::Invalid(format!(
                    "tasks.sandbox_keys.{name}: {url:?} is not the http:// or https:// URL of the API its key is for"
                ))),
            }
        })
        .collect()
}

/// `[tasks] sandbox_env` as given, once each is a variable's name or a prefix (`NAME_*`).
fn checked_env_names(names: Vec<String>) -> Result<Vec<String>, ConfigError> {
    for name in &names {
        let stem = name.strip_suffix('*').unwrap_or(name);
        let valid = !stem.is_empty()
            && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !stem.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(ConfigError::Invalid(format!(
                "tasks.sandbox_env: {name:?} is not a variable's name (LETTERS_DIGITS_, or a prefix ending in `*`)"
            )));
        }
    }
    Ok(names)
}
