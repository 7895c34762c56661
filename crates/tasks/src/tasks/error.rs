//! How a call on the task queue fails: a refusal of what was asked, or the queue, an agent
//! or the store failing.

use super::store::StoreError;
use crate::agents::AgentError;

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue did not answer in time, with what the caller can do about it.
    #[error("{0}")]
    NotAnswering(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotAllowed(String),
    #[error(transparent)]
    Agent(#[from] AgentError),
}
