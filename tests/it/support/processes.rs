//! The processes a test's drydock starts, found by the marker in their environment, and
//! signals sent to a child.

use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every process a test's drydock starts carries this variable, with a value of that test's
/// own ([`unique_marker`]), so its processes can be found among those of the tests running
/// beside it.
pub const MARKER_VAR: &str = "DRYDOCK_TEST_MARKER";

/// A value for [`MARKER_VAR`] that no other test of any run on this machine uses.
pub fn unique_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live processes (zombies excluded) whose environment has `MARKER_VAR=marker`.
pub fn marked_processes(marker: &str) -> Vec<u32> {
    processes_with_env(&format!("{MARKER_VAR}={marker}"))
}

pub use crate::proc_env::processes_with_env;

/// True once a `sleep` carrying `marker` runs (the grandchild of `cargo-clean
/// --spawn-grandchild`, or a hung helper's).
pub fn marked_sleep_running(marker: &str) -> bool {
    marked_processes(marker).iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| cmd.starts_with(b"sleep\0"))
    })
}

/// Sends `signal` (`TERM`, `INT`, ...) to `child` and waits up to `limit` for it to exit.
pub fn signal_and_wait(child: &mut Child, signal: &str, limit: Duration) -> Option<ExitStatus> {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}
