//! Every call to the memory's SQLite file, made off the async runtime. A call may wait (for
//! another process's lock, up to SQLite's busy timeout) and so may opening the file; a
//! runtime worker that waits stalls every other tool call, session and stream (a two-core
//! machine has two). A call on a tool's path also has a deadline, past which its caller goes
//! on without the memory: the call itself, on its blocking thread, ends on its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::store::{HistoryStore, HistoryStoreError};

/// The memory's file, opened on first use; a failed opening (a data directory not writable
/// yet, a lock held since before drydock opened it) is tried again at the next use.
pub(super) struct StoreSlot {
    path: PathBuf,
    store: Mutex<Option<Arc<HistoryStore>>>,
}

/// When a caller stops waiting.
#[derive(Clone, Copy)]
pub(super) struct Deadline {
    at: Instant,
    after: Duration,
}

impl Deadline {
    pub(super) fn after(after: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + after,
            after,
        }
    }

    fn passed(&self) -> bool {
        Instant::now() >= self.at
    }
}

impl StoreSlot {
    pub(super) fn new(path: PathBuf) -> Arc<StoreSlot> {
        Arc::new(StoreSlot {
            path,
            store: Mutex::new(None),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The store, opened now if it is not yet and `deadline` has not passed (callers that
    /// waited here behind an opening held up by a lock give up instead of trying again,
    /// one after another). It blocks: call it on a blocking thread.
    pub(super) fn open_blocking(
        &self,
        deadline: Option<Deadline>,
    ) -> Result<Arc<HistoryStore>, HistoryStoreError> {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = &*store {
            return Ok(store.clone());
        }
        if let Some(deadline) = deadline.filter(Deadline::passed) {
            return Err(self.missed(deadline));
        }
        let opened = Arc::new(HistoryStore::open(&self.path)?);
        *store = Some(opened.clone());
        Ok(opened)
    }

    /// Runs `work` on the store on a blocking thread, as long as it takes (for the recorder,
    /// whom no call waits for).
    pub(super) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&HistoryStore) -> Result<T, HistoryStoreError> + Send + 'static,
    ) -> Result<T, HistoryStoreError> {
        self.call(None, work).await
    }

    /// Runs `work` on the store on a blocking thread, for a caller that waits at most
    /// `deadline`: past it the answer is busy, and work that has not started by then (it
    /// waited for the opening, or behind another call) is not done at all.
    pub(super) async fn within<T: Send + 'static>(
        self: &Arc<Self>,
        deadline: Duration,
        work: impl FnOnce(&HistoryStore) -> Result<T, HistoryStoreError> + Send + 'static,
    ) -> Result<T, HistoryStoreError> {
        let deadline = Deadline::after(deadline);
        tokio::time::timeout_at(deadline.at.into(), self.call(Some(deadline), work))
            .await
            .unwrap_or_else(|_| Err(self.missed(deadline)))
    }

    async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        deadline: Option<Deadline>,
        work: impl FnOnce(&HistoryStore) -> Result<T, HistoryStoreError> + Send + 'static,
    ) -> Result<T, HistoryStoreError> {
        let slot = self.clone();
        tokio::task::spawn_blocking(move || {
            let store = slot.open_blocking(deadline)?;
            match deadline.filter(Deadline::passed) {
                Some(deadline) => Err(slot.missed(deadline)),
                None => work(&store),
            }
        })
        .await
        .unwrap_or_else(|e| {
            Err(HistoryStoreError::Sqlite {
                path: self.path.clone(),
                message: format!("the call to it stopped: {e}"),
            })
        })
    }

    fn missed(&self, deadline: Deadline) -> HistoryStoreError {
        busy(
            &self.path,
            format!("it did not answer within {:?}", deadline.after),
        )
    }
}

pub(super) fn busy(path: &Path, message: String) -> HistoryStoreError {
    HistoryStoreError::Busy {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds `path`'s lock the way the worst neighbour does: exclusive locking mode, taken
    /// before drydock opens the file, so drydock can neither open, read nor write it.
    fn locked_out(path: &Path) -> rusqlite::Connection {
        let holder = rusqlite::Connection::open(path).unwrap();
        holder
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA locking_mode = EXCLUSIVE;
                 CREATE TABLE IF NOT EXISTS neighbour (x); BEGIN EXCLUSIVE;
                 INSERT INTO neighbour VALUES (1);",
            )
            .unwrap();
        holder
    }

    /// On a one-thread runtime (anything blocking it would stop the ticker), a call to a
    /// file whose lock is held answers busy at its deadline while the runtime goes on, and
    /// once the lock is gone the next call opens the file and answers.
    #[tokio::test(flavor = "current_thread")]
    async fn a_call_to_a_locked_memory_answers_busy_at_its_deadline_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite3");
        let holder = locked_out(&path);
        let slot = StoreSlot::new(path.clone());

        let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let started = Instant::now();
        let answer = slot
            .within(Duration::from_millis(300), |store| store.sizes())
            .await;
        let took = started.elapsed();
        let error = answer.expect_err("a locked file answered");
        assert!(error.is_busy(), "{error}");
        assert!(error.to_string().contains("is busy"), "{error}");
        // At its deadline, not once SQLite's own wait for the lock (5 s) gave up.
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(5),
            "answered after {took:?}"
        );
        let ticked = ticks.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            ticked >= 15,
            "the runtime ticked {ticked} times in {took:?}"
        );
        ticker.abort();

        drop(holder);
        // The opening that was late may still be waiting out SQLite's busy timeout; the
        // recorder's way (no deadline) waits for it.
        let sizes = slot.run(|store| store.sizes()).await.unwrap();
        assert_eq!(sizes, (0, 0, 0, 0));
        let sizes = slot
            .within(Duration::from_millis(300), |store| store.sizes())
            .await
            .unwrap();
        assert_eq!(sizes, (0, 0, 0, 0));
    }

    /// Reads have their own connection: another connection's write lock (`BEGIN
    /// EXCLUSIVE`, the usual neighbour) holds up writes, never reads.
    #[tokio::test(flavor = "current_thread")]
    async fn a_neighbours_write_lock_holds_up_writes_not_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite3");
        let slot = StoreSlot::new(path.clone());
        slot.run(|store| store.sizes()).await.unwrap();
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE;").unwrap();

        let read = slot
            .within(Duration::from_millis(300), |store| store.sizes())
            .await;
        // Held up, the read would have answered busy at its deadline.
        assert_eq!(read.unwrap(), (0, 0, 0, 0));
        let written = slot
            .within(Duration::from_millis(300), |store| store.forget(None))
            .await;
        assert!(written.is_err_and(|e| e.is_busy()));
    }
}
