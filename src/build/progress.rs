//! Where a long-running tool reports what it is doing.

/// Receives human-readable steps ("compiled 12 of ?", "tests: 3 passed in unittests src/lib.rs").
pub trait Progress: Send + Sync {
    fn report(&self, message: &str);
}

/// For callers that do not listen.
pub struct Silent;

impl Progress for Silent {
    fn report(&self, _message: &str) {}
}

/// Logs each step at info level (used by `drydock call`).
pub struct Logged;

impl Progress for Logged {
    fn report(&self, message: &str) {
        tracing::info!("{message}");
    }
}
