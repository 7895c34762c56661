//! Calls on the same project run one after another (cargo would block on its lock anyway);
//! calls on different projects run in parallel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::call::Progress;

#[derive(Default)]
struct Slot {
    lock: Arc<AsyncMutex<()>>,
    /// Calls holding or waiting for `lock`.
    queued: usize,
}

#[derive(Default, Clone)]
pub(super) struct ProjectQueue {
    slots: Arc<Mutex<HashMap<PathBuf, Slot>>>,
}

/// Held while a call runs; the next call on the project starts when it is dropped.
pub(super) struct Turn {
    _guard: OwnedMutexGuard<()>,
    _ticket: Ticket,
}

/// Counts a call as queued from the moment it asks until it is done (or gives up waiting).
struct Ticket {
    queue: ProjectQueue,
    key: PathBuf,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut slots = self.queue.slots.lock().expect("queue poisoned");
        if let Some(slot) = slots.get_mut(&self.key) {
            slot.queued -= 1;
            if slot.queued == 0 {
                slots.remove(&self.key);
            }
        }
    }
}

impl ProjectQueue {
    /// Wait for this project's turn, reporting the queue position; `None` if cancelled while waiting.
    pub(super) async fn wait_turn(
        &self,
        key: &Path,
        progress: &dyn Progress,
        cancel: &CancellationToken,
    ) -> Option<Turn> {
        let (lock, ahead) = {
            let mut slots = self.slots.lock().expect("queue poisoned");
            let slot = slots.entry(key.to_path_buf()).or_default();
            slot.queued += 1;
            (slot.lock.clone(), slot.queued - 1)
        };
        let ticket = Ticket {
            queue: self.clone(),
            key: key.to_path_buf(),
        };
        if ahead > 0 {
            progress.report(&format!(
                "queued: {ahead} call(s) ahead on {}",
                key.display()
            ));
        }
        let guard = tokio::select! {
            guard = lock.lock_owned() => guard,
            _ = cancel.cancelled() => return None,
        };
        Some(Turn {
            _guard: guard,
            _ticket: ticket,
        })
    }

    /// Calls holding or waiting for the project.
    #[cfg(test)]
    pub(super) fn queued(&self, key: &Path) -> usize {
        let slots = self.slots.lock().expect("queue poisoned");
        slots.get(key).map_or(0, |s| s.queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Silent;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    struct Recorder(Mutex<Vec<String>>);
    impl Progress for Recorder {
        fn report(&self, message: &str) {
            self.0.lock().unwrap().push(message.to_string());
        }
    }

    #[tokio::test]
    async fn same_project_runs_one_at_a_time_and_reports_position() {
        let queue = ProjectQueue::default();
        let key = PathBuf::from("/p");
        let running = Arc::new(AtomicUsize::new(0));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let first = queue
            .wait_turn(&key, &Silent, &CancellationToken::new())
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let (queue, key, running, max_seen) = (
                queue.clone(),
                key.clone(),
                running.clone(),
                max_seen.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let recorder = Recorder(Mutex::new(Vec::new()));
                let _turn = queue
                    .wait_turn(&key, &recorder, &CancellationToken::new())
                    .await
                    .unwrap();
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                max_seen.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                recorder.0.into_inner().unwrap()
            }));
        }
        while queue.queued(&key) < 4 {
            tokio::task::yield_now().await;
        }
        drop(first);
        let mut reports = Vec::new();
        for t in tasks {
            reports.extend(t.await.unwrap());
        }
        assert_eq!(max_seen.load(Ordering::SeqCst), 1);
        assert!(reports.iter().all(|r| r.starts_with("queued: ")));
        assert_eq!(reports.len(), 3);
        assert_eq!(queue.queued(&key), 0);
    }

    #[tokio::test]
    async fn different_projects_do_not_wait_and_cancel_leaves_the_queue() {
        let queue = ProjectQueue::default();
        let never = CancellationToken::new();
        let _a = queue
            .wait_turn(Path::new("/a"), &Silent, &never)
            .await
            .unwrap();
        let _b = queue
            .wait_turn(Path::new("/b"), &Silent, &never)
            .await
            .unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(
            queue
                .wait_turn(Path::new("/a"), &Silent, &cancel)
                .await
                .is_none()
        );
        assert_eq!(queue.queued(Path::new("/a")), 1);
    }
}
