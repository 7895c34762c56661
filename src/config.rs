//! drydock.toml + environment + flags, resolved once into a `Config`.
//!
//! Precedence, highest first: command-line flags, environment variables (`DRYDOCK_*`),
//! the config file (`--config FILE`, else `./drydock.toml`, else the user config dir),
//! built-in defaults.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use crate::catalog::{ToolName, Toolset};
use crate::process::{self, Policy};
use crate::workspace::{Toolchain, expand_home};

pub const DEFAULT_BIND: &str = "127.0.0.1:7878";

/// Removed from children's environment unless the config replaces the list.
const DEFAULT_SECRET_ENV: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "HEX_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Cargo subcommands `run` may start through its `task` argument unless the config replaces the list.
const DEFAULT_CARGO_TASKS: &[&str] = &["bench", "doc", "tree", "metadata", "version"];
/// Read-only or project-local tasks; `run` is how a mix project's code is executed.
const DEFAULT_MIX_TASKS: &[&str] = &["run", "deps.tree", "xref", "help", "app.tree", "docs"];

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
    #[error("{0}")]
    Invalid(String),
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
    /// Where the configuration was read from, for the banner.
    pub source: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Limits {
    /// How large the kept text of each output stream may be as JSON (head and tail).
    pub output_cap: usize,
    /// SIGTERM to SIGKILL.
    pub kill_grace: Duration,
    /// Largest accepted HTTP request body.
    pub max_request_bytes: usize,
}

/// The toolchains' settings (`[cargo]` and `[mix]` in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolchainConfig {
    /// The cargo subcommands `run` may start through its `task` argument.
    pub cargo_tasks: Vec<String>,
    /// The mix tasks `run` may start.
    pub mix_tasks: Vec<String>,
}

/// The range of `terminal.output_cap_bytes` and of a terminal call's `max_output_bytes`: a
/// result with its text rendering stays well under the 1 MiB a client reads.
pub const TERMINAL_OUTPUT_CAP_MIN: usize = 1024;
pub const TERMINAL_OUTPUT_CAP_MAX: usize = 256 * 1024;

/// Limits of the terminal sessions.
#[derive(Debug, Clone)]
pub struct TerminalConfig {
    /// Live sessions at most (drydock's PTY and tmux sessions; the user's panes do not count).
    pub max_sessions: usize,
    /// How large the output of a terminal result may be as JSON, unless the call asks for
    /// another size (`max_output_bytes`); head and tail are kept.
    pub output_cap: usize,
    /// Sessions nobody has used for this long are killed.
    pub idle_timeout: Duration,
    /// Lines of scrollback each session keeps.
    pub scrollback_lines: usize,
    /// The tmux server drydock owns (`tmux -L NAME`); the user's own server is never changed.
    pub tmux_socket: String,
    /// The shell new sessions start (then given the command); default: $SHELL, else bash.
    pub shell: Option<String>,
}

/// The docs index.
#[derive(Debug, Clone)]
pub struct DocsConfig {
    /// The LanceDB index directory (default `index/` in the working directory).
    pub index_dir: PathBuf,
    /// The embedding model (`[docs] model`; `model_dir` is the same as a directory there);
    /// None: the shipped all-MiniLM-L6-v2.
    pub model: Option<ModelRef>,
    /// The cross-encoder that re-scores a lookup's first candidates; None: off.
    pub reranker: Option<ModelRef>,
    /// How many candidates the reranker re-scores.
    pub rerank_candidates: usize,
    /// Files larger than this are not indexed.
    pub max_file_bytes: u64,
    /// Glob patterns (relative to an indexed path) a file must match to be indexed by
    /// `drydock index PATH`; empty = every supported file.
    pub include: Vec<String>,
    /// Glob patterns of files never indexed (besides what .gitignore excludes).
    pub exclude: Vec<String>,
}

/// A model the docs use: one of fastembed's catalogue by name, or a local directory (a value
/// written as a path: starting with `/`, `./`, `../` or `~`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    Named(String),
    Dir(PathBuf),
}

impl ModelRef {
    /// Reads a config or command-line value; `absolute` makes a directory absolute.
    pub fn parse(value: &str, absolute: impl Fn(PathBuf) -> PathBuf) -> ModelRef {
        let is_path = ["/", "./", "../", "~"]
            .iter()
            .any(|start| value.starts_with(start));
        match is_path {
            true => ModelRef::Dir(absolute(PathBuf::from(value))),
            false => ModelRef::Named(value.to_string()),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelRef::Named(name) => write!(f, "{name}"),
            ModelRef::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// Agent supervision (`[agents]` in the file).
#[derive(Debug, Clone)]
pub struct AgentsConfig {
    /// Agent profiles that override the embedded ones (default: the user config dir's
    /// `drydock/agents`).
    pub profile_dir: Option<PathBuf>,
    /// Programs watched with the quiet-time-only profile (e.g. "aider").
    pub programs: Vec<String>,
    /// Canonical directories in which `agent_spawn` starts agents without asking a person.
    pub spawn_without_consent: Vec<PathBuf>,
    /// How long `agent_spawn` waits for a person's answer.
    pub consent_timeout: Duration,
    /// Tools whose permission prompts drydock allows by itself, for agents it spawned.
    pub auto_allow: Vec<String>,
    /// Tools whose permission prompts drydock denies by itself, for agents it spawned.
    pub auto_deny: Vec<String>,
    /// The executable that starts an agent kind, when not the profile's own on PATH.
    pub commands: BTreeMap<String, String>,
}

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
    /// How results reach their branch.
    pub landing: LandingConfig,
}

/// Results of one branch tested together by default: `benches/landing.rs` measured it.
pub const DEFAULT_LAND_BATCH: usize = 4;

/// How a done task's result reaches the branch it started from (`[tasks] land`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandingConfig {
    pub mode: LandMode,
    /// The checks run on the merged tree, in order.
    pub checks: Vec<LandCheck>,
    /// How many attempts a task's agent gets before its result waits for a person.
    pub attempts: u32,
    /// How long one check may run (a hung test is a failure sent back to its agent).
    pub check_timeout: Duration,
    /// How many waiting results of one branch are merged and tested together (1: one at a
    /// time). A red batch is split in halves until the result that broke it is found.
    pub batch: usize,
    /// How a result goes onto its branch.
    pub with: LandWith,
}

/// merge: onto the tip under a merge commit (a fast-forward for one commit on the tip);
/// rebase: its commits replayed onto the tip, one at a time, no merge commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandWith {
    Merge,
    Rebase,
}

/// manual: a person lands a result with task_merge; when_green: it lands by itself once the
/// merged tree passes the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandMode {
    Manual,
    WhenGreen,
}

/// A check on the merged tree: one of drydock's build tools, or a command of the project's
/// named in `[tasks.land_commands]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandCheck {
    Compile,
    Test,
    Lint,
    TypeCheck,
    /// `argv` run in the merged tree, in the builds' sandbox: green when it exits 0.
    Command {
        name: String,
        argv: Vec<String>,
    },
}

impl LandCheck {
    pub fn name(&self) -> &str {
        match self {
            LandCheck::Compile => "compile",
            LandCheck::Test => "test",
            LandCheck::Lint => "lint",
            LandCheck::TypeCheck => "type_check",
            LandCheck::Command { name, .. } => name,
        }
    }

    /// The check `name` names: a build tool's, else one of `commands`.
    fn named(name: &str, commands: &BTreeMap<String, Vec<String>>) -> Result<LandCheck, String> {
        match name {
            "compile" => Ok(LandCheck::Compile),
            "test" => Ok(LandCheck::Test),
            "lint" => Ok(LandCheck::Lint),
            "type_check" => Ok(LandCheck::TypeCheck),
            other => match commands.get(other) {
                Some(argv) => Ok(LandCheck::Command {
                    name: other.to_string(),
                    argv: argv.clone(),
                }),
                None => Err(format!(
                    "tasks.land_checks: {other:?} is neither compile, test, lint nor type_check, nor a command of [tasks.land_commands]{}",
                    match commands.is_empty() {
                        true => String::new(),
                        false => format!(
                            " ({})",
                            commands.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    }
                )),
            },
        }
    }
}

/// Git remotes by glob (`[tasks] repositories`): `*` stays within one `/` segment, `**`
/// crosses them. None by default: a host clones nothing it was not told it may.
#[derive(Debug, Clone)]
pub struct RemoteRepositories {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl RemoteRepositories {
    pub fn new(patterns: Vec<String>) -> Result<RemoteRepositories, ConfigError> {
        let mut set = globset::GlobSetBuilder::new();
        for pattern in &patterns {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| ConfigError::Glob {
                    pattern: pattern.clone(),
                    message: e.kind().to_string(),
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| ConfigError::Glob {
            pattern: patterns.join(", "),
            message: e.kind().to_string(),
        })?;
        Ok(RemoteRepositories { patterns, set })
    }

    /// Whether `url` is allowed: its normalised form ([`normalised_remote`]) matches a
    /// pattern. A URL that does not normalise (a query, a fragment, a `..`) is not.
    pub fn allows(&self, url: &str) -> bool {
        normalised_remote(url).is_ok_and(|url| self.set.is_match(url))
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// The transports a git remote may use.
const REMOTE_SCHEMES: [&str; 5] = ["https", "http", "ssh", "git", "file"];

/// A git remote as git reaches it, for matching: `scheme://[user@]host[:port]/path` with the
/// scheme and host in lower case and the path percent-decoded (`file:///srv/%61pp` is
/// `file:///srv/app`), or `user@host:path` (ssh's short form, host in lower case). Refused: a
/// scheme git should not use here, a password, a query or fragment (`?`, `#`: what comes
/// after them is not the path a glob reads, and may name another host), a backslash, and a
/// `.` or `..` segment, raw or encoded.
pub fn normalised_remote(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if raw
        .chars()
        .any(|c| c.is_control() || matches!(c, '\\' | '?' | '#'))
    {
        return Err("holds a control character, a backslash, `?` or `#`".into());
    }
    let (normalised, path) = match raw.split_once("://") {
        Some(_) => normalised_url(raw)?,
        None => normalised_scp(raw)?,
    };
    if path
        .split('/')
        .any(|segment| segment == ".." || segment == ".")
    {
        return Err("has a `..` segment".into());
    }
    Ok(normalised)
}

/// `scheme://…` normalised, and its decoded path.
fn normalised_url(raw: &str) -> Result<(String, String), String> {
    let url = url::Url::parse(raw).map_err(|e| format!("is not a URL ({e})"))?;
    let scheme = url.scheme();
    if !REMOTE_SCHEMES.contains(&scheme) {
        return Err(format!("uses {scheme}://"));
    }
    if url.password().is_some() {
        return Err("holds a password".into());
    }
    // The raw path: the parser has already taken `..` out of it. The parser also takes
    // `ssh:/host` and `ssh:host`, which are not remotes.
    let after_scheme = match raw.trim().split_once("://") {
        Some((written, rest)) if written.eq_ignore_ascii_case(scheme) => rest,
        _ => return Err(format!("is not written {scheme}://HOST/PATH")),
    };
    let raw_path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    let path = percent_decoded(raw_path)?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let place = match (scheme, host.as_str()) {
        ("file", "" | "localhost") => String::new(),
        ("file", _) => return Err("names a file on another host".into()),
        (_, "") => return Err("names no host".into()),
        _ => {
            let user = match percent_decoded(url.username())? {
                user if user.is_empty() => user,
                user if is_word(&user, "._-") => format!("{user}@"),
                _ => return Err("has an odd user name".into()),
            };
            if !is_word(&host, ".-[]:") {
                return Err("has an odd host name".into());
            }
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{user}{host}{port}")
        }
    };
    Ok((format!("{scheme}://{place}{path}"), path))
}

/// `user@host:path` normalised, and its path.
fn normalised_scp(raw: &str) -> Result<(String, String), String> {
    let (user, rest) = raw.split_once('@').ok_or("is not a URL")?;
    let (host, path) = rest.split_once(':').ok_or("is not a URL")?;
    if !is_word(user, "._-") || !is_word(host, ".-") || path.is_empty() || path.starts_with('/') {
        return Err("is not a URL".into());
    }
    let host = host.to_ascii_lowercase();
    Ok((format!("{user}@{host}:{path}"), path.to_string()))
}

/// Whether `s` is made of ASCII letters, digits and the characters of `extra`.
fn is_word(s: &str, extra: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// `text` with its `%XX` escapes decoded; refused when one does not decode to text.
fn percent_decoded(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    match String::from_utf8(decoded) {
        Ok(text) if !text.chars().any(char::is_control) => Ok(text),
        _ => Err("has an escape that is not text".into()),
    }
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

/// The HTTP server's limits on connections and MCP sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// An MCP session (initialize handshake) without a call in flight or an open stream is
    /// closed after this long without a request.
    pub session_idle_timeout: Duration,
    /// MCP sessions at most; when full, a new one replaces the longest-idle session, or is
    /// refused (503) when every session is in use.
    pub max_sessions: usize,
    /// A connection must deliver each request's headers within this time (so an idle
    /// keep-alive connection is closed after it too).
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this time.
    pub body_read_timeout: Duration,
}

/// Per-tool default timeouts and the ceiling a caller's `timeout_ms` is clamped to.
#[derive(Debug, Clone)]
pub struct Timeouts {
    pub default: Duration,
    pub per_tool: BTreeMap<ToolName, Duration>,
    pub max: Duration,
}

impl Timeouts {
    /// The timeout of one call: the caller's wish, else the tool's default, never above `max`.
    pub fn for_call(&self, tool: ToolName, requested_ms: Option<u64>) -> Duration {
        let chosen = requested_ms
            .map(Duration::from_millis)
            .or_else(|| self.per_tool.get(&tool).copied())
            .unwrap_or(self.default);
        chosen.min(self.max)
    }
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

/// The file's shape. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    bind: Option<String>,
    token: Option<String>,
    allowed_roots: Option<Vec<PathBuf>>,
    toolsets: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    data_dir: Option<PathBuf>,
    #[serde(default)]
    agents: FileAgents,
    #[serde(default)]
    tasks: FileQueue,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    timeouts: FileTimeouts,
    #[serde(default)]
    env: FileEnv,
    #[serde(default)]
    cargo: FileTasks,
    #[serde(default)]
    mix: FileTasks,
    #[serde(default)]
    terminal: FileTerminal,
    #[serde(default)]
    docs: FileDocs,
    #[serde(default)]
    http: FileHttp,
    #[serde(default)]
    history: FileHistory,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHistory {
    enabled: Option<bool>,
    off: Option<Vec<PathBuf>>,
    max_age_days: Option<u64>,
    max_mb: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgents {
    profile_dir: Option<PathBuf>,
    programs: Option<Vec<String>>,
    spawn_without_consent: Option<Vec<PathBuf>>,
    consent_timeout_s: Option<u64>,
    auto_allow: Option<Vec<String>>,
    auto_deny: Option<Vec<String>>,
    commands: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileQueue {
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
    land: Option<LandMode>,
    land_checks: Option<Vec<String>>,
    land_commands: Option<BTreeMap<String, Vec<String>>>,
    land_attempts: Option<u32>,
    land_check_timeout_s: Option<u64>,
    land_batch: Option<usize>,
    land_with: Option<LandWith>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHttp {
    session_idle_timeout_s: Option<u64>,
    max_sessions: Option<usize>,
    header_read_timeout_s: Option<u64>,
    body_read_timeout_s: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDocs {
    index_dir: Option<PathBuf>,
    model: Option<String>,
    model_dir: Option<PathBuf>,
    reranker: Option<String>,
    rerank_candidates: Option<usize>,
    max_file_bytes: Option<u64>,
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    output_cap_bytes: Option<usize>,
    kill_grace_ms: Option<u64>,
    max_request_bytes: Option<usize>,
}

/// Unknown keys are caught by hand: `deny_unknown_fields` does not work with `flatten`.
#[derive(Debug, Default, Deserialize)]
struct FileTimeouts {
    default_ms: Option<u64>,
    max_ms: Option<u64>,
    #[serde(flatten)]
    per_tool_ms: BTreeMap<String, u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEnv {
    remove: Option<Vec<String>>,
}

/// `[cargo]` and `[mix]`: the tasks `run` may start.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTasks {
    tasks: Option<Vec<String>>,
}

impl FileTasks {
    fn or(self, defaults: &[&str]) -> Vec<String> {
        self.tasks
            .unwrap_or_else(|| defaults.iter().map(|s| s.to_string()).collect())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTerminal {
    max_sessions: Option<usize>,
    output_cap_bytes: Option<usize>,
    idle_timeout_s: Option<u64>,
    scrollback_lines: Option<usize>,
    tmux_socket: Option<String>,
    shell: Option<String>,
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
            resolve_roots(overrides, file.allowed_roots, env, cwd)?;
        let (toolsets, disabled_tools) = resolve_tools(file.toolsets, file.disabled_tools)?;
        let env_remove = resolve_env_remove(file.env);
        Ok(Config {
            bind: resolve_bind(overrides, file.bind, env)?,
            token: resolve_token(overrides, file.token, env),
            allowed_roots,
            roots_defaulted,
            toolsets,
            disabled_tools,
            limits: resolve_limits(file.limits)?,
            timeouts: resolve_timeouts(file.timeouts)?,
            secret_values: SecretValues::of(&env_remove, env),
            env_remove,
            toolchain: ToolchainConfig::resolve(file.cargo, file.mix),
            terminal: resolve_terminal(file.terminal)?,
            docs: resolve_docs(overrides, file.docs, env, cwd)?,
            http: resolve_http(file.http)?,
            data_dir: resolve_data_dir(overrides.data_dir.as_deref(), file.data_dir, env, cwd),
            agents: resolve_agents(file.agents, env, cwd)?,
            tasks: resolve_tasks(file.tasks, env, cwd)?,
            history: resolve_history(file.history, env, cwd)?,
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

    /// Where tasks' worktrees are made: `<data dir>/worktrees/<repository>/<task id>`.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.data_dir.join("worktrees")
    }

    /// Where this host keeps its clones of tasks' git remotes.
    pub fn clones_dir(&self) -> PathBuf {
        self.data_dir.join("clones")
    }

    /// The top of the task's worktree that `dir` is (in), if it is in one.
    pub fn task_worktree_of(&self, dir: &Path) -> Option<PathBuf> {
        let worktrees = self.worktrees_dir();
        let worktrees = worktrees.canonicalize().unwrap_or(worktrees);
        let inside = dir.strip_prefix(&worktrees).ok()?;
        let top: PathBuf = inside.components().take(2).collect();
        (top.components().count() == 2).then(|| worktrees.join(top))
    }

    /// The cargo target directory of a build in `project`, when it is (in) a task's worktree:
    /// outside the worktree (so nothing built is ever committed), the task's own or the
    /// shared one as `[tasks] cargo_target` says.
    pub fn cargo_target_for(&self, project: &Path) -> Option<PathBuf> {
        let worktrees = self.worktrees_dir();
        let worktrees = worktrees.canonicalize().unwrap_or(worktrees);
        let inside = project.strip_prefix(&worktrees).ok()?;
        let task = inside.components().nth(1)?.as_os_str().to_string_lossy();
        let targets = self.data_dir.join("task-targets");
        Some(match self.tasks.cargo_target {
            CargoTarget::PerTask => targets.join(task.as_ref()),
            CargoTarget::Shared => targets.join("shared"),
        })
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

fn read_file_config(
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
#[cfg(any(test, fuzzing))]
pub(crate) fn resolve_file_text(text: &str, cwd: &Path) -> Result<Config, ConfigError> {
    let file = parse_file_config(text, Path::new("drydock.toml"))?;
    Config::from_file(&Overrides::default(), file, None, &|_| None, cwd)
}

fn parse_bind(text: &str) -> Result<SocketAddr, ConfigError> {
    let text = text.trim();
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    // `localhost:7878` is what people type.
    match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| ConfigError::Bind(text.to_string())),
        None => Err(ConfigError::Bind(text.to_string())),
    }
}

fn canonical_roots(
    raw: &[PathBuf],
    env: EnvLookup,
    cwd: &Path,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut roots = Vec::new();
    for path in raw {
        let expanded = expand_home(path, env);
        let absolute = if expanded.is_absolute() {
            expanded
        } else {
            cwd.join(expanded)
        };
        let canonical = absolute.canonicalize().map_err(|e| ConfigError::Root {
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
fn user_dir(env: EnvLookup, variable: &str, fallback: &str) -> Option<PathBuf> {
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
        Some(path) => {
            let path = expand_home(&path, env);
            match path.is_absolute() {
                true => path,
                false => cwd.join(path),
            }
        }
        None => user_dir(env, "XDG_DATA_HOME", ".local/share")
            .map(|d| d.join("drydock"))
            .unwrap_or_else(|| cwd.join(".drydock")),
    }
}

fn resolve_bind(
    overrides: &Overrides,
    file: Option<String>,
    env: EnvLookup,
) -> Result<SocketAddr, ConfigError> {
    let text = overrides
        .bind
        .clone()
        .or_else(|| env("DRYDOCK_BIND"))
        .or(file)
        .unwrap_or_else(|| DEFAULT_BIND.to_string());
    parse_bind(&text)
}

fn resolve_token(overrides: &Overrides, file: Option<String>, env: EnvLookup) -> Option<String> {
    overrides
        .token
        .clone()
        .or_else(|| env("DRYDOCK_TOKEN"))
        .or(file)
        .filter(|t| !t.is_empty())
}

/// The canonical allowed roots, and whether none was configured (the working directory).
fn resolve_roots(
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

fn resolve_tools(
    toolsets: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
) -> Result<(Vec<Toolset>, Vec<ToolName>), ConfigError> {
    let toolsets = match toolsets {
        Some(names) => names
            .iter()
            .map(|n| Toolset::parse(n).ok_or_else(|| ConfigError::UnknownToolset(n.clone())))
            .collect::<Result<Vec<_>, _>>()?,
        None => Toolset::ALL.to_vec(),
    };
    let disabled = disabled
        .unwrap_or_default()
        .iter()
        .map(|n| ToolName::parse(n).ok_or_else(|| ConfigError::UnknownTool(n.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((toolsets, disabled))
}

fn resolve_limits(file: FileLimits) -> Result<Limits, ConfigError> {
    Ok(Limits {
        output_cap: output_cap(file.output_cap_bytes)?,
        kill_grace: duration_from_zero(
            file.kill_grace_ms.unwrap_or(2000),
            MILLISECOND,
            "limits.kill_grace_ms",
        )?,
        max_request_bytes: positive(
            file.max_request_bytes.unwrap_or(4 * 1024 * 1024),
            "limits.max_request_bytes",
        )?,
    })
}

/// Secret values, never shown (`Debug` tells only how many there are).
#[derive(Clone, Default)]
pub struct SecretValues(Vec<String>);

impl SecretValues {
    /// The values the variables `names` hold in `env` (names with a `*` are skipped).
    fn of(names: &[String], env: EnvLookup) -> SecretValues {
        let values = names
            .iter()
            .filter(|name| !name.contains('*'))
            .filter_map(|name| env(name))
            .filter(|value| !value.is_empty());
        SecretValues(values.collect())
    }

    pub fn values(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretValues({} hidden)", self.0.len())
    }
}

/// The configured secrets (or the default list), plus what is always removed.
fn resolve_env_remove(file: FileEnv) -> Vec<String> {
    let mut remove: Vec<String> = file
        .remove
        .unwrap_or_else(|| DEFAULT_SECRET_ENV.iter().map(|s| s.to_string()).collect());
    remove.extend(
        crate::process::env_policy::ALWAYS_REMOVED
            .iter()
            .map(|s| s.to_string()),
    );
    remove
}

impl ToolchainConfig {
    fn resolve(cargo: FileTasks, mix: FileTasks) -> Self {
        Self {
            cargo_tasks: cargo.or(DEFAULT_CARGO_TASKS),
            mix_tasks: mix.or(DEFAULT_MIX_TASKS),
        }
    }

    /// The tasks `run` may start for `toolchain`, and the config key that lists them.
    pub fn tasks(&self, toolchain: Toolchain) -> (&[String], &'static str) {
        match toolchain {
            Toolchain::Cargo => (&self.cargo_tasks, "cargo.tasks"),
            Toolchain::Mix => (&self.mix_tasks, "mix.tasks"),
        }
    }
}

fn resolve_agents(
    file: FileAgents,
    env: EnvLookup,
    cwd: &Path,
) -> Result<AgentsConfig, ConfigError> {
    let profile_dir = file.profile_dir.map(|dir| {
        let dir = expand_home(&dir, env);
        match dir.is_absolute() {
            true => dir,
            false => cwd.join(dir),
        }
    });
    Ok(AgentsConfig {
        profile_dir: profile_dir.or_else(|| {
            user_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("drydock/agents"))
        }),
        programs: file.programs.unwrap_or_default(),
        spawn_without_consent: canonical_roots(
            &file.spawn_without_consent.unwrap_or_default(),
            env,
            cwd,
        )?,
        consent_timeout: duration(
            file.consent_timeout_s.unwrap_or(120),
            SECOND,
            "agents.consent_timeout_s",
        )?,
        auto_allow: file.auto_allow.unwrap_or_default(),
        auto_deny: file.auto_deny.unwrap_or_default(),
        commands: file.commands.unwrap_or_default(),
    })
}

fn resolve_tasks(file: FileQueue, env: EnvLookup, cwd: &Path) -> Result<TasksConfig, ConfigError> {
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
            .map(|dir| cwd.join(expand_home(&dir, env)))
            .collect(),
        landing: LandingConfig {
            mode: file.land.unwrap_or(LandMode::Manual),
            checks: land_checks(file.land_checks, file.land_commands.unwrap_or_default())?,
            attempts: match positive(file.land_attempts.unwrap_or(3), "tasks.land_attempts")? {
                more if more > 100 => {
                    return Err(ConfigError::Invalid(format!(
                        "tasks.land_attempts: {more} is more than 100 attempts"
                    )));
                }
                attempts => attempts,
            },
            check_timeout: match file.land_check_timeout_s.unwrap_or(1200) {
                seconds @ 1..=86_400 => Duration::from_secs(seconds),
                other => {
                    return Err(ConfigError::Invalid(format!(
                        "tasks.land_check_timeout_s: {other} is not between 1 and 86400 seconds (a day)"
                    )));
                }
            },
            batch: match file.land_batch.unwrap_or(DEFAULT_LAND_BATCH) {
                batch @ 1..=32 => batch,
                other => {
                    return Err(ConfigError::Invalid(format!(
                        "tasks.land_batch: {other} is not between 1 (one result at a time) and 32"
                    )));
                }
            },
            with: file.land_with.unwrap_or(LandWith::Merge),
        },
    })
}

fn resolve_history(
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
                let dir = cwd.join(expand_home(&dir, env));
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

/// This machine's host name, as the kernel has it.
fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn resolve_terminal(file: FileTerminal) -> Result<TerminalConfig, ConfigError> {
    Ok(TerminalConfig {
        max_sessions: positive(file.max_sessions.unwrap_or(16), "terminal.max_sessions")?,
        output_cap: terminal_output_cap(file.output_cap_bytes.unwrap_or(64 * 1024))?,
        idle_timeout: duration(
            file.idle_timeout_s.unwrap_or(4 * 3600),
            SECOND,
            "terminal.idle_timeout_s",
        )?,
        scrollback_lines: file.scrollback_lines.unwrap_or(10_000),
        tmux_socket: file.tmux_socket.unwrap_or_else(|| "drydock".into()),
        shell: file.shell,
    })
}

fn resolve_docs(
    overrides: &Overrides,
    file: FileDocs,
    env: EnvLookup,
    cwd: &Path,
) -> Result<DocsConfig, ConfigError> {
    let absolute = |path: PathBuf| {
        let path = expand_home(&path, env);
        if path.is_absolute() {
            path
        } else {
            cwd.join(path)
        }
    };
    let docs = DocsConfig {
        index_dir: absolute(
            overrides
                .index_dir
                .clone()
                .or_else(|| env("DRYDOCK_INDEX").map(PathBuf::from))
                .or(file.index_dir)
                .unwrap_or_else(|| PathBuf::from("index")),
        ),
        model: match (file.model, file.model_dir) {
            (Some(_), Some(_)) => return Err(ConfigError::Invalid(
                "[docs] has both `model` and `model_dir`: `model` takes a directory too, keep one"
                    .into(),
            )),
            (Some(model), None) => Some(ModelRef::parse(&model, absolute)),
            (None, dir) => dir.map(|dir| ModelRef::Dir(absolute(dir))),
        },
        reranker: file
            .reranker
            .map(|reranker| ModelRef::parse(&reranker, absolute)),
        rerank_candidates: positive(
            file.rerank_candidates.unwrap_or(30),
            "docs.rerank_candidates",
        )?,
        max_file_bytes: positive(
            file.max_file_bytes.unwrap_or(8 * 1024 * 1024) as usize,
            "docs.max_file_bytes",
        )? as u64,
        include: file.include.unwrap_or_default(),
        exclude: file.exclude.unwrap_or_default(),
    };
    for pattern in docs.include.iter().chain(&docs.exclude) {
        globset::Glob::new(pattern).map_err(|e| ConfigError::Glob {
            pattern: pattern.clone(),
            message: e.kind().to_string(),
        })?;
    }
    Ok(docs)
}

fn resolve_timeouts(file: FileTimeouts) -> Result<Timeouts, ConfigError> {
    let default = duration(
        file.default_ms.unwrap_or(10 * 60 * 1000),
        MILLISECOND,
        "timeouts.default_ms",
    )?;
    let max = duration(
        file.max_ms.unwrap_or(60 * 60 * 1000),
        MILLISECOND,
        "timeouts.max_ms",
    )?;
    let mut per_tool = BTreeMap::new();
    for (key, ms) in file.per_tool_ms {
        let tool = key
            .strip_suffix("_ms")
            .and_then(ToolName::parse)
            .ok_or_else(|| ConfigError::UnknownTool(format!("timeouts.{key}")))?;
        per_tool.insert(tool, duration(ms, MILLISECOND, "timeouts.<tool>_ms")?);
    }
    Ok(Timeouts {
        default,
        per_tool,
        max,
    })
}

fn resolve_http(file: FileHttp) -> Result<HttpConfig, ConfigError> {
    let seconds = |value: Option<u64>, default: u64, key: &'static str| {
        duration(value.unwrap_or(default), SECOND, key)
    };
    Ok(HttpConfig {
        session_idle_timeout: seconds(
            file.session_idle_timeout_s,
            30 * 60,
            "http.session_idle_timeout_s",
        )?,
        max_sessions: positive(file.max_sessions.unwrap_or(256), "http.max_sessions")?,
        header_read_timeout: seconds(file.header_read_timeout_s, 10, "http.header_read_timeout_s")?,
        body_read_timeout: seconds(file.body_read_timeout_s, 30, "http.body_read_timeout_s")?,
    })
}

/// Both streams of a `run`, plus the text rendering, stay under 1 MiB of JSON.
pub const MAX_OUTPUT_CAP: usize = 384 * 1024;

fn output_cap(configured: Option<usize>) -> Result<usize, ConfigError> {
    let cap = positive(configured.unwrap_or(256 * 1024), "limits.output_cap_bytes")?;
    match cap <= MAX_OUTPUT_CAP {
        true => Ok(cap),
        false => Err(ConfigError::OutputCapTooLarge(cap)),
    }
}

fn terminal_output_cap(bytes: usize) -> Result<usize, ConfigError> {
    match (TERMINAL_OUTPUT_CAP_MIN..=TERMINAL_OUTPUT_CAP_MAX).contains(&bytes) {
        true => Ok(bytes),
        false => Err(ConfigError::TerminalOutputCap(bytes)),
    }
}

/// Seconds in a day.
const DAY_S: u64 = 24 * 3600;
const SECOND: Duration = Duration::from_secs(1);
const MILLISECOND: Duration = Duration::from_millis(1);
const DAY: Duration = Duration::from_secs(DAY_S);

/// The longest any setting may make drydock wait or keep something: past it, a deadline on
/// the clock could overflow.
const LONGEST: Duration = Duration::from_secs(10 * 366 * DAY_S);

/// A setting of `value` `unit`s, from 1 to [`LONGEST`].
fn duration(value: u64, unit: Duration, key: &'static str) -> Result<Duration, ConfigError> {
    duration_from_zero(positive(value, key)?, unit, key)
}

/// A setting of `value` `unit`s, from 0 to [`LONGEST`].
fn duration_from_zero(
    value: u64,
    unit: Duration,
    key: &'static str,
) -> Result<Duration, ConfigError> {
    let most = LONGEST.as_millis() / unit.as_millis();
    u32::try_from(value)
        .ok()
        .and_then(|value| unit.checked_mul(value))
        .filter(|wanted| *wanted <= LONGEST)
        .ok_or_else(|| {
            ConfigError::Invalid(format!(
                "{key} is {value}: that is too large (at most {most}, ten years)"
            ))
        })
}

/// `value` counted in `unit`s (days, MiB) as the smaller unit (seconds, bytes); a value whose
/// count does not fit a u64 is refused rather than wrapped round to a small one.
fn scaled(value: u64, unit: u64, key: &'static str) -> Result<u64, ConfigError> {
    value
        .checked_mul(unit)
        .ok_or_else(|| ConfigError::Invalid(format!("{key} is {value}: that is too large")))
}

/// The checks `[tasks] land_checks` names, in order, with the commands they may name.
fn land_checks(
    names: Option<Vec<String>>,
    commands: BTreeMap<String, Vec<String>>,
) -> Result<Vec<LandCheck>, ConfigError> {
    if let Some((name, _)) = commands.iter().find(|(_, argv)| argv.is_empty()) {
        return Err(ConfigError::Invalid(format!(
            "tasks.land_commands.{name}: give the command as a list: its program, then its arguments"
        )));
    }
    let names = match names {
        Some(names) if names.is_empty() => {
            return Err(ConfigError::Invalid(
                "tasks.land_checks: name at least one check (compile, test, lint, type_check or a command of [tasks.land_commands]): only a tested tree lands".into(),
            ));
        }
        Some(names) => names,
        None => vec!["compile".into(), "test".into()],
    };
    names
        .iter()
        .map(|name| LandCheck::named(name, &commands).map_err(ConfigError::Invalid))
        .collect()
}

fn positive<T: PartialEq + Default>(value: T, key: &'static str) -> Result<T, ConfigError> {
    if value == T::default() {
        Err(ConfigError::Zero(key))
    } else {
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn resolve_with(file_text: &str, overrides: Overrides) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("drydock.toml"), file_text).unwrap();
        Config::resolve(&overrides, &no_env, dir.path())
    }

    #[test]
    fn counts_in_days_or_mib_too_large_for_their_unit_are_refused() {
        // Multiplied out, each overflowed a u64.
        for (text, key) in [
            (
                "[tasks]\nkeep_merged_days = 300000000000000\n",
                "tasks.keep_merged_days",
            ),
            (
                "[history]\nmax_age_days = 300000000000000\n",
                "history.max_age_days",
            ),
            ("[history]\nmax_mb = 30000000000000\n", "history.max_mb"),
            (
                "[tasks]\nwarm_start_limit_mb = 30000000000000\n",
                "tasks.warm_start_limit_mb",
            ),
        ] {
            let error = resolve_with(text, Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(key) && error.contains("too large"),
                "{error}"
            );
        }
        let kept = resolve_with("[tasks]\nkeep_merged_days = 30\n", Overrides::default()).unwrap();
        assert_eq!(kept.tasks.keep_merged, Duration::from_secs(30 * 24 * 3600));
    }

    #[test]
    fn landing_is_manual_by_default_and_its_checks_and_attempts_are_bounded() {
        let default = resolve_with("", Overrides::default())
            .unwrap()
            .tasks
            .landing;
        assert_eq!(default.mode, LandMode::Manual);
        assert_eq!(default.checks, vec![LandCheck::Compile, LandCheck::Test]);
        assert_eq!(default.attempts, 3);
        assert_eq!(default.check_timeout, Duration::from_secs(1200));
        assert_eq!(default.batch, DEFAULT_LAND_BATCH);
        assert_eq!(default.with, LandWith::Merge);

        let text = "[tasks]\nland = \"when_green\"\nland_checks = [\"compile\", \"lint\", \"test\", \"e2e\"]\nland_attempts = 5\nland_batch = 8\nland_with = \"rebase\"\n[tasks.land_commands]\ne2e = [\"./e2e.sh\", \"--quick\"]\n";
        let set = resolve_with(text, Overrides::default())
            .unwrap()
            .tasks
            .landing;
        assert_eq!(set.mode, LandMode::WhenGreen);
        assert_eq!(
            set.checks,
            vec![
                LandCheck::Compile,
                LandCheck::Lint,
                LandCheck::Test,
                LandCheck::Command {
                    name: "e2e".into(),
                    argv: vec!["./e2e.sh".into(), "--quick".into()]
                }
            ]
        );
        assert_eq!(set.attempts, 5);
        assert_eq!(set.batch, 8);
        assert_eq!(set.with, LandWith::Rebase);

        for (text, says) in [
            ("[tasks]\nland_checks = []\n", "tasks.land_checks"),
            ("[tasks]\nland_attempts = 0\n", "tasks.land_attempts"),
            ("[tasks]\nland_attempts = 101\n", "more than 100"),
            (
                "[tasks]\nland_check_timeout_s = 0\n",
                "tasks.land_check_timeout_s",
            ),
            ("[tasks]\nland_check_timeout_s = 86401\n", "a day"),
            ("[tasks]\nland = \"sometimes\"\n", "sometimes"),
            (
                "[tasks]\nland_checks = [\"deploy\"]\n",
                "\"deploy\" is neither",
            ),
            (
                "[tasks]\nland_checks = [\"deploy\"]\n[tasks.land_commands]\ne2e = [\"x\"]\n",
                "[tasks.land_commands] (e2e)",
            ),
            (
                "[tasks.land_commands]\ne2e = []\n",
                "tasks.land_commands.e2e",
            ),
            ("[tasks]\nland_batch = 0\n", "tasks.land_batch"),
            ("[tasks]\nland_batch = 33\n", "tasks.land_batch"),
            ("[tasks]\nland_with = \"squash\"\n", "squash"),
        ] {
            let error = resolve_with(text, Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn warm_starts_are_on_and_capped_unless_configured() {
        let default = resolve_with("", Overrides::default()).unwrap();
        assert!(default.tasks.warm_start);
        assert_eq!(default.tasks.warm_start_limit, 8192 * 1024 * 1024);
        let set = resolve_with(
            "[tasks]\nwarm_start = false\nwarm_start_limit_mb = 100\n",
            Overrides::default(),
        )
        .unwrap();
        assert!(!set.tasks.warm_start);
        assert_eq!(set.tasks.warm_start_limit, 100 * 1024 * 1024);
        assert!(matches!(
            resolve_with("[tasks]\nwarm_start_limit_mb = 0\n", Overrides::default()),
            Err(ConfigError::Zero("tasks.warm_start_limit_mb"))
        ));
    }

    #[test]
    fn no_wait_or_age_is_longer_than_ten_years() {
        for (text, key) in [
            ("[tasks]\nlease_s = 18446744073709551615\n", "tasks.lease_s"),
            ("[tasks]\ngrace_s = 400000000\n", "tasks.grace_s"),
            ("[tasks]\ntimeout_s = 4294967296\n", "tasks.timeout_s"),
            (
                "[agents]\nconsent_timeout_s = 400000000\n",
                "agents.consent_timeout_s",
            ),
            (
                "[limits]\nkill_grace_ms = 18446744073709551615\n",
                "limits.kill_grace_ms",
            ),
            ("[timeouts]\nmax_ms = 400000000000\n", "timeouts.max_ms"),
            ("[timeouts]\ntest_ms = 400000000000\n", "timeouts.<tool>_ms"),
            (
                "[terminal]\nidle_timeout_s = 400000000\n",
                "terminal.idle_timeout_s",
            ),
            (
                "[http]\nbody_read_timeout_s = 400000000\n",
                "http.body_read_timeout_s",
            ),
            ("[history]\nmax_age_days = 3661\n", "history.max_age_days"),
        ] {
            let error = resolve_with(text, Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(key) && error.contains("ten years"),
                "{error}"
            );
        }
        let longest = resolve_with(
            "[tasks]\nlease_s = 315360000\ngrace_s = 0\n[history]\nmax_age_days = 3660\n",
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(longest.tasks.host.lease, Duration::from_secs(315_360_000));
        assert_eq!(longest.tasks.grace, Duration::ZERO);
        assert_eq!(longest.history.max_age, Duration::from_secs(3660 * DAY_S));
    }

    #[test]
    fn defaults_to_loopback_and_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
        assert_eq!(config.bind.to_string(), DEFAULT_BIND);
        assert_eq!(
            config.allowed_roots,
            vec![dir.path().canonicalize().unwrap()]
        );
        assert!(config.roots_defaulted);
        assert!(config.token.is_none());
        assert!(config.tool_enabled(ToolName::Compile));
        assert!(config.env_remove.contains(&"DRYDOCK_TOKEN".to_string()));
    }

    #[test]
    fn flags_beat_env_beat_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("drydock.toml"), "bind = \"127.0.0.1:1\"\n").unwrap();
        let env = |name: &str| (name == "DRYDOCK_BIND").then(|| "127.0.0.1:2".to_string());
        let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        assert_eq!(from_env.bind.port(), 2);
        let flags = Overrides {
            bind: Some("localhost:3".into()),
            ..Default::default()
        };
        assert_eq!(
            Config::resolve(&flags, &env, dir.path())
                .unwrap()
                .bind
                .port(),
            3
        );
        let from_file = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
        assert_eq!(from_file.bind.port(), 1);
    }

    #[test]
    fn serving_a_non_loopback_bind_needs_a_token() {
        // The config itself is valid: `drydock index` or `call` with it must work.
        let open = resolve_with("bind = \"0.0.0.0:7878\"", Overrides::default()).unwrap();
        assert!(matches!(
            open.check_servable(),
            Err(ConfigError::NonLoopbackWithoutToken(_))
        ));
        let guarded = resolve_with(
            "bind = \"0.0.0.0:7878\"\ntoken = \"s3cret\"",
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(guarded.token.as_deref(), Some("s3cret"));
        assert!(guarded.check_servable().is_ok());
        let local = resolve_with("", Overrides::default()).unwrap();
        assert!(local.check_servable().is_ok());
    }

    #[test]
    fn an_output_cap_too_large_for_one_result_is_refused() {
        let error =
            resolve_with("[limits]\noutput_cap_bytes = 1048576", Overrides::default()).unwrap_err();

        assert!(matches!(error, ConfigError::OutputCapTooLarge(1_048_576)));
        assert!(error.to_string().contains("393216"), "{error}");
        let largest = format!("[limits]\noutput_cap_bytes = {MAX_OUTPUT_CAP}");
        assert!(resolve_with(&largest, Overrides::default()).is_ok());
    }

    #[test]
    fn unknown_keys_toolsets_and_tools_are_refused() {
        assert!(matches!(
            resolve_with("bnd = \"x\"", Overrides::default()),
            Err(ConfigError::Parse { .. })
        ));
        assert!(matches!(
            resolve_with("toolsets = [\"bild\"]", Overrides::default()),
            Err(ConfigError::UnknownToolset(_))
        ));
        assert!(matches!(
            resolve_with("disabled_tools = [\"compil\"]", Overrides::default()),
            Err(ConfigError::UnknownTool(_))
        ));
        for bad in ["[timeouts]\ncompil_ms = 5", "[timeouts]\ncompile = 5"] {
            assert!(matches!(
                resolve_with(bad, Overrides::default()),
                Err(ConfigError::UnknownTool(_))
            ));
        }
    }

    #[test]
    fn disabled_tools_and_toolsets_switch_tools_off() {
        let config = resolve_with("disabled_tools = [\"run\"]", Overrides::default()).unwrap();
        assert!(!config.tool_enabled(ToolName::Run));
        assert!(config.tool_enabled(ToolName::Test));
        let none = resolve_with("toolsets = []", Overrides::default()).unwrap();
        assert!(!none.tool_enabled(ToolName::Compile));
    }

    #[test]
    fn timeouts_clamp_to_the_ceiling() {
        let config = resolve_with(
            "[timeouts]\ndefault_ms = 1000\nmax_ms = 5000\ntest_ms = 3000",
            Overrides::default(),
        )
        .unwrap();
        let t = &config.timeouts;
        assert_eq!(
            t.for_call(ToolName::Compile, None),
            Duration::from_millis(1000)
        );
        assert_eq!(
            t.for_call(ToolName::Test, None),
            Duration::from_millis(3000)
        );
        assert_eq!(
            t.for_call(ToolName::Test, Some(9000)),
            Duration::from_millis(5000)
        );
        assert_eq!(
            t.for_call(ToolName::Run, Some(200)),
            Duration::from_millis(200)
        );
    }

    #[test]
    fn the_queue_is_this_machines_unless_a_postgres_url_names_a_shared_one() {
        let dir = tempfile::tempdir().unwrap();
        let default = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
        assert_eq!(default.tasks.store, QueueStore::Sqlite);
        assert!(!default.tasks.host.name.is_empty(), "the machine's name");
        assert_eq!(default.tasks.host.cap, None);
        assert_eq!(default.tasks.host.lease, Duration::from_secs(30));
        assert!(default.tasks.host.requeue_lost);

        let file = resolve_with(
            "[tasks]\nstore = \"postgres://team@db:5432/q\"\nhost = \"gpu-1\"\nhost_cap = 3\nhost_url = \"http://gpu-1:7878\"\nlease_s = 10\nrequeue_lost = false\n",
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            file.tasks.store,
            QueueStore::Postgres("postgres://team@db:5432/q".into())
        );
        assert_eq!(
            file.tasks.host,
            HostConfig {
                name: "gpu-1".into(),
                cap: Some(3),
                url: Some("http://gpu-1:7878".into()),
                lease: Duration::from_secs(10),
                requeue_lost: false,
            }
        );
        let env = |name: &str| {
            (name == "DRYDOCK_TASKS_STORE").then(|| "postgresql://other/q".to_string())
        };
        let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        assert_eq!(
            from_env.tasks.store,
            QueueStore::Postgres("postgresql://other/q".into())
        );

        let mistyped = "[tasks]\nstore = \"postgress://q:secret@db/q\"\n";
        let error = resolve_with(mistyped, Overrides::default()).unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
        for (text, says) in [
            (
                "[tasks]\nstore = \"mysql://x\"\n",
                "neither \"sqlite\" nor a postgres:// URL",
            ),
            ("[tasks]\nhost = \" \"\n", "tasks.host"),
            ("[tasks]\nhost_cap = 0\n", "tasks.host_cap"),
            ("[tasks]\nlease_s = 0\n", "tasks.lease_s"),
        ] {
            let error = resolve_with(text, Overrides::default()).unwrap_err();
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn roots_must_exist() {
        let flags = Overrides {
            allow_roots: vec![PathBuf::from("/definitely/not/here")],
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Config::resolve(&flags, &no_env, dir.path()),
            Err(ConfigError::Root { .. })
        ));
    }

    #[test]
    fn the_example_config_is_valid_and_matches_the_defaults() {
        let example = resolve_with(
            include_str!("../drydock.example.toml"),
            Overrides::default(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let defaults = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
        assert_eq!(example.bind, defaults.bind);
        assert_eq!(example.env_remove, defaults.env_remove);
        assert_eq!(example.toolchain, defaults.toolchain);
        assert_eq!(example.limits.output_cap, defaults.limits.output_cap);
        assert_eq!(example.timeouts.default, defaults.timeouts.default);
        assert_eq!(example.toolsets, defaults.toolsets);
        assert_eq!(example.docs.max_file_bytes, defaults.docs.max_file_bytes);
        assert_eq!(
            example.docs.rerank_candidates,
            defaults.docs.rerank_candidates
        );
        assert_eq!(example.http, defaults.http);
        assert_eq!(example.terminal.output_cap, defaults.terminal.output_cap);
        for bad in [0, 1023, 262_145] {
            let file = format!("[terminal]\noutput_cap_bytes = {bad}");
            assert!(
                matches!(resolve_with(&file, Overrides::default()), Err(ConfigError::TerminalOutputCap(n)) if n == bad),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_docs_model_and_reranker_are_a_catalogue_name_or_a_directory() {
        let defaults = resolve_with("", Overrides::default()).unwrap();
        assert_eq!((defaults.docs.model, defaults.docs.reranker), (None, None));
        assert_eq!(defaults.docs.rerank_candidates, 30);
        let named = resolve_with(
            "[docs]\nmodel = \"bge-small-en-v1.5\"\nreranker = \"./models/tiny\"\nrerank_candidates = 12",
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            named.docs.model,
            Some(ModelRef::Named("bge-small-en-v1.5".into()))
        );
        let Some(ModelRef::Dir(dir)) = &named.docs.reranker else {
            panic!("{:?}", named.docs.reranker)
        };
        assert!(dir.is_absolute() && dir.ends_with("models/tiny"), "{dir:?}");
        assert_eq!(named.docs.rerank_candidates, 12);
        let old = resolve_with("[docs]\nmodel_dir = \"/opt/m\"", Overrides::default()).unwrap();
        assert_eq!(old.docs.model, Some(ModelRef::Dir("/opt/m".into())));
        let both = resolve_with(
            "[docs]\nmodel = \"/a\"\nmodel_dir = \"/b\"",
            Overrides::default(),
        );
        assert!(matches!(both, Err(ConfigError::Invalid(m)) if m.contains("keep one")));
        let none = resolve_with("[docs]\nrerank_candidates = 0", Overrides::default());
        assert!(matches!(
            none,
            Err(ConfigError::Zero("docs.rerank_candidates"))
        ));
    }

    #[test]
    fn the_docs_index_dir_comes_from_flag_env_or_file_relative_to_the_working_dir() {
        let dir = tempfile::tempdir().unwrap();
        let default = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
        assert_eq!(default.docs.index_dir, dir.path().join("index"));
        let file = resolve_with("[docs]\nindex_dir = \"idx\"\n", Overrides::default()).unwrap();
        assert!(file.docs.index_dir.ends_with("idx") && file.docs.index_dir.is_absolute());
        let env = |name: &str| (name == "DRYDOCK_INDEX").then(|| "/var/idx".to_string());
        let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        assert_eq!(from_env.docs.index_dir, PathBuf::from("/var/idx"));
        let flag = Overrides {
            index_dir: Some("/flag/idx".into()),
            ..Overrides::default()
        };
        let from_flag = Config::resolve(&flag, &env, dir.path()).unwrap();
        assert_eq!(from_flag.docs.index_dir, PathBuf::from("/flag/idx"));
        assert!(matches!(
            resolve_with("[docs]\nexclude = [\"a[\"]\n", Overrides::default()),
            Err(ConfigError::Glob { .. })
        ));
        assert!(matches!(
            resolve_with("[docs]\nindex = \"x\"\n", Overrides::default()),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn http_limits_are_read_and_zero_is_refused() {
        let config = resolve_with(
            "[http]\nsession_idle_timeout_s = 3\nmax_sessions = 2\nheader_read_timeout_s = 1\nbody_read_timeout_s = 4\n",
            Overrides::default(),
        )
        .unwrap();
        let http = config.http;
        assert_eq!(http.session_idle_timeout, Duration::from_secs(3));
        assert_eq!(http.max_sessions, 2);
        assert_eq!(http.header_read_timeout, Duration::from_secs(1));
        assert_eq!(http.body_read_timeout, Duration::from_secs(4));
        assert!(matches!(
            resolve_with("[http]\nmax_sessions = 0\n", Overrides::default()),
            Err(ConfigError::Zero("http.max_sessions"))
        ));
        assert!(matches!(
            resolve_with("[http]\nidle = 3\n", Overrides::default()),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn history_off_paths_expand_tilde_and_secrets_are_read_before_they_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("secret")).unwrap();
        let text = "[history]\noff = [\"~/secret\"]\n[env]\nremove = [\"MY_TOKEN\", \"AWS_*\"]\n";
        std::fs::write(dir.path().join("drydock.toml"), text).unwrap();
        let home_text = home.display().to_string();
        let env = |name: &str| match name {
            "HOME" => Some(home_text.clone()),
            "MY_TOKEN" => Some("tok-123456".to_string()),
            "DRYDOCK_TASKS_STORE" => Some("postgres://q:pw-123456@db/q".to_string()),
            _ => None,
        };
        let config = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();

        let secret = home.canonicalize().unwrap().join("secret");
        assert!(!config.history.records(&secret.join("app")));
        assert!(config.history.records(&dir.path().join("app")));
        assert_eq!(
            config.secret_values.values(),
            ["tok-123456", "postgres://q:pw-123456@db/q"]
        );
        let shown = format!("{config:?}");
        assert!(!shown.contains("tok-123456") && !shown.contains("pw-123456"));
    }

    #[test]
    fn tilde_expands_to_home() {
        let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
        assert_eq!(
            expand_home(Path::new("~/code"), &env),
            PathBuf::from("/home/ada/code")
        );
        assert_eq!(expand_home(Path::new("/x/~"), &env), PathBuf::from("/x/~"));
    }

    #[test]
    fn the_data_dir_comes_from_flag_env_file_or_the_users_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("drydock.toml"), "data_dir = \"from-file\"\n").unwrap();
        let env = |name: &str| (name == "DRYDOCK_DATA_DIR").then(|| "/from/env".to_string());
        let flag = Overrides {
            data_dir: Some("/from/flag".into()),
            ..Default::default()
        };
        let resolve = |overrides: &Overrides, env: EnvLookup| {
            Config::resolve(overrides, env, cwd).unwrap().data_dir
        };
        assert_eq!(resolve(&flag, &env), Path::new("/from/flag"));
        assert_eq!(resolve(&Overrides::default(), &env), Path::new("/from/env"));
        assert_eq!(
            resolve(&Overrides::default(), &no_env),
            cwd.join("from-file")
        );
        std::fs::remove_file(cwd.join("drydock.toml")).unwrap();
        let home = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
        assert_eq!(
            resolve(&Overrides::default(), &home),
            Path::new("/home/ada/.local/share/drydock")
        );
        let xdg = |name: &str| match name {
            "XDG_DATA_HOME" => Some("/xdg/data".to_string()),
            "HOME" => Some("/home/ada".to_string()),
            _ => None,
        };
        assert_eq!(
            resolve(&Overrides::default(), &xdg),
            Path::new("/xdg/data/drydock")
        );
        // Without an environment (a test's), nothing of the machine's user is read.
        assert_eq!(
            resolve(&Overrides::default(), &no_env),
            cwd.join(".drydock")
        );
    }

    #[test]
    fn the_users_config_file_is_found_through_the_environment_given() {
        let dir = tempfile::tempdir().unwrap();
        let config_home = dir.path().join("config");
        std::fs::create_dir_all(config_home.join("drydock")).unwrap();
        std::fs::write(
            config_home.join("drydock/drydock.toml"),
            "bind = \"127.0.0.1:1\"\n",
        )
        .unwrap();
        let cwd = dir.path().join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let xdg = config_home.display().to_string();
        let env = |name: &str| (name == "XDG_CONFIG_HOME").then(|| xdg.clone());
        let found = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
        assert_eq!(found.bind.port(), 1);
        assert_eq!(
            found.agents.profile_dir,
            Some(config_home.join("drydock/agents"))
        );
        let none = Config::resolve(&Overrides::default(), &no_env, &cwd).unwrap();
        assert_eq!((none.source, none.agents.profile_dir), (None, None));
    }
}
