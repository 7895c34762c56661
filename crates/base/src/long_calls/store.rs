//! The file that keeps long calls across reconnects and restarts: one row per call that
//! became a task, written when it begins and when it ends (progress stays in memory).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Ending, Owner, Record, State};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS long_calls (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    client TEXT NOT NULL,
    tool TEXT NOT NULL,
    instance TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    -- working, completed, failed, cancelled
    status TEXT NOT NULL,
    message TEXT,
    -- the CallToolResult of a completed call; the JSON-RPC error of a failed one; NULL once
    -- the call expired (its row stays a while so that its id says so)
    outcome TEXT
);
";

#[derive(Debug, thiserror::Error)]
#[error("the file of long calls {path}: {message}")]
pub struct StoreError {
    path: PathBuf,
    message: String,
}

impl StoreError {
    pub(super) fn new(path: &Path, message: String) -> StoreError {
        StoreError {
            path: path.to_path_buf(),
            message,
        }
    }
}

pub(super) struct CallStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl CallStore {
    pub(super) fn open(path: &Path) -> Result<CallStore, StoreError> {
        let failed = |message: String| StoreError {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        }
        crate::private::make_private_database(path)
            .map_err(|e| failed(format!("cannot make it private: {e}")))?;
        let connection = Connection::open(path).map_err(|e| failed(e.to_string()))?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .and_then(|()| connection.pragma_update(None, "journal_mode", "WAL"))
            .and_then(|()| connection.execute_batch(SCHEMA))
            .map_err(|e| failed(e.to_string()))?;
        Ok(CallStore {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        })
    }

    fn error(&self, e: rusqlite::Error) -> StoreError {
        StoreError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn insert(&self, record: &Record, instance: &str) -> Result<(), StoreError> {
        let (status, outcome) = columns(&record.state);
        self.connection()
            .execute(
                "INSERT INTO long_calls (id, scope, client, tool, instance, created_ms, updated_ms,
                     ttl_ms, status, message, outcome)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    record.id,
                    record.owner.scope,
                    record.owner.client,
                    record.tool,
                    instance,
                    record.created_ms as i64,
                    record.updated_ms as i64,
                    record.ttl_ms as i64,
                    status,
                    record.message,
                    outcome,
                ],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Writes the end of `record`, unless the row already ended (a cancel came first).
    pub(super) fn end(&self, record: &Record) -> Result<(), StoreError> {
        let (status, outcome) = columns(&record.state);
        self.connection()
            .execute(
                "UPDATE long_calls SET status = ?2, message = ?3, outcome = ?4, updated_ms = ?5
                 WHERE id = ?1 AND status = 'working'",
                params![
                    record.id,
                    status,
                    record.message,
                    outcome,
                    record.updated_ms as i64
                ],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    pub(super) fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        self.connection()
            .query_row(
                "SELECT id, scope, client, tool, created_ms, updated_ms, ttl_ms, status, message,
                     outcome
                 FROM long_calls WHERE id = ?1",
                [id],
                |row| {
                    let status: String = row.get(7)?;
                    let outcome: Option<String> = row.get(9)?;
                    Ok(Record {
                        id: row.get(0)?,
                        owner: Owner {
                            scope: row.get(1)?,
                            client: row.get(2)?,
                        },
                        tool: row.get(3)?,
                        created_ms: row.get::<_, i64>(4)? as u64,
                        updated_ms: row.get::<_, i64>(5)? as u64,
                        ttl_ms: row.get::<_, i64>(6)? as u64,
                        state: state_of(&status, outcome.as_deref()),
                        message: row.get(8)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// The drydock instances that have calls still working.
    pub(super) fn working_instances(&self) -> Result<Vec<String>, StoreError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT DISTINCT instance FROM long_calls WHERE status = 'working'")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>());
        rows.map_err(|e| self.error(e))
    }

    /// Fails every call `instance` was running: it stopped before they ended.
    pub(super) fn fail_instance(
        &self,
        instance: &str,
        message: &str,
        error: &str,
        now_ms: u64,
    ) -> Result<usize, StoreError> {
        self.connection()
            .execute(
                "UPDATE long_calls SET status = 'failed', message = ?2, outcome = ?3, updated_ms = ?4
                 WHERE instance = ?1 AND status = 'working'",
                params![instance, message, error, now_ms as i64],
            )
            .map_err(|e| self.error(e))
    }

    /// Forgets the outcome of calls past their time to live, and the rows of calls that
    /// expired more than `tombstone` ago.
    pub(super) fn prune(&self, now_ms: u64, tombstone: Duration) -> Result<(), StoreError> {
        let connection = self.connection();
        connection
            .execute(
                "UPDATE long_calls SET outcome = NULL
                 WHERE outcome IS NOT NULL AND status != 'working' AND created_ms + ttl_ms < ?1",
                [now_ms as i64],
            )
            .and_then(|_| {
                connection.execute(
                    "DELETE FROM long_calls WHERE status != 'working' AND created_ms + ttl_ms + ?2 < ?1",
                    params![now_ms as i64, tombstone.as_millis() as i64],
                )
            })
            .map(drop)
            .map_err(|e| self.error(e))
    }
}

fn columns(state: &State) -> (&'static str, Option<String>) {
    match state {
        State::Working | State::InputRequired(_) => ("working", None),
        State::Ended(Ending::Completed(result)) => {
            ("completed", serde_json::to_string(result).ok())
        }
        State::Ended(Ending::Failed(error)) => ("failed", serde_json::to_string(error).ok()),
        State::Ended(Ending::Cancelled) => ("cancelled", None),
        State::Expired => ("expired", None),
    }
}

fn state_of(status: &str, outcome: Option<&str>) -> State {
    let object = || {
        outcome
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
            .and_then(|value| match value {
                serde_json::Value::Object(object) => Some(object),
                _ => None,
            })
    };
    match (status, object()) {
        ("working", _) => State::Working,
        ("cancelled", _) => State::Ended(Ending::Cancelled),
        ("completed", Some(result)) => State::Ended(Ending::Completed(result)),
        ("failed", Some(error)) => State::Ended(Ending::Failed(error)),
        _ => State::Expired,
    }
}
