//! Tasks for agents: a persistent queue of work that drydock runs coding agents on, a few at
//! a time, each in a tmux session of its own, with the agent's own signal of how it ended.
//!
//! - [`state`]: a task's states and the only legal transitions between them;
//! - [`store`]: the queue in an SQLite file in drydock's data directory, with migrations;
//! - [`service`]: the operations the tools and the CLI call;
//! - [`runner`]: starting agents on tasks, watching them, cleaning up, adopting after a
//!   restart;
//! - [`isolate`] and [`worktree`]: where a task's agent works: a git worktree and branch of
//!   its own, or the project itself (one task at a time there);
//! - [`review`] and [`merge`]: a finished task's branch as a result to review (its diff and
//!   the project's checks), merged or discarded, and conflicts seen before a merge;
//! - [`tokens`]: the MCP tokens of tasks' agents, limited to their own task and directory.

mod isolate;
pub mod isolation;
pub mod merge;
pub mod reports;
pub mod requests;
mod review;
mod runner;
mod service;
pub mod state;
pub mod store;
pub mod tokens;
pub mod worktree;

pub use runner::session_of;
pub use service::{TaskError, Tasks};
pub use state::{IllegalTransition, Outcome, TaskState, Transition};
pub use store::{NewTask, QueueMode, QueueSettings, Record, StoreError, Task, TaskStore};
pub use tokens::{TaskScope, TaskTokens};
