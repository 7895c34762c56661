//! `drydock task …` and `drydock queue …`: the task tools from a shell, run by the server
//! that runs the queue (through its local endpoint), so its agents, events and resources
//! see every change. `drydock task complete` is how an agent without MCP signals its end.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::local_client::{call, endpoint};
use super::{ConfigArgs, Exit, Failure};
use crate::config::Config;
use crate::local_endpoint::LocalEndpoint;
use crate::tasks::local_queue;
use crate::tasks::store::{PgStore, SqliteStore, migrate};

/// Starting an agent may take 30 s, stopping one a few more.
const WAIT: Duration = Duration::from_secs(60);

#[derive(Args, Clone)]
pub(super) struct TaskArgs {
    #[command(subcommand)]
    pub action: TaskAction,
}

#[derive(Subcommand, Clone)]
pub(super) enum TaskAction {
    /// Queue a task: `drydock task add "fix the flaky test" --project DIR`.
    Add(Box<AddArgs>),
    /// The tasks, oldest first, and the queue.
    List(ListArgs),
    /// One task in full, with the end of its transcript.
    Show(IdArgs),
    /// Start a queued task now (within the cap).
    Start(IdArgs),
    /// Cancel a queued or running task (a running agent is interrupted, then killed).
    Cancel(IdArgs),
    /// Queue a failed or cancelled task again (with --budget-tokens / --budget-usd: a new
    /// budget, as a task stopped at its budget needs).
    Retry(RetryArgs),
    /// Say how a task ended (for the agent working on it).
    Complete(CompleteArgs),
    /// Merge a finished task's branch into the project's branch (or --into another).
    Merge(MergeArgs),
    /// Throw away a finished task's worktree and branch.
    Discard(IdArgs),
    /// Move this machine's queue (its SQLite file) into a shared PostgreSQL queue, keeping
    /// every task: `drydock task migrate --to postgres://…` (with no server running here).
    Migrate(MigrateArgs),
}

impl TaskAction {
    pub(super) fn config(&self) -> &ConfigArgs {
        match self {
            TaskAction::Add(args) => &args.config,
            TaskAction::List(args) => &args.config,
            TaskAction::Show(args)
            | TaskAction::Start(args)
            | TaskAction::Cancel(args)
            | TaskAction::Discard(args) => &args.config,
            TaskAction::Retry(args) => &args.config,
            TaskAction::Complete(args) => &args.config,
            TaskAction::Merge(args) => &args.config,
            TaskAction::Migrate(args) => &args.config,
        }
    }
}

#[derive(Args, Clone)]
pub(super) struct AddArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// A short title.
    title: String,
    /// The project the agent works in (default: the current directory, unless --repository
    /// is given alone).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The project's git remote, which a host without the project clones.
    #[arg(long, value_name = "URL")]
    repository: Option<String>,
    /// The agent's prompt (default: the title).
    #[arg(long)]
    description: Option<String>,
    /// claude or codex (default from config).
    #[arg(long)]
    agent: Option<String>,
    /// Higher starts first.
    #[arg(long)]
    priority: Option<i64>,
    /// Seconds it may run (default from config).
    #[arg(long = "timeout-s")]
    timeout_s: Option<u64>,
    /// An approval policy from the config's [tasks.policies].
    #[arg(long = "auto-approve", value_name = "POLICY")]
    auto_approve: Option<String>,
    /// The branch or commit the task's worktree starts from (default: the project's HEAD).
    #[arg(long)]
    base: Option<String>,
    /// Work in the project's own directory instead of a worktree of its own.
    #[arg(long = "in-place")]
    in_place: bool,
    /// A file it is expected to change (a glob below the project; repeat for more).
    #[arg(long = "touches", value_name = "GLOB")]
    touches: Vec<String>,
    /// A name of your own for the task, unique in the queue: the same command run again
    /// (after a timeout) queues nothing twice.
    #[arg(long)]
    key: Option<String>,
    #[command(flatten)]
    budget: BudgetArgs,
}

/// What a task may spend, all its attempts together.
#[derive(Args, Clone)]
struct BudgetArgs {
    /// At most this many tokens (input, output and cache together).
    #[arg(
        long = "budget-tokens",
        value_name = "TOKENS",
        allow_negative_numbers = true
    )]
    tokens: Option<i64>,
    /// At most this many US dollars, by drydock's price table.
    #[arg(long = "budget-usd", value_name = "USD", allow_negative_numbers = true)]
    usd: Option<f64>,
}

impl BudgetArgs {
    fn value(&self) -> Option<Value> {
        (self.tokens.is_some() || self.usd.is_some()).then(|| {
            let mut budget = json!({});
            if let Some(tokens) = self.tokens {
                budget["tokens"] = json!(tokens);
            }
            if let Some(usd) = self.usd {
                budget["usd"] = json!(usd);
            }
            budget
        })
    }
}

#[derive(Args, Clone)]
pub(super) struct RetryArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The task's id.
    id: String,
    #[command(flatten)]
    budget: BudgetArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum StrategyArg {
    Auto,
    FastForward,
    MergeCommit,
    Rebase,
}

#[derive(Args, Clone)]
pub(super) struct MergeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The task's id.
    id: String,
    /// The branch to merge into (default: the one the project has checked out).
    #[arg(long)]
    into: Option<String>,
    /// auto: a fast-forward when possible, else a merge commit.
    #[arg(long, value_enum, default_value = "auto")]
    strategy: StrategyArg,
    /// Merge even when its checks failed or the merged tree is red.
    #[arg(long)]
    force: bool,
}

#[derive(Args, Clone)]
pub(super) struct ListArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Only tasks in this state (queued, running, done, failed, …).
    #[arg(long)]
    state: Option<String>,
    /// Only tasks of this project.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

#[derive(Args, Clone)]
pub(super) struct IdArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The task's id.
    id: String,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutcomeArg {
    Done,
    Deferred,
    /// It should not be done (spelt as task_complete spells it; `wont-do` is taken too).
    #[value(name = "wont_do", alias = "wont-do")]
    WontDo,
    Discard,
}

#[derive(Args, Clone)]
pub(super) struct MigrateArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The shared queue to move into: a postgres:// URL of an empty drydock queue.
    #[arg(long, value_name = "URL")]
    to: String,
}

#[derive(Args, Clone)]
pub(super) struct CompleteArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The task's id.
    id: String,
    #[arg(long, value_enum)]
    outcome: OutcomeArg,
    /// What was done, or why not.
    #[arg(long)]
    summary: String,
}

#[derive(Args, Clone)]
pub(super) struct QueueArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// manual: tasks wait for `drydock task start`; auto: they start as slots free up.
    #[arg(long, value_parser = ["manual", "auto"])]
    mode: Option<String>,
    /// How many tasks run at once.
    #[arg(long = "max")]
    max_concurrent: Option<u32>,
    /// Cancel every queued task (running ones go on).
    #[arg(long)]
    clear: bool,
}

pub(super) fn run(config: &Config, args: TaskArgs) -> Exit {
    let (tool, arguments) = match args.action {
        TaskAction::Migrate(args) => return migrate(config, &args.to),
        TaskAction::Add(args) => ("task_add", add_arguments(*args)?),
        TaskAction::List(args) => {
            let mut arguments = json!({});
            if let Some(state) = args.state {
                arguments["state"] = json!(state);
            }
            if let Some(project) = args.project {
                arguments["project_path"] = json!(absolute(&project)?);
            }
            ("task_list", arguments)
        }
        TaskAction::Show(args) => ("task_show", json!({"task_id": args.id})),
        TaskAction::Start(args) => ("task_start", json!({"task_id": args.id})),
        TaskAction::Cancel(args) => ("task_cancel", json!({"task_id": args.id})),
        TaskAction::Retry(args) => {
            let mut arguments = json!({"task_id": args.id});
            if let Some(budget) = args.budget.value() {
                arguments["budget"] = budget;
            }
            ("task_retry", arguments)
        }
        TaskAction::Complete(args) => {
            let outcome = match args.outcome {
                OutcomeArg::Done => "done",
                OutcomeArg::Deferred => "deferred",
                OutcomeArg::WontDo => "wont_do",
                OutcomeArg::Discard => "discard",
            };
            let arguments =
                json!({"task_id": args.id, "outcome": outcome, "summary": args.summary});
            ("task_complete", arguments)
        }
        TaskAction::Merge(args) => {
            let strategy = match args.strategy {
                StrategyArg::Auto => "auto",
                StrategyArg::FastForward => "fast_forward",
                StrategyArg::MergeCommit => "merge_commit",
                StrategyArg::Rebase => "rebase",
            };
            let mut arguments =
                json!({"task_id": args.id, "strategy": strategy, "force": args.force});
            if let Some(into) = args.into {
                arguments["into"] = json!(into);
            }
            ("task_merge", arguments)
        }
        TaskAction::Discard(args) => ("task_discard", json!({"task_id": args.id})),
    };
    call_tool(config, tool, &arguments)
}

pub(super) fn queue(config: &Config, args: QueueArgs) -> Exit {
    if args.clear {
        if args.mode.is_some() || args.max_concurrent.is_some() {
            return Err(Failure::Usage(
                "--clear goes alone: clear the queue, then configure it".into(),
            ));
        }
        return call_tool(config, "queue_clear", &json!({}));
    }
    let mut arguments = json!({});
    if let Some(mode) = args.mode {
        arguments["mode"] = json!(mode);
    }
    if let Some(max) = args.max_concurrent {
        arguments["max_concurrent"] = json!(max);
    }
    call_tool(config, "queue_configure", &arguments)
}

fn add_arguments(args: AddArgs) -> Result<Value, Failure> {
    let project = match (args.project, &args.repository) {
        (Some(project), _) => Some(absolute(&project)?),
        (None, Some(_)) => None,
        (None, None) => Some(absolute(&PathBuf::from("."))?),
    };
    let mut task = json!({"title": args.title});
    for (key, value) in [
        ("project_path", project.map(Value::from)),
        ("repository", args.repository.map(Value::from)),
        ("description", args.description.map(Value::from)),
        ("agent", args.agent.map(Value::from)),
        ("priority", args.priority.map(Value::from)),
        ("timeout_s", args.timeout_s.map(Value::from)),
        ("auto_approve", args.auto_approve.map(Value::from)),
        ("base", args.base.map(Value::from)),
        ("in_place", args.in_place.then_some(Value::Bool(true))),
        (
            "touches",
            (!args.touches.is_empty()).then(|| Value::from(args.touches.clone())),
        ),
        ("key", args.key.map(Value::from)),
        ("budget", args.budget.value()),
    ] {
        if let Some(value) = value {
            task[key] = value;
        }
    }
    Ok(json!({"tasks": [task]}))
}

/// `path` as the server should read it: absolute (the server has another working directory).
fn absolute(path: &PathBuf) -> Result<String, Failure> {
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

fn call_tool(config: &Config, tool: &str, arguments: &Value) -> Exit {
    let mut endpoint = endpoint(config)?;
    // In a sandbox the socket is the task's identity; elsewhere its token is.
    if endpoint.socket().is_none()
        && let Some(task_id) = std::env::var_os(TASK_VARIABLE)
    {
        endpoint.token = task_token(config, &task_id.to_string_lossy())?;
    }
    let url = format!("{}/tasks/{tool}", endpoint.base);
    let answer = call(&endpoint, "POST", &url, Some(&arguments.to_string()), WAIT)?;
    println!("{}", answer["text"].as_str().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// Set in a task agent's environment: there `drydock task` speaks with the task's own token
/// (which shows and completes that task only), never drydock's local one.
const TASK_VARIABLE: &str = "DRYDOCK_TASK_ID";

/// The token of task `task_id`'s agent, from the task's files in the data directory.
fn task_token(config: &Config, task_id: &str) -> Result<String, Failure> {
    let plain = !task_id.is_empty()
        && task_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Err(Failure::Usage(format!(
            "{TASK_VARIABLE}={task_id:?} is not a task's id"
        )));
    }
    let file = config.data_dir.join("tasks").join(task_id).join("token");
    match std::fs::read_to_string(&file) {
        Ok(token) => Ok(token.trim().to_string()),
        Err(e) => Err(Failure::Runtime(format!(
            "inside task {task_id} ({TASK_VARIABLE}) drydock task speaks with the task's token, and {} cannot be read: {e}",
            file.display()
        ))),
    }
}

/// Moves the SQLite queue of this data directory into the PostgreSQL queue at `to`.
fn migrate(config: &Config, to: &str) -> Exit {
    if let Some(server) = LocalEndpoint::read(&config.data_dir)
        && nix::sys::signal::kill(nix::unistd::Pid::from_raw(server.pid as i32), None).is_ok()
    {
        return Err(Failure::Runtime(format!(
            "a drydock server (pid {}) runs on {}: stop it first, so no task changes while the queue moves",
            server.pid,
            config.data_dir.display()
        )));
    }
    if !to.starts_with("postgres://") && !to.starts_with("postgresql://") {
        return Err(Failure::Usage(format!(
            "--to: {to:?} is not a postgres:// URL"
        )));
    }
    let runtime = |e: &dyn std::fmt::Display| Failure::Runtime(e.to_string());
    let from = SqliteStore::open(&local_queue(&config.data_dir)).map_err(|e| runtime(&e))?;
    let target = PgStore::open(to).map_err(|e| runtime(&e))?;
    let moved = migrate::migrate(&from, &target).map_err(|e| runtime(&e))?;
    let states: Vec<String> = moved
        .by_state
        .iter()
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    println!(
        "moved {} task(s) ({}) and the queue's settings to {}\n{} is kept, marked as moved\nnow set `[tasks] store = \"{}\"` (or DRYDOCK_TASKS_STORE) in drydock's config",
        moved.tasks,
        match states.is_empty() {
            true => "none".to_string(),
            false => states.join(", "),
        },
        moved.to,
        from.path().display(),
        moved.to,
    );
    Ok(ExitCode::SUCCESS)
}
