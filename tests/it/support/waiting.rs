//! Waiting for a condition rather than for a time: each wait polls its condition until it
//! holds or its deadline passes.

use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use serde_json::json;

use super::mcp_client::call_ok;

/// Poll `check` every 100 ms, blocking the thread, until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}

/// Poll `check` every 50 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

/// Reads with `read` every 200 ms until a reading satisfies `done` (Ok with it) or `limit`
/// passes (Err with the last reading, for the failure to show).
pub async fn until_read<T, F: Future<Output = T>>(
    limit: Duration,
    mut read: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> Result<T, T> {
    let deadline = Instant::now() + limit;
    loop {
        let reading = read().await;
        if done(&reading) {
            return Ok(reading);
        }
        if Instant::now() >= deadline {
            return Err(reading);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Reads the async `check` every 200 ms until it holds or `limit` passes.
pub async fn until_true<F: Future<Output = bool>>(
    limit: Duration,
    check: impl FnMut() -> F,
) -> bool {
    until_read(limit, check, |holds| *holds).await.is_ok()
}

/// Waits (terminal_wait, up to `limit`) until the screen of terminal `session` matches the
/// regex `pattern`; a panic with the screen's last state if it never does.
pub async fn until_screen_shows(
    client: &Peer<RoleClient>,
    session: &str,
    pattern: &str,
    limit: Duration,
) {
    let waited = call_ok(
        client,
        "terminal_wait",
        json!({"session": session, "pattern": pattern, "max_wait_ms": limit.as_millis() as u64}),
    )
    .await;
    assert_eq!(
        (&waited["completed"], &waited["method"]),
        (&json!(true), &json!("pattern")),
        "{session} never showed {pattern:?}: {waited:#}"
    );
}
