//! The time the shared queue's leases are written and read on: the database's clock, so that
//! hosts whose own clocks disagree still agree on whose lease ran out. A test moves it
//! forward to let a lease run out without waiting for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::millis::millis;

/// The database's `now()`, plus however far a test moved it on (nothing, in drydock).
#[derive(Debug, Clone, Default)]
pub struct LeaseClock {
    ahead_ms: Arc<AtomicU64>,
}

impl LeaseClock {
    /// Moves the clock of every store sharing it `by` further on.
    pub fn advance(&self, by: Duration) {
        self.ahead_ms.fetch_add(millis(by), Ordering::Relaxed);
    }

    /// How far ahead of the database's `now()` it is, in seconds: the argument of the
    /// `make_interval(secs => ...)` added to `now()` wherever a lease is written or read.
    pub(super) fn ahead_s(&self) -> f64 {
        self.ahead_ms.load(Ordering::Relaxed) as f64 / 1000.0
    }
}
