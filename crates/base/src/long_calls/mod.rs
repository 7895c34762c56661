//! Tool calls that outlive their request: the handles of the MCP tasks extension
//! (`io.modelcontextprotocol/tasks`). A call that is not done within a short window becomes
//! a task the client polls; drydock keeps it in its own file, so a client that reconnects
//! finds its result within the task's time to live, and a restart says how a call it
//! interrupted ended instead of forgetting it.

mod store;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use futures::FutureExt;
use futures::future::BoxFuture;
use nix::fcntl::{Flock, FlockArg};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::catalog::ToolName;
use crate::events::{EventKind, Events};
use crate::millis::{millis, unix_millis};
use store::CallStore;
pub use store::StoreError;

/// How long an expired call's id still says "expired" rather than "unknown".
const TOMBSTONE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The poll interval a task suggests to its client.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Progress reaches the event feed at most this often per call.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Whether a call of `tool` may become a task: the build tools and the waits that can
/// take minutes. The others answer within a request's patience.
pub fn may_become_task(tool: ToolName) -> bool {
    matches!(
        tool,
        ToolName::Compile
            | ToolName::TypeCheck
            | ToolName::Lint
            | ToolName::Test
            | ToolName::Run
            | ToolName::DocsIndex
            | ToolName::AgentWait
            | ToolName::TerminalWait
    )
}

/// Who may see a task: the credential it was started under (the person's, or one task
/// agent's token) and the client's name, so a client that reconnects, or another session of
/// it, finds its tasks and no other client does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub scope: String,
    pub client: String,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The tool returned this `CallToolResult` (an `isError` one too).
    Completed(Map<String, Value>),
    /// The call failed with this JSON-RPC error.
    Failed(Map<String, Value>),
    Cancelled,
}

#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Working,
    /// Working, and waiting for the client's answers to these requests (by key); only ever
    /// in memory, while its call waits.
    InputRequired(Map<String, Value>),
    Ended(Ending),
    /// Ended, and its outcome dropped after its time to live.
    Expired,
}

/// One call that became a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub owner: Owner,
    pub tool: String,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub ttl_ms: u64,
    pub state: State,
    /// Its latest progress while it works; how it ended once it did.
    pub message: Option<String>,
}

impl Record {
    pub fn expires_ms(&self) -> u64 {
        self.created_ms + self.ttl_ms
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LongCallError {
    #[error("no task `{id}`: drydock has not started a task with this id")]
    Unknown { id: String },
    #[error(
        "task `{id}` is not this client's: only the client that started it, under the same token, may read or cancel it"
    )]
    NotYours { id: String },
    #[error(
        "task `{id}` expired at {at}: drydock keeps a task's result for {ttl_s} s after it starts"
    )]
    Expired { id: String, at: String, ttl_s: u64 },
    #[error(
        "task `{id}` runs in another drydock on the same data directory: cancel it through that one"
    )]
    Elsewhere { id: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one call in flight shows while it works: its feed id, its latest progress, and what
/// it asks its client.
#[derive(Default)]
pub struct CallWatch {
    call_id: OnceLock<u64>,
    progress: Mutex<Progress>,
    input: Mutex<Input>,
    answered: tokio::sync::Notify,
}

/// The requests a call made of its client that wait for an answer, and the answers so far.
#[derive(Default)]
struct Input {
    asked: Map<String, Value>,
    answers: Map<String, Value>,
}

#[derive(Default)]
struct Progress {
    message: Option<String>,
    published: Option<std::time::Instant>,
}

impl CallWatch {
    pub fn set_call_id(&self, id: u64) {
        let _ = self.call_id.set(id);
    }

    pub fn call_id(&self) -> Option<u64> {
        self.call_id.get().copied()
    }

    pub fn report(&self, message: String) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .message = Some(message);
    }

    /// Asks the client, through its task, for `requests` (each a server-to-client request
    /// under a key of its own) and waits until every one is answered; the answers by key.
    pub fn ask(&self, requests: Map<String, Value>) -> BoxFuture<'_, Map<String, Value>> {
        async move {
            self.inputs().asked.extend(requests);
            loop {
                let answered = self.answered.notified();
                {
                    let mut input = self.inputs();
                    if input.asked.is_empty() {
                        return std::mem::take(&mut input.answers);
                    }
                }
                answered.await;
            }
        }
        .boxed()
    }

    /// Takes the client's answers to the requests asked; an answer to no request is ignored.
    fn answer(&self, responses: Map<String, Value>) {
        let mut input = self.inputs();
        for (key, answer) in responses {
            if input.asked.remove(&key).is_some() {
                input.answers.insert(key, answer);
            }
        }
        drop(input);
        self.answered.notify_waiters();
    }

    fn asked(&self) -> Map<String, Value> {
        self.inputs().asked.clone()
    }

    fn inputs(&self) -> std::sync::MutexGuard<'_, Input> {
        self.input.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn latest(&self) -> Option<String> {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .message
            .clone()
    }

    /// The latest message when it was not yet published and the last was long enough ago.
    fn to_publish(&self, last_sent: &mut Option<String>) -> Option<String> {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let due = progress
            .published
            .is_none_or(|at| at.elapsed() >= PROGRESS_EVERY);
        if !due || progress.message == *last_sent {
            return None;
        }
        progress.published = Some(std::time::Instant::now());
        last_sent.clone_from(&progress.message);
        progress.message.clone()
    }
}

struct Live {
    record: Record,
    cancel: CancellationToken,
    watch: Arc<CallWatch>,
}

/// The calls that became tasks: those this drydock runs, in memory, and every one in the
/// file.
pub struct LongCalls {
    store: CallStore,
    /// This drydock's name in the file; `_alive` holds its lock while it runs.
    instance: String,
    _alive: Flock<File>,
    ttl: Duration,
    after: Duration,
    live: Mutex<HashMap<String, Live>>,
    /// Tasks that ended here lately: reading one needs no trip to the file.
    ended: Mutex<Recent>,
    events: Arc<Events>,
}

/// At most [`RECENT`] records, the oldest dropped first.
#[derive(Default)]
struct Recent {
    records: HashMap<String, Record>,
    order: std::collections::VecDeque<String>,
}

const RECENT: usize = 256;

impl Recent {
    fn keep(&mut self, record: Record) {
        if self.order.len() == RECENT
            && let Some(oldest) = self.order.pop_front()
        {
            self.records.remove(&oldest);
        }
        self.order.push_back(record.id.clone());
        self.records.insert(record.id.clone(), record);
    }
}

impl LongCalls {
    /// Opens the file in `dir`. The calls that a drydock which is no longer running left
    /// working are failed, with why.
    pub fn open(
        dir: &Path,
        ttl: Duration,
        after: Duration,
        events: Arc<Events>,
    ) -> Result<LongCalls, StoreError> {
        let path = dir.join("long-calls.sqlite3");
        let store = CallStore::open(&path)?;
        let instances = dir.join("long-calls");
        let instance = crate::private::random_hex(8);
        let alive = lock(&instances, &instance, FlockArg::LockExclusiveNonblock)
            .map_err(|error| StoreError::new(&path, error.to_string()))?;
        let calls = LongCalls {
            store,
            instance,
            _alive: alive,
            ttl,
            after,
            live: Mutex::default(),
            ended: Mutex::default(),
            events,
        };
        calls.fail_orphans(&instances)?;
        let now = unix_millis(SystemTime::now());
        calls.store.prune(now, TOMBSTONE)?;
        Ok(calls)
    }

    /// How long a call runs before it becomes a task.
    pub fn after(&self) -> Duration {
        self.after
    }

    fn fail_orphans(&self, instances: &Path) -> Result<(), StoreError> {
        let now = unix_millis(SystemTime::now());
        for instance in self.store.working_instances()? {
            // A drydock that still runs holds its lock: its calls are its own.
            let Ok(_stopped) = lock(instances, &instance, FlockArg::LockExclusiveNonblock) else {
                continue;
            };
            let message = "drydock stopped while this call ran; it was not finished";
            let error = json!({"code": -32603, "message": message}).to_string();
            let failed = self.store.fail_instance(&instance, message, &error, now)?;
            if failed > 0 {
                tracing::warn!("{failed} MCP task(s) were running when drydock stopped: failed");
            }
            let _ = std::fs::remove_file(instances.join(format!("{instance}.lock")));
        }
        Ok(())
    }

    /// Makes the call in flight a task of `owner`'s: recorded, cancelled by `cancel`.
    pub fn begin<'a>(
        self: &'a Arc<Self>,
        owner: Owner,
        tool: &'a str,
        cancel: CancellationToken,
        watch: Arc<CallWatch>,
    ) -> BoxFuture<'a, Result<Record, StoreError>> {
        async move {
            let now = unix_millis(SystemTime::now());
            let record = Record {
                id: crate::private::random_hex(16),
                owner,
                tool: tool.to_string(),
                created_ms: now,
                updated_ms: now,
                ttl_ms: millis(self.ttl),
                state: State::Working,
                message: None,
            };
            let this = self.clone();
            let written = record.clone();
            blocking(move || this.store.insert(&written, &this.instance)).await?;
            if let Some(call_id) = watch.call_id() {
                self.events.publish(EventKind::ToolCallTask {
                    call_id,
                    task_id: record.id.clone(),
                    message: None,
                });
            }
            self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(
                record.id.clone(),
                Live {
                    record: record.clone(),
                    cancel,
                    watch: watch.clone(),
                },
            );
            self.watch_progress(record.id.clone(), watch);
            Ok(record)
        }
        .boxed()
    }

    /// Publishes the progress of live task `id` on the event feed until it ends.
    fn watch_progress(self: &Arc<Self>, id: String, watch: Arc<CallWatch>) {
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut sent = None;
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                let Some(calls) = this.upgrade() else { return };
                if !calls.is_live(&id) {
                    return;
                }
                if let (Some(call_id), Some(message)) =
                    (watch.call_id(), watch.to_publish(&mut sent))
                {
                    calls.events.publish(EventKind::ToolCallTask {
                        call_id,
                        task_id: id.clone(),
                        message: Some(message),
                    });
                }
            }
        });
    }

    fn is_live(&self, id: &str) -> bool {
        self.of_live(id, |_| ()).is_some()
    }

    /// What `part` takes of live task `id`, when it is live here.
    fn of_live<T>(&self, id: &str, part: impl FnOnce(&Live) -> T) -> Option<T> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .map(part)
    }

    /// Records how task `id` ended (nothing when a cancel already ended it).
    pub fn end<'a>(self: &'a Arc<Self>, id: &'a str, ending: Ending) -> BoxFuture<'a, ()> {
        async move {
            let record = {
                let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
                let Some(call) = live.get(id) else {
                    return;
                };
                let now = unix_millis(SystemTime::now());
                let took = Duration::from_millis(now.saturating_sub(call.record.created_ms));
                let message = match &ending {
                    Ending::Completed(_) => format!("done after {} s as a task", took.as_secs()),
                    Ending::Failed(error) => error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("failed")
                        .to_string(),
                    Ending::Cancelled => "cancelled".to_string(),
                };
                let record = Record {
                    state: State::Ended(ending),
                    message: Some(message),
                    updated_ms: now,
                    ..call.record.clone()
                };
                // Kept among the ended before it leaves the live ones: a reader finds it in one.
                self.recent().keep(record.clone());
                live.remove(id);
                record
            };
            let this = self.clone();
            if let Err(error) = blocking(move || this.store.end(&record)).await {
                tracing::warn!("task {id}: its end is not kept: {error}");
            }
        }
        .boxed()
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Task `id` as `owner` may see it: live ones with their latest progress.
    pub fn get<'a>(
        self: &'a Arc<Self>,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Record, LongCallError>> {
        async move {
            if let Some(record) = self.live_record(id) {
                return self.owned(record, owner);
            }
            let recent = self.recent().records.get(id).cloned();
            let record = match recent {
                Some(record) => record,
                None => {
                    let this = self.clone();
                    let key = id.to_string();
                    match blocking(move || this.store.get(&key)).await? {
                        Some(record) => record,
                        None => return Err(LongCallError::Unknown { id: id.to_string() }),
                    }
                }
            };
            let record = self.owned(record, owner)?;
            if unix_millis(SystemTime::now()) > record.expires_ms()
                || record.state == State::Expired
            {
                return Err(LongCallError::Expired {
                    id: record.id.clone(),
                    at: iso(record.expires_ms()),
                    ttl_s: record.ttl_ms / 1000,
                });
            }
            Ok(record)
        }
        .boxed()
    }

    fn live_record(&self, id: &str) -> Option<Record> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let call = live.get(id)?;
        let asked = call.watch.asked();
        Some(Record {
            message: call.watch.latest(),
            state: match asked.is_empty() {
                true => State::Working,
                false => State::InputRequired(asked),
            },
            ..call.record.clone()
        })
    }

    fn owned(&self, record: Record, owner: &Owner) -> Result<Record, LongCallError> {
        if record.owner == *owner {
            Ok(record)
        } else {
            Err(LongCallError::NotYours { id: record.id })
        }
    }

    /// Gives task `id` of `owner` its client's answers to what it asked (answers to nothing it
    /// asked are ignored).
    pub fn answer<'a>(
        self: &'a Arc<Self>,
        id: &'a str,
        owner: &'a Owner,
        responses: Map<String, Value>,
    ) -> BoxFuture<'a, Result<(), LongCallError>> {
        async move {
            self.get(id, owner).await?;
            if let Some(watch) = self.of_live(id, |live| live.watch.clone()) {
                watch.answer(responses);
            }
            Ok(())
        }
        .boxed()
    }

    /// Cancels task `id` of `owner`: its call is cancelled (its process tree stopped) and the
    /// task ends cancelled. A task that already ended stays as it ended.
    pub fn cancel<'a>(
        self: &'a Arc<Self>,
        id: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<(), LongCallError>> {
        async move {
            let record = self.get(id, owner).await?;
            if !matches!(record.state, State::Working | State::InputRequired(_)) {
                return Ok(());
            }
            match self.of_live(id, |live| live.cancel.clone()) {
                Some(cancel) => {
                    cancel.cancel();
                    self.end(id, Ending::Cancelled).await;
                    Ok(())
                }
                // Working in the file but not here: another drydock runs it.
                None => Err(LongCallError::Elsewhere { id: id.to_string() }),
            }
        }
        .boxed()
    }
}

/// A lock file (or its folder) that could not be made or taken.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
struct LockError {
    path: PathBuf,
    source: std::io::Error,
}

/// Takes the lock file of `instance` in `dir`.
fn lock(dir: &Path, instance: &str, how: FlockArg) -> Result<Flock<File>, LockError> {
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LockError { path, source }
    };
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    let path: PathBuf = dir.join(format!("{instance}.lock"));
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(failed(&path))?;
    Flock::lock(file, how).map_err(|(_, errno)| failed(&path)(errno.into()))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(StoreError::new(Path::new("long-calls"), e.to_string())))
}

/// `ms` since the epoch as an ISO 8601 time (UTC).
pub fn iso(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
