//! A reading of something outside drydock (a tmux server's panes, every process's `/proc`
//! entry) that callers arriving together share: one reading at a time, and a caller takes
//! the last one when it began after the caller asked (so it is as fresh as one of its own),
//! else makes the next. Fifty clients listing at once cost one reading, not fifty, and none
//! gets a result older than its question.

use std::future::Future;
use std::time::Instant;

use tokio::sync::Mutex;

pub struct SharedReading<T> {
    last: Mutex<Option<(Instant, T)>>,
}

impl<T: Clone> Default for SharedReading<T> {
    fn default() -> Self {
        SharedReading {
            last: Mutex::new(None),
        }
    }
}

impl<T: Clone> SharedReading<T> {
    /// The last reading if it began after this call did, else `read()`'s, kept for the
    /// callers waiting behind this one.
    pub async fn get<F, Fut>(&self, read: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let asked = Instant::now();
        let mut last = self.last.lock().await;
        if let Some((began, value)) = &*last
            && *began >= asked
        {
            return value.clone();
        }
        let began = Instant::now();
        let value = read().await;
        *last = Some((began, value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn callers_that_wait_share_a_reading_begun_after_they_asked_and_no_older_one() {
        let reading = Arc::new(SharedReading::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let read = |reads: Arc<AtomicUsize>| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            reads.fetch_add(1, Ordering::SeqCst) + 1
        };
        // The first caller reads; the nine that ask meanwhile asked before its reading began
        // or after: none of them takes it, and they share the one reading made next.
        let first = {
            let (reading, reads) = (reading.clone(), reads.clone());
            tokio::spawn(async move { reading.get(|| read(reads)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiting: Vec<_> = (0..9)
            .map(|_| {
                let (reading, reads) = (reading.clone(), reads.clone());
                tokio::spawn(async move { reading.get(|| read(reads)).await })
            })
            .collect();
        assert_eq!(first.await.unwrap(), 1);
        for caller in waiting {
            assert_eq!(
                caller.await.unwrap(),
                2,
                "one reading begun after they asked"
            );
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        // A caller alone later never gets the old reading.
        assert_eq!(reading.get(|| read(reads.clone())).await, 3);
    }
}
