//! A shared task queue (`[tasks] store = "postgres://…"`): whether it can be reached, opened
//! as `drydock serve` opens it (the queue's own connection code and its call deadline;
//! drydock's schema made or brought up to date as the server would).

use crate::tasks::store::{LazyStore, StoreLocation};

use super::Found;

pub(super) async fn found(url: &str) -> Found {
    let location = StoreLocation::Postgres(url.to_string());
    let shown = location.display();
    match LazyStore::new(location).get().await {
        Ok(_) => Found::Ok {
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
