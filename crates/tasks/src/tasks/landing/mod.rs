//! The landing queue: a done task's result reaches the branch it started from only through
//! the project's checks on the merged tree (the branch's tip plus the result). A red or
//! conflicting result goes back to its agent as a new attempt, with the failure as its
//! context, up to `[tasks] land_attempts`; then it waits for a person.
//!
//! - `record`: what is kept with the task (its state in the queue, every attempt sent back);
//! - `candidate`: the merged commit of a result onto a tip, or the conflicting hunks;
//! - `failure`: a check's failure as an agent reads it;
//! - `lander`: the queue itself, and `task_merge`'s tested merge;
//! - `batch`: several results of a branch tested at once, and split when red.

mod batch;
mod candidate;
mod failure;
mod lander;
mod record;

pub use candidate::Candidate;
pub use failure::detail;
pub(super) use lander::{Lander, Starter};
pub use record::{Failure, Landing, LandingState, SentBack};
