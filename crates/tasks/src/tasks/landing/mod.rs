//! The landing queue: a done task's result reaches the branch it started from only through
//! the project's checks on the merged tree (the branch's tip plus the result). A red or
//! conflicting result goes back to its agent as a new attempt, with the failure as its
//! context, up to `[tasks] land_attempts`; then it waits for a person.
//!
//! - `record`: what is kept with the task (its state in the queue, every attempt sent back);
//! - `failure`: a check's failure as an agent reads it;
//!
//! The queue itself, and `task_merge`'s tested merge, are the lander's (`tasks::lander`).

mod failure;
mod record;

pub use failure::detail;
pub use record::{Failure, Landing, LandingState, SentBack};
