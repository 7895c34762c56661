//! Moving a machine's queue (its SQLite file) to a shared one (PostgreSQL) without losing a
//! task: every task and the queue's settings copied in one transaction of the target, ids
//! kept, checked by count; the target must be empty, and no task may be running (its agent
//! works on this machine under the old queue). The source is then marked as moved, so no
//! drydock keeps writing to it.

use serde::Serialize;

use super::{PgStore, Queue, SqliteStore, StoreError};
use crate::tasks::state::TaskState;

/// What a migration moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Migrated {
    pub tasks: usize,
    /// Tasks by state, as moved.
    pub by_state: Vec<(String, usize)>,
    pub to: String,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "{} task(s) run on this machine ({}): wait for them to end or cancel them, then migrate",
        .0.len(), .0.join(", ")
    )]
    Running(Vec<String>),
    #[error("{to} holds {tasks} task(s) already: migrate into an empty queue only")]
    TargetNotEmpty { to: String, tasks: usize },
}

/// Copies `from` into `to` and marks `from` as moved there.
pub fn migrate(from: &SqliteStore, to: &PgStore) -> Result<Migrated, MigrateError> {
    let tasks = from.list(None)?;
    let running: Vec<String> = tasks
        .iter()
        .filter(|t| t.state == TaskState::Running)
        .map(|t| t.id.clone())
        .collect();
    if !running.is_empty() {
        return Err(MigrateError::Running(running));
    }
    let settings = from.settings()?;
    if let Err(present) = to.import(tasks.clone(), settings)? {
        return Err(MigrateError::TargetNotEmpty {
            to: to.location(),
            tasks: present,
        });
    }
    to.set_daily_budgets(&from.daily_budgets()?)?;
    from.mark_moved(&to.location())?;
    let by_state = TaskState::ALL
        .iter()
        .map(|state| {
            let n = tasks.iter().filter(|t| t.state == *state).count();
            (state.name().to_string(), n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    Ok(Migrated {
        tasks: tasks.len(),
        by_state,
        to: to.location(),
    })
}
