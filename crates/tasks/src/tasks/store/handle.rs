//! The queue as the rest of drydock calls it: every call is async, runs the store's short
//! synchronous transaction on a blocking thread (never on one of the runtime's workers), and
//! answers within [`CALL_DEADLINE`]: a database that stopped answering costs a caller a few
//! seconds and a clear error, and never stalls the tools, sessions and streams that do not
//! touch the queue. At most [`IN_FLIGHT`] calls wait on the database at once; past that a
//! call fails at its deadline without taking a thread.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{
    Added, Claimer, Heartbeat, HostEntry, HostStatus, Lease, NewTask, Queue, QueueSettings, Record,
    StoreError, StoreLocation, Task,
};
use crate::tasks::isolation::{Isolation, Review};
use crate::tasks::landing::Landing;
use crate::tasks::spending::{DailyBudgets, Spending};
use crate::tasks::state::{TaskState, Transition};

/// How long a queue call may take before its caller is told the database is not answering.
pub(super) const CALL_DEADLINE: Duration = Duration::from_secs(5);
/// How many calls may wait on the database at once.
const IN_FLIGHT: usize = 16;

/// The queue at a location, opened on first use (on a blocking thread, within the deadline);
/// an opening that failed is tried again by the next use, and one that is slow goes on while
/// its callers are told the database is not answering, so the next use may find it done.
pub struct LazyStore {
    location: StoreLocation,
    store: OnceLock<TaskStore>,
    opening: tokio::sync::Mutex<Option<Opening>>,
    health: Arc<watch::Sender<Health>>,
}

/// An opening of the store under way on a blocking thread.
type Opening = JoinHandle<Result<Box<dyn Queue>, StoreError>>;

/// Whether the queue's database answers, as the last call found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Answering,
    /// Why not: the last call's error.
    Failing(String),
}

impl LazyStore {
    pub fn new(location: StoreLocation) -> LazyStore {
        LazyStore {
            location,
            store: OnceLock::new(),
            opening: tokio::sync::Mutex::new(None),
            health: Arc::new(watch::channel(Health::Answering).0),
        }
    }

    /// Follows the queue's health: a new value whenever a call finds it changed.
    pub fn health(&self) -> watch::Receiver<Health> {
        self.health.subscribe()
    }

    pub async fn get(&self) -> Result<&TaskStore, StoreError> {
        let opened = self.open().await;
        if let Err(error) = &opened {
            note(&self.health, Err(error));
        }
        opened
    }

    async fn open(&self) -> Result<&TaskStore, StoreError> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let deadline = Instant::now() + CALL_DEADLINE;
        let timed_out = || not_answering(&self.location.display(), CALL_DEADLINE);
        let mut opening = tokio::time::timeout_at(deadline, self.opening.lock())
            .await
            .map_err(|_| timed_out())?;
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let handle = opening.get_or_insert_with(|| {
            let location = self.location.clone();
            tokio::task::spawn_blocking(move || super::open(&location))
        });
        let joined = tokio::time::timeout_at(deadline, handle)
            .await
            .map_err(|_| timed_out())?;
        *opening = None;
        let backend = joined.map_err(|panic| StoreError::Open {
            path: self.location.display(),
            message: format!("opening it failed: {panic}"),
        })??;
        let mut store = TaskStore::new(Arc::from(backend));
        store.health = self.health.clone();
        Ok(self.store.get_or_init(|| store))
    }
}

/// A queue, whichever store holds it, behind async calls with a deadline.
#[derive(Clone)]
pub struct TaskStore {
    backend: Arc<dyn Queue>,
    shown: String,
    deadline: Duration,
    slots: Arc<Semaphore>,
    health: Arc<watch::Sender<Health>>,
}

impl TaskStore {
    pub fn new(backend: Arc<dyn Queue>) -> TaskStore {
        TaskStore::with_deadline(backend, CALL_DEADLINE)
    }

    pub fn with_deadline(backend: Arc<dyn Queue>, deadline: Duration) -> TaskStore {
        TaskStore {
            shown: backend.location(),
            backend,
            deadline,
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
            health: Arc::new(watch::channel(Health::Answering).0),
        }
    }

    /// Runs `work` on the backend on a blocking thread; the caller's answer comes within the
    /// deadline whatever the database does.
    pub async fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn Queue) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let result = self.call_once(work).await;
        note(&self.health, result.as_ref().map(|_| ()));
        result
    }

    async fn call_once<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn Queue) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let deadline = Instant::now() + self.deadline;
        let timed_out = || not_answering(&self.shown, self.deadline);
        let slot = tokio::time::timeout_at(deadline, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| timed_out())?
            .expect("the semaphore is never closed");
        let backend = self.backend.clone();
        let running = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work(backend.as_ref())
        });
        match tokio::time::timeout_at(deadline, running).await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(StoreError::Sql {
                path: self.shown.clone(),
                message: format!("the call failed: {panic}"),
            }),
            Err(_) => Err(timed_out()),
        }
    }

    pub async fn add_all(&self, new: Vec<NewTask>) -> Result<Vec<Added>, StoreError> {
        self.call(move |q| q.add_all(new)).await
    }

    pub async fn get(&self, id: &str) -> Result<Task, StoreError> {
        let id = id.to_string();
        self.call(move |q| q.get(&id)).await
    }

    pub async fn list(&self, state: Option<TaskState>) -> Result<Vec<Task>, StoreError> {
        self.call(move |q| q.list(state)).await
    }

    pub async fn queued_in_order(&self) -> Result<Vec<Task>, StoreError> {
        self.call(|q| q.queued_in_order()).await
    }

    pub async fn set_isolation(&self, id: &str, isolation: &Isolation) -> Result<(), StoreError> {
        let (id, isolation) = (id.to_string(), isolation.clone());
        self.call(move |q| q.set_isolation(&id, &isolation)).await
    }

    pub async fn set_review(&self, id: &str, review: &Review) -> Result<(), StoreError> {
        let (id, review) = (id.to_string(), review.clone());
        self.call(move |q| q.set_review(&id, &review)).await
    }

    pub async fn set_landing(&self, id: &str, landing: &Landing) -> Result<(), StoreError> {
        let (id, landing) = (id.to_string(), landing.clone());
        self.call(move |q| q.set_landing(&id, &landing)).await
    }

    pub async fn clear_review(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.call(move |q| q.clear_review(&id)).await
    }

    pub async fn transition(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
        lease: Option<&Lease>,
    ) -> Result<Task, StoreError> {
        let (id, lease) = (id.to_string(), lease.cloned());
        self.call(move |q| q.transition(&id, transition, record, lease.as_ref()))
            .await
    }

    pub async fn claim(
        &self,
        candidates: &[String],
        claimer: &Claimer,
    ) -> Result<Option<Task>, StoreError> {
        let (candidates, claimer) = (candidates.to_vec(), claimer.clone());
        self.call(move |q| q.claim(&candidates, &claimer)).await
    }

    pub async fn relocate(
        &self,
        id: &str,
        lease: &Lease,
        project_path: &str,
    ) -> Result<Task, StoreError> {
        let (id, lease, path) = (id.to_string(), lease.clone(), project_path.to_string());
        self.call(move |q| q.relocate(&id, &lease, &path)).await
    }

    pub async fn set_attention(
        &self,
        id: &str,
        why: Option<&str>,
        lease: Option<&Lease>,
    ) -> Result<bool, StoreError> {
        let (id, why, lease) = (id.to_string(), why.map(str::to_string), lease.cloned());
        self.call(move |q| q.set_attention(&id, why.as_deref(), lease.as_ref()))
            .await
    }

    pub async fn set_usage(&self, id: &str, usage: &Spending) -> Result<(), StoreError> {
        let (id, usage) = (id.to_string(), usage.clone());
        self.call(move |q| q.set_usage(&id, &usage)).await
    }

    pub async fn set_transcript(&self, id: &str, transcript: &str) -> Result<(), StoreError> {
        let (id, transcript) = (id.to_string(), transcript.to_string());
        self.call(move |q| q.set_transcript(&id, &transcript)).await
    }

    pub async fn count(&self, state: TaskState) -> Result<u32, StoreError> {
        self.call(move |q| q.count(state)).await
    }

    pub async fn daily_budgets(&self) -> Result<DailyBudgets, StoreError> {
        self.call(|q| q.daily_budgets()).await
    }

    pub async fn set_daily_budgets(&self, budgets: &DailyBudgets) -> Result<(), StoreError> {
        let budgets = budgets.clone();
        self.call(move |q| q.set_daily_budgets(&budgets)).await
    }

    pub async fn settings(&self) -> Result<QueueSettings, StoreError> {
        self.call(|q| q.settings()).await
    }

    pub async fn set_settings(&self, settings: QueueSettings) -> Result<(), StoreError> {
        self.call(move |q| q.set_settings(settings)).await
    }

    pub async fn clear_queue(&self) -> Result<Vec<Task>, StoreError> {
        self.call(|q| q.clear_queue()).await
    }

    pub async fn register_host(
        &self,
        entry: &HostEntry,
        session: &str,
        lease_ms: u64,
    ) -> Result<(), StoreError> {
        let (entry, session) = (entry.clone(), session.to_string());
        self.call(move |q| q.register_host(&entry, &session, lease_ms))
            .await
    }

    pub async fn heartbeat(
        &self,
        name: &str,
        session: &str,
        lease_ms: u64,
    ) -> Result<Heartbeat, StoreError> {
        let (name, session) = (name.to_string(), session.to_string());
        self.call(move |q| q.heartbeat(&name, &session, lease_ms))
            .await
    }

    pub async fn rescue_lost(&self, requeue: bool) -> Result<Vec<Task>, StoreError> {
        self.call(move |q| q.rescue_lost(requeue)).await
    }

    pub async fn hosts(&self) -> Result<Vec<HostStatus>, StoreError> {
        self.call(|q| q.hosts()).await
    }

    pub async fn issue_viewer_code(&self, host: &str) -> Result<Option<String>, StoreError> {
        let host = host.to_string();
        self.call(move |q| q.issue_viewer_code(&host)).await
    }

    pub async fn take_viewer_code(&self, host: &str, code: &str) -> Result<bool, StoreError> {
        let (host, code) = (host.to_string(), code.to_string());
        self.call(move |q| q.take_viewer_code(&host, &code)).await
    }
}

/// Records what a call found: the database answered (a refusal is an answer too), or could
/// not be reached.
fn note(health: &watch::Sender<Health>, outcome: Result<(), &StoreError>) {
    let now = match outcome {
        Err(error) if error.is_unavailable() => Health::Failing(error.to_string()),
        _ => Health::Answering,
    };
    health.send_if_modified(|was| {
        let changed = *was != now;
        *was = now;
        changed
    });
}

fn not_answering(shown: &str, waited: Duration) -> StoreError {
    StoreError::NotAnswering {
        path: shown.to_string(),
        waited_s: waited.as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::tasks::store::SqliteStore;

    fn store_at(path: &Path, deadline: Duration) -> TaskStore {
        TaskStore::with_deadline(Arc::new(SqliteStore::open(path).unwrap()), deadline)
    }

    /// Another process holds the queue's file (an exclusive lock): every call, many at once,
    /// answers at its deadline while the runtime's two workers go on serving; the health
    /// says why, and says the queue answers again once the lock is gone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_on_a_locked_queue_answer_at_their_deadline_and_block_no_worker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = store_at(&path, Duration::from_millis(300));
        let mut health = store.health.subscribe();
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

        let calls: Vec<_> = (0..2 * IN_FLIGHT)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.list(None).await })
            })
            .collect();
        let ticks = tokio::spawn(async {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        tokio::time::timeout(Duration::from_secs(3), ticks)
            .await
            .expect("the runtime serves other work while the calls wait")
            .unwrap();
        for call in calls {
            let error = call.await.unwrap().unwrap_err();
            assert!(matches!(error, StoreError::NotAnswering { .. }), "{error}");
            assert!(error.is_unavailable());
            assert!(error.to_string().contains("is not answering"), "{error}");
        }
        health.changed().await.unwrap();
        assert!(
            matches!(&*health.borrow_and_update(), Health::Failing(why) if why.contains("not answering"))
        );

        holder.execute_batch("COMMIT").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.list(None).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the queue answers once the lock is gone"
            );
        }
        assert_eq!(*health.borrow(), Health::Answering);
    }

    #[tokio::test]
    async fn a_refusal_is_an_answer_and_an_opening_failure_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_at(&dir.path().join("tasks.sqlite3"), CALL_DEADLINE);
        let error = store.get("nothing").await.unwrap_err();
        assert!(matches!(error, StoreError::UnknownTask { .. }), "{error}");
        assert_eq!(*store.health.borrow(), Health::Answering);

        let blocker = dir.path().join("a file");
        std::fs::write(&blocker, "").unwrap();
        let lazy = LazyStore::new(StoreLocation::Sqlite(blocker.join("tasks.sqlite3")));
        let error = lazy.get().await.err().unwrap();
        assert!(matches!(error, StoreError::Open { .. }), "{error}");
        assert_eq!(
            *lazy.health().borrow(),
            Health::Answering,
            "a wrong path is no outage"
        );
    }
}
