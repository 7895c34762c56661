//! The task queue's storage: an SQLite file in drydock's data directory (one machine), or a
//! PostgreSQL database a team's hosts share. Both bring their schema up to date by numbered
//! migrations and check every change of state against the legal transitions inside one
//! transaction; both claim tasks for a host under the caps in one transaction too.
//!
//! - [`sqlite`]: the embedded default;
//! - [`postgres`]: the shared queue: hosts with leases, claims with `FOR UPDATE SKIP LOCKED`,
//!   writes fenced by the claim's epoch, wake-ups by `LISTEN`/`NOTIFY`;
//! - [`lease_clock`]: the time its leases run on (the database's, which a test moves on);
//! - [`pg_link`]: the PostgreSQL connection, on a thread of its own, reconnecting;
//! - [`handle`]: the queue as drydock calls it: async, off the runtime's threads, each call
//!   answered within a deadline;
//! - [`migrate`]: a machine's queue moved to a shared one.

mod handle;
pub mod lease_clock;
pub mod migrate;
mod pg_link;
pub mod postgres;
pub mod sqlite;

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::isolation::{Isolation, Review, Worktree};
use super::landing::Landing;
use super::state::{IllegalTransition, TaskState, Transition};
use crate::config::{Config, QueueStore};
use crate::workspace::ProjectPlace;

pub use self::handle::{Health, LazyStore, TaskStore};
pub use self::lease_clock::LeaseClock;
pub use self::pg_link::listen;
pub use self::postgres::PgStore;
pub use self::sqlite::SqliteStore;

/// Where a queue lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    /// A `postgres://` URL.
    Postgres(String),
}

/// The database's file name in the data directory.
const DATABASE: &str = "tasks.sqlite3";

/// The SQLite file of a machine's own queue in `data_dir`.
pub fn local_queue(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join(DATABASE)
}

impl StoreLocation {
    /// Where the queue of `config` lives.
    pub fn configured(config: &Config) -> StoreLocation {
        match &config.tasks.store {
            QueueStore::Sqlite => StoreLocation::Sqlite(local_queue(&config.data_dir)),
            QueueStore::Postgres(url) => StoreLocation::Postgres(url.clone()),
        }
    }

    /// The location as a person reads it: a PostgreSQL URL without its password.
    pub fn display(&self) -> String {
        match self {
            StoreLocation::Sqlite(path) => path.display().to_string(),
            StoreLocation::Postgres(url) => postgres::redacted(url),
        }
    }

    /// Whether a team's hosts share the queue here.
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreLocation::Postgres(_))
    }

    /// Calls `wake` whenever another host changes the queue here, until `stop` is set: on a
    /// shared store that can tell (PostgreSQL's `LISTEN`); false where nothing will call it
    /// and a host polls.
    pub fn follow(
        &self,
        wake: impl Fn() + Send + 'static,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<bool, StoreError> {
        match self {
            StoreLocation::Sqlite(_) => Ok(false),
            StoreLocation::Postgres(url) => {
                listen(url, &self.display(), wake, stop)?;
                Ok(true)
            }
        }
    }
}

/// Opens (or creates) the queue at `location`, its schema brought up to date. Blocking: the
/// server opens it through [`LazyStore`].
pub fn open(location: &StoreLocation) -> Result<Box<dyn Queue>, StoreError> {
    Ok(match location {
        StoreLocation::Sqlite(path) => Box::new(SqliteStore::open(path)?),
        StoreLocation::Postgres(url) => Box::new(PgStore::open(url)?),
    })
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the task database {path}: {message}")]
    Open { path: String, message: String },
    #[error(
        "{path} is not a task database drydock can read ({message}); move it away to start a new one"
    )]
    Corrupt { path: String, message: String },
    #[error("the task database {path} is locked by another process (another drydock?)")]
    Locked { path: String },
    #[error("{path} was written by a newer drydock (schema {found}, this one knows {known})")]
    TooNew {
        path: String,
        found: usize,
        known: usize,
    },
    #[error(
        "the task queue in {path} moved to {to}: set `[tasks] store = \"{to}\"` (or DRYDOCK_TASKS_STORE) in drydock's config"
    )]
    Moved { path: String, to: String },
    #[error("the task database {path} cannot be reached: {message}")]
    Unavailable { path: String, message: String },
    /// A call got no answer within its deadline; what it asked may still happen once the
    /// database answers again.
    #[error(
        "the task queue at {path} is not answering: no answer within {waited_s} s (a change this call asked for may still be made when it answers again)"
    )]
    NotAnswering { path: String, waited_s: f64 },
    #[error("no task {id:?}")]
    UnknownTask { id: String },
    /// A new task's key names a task of other work: nothing of that call was added.
    #[error(
        "key {key:?} is task {id}'s already ({title:?}), other work: give this task another key (nothing was queued)"
    )]
    KeyTaken {
        key: String,
        id: String,
        title: String,
    },
    #[error("task {id}: {source}")]
    Illegal {
        id: String,
        source: IllegalTransition,
    },
    /// A write for a claim that is no longer the task's: its host lost the lease, another
    /// took it, or it ended meanwhile.
    #[error("task {id} no longer runs on host {host} under claim {epoch} ({now})")]
    Fenced {
        id: String,
        host: String,
        epoch: i64,
        now: String,
    },
    #[error("the task database {path}: {message}")]
    Sql { path: String, message: String },
}

impl StoreError {
    /// The database could not be reached: the same call may succeed later.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable { .. } | StoreError::NotAnswering { .. }
        )
    }
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// The prompt the agent gets.
    pub description: String,
    /// Its project here (on a shared queue: on the host that claimed it last).
    pub project_path: String,
    /// Its project as any host finds it: below the allowed root of that name.
    pub place: Option<ProjectPlace>,
    /// The git remote its project is cloned from, on a host without a copy of its own.
    pub repository: Option<String>,
    pub agent_kind: String,
    pub state: TaskState,
    /// Higher starts first.
    pub priority: i64,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    /// The terminal session it runs (or ran) in.
    pub session: Option<String>,
    pub attempts: u32,
    /// The agent's summary of how it ended.
    pub summary: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    pub exit_code: Option<i32>,
    /// The session's final screen and scrollback, ANSI stripped and capped.
    pub transcript: Option<String>,
    /// How long it may run, in seconds (None: the configured default).
    pub timeout_s: Option<u64>,
    /// The config's approval policy its agent's permission prompts are decided by, if any.
    pub policy: Option<String>,
    /// Why the running task needs a person (its agent waits at a prompt).
    pub attention: Option<String>,
    /// The branch or commit its worktree starts from (None: the project's HEAD).
    pub base: Option<String>,
    /// It runs in the project's own directory, not in a worktree of its own.
    pub in_place: bool,
    /// Where its agent works, once it started.
    pub isolation: Option<Isolation>,
    /// Its branch's change, once its agent stopped.
    pub review: Option<Review>,
    /// Its result's way to its branch through the landing queue.
    pub landing: Option<Landing>,
    /// The files it is expected to change (globs below its project), as its author said:
    /// what a running task must not be changing for it to start (`[tasks] hold_colliding`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches: Vec<String>,
    /// The host that claimed it last (the one it runs on while running).
    pub host: Option<String>,
    /// How many times it was claimed: each claim's writes carry it, so a host that lost the
    /// task can change nothing of the claim that followed.
    pub epoch: i64,
    /// The name its author gave it, unique in the queue: adding a task under a key the queue
    /// holds adds nothing and returns that task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What its agent spent, attempt by attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<super::spending::Spending>,
}

impl Task {
    /// Its worktree and its result, while the result waits to be merged or discarded.
    pub fn open_result(&self) -> Option<(&Worktree, &Review)> {
        match (&self.isolation, &self.review) {
            (Some(Isolation::Worktree(worktree)), Some(review)) if review.disposition.is_open() => {
                Some((worktree, review))
            }
            _ => None,
        }
    }

    /// The directory its agent works in (the project until it has a worktree).
    pub fn work_dir(&self) -> &str {
        match &self.isolation {
            Some(isolation) => isolation.dir(&self.project_path),
            None => &self.project_path,
        }
    }

    /// The claim it runs under, while it runs.
    pub fn lease(&self) -> Option<Lease> {
        match (self.state, &self.host) {
            (TaskState::Running, Some(host)) => Some(Lease {
                host: host.clone(),
                epoch: self.epoch,
            }),
            _ => None,
        }
    }
}

/// What a new task is made of.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub title: String,
    pub description: String,
    pub project_path: String,
    pub place: Option<ProjectPlace>,
    pub repository: Option<String>,
    pub agent_kind: String,
    pub priority: i64,
    pub timeout_s: Option<u64>,
    pub policy: Option<String>,
    pub base: Option<String>,
    pub in_place: bool,
    pub touches: Vec<String>,
    pub key: Option<String>,
    /// What it may spend, all its attempts together.
    pub budget: Option<super::spending::Budget>,
}

impl NewTask {
    /// Its spending as it is queued: nothing spent, its budget.
    fn usage(&self) -> Option<super::spending::Spending> {
        self.budget.map(|budget| super::spending::Spending {
            attempts: Vec::new(),
            budget: Some(budget),
        })
    }

    /// Whether `task` is this same work, as the queue holds it under this one's key.
    fn is_same_work(&self, task: &Task) -> bool {
        task.title == self.title && task.description == self.description
    }
}

/// What adding a task did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// It is queued now.
    Queued(Task),
    /// The queue held a task of the same work under its key: that task, as it is now.
    Known(Task),
}

impl Added {
    pub fn task(&self) -> &Task {
        match self {
            Added::Queued(task) | Added::Known(task) => task,
        }
    }
}

/// What adding `new` does when the queue holds `holder` under its `key` already: nothing
/// for the same work, a refusal for other work.
fn known(new: &NewTask, key: &str, holder: Task) -> Result<Added, StoreError> {
    if new.is_same_work(&holder) {
        return Ok(Added::Known(holder));
    }
    Err(StoreError::KeyTaken {
        key: key.to_string(),
        id: holder.id,
        title: holder.title,
    })
}

/// What a transition records beside the new state.
#[derive(Debug, Clone, Default)]
pub struct Record {
    pub session: Option<String>,
    pub summary: Option<String>,
    pub failure: Option<String>,
    pub exit_code: Option<i32>,
    pub transcript: Option<String>,
}

/// A host's hold on a running task: a write under it changes the task only while the task
/// still runs on that host under that claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub host: String,
    pub epoch: i64,
}

/// Who claims a task, and how many it may run at once.
#[derive(Debug, Clone)]
pub struct Claimer {
    pub host: String,
    /// The host's registration (a superseded or expired one claims nothing).
    pub session: String,
    /// This host's own cap (the queue's cap holds for the whole team too).
    pub cap: Option<u32>,
}

/// manual: tasks start one by one when asked; auto: as slots free up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueMode {
    Manual,
    Auto,
}

impl QueueMode {
    pub fn name(self) -> &'static str {
        match self {
            QueueMode::Manual => "manual",
            QueueMode::Auto => "auto",
        }
    }

    fn parse(name: &str) -> QueueMode {
        match name {
            "auto" => QueueMode::Auto,
            _ => QueueMode::Manual,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct QueueSettings {
    pub mode: QueueMode,
    /// How many tasks run at once, over every host of the queue.
    pub max_concurrent: u32,
}

/// A drydock host as it announces itself to a shared queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostEntry {
    pub name: String,
    /// Its dashboard, for a person (and other hosts' dashboards) to reach its terminals.
    pub url: String,
    /// The directories its projects lie in.
    pub roots: Vec<String>,
    /// The agent kinds it can start.
    pub agents: Vec<String>,
    /// How many tasks it runs at most (None: the queue's cap alone).
    pub cap: Option<u32>,
}

/// A host as the queue sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HostStatus {
    #[serde(flatten)]
    pub entry: HostEntry,
    /// Its lease is current.
    pub up: bool,
    /// Milliseconds since its last heartbeat.
    pub last_seen_ms_ago: u64,
    pub started_at_ms: u64,
    /// The tasks running on it.
    pub running: Vec<String>,
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    Renewed,
    /// Another process registered under this host's name since: this one must stop claiming
    /// and let its tasks go.
    Superseded,
}

/// The queue, whichever store holds it. Every method is one short transaction (or none).
pub trait Queue: Send + Sync {
    /// Where it lives, as a person reads it.
    fn location(&self) -> String;

    /// Stores new queued tasks, all of them or none, in one transaction; each id is 8 hex
    /// digits. A task with a key the queue holds already for the same work (title and
    /// description) is not added again: that task comes back as [`Added::Known`]. A key the
    /// queue holds for other work is refused ([`StoreError::KeyTaken`]).
    fn add_all(&self, new: Vec<NewTask>) -> Result<Vec<Added>, StoreError>;

    /// Stores one new queued task (or finds it by its key): [`Queue::add_all`] of one.
    fn add(&self, new: NewTask) -> Result<Task, StoreError> {
        let mut added = self.add_all(vec![new])?;
        match added.pop() {
            Some(Added::Queued(task) | Added::Known(task)) => Ok(task),
            None => unreachable!("add_all answers each task it is given"),
        }
    }

    fn get(&self, id: &str) -> Result<Task, StoreError>;

    /// Tasks in `state` (all when None), oldest first.
    fn list(&self, state: Option<TaskState>) -> Result<Vec<Task>, StoreError>;

    /// The queued tasks in the order they start: highest priority, then oldest.
    fn queued_in_order(&self) -> Result<Vec<Task>, StoreError>;

    /// Records where task `id`'s agent works.
    fn set_isolation(&self, id: &str, isolation: &Isolation) -> Result<(), StoreError>;

    /// Records the change task `id`'s branch holds, and what became of it.
    fn set_review(&self, id: &str, review: &Review) -> Result<(), StoreError>;

    fn clear_review(&self, id: &str) -> Result<(), StoreError>;

    /// Records what task `id`'s agent spent.
    fn set_usage(&self, id: &str, usage: &super::spending::Spending) -> Result<(), StoreError>;

    /// Records where task `id`'s result is on its way to its branch, and with it the task's
    /// attention (`Landing::attention`), in one statement: a reader never sees a result
    /// that waits for a person without the why.
    fn set_landing(&self, id: &str, landing: &Landing) -> Result<(), StoreError>;

    /// Applies `transition` to task `id` if it is legal from its stored state (and, with a
    /// `lease`, only while the task runs under it), with `record`, in one transaction;
    /// returns the task as stored after it. `Start` is `claim`'s.
    fn transition(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
        lease: Option<&Lease>,
    ) -> Result<Task, StoreError>;

    /// Starts the first of the queued tasks `candidates` (in queue order) on `claimer`'s host,
    /// if the queue's cap and the host's allow one more: running, with the host, a new epoch
    /// and its session. None when none is left or no slot is free. One transaction: two
    /// hosts never take the same task, nor together more than a cap.
    fn claim(&self, candidates: &[String], claimer: &Claimer) -> Result<Option<Task>, StoreError>;

    /// Records where running task `id`'s project is on the host that claimed it (found by
    /// its place), under that claim.
    fn relocate(&self, id: &str, lease: &Lease, project_path: &str) -> Result<Task, StoreError>;

    /// Marks running (or done) task `id` as needing a person (`why`), or not (None). Returns
    /// whether that changed anything.
    fn set_attention(
        &self,
        id: &str,
        why: Option<&str>,
        lease: Option<&Lease>,
    ) -> Result<bool, StoreError>;

    /// Keeps `transcript` as task `id`'s record of its session.
    fn set_transcript(&self, id: &str, transcript: &str) -> Result<(), StoreError>;

    /// How many tasks are in `state`.
    fn count(&self, state: TaskState) -> Result<u32, StoreError>;

    fn settings(&self) -> Result<QueueSettings, StoreError>;

    fn set_settings(&self, settings: QueueSettings) -> Result<(), StoreError>;

    /// What the tasks starting in one day may spend, the queue's and each project's.
    fn daily_budgets(&self) -> Result<super::spending::DailyBudgets, StoreError>;

    fn set_daily_budgets(&self, budgets: &super::spending::DailyBudgets) -> Result<(), StoreError>;

    /// Cancels every queued task (running ones go on); returns the cancelled ones.
    fn clear_queue(&self) -> Result<Vec<Task>, StoreError> {
        let queued = self.list(Some(TaskState::Queued))?;
        let mut cancelled = Vec::new();
        for task in queued {
            match self.transition(&task.id, Transition::Cancel, Record::default(), None) {
                Ok(task) => cancelled.push(task),
                // Claimed by a host meanwhile: it runs.
                Err(StoreError::Illegal { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(cancelled)
    }

    /// Whether hosts share this queue (and so register, renew leases and are rescued).
    fn is_shared(&self) -> bool {
        false
    }

    /// Registers `entry` under a fresh `session` with a lease of `lease_ms`, taking its name
    /// over from an earlier process of the same host.
    fn register_host(
        &self,
        _entry: &HostEntry,
        _session: &str,
        _lease_ms: u64,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// Renews host `name`'s lease for `lease_ms`.
    fn heartbeat(
        &self,
        _name: &str,
        _session: &str,
        _lease_ms: u64,
    ) -> Result<Heartbeat, StoreError> {
        Ok(Heartbeat::Renewed)
    }

    /// The running tasks of hosts whose lease ran out: lost, and queued again when
    /// `requeue`. Returns them as they are now.
    fn rescue_lost(&self, _requeue: bool) -> Result<Vec<Task>, StoreError> {
        Ok(Vec::new())
    }

    /// The hosts sharing this queue, by name.
    fn hosts(&self) -> Result<Vec<HostStatus>, StoreError> {
        Ok(Vec::new())
    }

    /// A one-time code that lets a person who may see this host's dashboard into host
    /// `host`'s, valid for a minute (None: no other host shares this queue).
    fn issue_viewer_code(&self, _host: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    /// Whether `code` was issued for `host` and still valid; it is used up either way.
    fn take_viewer_code(&self, _host: &str, _code: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
}

/// The refusal of a write under `lease` to `task`, which no longer runs under it.
fn fenced(task: &Task, lease: &Lease) -> StoreError {
    let now = match (task.state, &task.host) {
        (TaskState::Running, Some(host)) => {
            format!("it runs on {host} under claim {}", task.epoch)
        }
        (state, _) => format!("it is {state}"),
    };
    StoreError::Fenced {
        id: task.id.clone(),
        host: lease.host.clone(),
        epoch: lease.epoch,
        now,
    }
}

/// The state `transition` takes `task` to, checked the same way by every store: a start is a
/// claim's, a write under `lease` needs the task still running under it, and the transition
/// must be legal from the task's state.
fn next_state(
    task: &Task,
    transition: Transition,
    lease: Option<&Lease>,
) -> Result<TaskState, StoreError> {
    if transition == Transition::Start {
        return Err(illegal_start(&task.id));
    }
    if let Some(lease) = lease
        && task.lease().as_ref() != Some(lease)
    {
        return Err(fenced(task, lease));
    }
    task.state
        .after(transition)
        .map_err(|source| StoreError::Illegal {
            id: task.id.clone(),
            source,
        })
}

/// A task starts by a host's claim, never by a bare transition.
fn illegal_start(id: &str) -> StoreError {
    StoreError::Illegal {
        id: id.to_string(),
        source: IllegalTransition {
            from: "stored",
            what: "started except by a host's claim",
        },
    }
}
