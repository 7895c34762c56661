//! Background loops that outlive their own bugs: a loop that panics is logged and started
//! again (after a pause that grows while it keeps panicking), so one bad input never leaves a
//! long-running drydock without its monitor, heartbeat or watchers.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The pause before the first restart; it doubles with each panic in a row, up to [`MOST`].
const FIRST: Duration = Duration::from_millis(100);
const MOST: Duration = Duration::from_secs(10);
/// A loop that ran this long before it panicked starts again after [`FIRST`].
const HEALTHY: Duration = Duration::from_secs(60);

/// Runs the loop `start` makes, on a task of its own, until it returns or `stop` is
/// cancelled; a panic of it is logged as `name`'s and the loop is started anew.
pub async fn supervised<F, Fut>(name: &str, stop: &CancellationToken, start: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut pause = FIRST;
    loop {
        let started = tokio::time::Instant::now();
        let mut run = tokio::spawn(start());
        let ended = tokio::select! {
            ended = &mut run => ended,
            () = stop.cancelled() => {
                run.abort();
                return;
            }
        };
        let Err(error) = ended else { return };
        if !error.is_panic() {
            return;
        }
        tracing::error!(
            "{name} panicked ({}); it starts again in {pause:?}",
            panic_message(error.into_panic())
        );
        if started.elapsed() >= HEALTHY {
            pause = FIRST;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stop.cancelled() => return,
        }
        pause = (pause * 2).min(MOST);
    }
}

/// Spawns [`supervised`] on a task of its own.
pub fn spawn_supervised<F, Fut>(name: &'static str, stop: CancellationToken, start: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move { supervised(name, &stop, start).await });
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => message.to_string(),
            Err(_) => "no message".to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_loop_that_panics_is_started_again_until_it_returns() {
        let starts = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let counted = starts.clone();
        let run = supervised("test loop", &stop, move || {
            let starts = counted.clone();
            async move {
                if starts.fetch_add(1, Ordering::SeqCst) < 2 {
                    panic!("injected");
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the loop returned on its third start");
        assert_eq!(starts.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_stop_ends_a_running_loop_and_a_restart_that_waits() {
        let stop = CancellationToken::new();
        let never_ends = supervised("endless", &stop, std::future::pending::<()>);
        let stopping = stop.clone();
        tokio::spawn(async move { stopping.cancel() });
        tokio::time::timeout(Duration::from_secs(10), never_ends)
            .await
            .expect("stopped");

        let stop = CancellationToken::new();
        let starts = Arc::new(AtomicUsize::new(0));
        let counted = starts.clone();
        let panicking = supervised("panicking", &stop, move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { panic!("always") }
        });
        let (stopping, seen) = (stop.clone(), starts.clone());
        tokio::spawn(async move {
            while seen.load(Ordering::SeqCst) < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            stopping.cancel();
        });
        tokio::time::timeout(Duration::from_secs(10), panicking)
            .await
            .expect("stopped while it paused between restarts");
        assert!(starts.load(Ordering::SeqCst) >= 2);
    }

    #[test]
    fn a_panic_says_its_message() {
        assert_eq!(panic_message(Box::new("static")), "static");
        assert_eq!(panic_message(Box::new(String::from("owned"))), "owned");
        assert_eq!(panic_message(Box::new(7)), "no message");
    }
}
