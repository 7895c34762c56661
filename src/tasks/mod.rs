//! Tasks for agents: a persistent queue of work for coding agents (issue 12).
//!
//! - [`state`]: a task's states and the only legal transitions between them;
//! - [`store`]: the queue in an SQLite file in drydock's data directory, with migrations.

pub mod state;
pub mod store;

pub use state::{IllegalTransition, Outcome, TaskState, Transition};
pub use store::{NewTask, QueueMode, QueueSettings, Record, StoreError, Task, TaskStore};
