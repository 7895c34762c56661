//! The task queue on disk: an SQLite file in drydock's data directory, its schema brought up
//! to date by numbered migrations (`PRAGMA user_version`), every change of state checked
//! against the legal transitions inside one transaction. One machine's queue: its one host
//! claims tasks like a team's hosts do, so the parts that start and watch tasks work the
//! same over either store.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rusqlite::{
    Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior, params,
};
use serde::Serialize;

use super::{
    Added, Claimer, Lease, NewTask, Queue, QueueMode, QueueSettings, Record, StoreError, Task,
    fenced, known, next_state,
};
use crate::millis::unix_millis;
use crate::tasks::isolation::{Isolation, Review};
use crate::tasks::landing::Landing;
use crate::tasks::spending::{DailyBudgets, Spending};
use crate::tasks::state::{TaskState, Transition};

/// The schema, one migration per version: version N is reached by running the first N.
const MIGRATIONS: [&str; 12] = [
    r#"
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    project_path TEXT NOT NULL,
    agent_kind TEXT NOT NULL,
    state TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    started_at_ms INTEGER,
    finished_at_ms INTEGER,
    session TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    summary TEXT,
    failure TEXT,
    exit_code INTEGER,
    transcript TEXT
);
CREATE INDEX tasks_by_state ON tasks (state, priority DESC, created_at_ms);
CREATE TABLE queue_settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mode TEXT NOT NULL,
    max_concurrent INTEGER NOT NULL
);
INSERT INTO queue_settings (id, mode, max_concurrent) VALUES (1, 'manual', 2);
"#,
    // A timeout and an approval policy per task; why a running task needs a person.
    r#"
ALTER TABLE tasks ADD COLUMN timeout_s INTEGER;
ALTER TABLE tasks ADD COLUMN policy TEXT;
ALTER TABLE tasks ADD COLUMN attention TEXT;
"#,
    // Where the agent works (a worktree, or in place) and the result to review, as JSON.
    r#"
ALTER TABLE tasks ADD COLUMN base TEXT;
ALTER TABLE tasks ADD COLUMN in_place INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN isolation TEXT;
ALTER TABLE tasks ADD COLUMN review TEXT;
"#,
    // The host that claimed it and how many claims it had (the store's shape is a team's).
    r#"
ALTER TABLE tasks ADD COLUMN host TEXT;
ALTER TABLE tasks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
"#,
    // Where the queue went when it moved to a shared one (`drydock task migrate`).
    r#"
CREATE TABLE moved_to (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    location TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
"#,
    // Its project as any host names it (root name and path below it), as JSON.
    r#"
ALTER TABLE tasks ADD COLUMN place TEXT;
"#,
    // The git remote a host without the project clones it from.
    r#"
ALTER TABLE tasks ADD COLUMN repository TEXT;
"#,
    // Its result's way to its branch (the landing queue), as JSON.
    r#"
ALTER TABLE tasks ADD COLUMN landing TEXT;
"#,
    // The files it is expected to change (globs), as JSON.
    r#"
ALTER TABLE tasks ADD COLUMN touches TEXT;
"#,
    // The name its author gave it: one task a key.
    r#"
ALTER TABLE tasks ADD COLUMN request_key TEXT;
CREATE UNIQUE INDEX tasks_by_key ON tasks (request_key);
"#,
    // What its agent spent, attempt by attempt, as JSON.
    r#"
ALTER TABLE tasks ADD COLUMN usage TEXT;
"#,
    // What the tasks starting in one day may spend, as JSON.
    r#"
ALTER TABLE queue_settings ADD COLUMN daily_budgets TEXT;
"#,
];
/// How long a call waits for another process holding the file's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_waiting(path, BUSY_TIMEOUT)
    }

    fn open_waiting(path: &Path, busy: Duration) -> Result<SqliteStore, StoreError> {
        let open_error = |message: String| StoreError::Open {
            path: path.display().to_string(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        }
        // The queue holds tasks' prompts, notes and remote URLs: the user's alone.
        crate::private::make_private_database(path)
            .map_err(|e| open_error(format!("cannot make it private: {e}")))?;
        let connection = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        connection
            .busy_timeout(busy)
            .map_err(|e| open_error(e.to_string()))?;
        let store = SqliteStore {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        };
        store.migrate()?;
        if let Some(to) = store.moved_to()? {
            return Err(StoreError::Moved {
                path: store.location(),
                to,
            });
        }
        Ok(store)
    }

    /// Where the queue moved, once it did.
    fn moved_to(&self) -> Result<Option<String>, StoreError> {
        self.lock()
            .query_row("SELECT location FROM moved_to WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Records that the queue moved to `location`: no drydock opens it again.
    pub fn mark_moved(&self, location: &str) -> Result<(), StoreError> {
        let now = unix_millis(SystemTime::now()) as i64;
        self.lock()
            .execute(
                "INSERT INTO moved_to (id, location, at_ms) VALUES (1, ?1, ?2)",
                params![location, now],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut connection = self.lock();
        let found: usize = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.error(e))?;
        if found > MIGRATIONS.len() {
            return Err(StoreError::TooNew {
                path: self.location(),
                found,
                known: MIGRATIONS.len(),
            });
        }
        let transaction = connection.transaction().map_err(|e| self.error(e))?;
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(found) {
            transaction
                .execute_batch(migration)
                .map_err(|e| self.error(e))?;
            transaction
                .pragma_update(None, "user_version", index + 1)
                .map_err(|e| self.error(e))?;
        }
        transaction.commit().map_err(|e| self.error(e))
    }

    fn set_json(&self, id: &str, column: &str, value: &impl Serialize) -> Result<(), StoreError> {
        let json = serde_json::to_string(value).expect("task records serialize");
        let connection = self.lock();
        let changed = connection
            .execute(
                &format!("UPDATE tasks SET {column} = ?2 WHERE id = ?1"),
                params![id, json],
            )
            .map_err(|e| self.error(e))?;
        match changed {
            0 => Err(StoreError::UnknownTask { id: id.to_string() }),
            _ => Ok(()),
        }
    }

    /// Task `id`'s state, read inside `transaction`.
    fn state_in(&self, transaction: &Transaction<'_>, id: &str) -> Result<Task, StoreError> {
        transaction
            .query_row("SELECT * FROM tasks WHERE id = ?1", [id], task_of)
            .optional()
            .map_err(|e| self.error(e))?
            .ok_or_else(|| StoreError::UnknownTask { id: id.to_string() })
    }

    /// Adds `new` inside `transaction`, unless its key names a task already.
    fn add_in(&self, transaction: &Transaction<'_>, new: NewTask) -> Result<Added, StoreError> {
        if let Some(key) = &new.key {
            let holder = transaction
                .query_row("SELECT * FROM tasks WHERE request_key = ?1", [key], task_of)
                .optional()
                .map_err(|e| self.error(e))?;
            if let Some(holder) = holder {
                return known(&new, key, holder);
            }
        }
        let id = loop {
            let id = crate::private::random_hex(4);
            let taken: bool = transaction
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM tasks WHERE id = ?1)",
                    [&id],
                    |r| r.get(0),
                )
                .map_err(|e| self.error(e))?;
            if !taken {
                break id;
            }
        };
        let now = unix_millis(SystemTime::now());
        transaction
            .execute(
                "INSERT INTO tasks (id, title, description, project_path, agent_kind, state,
                    priority, created_at_ms, timeout_s, policy, base, in_place, place,
                    repository, touches, request_key, usage)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                    ?15, ?16)",
                params![
                    id,
                    new.title,
                    new.description,
                    new.project_path,
                    new.agent_kind,
                    new.priority,
                    now as i64,
                    new.timeout_s.map(|s| s as i64),
                    new.policy,
                    new.base,
                    new.in_place,
                    new.place
                        .as_ref()
                        .map(|place| serde_json::to_string(place).expect("a place serializes")),
                    new.repository,
                    (!new.touches.is_empty())
                        .then(|| { serde_json::to_string(&new.touches).expect("globs serialize") }),
                    new.key,
                    new.usage()
                        .map(|usage| serde_json::to_string(&usage).expect("a budget serializes")),
                ],
            )
            .map_err(|e| self.error(e))?;
        self.state_in(transaction, &id).map(Added::Queued)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, error: rusqlite::Error) -> StoreError {
        let path = self.location();
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                StoreError::Locked { path }
            }
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                path,
                message: error.to_string(),
            },
            _ => StoreError::Sql {
                path,
                message: error.to_string(),
            },
        }
    }

    fn tasks_where(&self, sql: &str, arg: Option<&str>) -> Result<Vec<Task>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(sql).map_err(|e| self.error(e))?;
        let tasks = statement
            .query_map([arg], task_of)
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<Task>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(tasks)
    }
}

impl Queue for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn add_all(&self, new: Vec<NewTask>) -> Result<Vec<Added>, StoreError> {
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let mut added = Vec::with_capacity(new.len());
        for new in new {
            added.push(self.add_in(&transaction, new)?);
        }
        transaction.commit().map_err(|e| self.error(e))?;
        Ok(added)
    }

    fn get(&self, id: &str) -> Result<Task, StoreError> {
        let connection = self.lock();
        connection
            .query_row("SELECT * FROM tasks WHERE id = ?1", [id], task_of)
            .optional()
            .map_err(|e| self.error(e))?
            .ok_or_else(|| StoreError::UnknownTask { id: id.to_string() })
    }

    fn list(&self, state: Option<TaskState>) -> Result<Vec<Task>, StoreError> {
        self.tasks_where(
            "SELECT * FROM tasks WHERE ?1 IS NULL OR state = ?1 ORDER BY created_at_ms, rowid",
            state.map(TaskState::name),
        )
    }

    fn queued_in_order(&self) -> Result<Vec<Task>, StoreError> {
        self.tasks_where(
            "SELECT * FROM tasks WHERE state = ?1 ORDER BY priority DESC, created_at_ms, rowid",
            Some(TaskState::Queued.name()),
        )
    }

    fn set_isolation(&self, id: &str, isolation: &Isolation) -> Result<(), StoreError> {
        self.set_json(id, "isolation", isolation)
    }

    fn set_review(&self, id: &str, review: &Review) -> Result<(), StoreError> {
        self.set_json(id, "review", review)
    }

    fn set_usage(&self, id: &str, usage: &Spending) -> Result<(), StoreError> {
        self.set_json(id, "usage", usage)
    }

    fn set_landing(&self, id: &str, landing: &Landing) -> Result<(), StoreError> {
        let json = serde_json::to_string(landing).expect("task records serialize");
        let connection = self.lock();
        let changed = connection
            .execute(
                "UPDATE tasks SET landing = ?2, attention = ?3 WHERE id = ?1",
                params![id, json, landing.attention()],
            )
            .map_err(|e| self.error(e))?;
        match changed {
            0 => Err(StoreError::UnknownTask { id: id.to_string() }),
            _ => Ok(()),
        }
    }

    fn clear_review(&self, id: &str) -> Result<(), StoreError> {
        let connection = self.lock();
        connection
            .execute("UPDATE tasks SET review = NULL WHERE id = ?1", [id])
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn transition(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
        lease: Option<&Lease>,
    ) -> Result<Task, StoreError> {
        let mut connection = self.lock();
        let transaction = connection.transaction().map_err(|e| self.error(e))?;
        let task = self.state_in(&transaction, id)?;
        let to = next_state(&task, transition, lease)?;
        let now = unix_millis(SystemTime::now()) as i64;
        let updated = match transition {
            Transition::Retry | Transition::SendBack => transaction.execute(
                "UPDATE tasks SET state = ?2, attempts = attempts + 1, started_at_ms = NULL,
                    finished_at_ms = NULL, session = NULL, summary = NULL, failure = NULL,
                    exit_code = NULL, attention = NULL WHERE id = ?1",
                params![id, to.name()],
            ),
            _ => transaction.execute(
                "UPDATE tasks SET state = ?2, finished_at_ms = ?3, attention = NULL,
                        session = COALESCE(?4, session) WHERE id = ?1",
                params![id, to.name(), now, record.session],
            ),
        };
        updated.map_err(|e| self.error(e))?;
        transaction
            .execute(
                "UPDATE tasks SET summary = COALESCE(?2, summary), failure = COALESCE(?3, failure),
                    exit_code = COALESCE(?4, exit_code), transcript = COALESCE(?5, transcript)
                 WHERE id = ?1",
                params![
                    id,
                    record.summary,
                    record.failure,
                    record.exit_code,
                    record.transcript
                ],
            )
            .map_err(|e| self.error(e))?;
        transaction.commit().map_err(|e| self.error(e))?;
        drop(connection);
        self.get(id)
    }

    fn claim(&self, candidates: &[String], claimer: &Claimer) -> Result<Option<Task>, StoreError> {
        let mut connection = self.lock();
        let transaction = connection.transaction().map_err(|e| self.error(e))?;
        let (cap, running, here): (u32, u32, u32) = transaction
            .query_row(
                "SELECT (SELECT max_concurrent FROM queue_settings WHERE id = 1),
                    (SELECT COUNT(*) FROM tasks WHERE state = 'running'),
                    (SELECT COUNT(*) FROM tasks WHERE state = 'running' AND host = ?1)",
                [&claimer.host],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| self.error(e))?;
        if running >= cap || claimer.cap.is_some_and(|cap| here >= cap) {
            return Ok(None);
        }
        let queued = |id: &&String| {
            self.state_in(&transaction, id)
                .is_ok_and(|task| task.state == TaskState::Queued)
        };
        let Some(id) = candidates.iter().find(queued).cloned() else {
            return Ok(None);
        };
        let now = unix_millis(SystemTime::now()) as i64;
        transaction
            .execute(
                "UPDATE tasks SET state = 'running', started_at_ms = ?2, finished_at_ms = NULL,
                    session = 'task-' || id
                        || CASE WHEN epoch = 0 THEN '' ELSE '-' || (epoch + 1) END,
                    host = ?3, epoch = epoch + 1 WHERE id = ?1",
                params![id, now, claimer.host],
            )
            .map_err(|e| self.error(e))?;
        transaction.commit().map_err(|e| self.error(e))?;
        drop(connection);
        self.get(&id).map(Some)
    }

    fn relocate(&self, id: &str, lease: &Lease, project_path: &str) -> Result<Task, StoreError> {
        let connection = self.lock();
        let changed = connection
            .execute(
                "UPDATE tasks SET project_path = ?4
                 WHERE id = ?1 AND state = 'running' AND host = ?2 AND epoch = ?3",
                params![id, lease.host, lease.epoch, project_path],
            )
            .map_err(|e| self.error(e))?;
        drop(connection);
        let task = self.get(id)?;
        match changed {
            0 => Err(fenced(&task, lease)),
            _ => Ok(task),
        }
    }

    fn set_attention(
        &self,
        id: &str,
        why: Option<&str>,
        lease: Option<&Lease>,
    ) -> Result<bool, StoreError> {
        let connection = self.lock();
        let changed = connection
            .execute(
                "UPDATE tasks SET attention = ?2
                 WHERE id = ?1 AND state IN ('running', 'done') AND attention IS NOT ?2
                    AND (?3 IS NULL OR (host = ?3 AND epoch = ?4))",
                params![
                    id,
                    why,
                    lease.map(|l| l.host.as_str()),
                    lease.map(|l| l.epoch)
                ],
            )
            .map_err(|e| self.error(e))?;
        Ok(changed > 0)
    }

    fn set_transcript(&self, id: &str, transcript: &str) -> Result<(), StoreError> {
        let connection = self.lock();
        connection
            .execute(
                "UPDATE tasks SET transcript = ?2 WHERE id = ?1",
                params![id, transcript],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn count(&self, state: TaskState) -> Result<u32, StoreError> {
        let connection = self.lock();
        connection
            .query_row(
                "SELECT COUNT(*) FROM tasks WHERE state = ?1",
                [state.name()],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))
    }

    fn settings(&self) -> Result<QueueSettings, StoreError> {
        let connection = self.lock();
        let (mode, max): (String, u32) = connection
            .query_row(
                "SELECT mode, max_concurrent FROM queue_settings WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.error(e))?;
        Ok(QueueSettings {
            mode: QueueMode::parse(&mode),
            max_concurrent: max,
        })
    }

    fn daily_budgets(&self) -> Result<DailyBudgets, StoreError> {
        let connection = self.lock();
        let json: Option<String> = connection
            .query_row(
                "SELECT daily_budgets FROM queue_settings WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        Ok(json
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default())
    }

    fn set_daily_budgets(&self, budgets: &DailyBudgets) -> Result<(), StoreError> {
        let json = serde_json::to_string(budgets).expect("budgets serialize");
        self.lock()
            .execute(
                "UPDATE queue_settings SET daily_budgets = ?1 WHERE id = 1",
                [json],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn set_settings(&self, settings: QueueSettings) -> Result<(), StoreError> {
        let connection = self.lock();
        connection
            .execute(
                "UPDATE queue_settings SET mode = ?1, max_concurrent = ?2 WHERE id = 1",
                params![settings.mode.name(), settings.max_concurrent],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

fn task_of(row: &Row<'_>) -> rusqlite::Result<Task> {
    let state: String = row.get("state")?;
    let millis = |name: &str| -> rusqlite::Result<Option<u64>> {
        Ok(row.get::<_, Option<i64>>(name)?.map(|v| v as u64))
    };
    Ok(Task {
        id: row.get("id")?,
        title: row.get("title")?,
        description: row.get("description")?,
        project_path: row.get("project_path")?,
        place: json_column(row, "place")?,
        repository: row.get("repository")?,
        agent_kind: row.get("agent_kind")?,
        state: TaskState::parse(&state).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                0,
                rusqlite::types::Type::Text,
                format!("unknown task state {state:?}").into(),
            )
        })?,
        priority: row.get("priority")?,
        created_at_ms: row.get::<_, i64>("created_at_ms")? as u64,
        started_at_ms: millis("started_at_ms")?,
        finished_at_ms: millis("finished_at_ms")?,
        session: row.get("session")?,
        attempts: row.get("attempts")?,
        summary: row.get("summary")?,
        failure: row.get("failure")?,
        exit_code: row.get("exit_code")?,
        transcript: row.get("transcript")?,
        timeout_s: row.get::<_, Option<i64>>("timeout_s")?.map(|v| v as u64),
        policy: row.get("policy")?,
        attention: row.get("attention")?,
        base: row.get("base")?,
        in_place: row.get("in_place")?,
        isolation: json_column(row, "isolation")?,
        review: json_column(row, "review")?,
        landing: json_column(row, "landing")?,
        usage: json_column(row, "usage")?,
        touches: json_column(row, "touches")?.unwrap_or_default(),
        host: row.get("host")?,
        epoch: row.get("epoch")?,
        key: row.get("request_key")?,
    })
}

fn json_column<T: serde::de::DeserializeOwned>(
    row: &Row<'_>,
    name: &str,
) -> rusqlite::Result<Option<T>> {
    let Some(text) = row.get::<_, Option<String>>(name)? else {
        return Ok(None);
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
    })
}

#[cfg(test)]
mod tests;
