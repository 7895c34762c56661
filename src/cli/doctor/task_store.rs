//! A shared task queue (`[tasks] store = "postgres://…"`): whether it can be reached, opened
//! the way `drydock serve` opens it (the queue's own connection code, its 4 s connect
//! timeout; drydock's schema made or brought up to date as the server would), within a
//! deadline of its own.

use std::time::Duration;

use crate::tasks::store::{self, StoreLocation};

use super::Found;

/// How long the doctor waits for the database: the connect timeout and a migration's call.
const DEADLINE: Duration = Duration::from_secs(8);

pub(super) async fn found(url: &str) -> Found {
    let location = StoreLocation::Postgres(url.to_string());
    let shown = location.display();
    let opening = tokio::task::spawn_blocking(move || store::open(&location).map(|_| ()));
    let opened = match tokio::time::timeout(DEADLINE, opening).await {
        Ok(joined) => joined.unwrap_or_else(|e| Err(panicked(&shown, e))),
        Err(_) => {
            return Found::Missing {
                detail: format!("{shown}: no answer within {} s", DEADLINE.as_secs()),
                fix: FIX.into(),
            };
        }
    };
    match opened {
        Ok(()) => Found::Ok {
            detail: format!("{shown}: reached, drydock's schema up to date"),
        },
        Err(error) => Found::Missing {
            detail: error.to_string(),
            fix: FIX.into(),
        },
    }
}

const FIX: &str = "start the database, or check the URL in [tasks] store (or \
                   DRYDOCK_TASKS_STORE): host, port, user, database; without a shared queue, \
                   leave store out (this machine's SQLite queue)";

fn panicked(shown: &str, error: tokio::task::JoinError) -> store::StoreError {
    store::StoreError::Unavailable {
        path: shown.to_string(),
        message: format!("opening it panicked: {error}"),
    }
}
