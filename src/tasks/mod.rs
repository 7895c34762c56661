//! Tasks for agents: a persistent queue of work that drydock runs coding agents on, a few at
//! a time, each in a tmux session of its own, with the agent's own signal of how it ended.
//!
//! - [`state`]: a task's states and the only legal transitions between them;
//! - [`store`]: the queue in an SQLite file in drydock's data directory, with migrations;
//! - [`service`]: the operations the tools and the CLI call;
//! - [`runner`]: starting agents on tasks, watching them, cleaning up, adopting after a
//!   restart;
//! - [`tokens`]: the MCP tokens of tasks' agents, limited to their own task.

pub mod reports;
pub mod requests;
mod runner;
mod service;
pub mod state;
pub mod store;
pub mod tokens;

pub use runner::session_of;
pub use service::{TaskError, Tasks};
pub use state::{IllegalTransition, Outcome, TaskState, Transition};
pub use store::{NewTask, QueueMode, QueueSettings, Record, StoreError, Task, TaskStore};
pub use tokens::{TaskScope, TaskTokens};
