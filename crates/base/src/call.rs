//! What every long operation takes from its caller, whatever the capability (a build, a
//! docs ingest, a terminal wait): where its progress goes and what cancels it. Cancelling
//! the call's token is the one way to stop a running operation.

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Receives an operation's steps ("compiled 12 of ?", "files 40/120 · chunks 300/~900").
pub trait Progress: Send + Sync {
    fn report(&self, message: &str);

    /// A step with a count of work done out of an expected total; listeners that only
    /// read text get the message.
    fn report_count(&self, done: u64, total: u64, message: &str) {
        let _ = (done, total);
        self.report(message);
    }
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

/// One call's link to its caller.
pub struct Call<'a> {
    pub progress: &'a dyn Progress,
    pub cancel: CancellationToken,
    /// Who called: the MCP client's name, "task ID" for a task's agent, "drydock call".
    pub client: Option<String>,
    /// A task's agent called, under its token: what the call runs is the task's code, and
    /// runs confined.
    pub for_task: bool,
}

impl<'a> Call<'a> {
    pub fn new(progress: &'a dyn Progress, cancel: CancellationToken) -> Self {
        Self {
            progress,
            cancel,
            client: None,
            for_task: false,
        }
    }

    /// A call nobody listens to, cancelled by `cancel`.
    pub fn silent(cancel: CancellationToken) -> Call<'static> {
        Call::new(&Silent, cancel)
    }

    /// The same call, made for a task's agent or not.
    pub fn for_task(mut self, for_task: bool) -> Self {
        self.for_task = for_task;
        self
    }

    /// The same call, made by `client`.
    pub fn by(mut self, client: Option<String>) -> Self {
        self.client = client;
        self
    }

    pub fn report(&self, message: &str) {
        self.progress.report(message);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the caller cancels.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }
}
