//! What the task tools take.

use schemars::JsonSchema;
use serde::Deserialize;

use super::merge::Strategy;
use super::state::{Outcome, TaskState};
use super::store::QueueMode;
use crate::bounded::{Bounded, SignedBounded};

/// A task's priority: higher starts first.
pub type Priority = SignedBounded<-1_000_000, 1_000_000>;
/// How long a task may run, in seconds: a week at most.
pub type TimeoutS = Bounded<1, 604_800>;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    /// The tasks to queue, in order.
    pub tasks: Vec<NewTaskRequest>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTaskRequest {
    /// A short name ("fix the flaky test in parser.rs").
    pub title: String,
    /// What the agent should do: its prompt (default: the title).
    #[serde(default)]
    pub description: Option<String>,
    /// The project the agent works in: a directory inside the allowed roots. Give it,
    /// repository, or both.
    #[serde(default)]
    pub project_path: Option<String>,
    /// The project's git remote (https, ssh, git or file URL, or user@host:path): a host
    /// without the project clones it (`[tasks] repositories` says which remotes a host may
    /// clone) and the task works in a worktree of that clone. With project_path, it must be
    /// one of that project's remotes, and a host with the project works there.
    #[serde(default)]
    pub repository: Option<String>,
    /// The agent that runs it: claude or codex (default from config, claude).
    #[serde(default)]
    pub agent: Option<String>,
    /// Higher starts first (default 0; -1000000 to 1000000).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// How long it may run before it is stopped and failed, in seconds (default from config,
    /// 1800; at most 604800, a week).
    #[serde(default)]
    pub timeout_s: Option<TimeoutS>,
    /// An approval policy from drydock's config (`[tasks.policies]`): the tools its agent
    /// may use without a person. Without one, every permission prompt waits for a person.
    #[serde(default)]
    pub auto_approve: Option<String>,
    /// The branch or commit the task's worktree starts from (default: the project's HEAD).
    #[serde(default)]
    pub base: Option<String>,
    /// Work in the project's own directory instead of a worktree of its own (one such task
    /// at a time per project). A project that is not a git repository always runs in place.
    #[serde(default)]
    pub in_place: Option<bool>,
    /// The files the task is expected to change: globs below its project ("src/parser/**",
    /// "Cargo.toml"; at most 32). While it waits, task_list says which running task changes
    /// any of them, and with `[tasks] hold_colliding` it starts only once none does.
    #[serde(default)]
    pub touches: Option<Vec<String>>,
    /// A name of your own for this task, unique in the queue (1 to 128 characters): a
    /// task_add retried after a timeout or a lost answer, with the same key and the same
    /// title and description, queues nothing again and returns the task it queued.
    #[serde(default)]
    pub key: Option<String>,
    /// What it may spend, all its attempts together (default from drydock's config, `[tasks]
    /// budget`; more only up to `[tasks] budget_max`). At 80 % the task is marked; at the
    /// budget its agent is stopped and the task fails with the reason `budget`, its work kept:
    /// task_retry with a larger budget goes on from its worktree.
    #[serde(default)]
    pub budget: Option<BudgetRequest>,
}

/// A bound on what a task spends: tokens of every kind together, US dollars by drydock's
/// price table, or both (whichever comes first). A bound left out is the configured one.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    /// Tokens: input, output and cache together (1 or more).
    #[serde(default)]
    pub tokens: Option<i64>,
    /// US dollars (more than 0).
    #[serde(default)]
    pub usd: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    /// The task's id (from task_add or task_list).
    pub task_id: String,
    /// A new budget for all its attempts together (a task stopped at its budget needs a
    /// larger one to go on).
    #[serde(default)]
    pub budget: Option<BudgetRequest>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Only tasks in this state.
    #[serde(default)]
    pub state: Option<TaskState>,
    /// Only tasks of this project (a directory inside the allowed roots).
    #[serde(default)]
    pub project_path: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// The task's id (from task_add or task_list).
    pub task_id: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRequest {
    /// The task you were given (its id is in your task's text).
    pub task_id: String,
    /// done: it is done; deferred: it should wait; wont_do: it should not be done; discard:
    /// throw it away.
    pub outcome: Outcome,
    /// What you did, or why not, in a few sentences.
    pub summary: String,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigureRequest {
    /// manual: tasks wait for task_start; auto: they start as slots free up.
    #[serde(default)]
    pub mode: Option<QueueMode>,
    /// How many tasks run at once (1-1000; to start none by itself, switch to manual mode).
    #[serde(default)]
    pub max_concurrent: Option<Bounded<1, 1000>>,
    /// What the tasks starting in one day (UTC) may spend together: the whole queue's (every
    /// host's, on a team's shared queue), or one project's. Once spent, new starts of the
    /// queue or project wait for the next day, and queue_status says why.
    #[serde(default)]
    pub daily_budget: Option<DailyBudgetRequest>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DailyBudgetRequest {
    /// The project it bounds (a directory inside the allowed roots); without it, the queue.
    #[serde(default)]
    pub project_path: Option<String>,
    /// Tokens: input, output and cache together (1 or more).
    #[serde(default)]
    pub tokens: Option<i64>,
    /// US dollars (more than 0).
    #[serde(default)]
    pub usd: Option<f64>,
    /// true: remove this daily budget.
    #[serde(default)]
    pub off: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearRequest {}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeRequest {
    /// The finished task whose branch to merge.
    pub task_id: String,
    /// The branch to merge into (default: the branch the project has checked out).
    #[serde(default)]
    pub into: Option<String>,
    /// auto (a fast-forward when possible, else a merge commit; the default), fast_forward
    /// (only a fast-forward), merge_commit (always one) or rebase (its commits replayed onto
    /// the branch's tip, no merge commit).
    #[serde(default)]
    pub strategy: Option<Strategy>,
    /// Merge even when its checks failed or the merged tree is red (the merged tree is
    /// tested unless this is set).
    #[serde(default)]
    pub force: bool,
}
