//! The queue as the rest of drydock calls it: every call is async, runs the store's short
//! synchronous transaction on a blocking thread (never on one of the runtime's workers), and
//! answers within [`CALL_DEADLINE`]: a database that stopped answering costs a caller a few
//! seconds and a clear error, and never stalls the tools, sessions and streams that do not
//! touch the queue. At most [`IN_FLIGHT`] calls wait on the database at once; past that a
//! call fails at its deadline without taking a thread.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Queue, StoreError, StoreLocation};

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

    pub fn get(&self) -> BoxFuture<'_, Result<&TaskStore, StoreError>> {
        async move {
            let opened = self.open().await;
            if let Err(error) = &opened {
                note(&self.health, Err(error));
            }
            opened
        }
        .boxed()
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
    /// deadline whatever the database does. This is the one way to the store: `work` calls
    /// the [`Queue`] methods it needs, on values it owns.
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
                tokio::spawn(async move { store.call(|q| q.list(None)).await })
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
        while store.call(|q| q.list(None)).await.is_err() {
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
        let error = store.call(|q| q.get("nothing")).await.unwrap_err();
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
