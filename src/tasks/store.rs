//! The task queue on disk: an SQLite file in drydock's data directory, its schema brought up
//! to date by numbered migrations (`PRAGMA user_version`), every change of state checked
//! against the legal transitions inside one transaction.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::isolation::{Isolation, Review, Worktree};
use super::state::{IllegalTransition, TaskState, Transition};
use crate::events::unix_millis;

/// The schema, one migration per version: version N is reached by running the first N.
const MIGRATIONS: [&str; 3] = [
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
];
/// How long a call waits for another process holding the file's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the task database {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error(
        "{path} is not a task database drydock can read ({message}); move it away to start a new one"
    )]
    Corrupt { path: PathBuf, message: String },
    #[error("the task database {path} is locked by another process (another drydock?)")]
    Locked { path: PathBuf },
    #[error("{path} was written by a newer drydock (schema {found}, this one knows {known})")]
    TooNew {
        path: PathBuf,
        found: usize,
        known: usize,
    },
    #[error("no task {id:?}")]
    UnknownTask { id: String },
    #[error("task {id}: {source}")]
    Illegal {
        id: String,
        source: IllegalTransition,
    },
    #[error("the task database {path}: {message}")]
    Sql { path: PathBuf, message: String },
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// The prompt the agent gets.
    pub description: String,
    pub project_path: String,
    pub agent_kind: String,
    pub state: TaskState,
    /// Higher starts first.
    pub priority: i64,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    /// The terminal session it runs (or ran) in.
    pub session: Option<String>,
    pub attempts: u32,
    /// The agent's summary of how it ended.
    pub summary: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    pub exit_code: Option<i32>,
    /// The session's final screen and scrollback, ANSI stripped and capped.
    pub transcript: Option<String>,
    /// How long it may run, in seconds (None: the configured default).
    pub timeout_s: Option<u64>,
    /// The config's approval policy its agent's permission prompts are decided by, if any.
    pub policy: Option<String>,
    /// Why the running task needs a person (its agent waits at a prompt).
    pub attention: Option<String>,
    /// The branch or commit its worktree starts from (None: the project's HEAD).
    pub base: Option<String>,
    /// It runs in the project's own directory, not in a worktree of its own.
    pub in_place: bool,
    /// Where its agent works, once it started.
    pub isolation: Option<Isolation>,
    /// Its branch's change, once its agent stopped.
    pub review: Option<Review>,
}

impl Task {
    /// Its worktree and its result, while the result waits to be merged or discarded.
    pub fn open_result(&self) -> Option<(&Worktree, &Review)> {
        match (&self.isolation, &self.review) {
            (Some(Isolation::Worktree(worktree)), Some(review)) if review.disposition.is_open() => {
                Some((worktree, review))
            }
            _ => None,
        }
    }

    /// The directory its agent works in (the project until it has a worktree).
    pub fn work_dir(&self) -> &str {
        match &self.isolation {
            Some(isolation) => isolation.dir(&self.project_path),
            None => &self.project_path,
        }
    }
}

/// What a new task is made of.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub title: String,
    pub description: String,
    pub project_path: String,
    pub agent_kind: String,
    pub priority: i64,
    pub timeout_s: Option<u64>,
    pub policy: Option<String>,
    pub base: Option<String>,
    pub in_place: bool,
}

/// What a transition records beside the new state.
#[derive(Debug, Clone, Default)]
pub struct Record {
    pub session: Option<String>,
    pub summary: Option<String>,
    pub failure: Option<String>,
    pub exit_code: Option<i32>,
    pub transcript: Option<String>,
}

/// manual: tasks start one by one when asked; auto: as slots free up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueMode {
    Manual,
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct QueueSettings {
    pub mode: QueueMode,
    pub max_concurrent: u32,
}

pub struct TaskStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl TaskStore {
    /// Opens (or creates) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<TaskStore, StoreError> {
        Self::open_waiting(path, BUSY_TIMEOUT)
    }

    fn open_waiting(path: &Path, busy: Duration) -> Result<TaskStore, StoreError> {
        let open_error = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        }
        let connection = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        connection
            .busy_timeout(busy)
            .map_err(|e| open_error(e.to_string()))?;
        let store = TaskStore {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        };
        store.migrate()?;
        Ok(store)
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
                path: self.path.clone(),
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

    /// Stores a new queued task; its id is 8 hex digits.
    pub fn add(&self, new: NewTask) -> Result<Task, StoreError> {
        let connection = self.lock();
        let now = unix_millis(SystemTime::now());
        let id = loop {
            let id = crate::private::random_hex(4);
            let taken: bool = connection
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
        connection
            .execute(
                "INSERT INTO tasks (id, title, description, project_path, agent_kind, state,
                    priority, created_at_ms, timeout_s, policy, base, in_place)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9, ?10, ?11)",
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
                    new.in_place
                ],
            )
            .map_err(|e| self.error(e))?;
        drop(connection);
        self.get(&id)
    }

    pub fn get(&self, id: &str) -> Result<Task, StoreError> {
        let connection = self.lock();
        connection
            .query_row("SELECT * FROM tasks WHERE id = ?1", [id], task_of)
            .optional()
            .map_err(|e| self.error(e))?
            .ok_or_else(|| StoreError::UnknownTask { id: id.to_string() })
    }

    /// Tasks in `state` (all when None), oldest first.
    pub fn list(&self, state: Option<TaskState>) -> Result<Vec<Task>, StoreError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(
                "SELECT * FROM tasks WHERE ?1 IS NULL OR state = ?1 ORDER BY created_at_ms, rowid",
            )
            .map_err(|e| self.error(e))?;
        let tasks = statement
            .query_map([state.map(TaskState::name)], task_of)
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<Task>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(tasks)
    }

    /// The queued tasks in the order they start: highest priority, then oldest.
    pub fn queued_in_order(&self) -> Result<Vec<Task>, StoreError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(
                "SELECT * FROM tasks WHERE state = 'queued'
                 ORDER BY priority DESC, created_at_ms, rowid",
            )
            .map_err(|e| self.error(e))?;
        let tasks = statement
            .query_map([], task_of)
            .map_err(|e| self.error(e))?
            .collect::<Result<Vec<Task>, _>>()
            .map_err(|e| self.error(e))?;
        Ok(tasks)
    }

    /// Records where task `id`'s agent works.
    pub fn set_isolation(&self, id: &str, isolation: &Isolation) -> Result<(), StoreError> {
        self.set_json(id, "isolation", isolation)
    }

    /// Records the change task `id`'s branch holds, and what became of it.
    pub fn set_review(&self, id: &str, review: &Review) -> Result<(), StoreError> {
        self.set_json(id, "review", review)
    }

    pub fn clear_review(&self, id: &str) -> Result<(), StoreError> {
        let connection = self.lock();
        connection
            .execute("UPDATE tasks SET review = NULL WHERE id = ?1", [id])
            .map_err(|e| self.error(e))?;
        Ok(())
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

    /// The queued task to start next: highest priority, then oldest.
    pub fn next_queued(&self) -> Result<Option<Task>, StoreError> {
        let connection = self.lock();
        connection
            .query_row(
                "SELECT * FROM tasks WHERE state = 'queued'
                 ORDER BY priority DESC, created_at_ms, rowid LIMIT 1",
                [],
                task_of,
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Applies `transition` to task `id` if it is legal from its stored state, with
    /// `record`, in one transaction; returns the task as stored after it.
    pub fn transition(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
    ) -> Result<Task, StoreError> {
        let mut connection = self.lock();
        let transaction = connection.transaction().map_err(|e| self.error(e))?;
        let state: Option<String> = transaction
            .query_row("SELECT state FROM tasks WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.error(e))?;
        let state = state.ok_or_else(|| StoreError::UnknownTask { id: id.to_string() })?;
        let from = TaskState::parse(&state).ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            message: format!("task {id} has the unknown state {state:?}"),
        })?;
        let to = from
            .after(transition)
            .map_err(|source| StoreError::Illegal {
                id: id.to_string(),
                source,
            })?;
        let now = unix_millis(SystemTime::now()) as i64;
        let updated = match transition {
            Transition::Start => transaction.execute(
                "UPDATE tasks SET state = ?2, started_at_ms = ?3, finished_at_ms = NULL,
                    session = COALESCE(?4, session) WHERE id = ?1",
                params![id, to.name(), now, record.session],
            ),
            Transition::Retry => transaction.execute(
                "UPDATE tasks SET state = ?2, attempts = attempts + 1, started_at_ms = NULL,
                    finished_at_ms = NULL, session = NULL, summary = NULL, failure = NULL,
                    exit_code = NULL WHERE id = ?1",
                params![id, to.name()],
            ),
            Transition::Complete(_) | Transition::Fail | Transition::Cancel => transaction.execute(
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

    /// Marks running task `id` as needing a person (`why`), or not (None). Returns whether
    /// that changed anything.
    pub fn set_attention(&self, id: &str, why: Option<&str>) -> Result<bool, StoreError> {
        let connection = self.lock();
        let changed = connection
            .execute(
                "UPDATE tasks SET attention = ?2
                 WHERE id = ?1 AND state = 'running' AND attention IS NOT ?2",
                params![id, why],
            )
            .map_err(|e| self.error(e))?;
        Ok(changed > 0)
    }

    /// Keeps `transcript` as task `id`'s record of its session.
    pub fn set_transcript(&self, id: &str, transcript: &str) -> Result<(), StoreError> {
        let connection = self.lock();
        connection
            .execute(
                "UPDATE tasks SET transcript = ?2 WHERE id = ?1",
                params![id, transcript],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// How many tasks are in `state`.
    pub fn count(&self, state: TaskState) -> Result<u32, StoreError> {
        let connection = self.lock();
        connection
            .query_row(
                "SELECT COUNT(*) FROM tasks WHERE state = ?1",
                [state.name()],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))
    }

    /// Cancels every queued task (running ones go on); returns the cancelled ones.
    pub fn clear_queue(&self) -> Result<Vec<Task>, StoreError> {
        let queued = self.list(Some(TaskState::Queued))?;
        queued
            .iter()
            .map(|task| self.transition(&task.id, Transition::Cancel, Record::default()))
            .collect()
    }

    pub fn settings(&self) -> Result<QueueSettings, StoreError> {
        let connection = self.lock();
        let (mode, max): (String, u32) = connection
            .query_row(
                "SELECT mode, max_concurrent FROM queue_settings WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.error(e))?;
        Ok(QueueSettings {
            mode: match mode.as_str() {
                "auto" => QueueMode::Auto,
                _ => QueueMode::Manual,
            },
            max_concurrent: max,
        })
    }

    pub fn set_settings(&self, settings: QueueSettings) -> Result<(), StoreError> {
        let mode = match settings.mode {
            QueueMode::Manual => "manual",
            QueueMode::Auto => "auto",
        };
        let connection = self.lock();
        connection
            .execute(
                "UPDATE queue_settings SET mode = ?1, max_concurrent = ?2 WHERE id = 1",
                params![mode, settings.max_concurrent],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, error: rusqlite::Error) -> StoreError {
        let path = self.path.clone();
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
mod tests {
    use super::*;
    use crate::tasks::state::Outcome;

    fn task(title: &str, priority: i64) -> NewTask {
        NewTask {
            title: title.into(),
            description: format!("{title}, please"),
            project_path: "/work/p".into(),
            agent_kind: "claude".into(),
            priority,
            timeout_s: None,
            policy: None,
            base: None,
            in_place: false,
        }
    }

    #[test]
    fn tasks_are_stored_listed_and_kept_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/tasks.sqlite3");
        let store = TaskStore::open(&path).unwrap();
        let first = store.add(task("fix the flaky test", 0)).unwrap();
        let urgent = store.add(task("bump serde", 5)).unwrap();
        assert_eq!(first.state, TaskState::Queued);
        assert_eq!(first.attempts, 1);
        assert_eq!(first.id.len(), 8);
        assert_eq!(store.next_queued().unwrap().unwrap().id, urgent.id);
        assert_eq!(store.list(None).unwrap().len(), 2);
        drop(store);

        let store = TaskStore::open(&path).unwrap();
        assert_eq!(store.get(&first.id).unwrap(), first);
        assert!(matches!(
            store.get("nope"),
            Err(StoreError::UnknownTask { .. })
        ));
        assert_eq!(
            store.settings().unwrap(),
            QueueSettings {
                mode: QueueMode::Manual,
                max_concurrent: 2
            }
        );
        let auto = QueueSettings {
            mode: QueueMode::Auto,
            max_concurrent: 3,
        };
        store.set_settings(auto).unwrap();
        drop(store);
        assert_eq!(TaskStore::open(&path).unwrap().settings().unwrap(), auto);
    }

    #[test]
    fn tasks_added_in_the_same_millisecond_keep_the_order_they_were_added_in() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let added: Vec<String> = (0..40)
            .map(|n| store.add(task(&format!("t{n}"), 0)).unwrap().id)
            .collect();
        store
            .lock()
            .execute("UPDATE tasks SET created_at_ms = 1", [])
            .unwrap();
        let ids = |tasks: Vec<Task>| tasks.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(store.list(None).unwrap()), added);
        assert_eq!(ids(store.queued_in_order().unwrap()), added);
        assert_eq!(store.next_queued().unwrap().unwrap().id, added[0]);
    }

    #[test]
    fn transitions_are_checked_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let id = store.add(task("t", 0)).unwrap().id;
        let started = Record {
            session: Some("drydock-task-1".into()),
            ..Record::default()
        };
        let running = store.transition(&id, Transition::Start, started).unwrap();
        assert_eq!(running.state, TaskState::Running);
        assert!(running.started_at_ms.is_some());
        assert_eq!(running.session.as_deref(), Some("drydock-task-1"));
        let failed = Record {
            failure: Some("session lost while drydock was down".into()),
            exit_code: Some(3),
            transcript: Some("last screen".into()),
            ..Record::default()
        };
        let failed = store.transition(&id, Transition::Fail, failed).unwrap();
        assert_eq!(failed.state, TaskState::Failed);
        assert_eq!(failed.exit_code, Some(3));
        assert_eq!(failed.session.as_deref(), Some("drydock-task-1"), "kept");

        let again = store.transition(&id, Transition::Fail, Record::default());
        assert_eq!(
            again.unwrap_err().to_string(),
            format!("task {id}: a failed task cannot be failed")
        );
        let retried = store
            .transition(&id, Transition::Retry, Record::default())
            .unwrap();
        assert_eq!((retried.state, retried.attempts), (TaskState::Queued, 2));
        assert_eq!(retried.failure, None);
        assert_eq!(retried.transcript.as_deref(), Some("last screen"), "kept");
        store
            .transition(&id, Transition::Start, Record::default())
            .unwrap();
        let done = Record {
            summary: Some("fixed".into()),
            ..Record::default()
        };
        let done = store
            .transition(&id, Transition::Complete(Outcome::Done), done)
            .unwrap();
        assert_eq!(done.state, TaskState::Done);
        assert_eq!(done.summary.as_deref(), Some("fixed"));
        let twice = store.transition(&id, Transition::Complete(Outcome::Done), Record::default());
        assert!(matches!(twice, Err(StoreError::Illegal { .. })));
        assert_eq!(
            store.get(&id).unwrap(),
            done,
            "a refused change changes nothing"
        );
    }

    #[test]
    fn clearing_the_queue_cancels_queued_tasks_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let running = store.add(task("a", 0)).unwrap().id;
        store
            .transition(&running, Transition::Start, Record::default())
            .unwrap();
        store.add(task("b", 0)).unwrap();
        store.add(task("c", 0)).unwrap();

        let cancelled = store.clear_queue().unwrap();

        assert_eq!(cancelled.len(), 2);
        assert!(cancelled.iter().all(|t| t.state == TaskState::Cancelled));
        assert_eq!(store.get(&running).unwrap().state, TaskState::Running);
        assert_eq!(store.next_queued().unwrap(), None);
    }

    #[test]
    fn an_empty_file_is_migrated_and_a_newer_or_foreign_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.sqlite3");
        std::fs::write(&empty, b"").unwrap();
        let store = TaskStore::open(&empty).unwrap();
        store.add(task("a", 0)).unwrap();
        drop(store);
        // Opening at the current version runs no migration again.
        assert_eq!(
            TaskStore::open(&empty).unwrap().list(None).unwrap().len(),
            1
        );

        let newer = dir.path().join("newer.sqlite3");
        let connection = Connection::open(&newer).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
        drop(connection);
        let error = TaskStore::open(&newer).err().unwrap().to_string();
        assert!(
            error.contains("written by a newer drydock (schema 99"),
            "{error}"
        );

        let foreign = dir.path().join("notes.txt");
        std::fs::write(
            &foreign,
            "these are not the tasks you are looking for\n".repeat(200),
        )
        .unwrap();
        let error = TaskStore::open(&foreign).err().unwrap();
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
        assert!(error.to_string().contains("move it away"), "{error}");
    }

    #[test]
    fn a_file_of_the_first_schema_is_migrated_keeping_its_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite3");
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(MIGRATIONS[0]).unwrap();
        connection.pragma_update(None, "user_version", 1).unwrap();
        connection
            .execute(
                "INSERT INTO tasks (id, title, description, project_path, agent_kind, state,
                    created_at_ms) VALUES ('0000beef', 'old', 'old, please', '/p', 'claude',
                    'running', 1)",
                [],
            )
            .unwrap();
        drop(connection);

        let store = TaskStore::open(&path).unwrap();
        let old = store.get("0000beef").unwrap();
        assert_eq!((old.title.as_str(), old.state), ("old", TaskState::Running));
        assert_eq!(
            (old.timeout_s, old.policy, old.attention),
            (None, None, None)
        );
        assert!(
            store
                .set_attention("0000beef", Some("waits: permission"))
                .unwrap()
        );
        assert!(
            !store
                .set_attention("0000beef", Some("waits: permission"))
                .unwrap()
        );
        let new = store
            .add(NewTask {
                timeout_s: Some(60),
                policy: Some("trusted".into()),
                ..task("new", 0)
            })
            .unwrap();
        assert_eq!(
            (new.timeout_s, new.policy.as_deref()),
            (Some(60), Some("trusted"))
        );
        let version: usize = store
            .lock()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len());
        let failed = store
            .transition("0000beef", Transition::Fail, Record::default())
            .unwrap();
        assert_eq!(failed.attention, None, "a finished task needs no one");
    }

    #[test]
    fn a_task_keeps_its_worktree_and_result_across_a_reopen() {
        use crate::tasks::isolation::{Checks, Disposition, Review, Worktree};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = TaskStore::open(&path).unwrap();
        let id = store
            .add(NewTask {
                base: Some("release".into()),
                ..task("isolated", 0)
            })
            .unwrap()
            .id;
        let isolation = Isolation::Worktree(Worktree {
            repo: "/work/p".into(),
            path: "/data/worktrees/p-1/t".into(),
            dir: "/data/worktrees/p-1/t".into(),
            branch: format!("drydock/task-{id}"),
            base_ref: Some("release".into()),
            base_sha: "a".repeat(40),
            copied: vec!["deps".into()],
            notes: vec!["a note".into()],
        });
        store.set_isolation(&id, &isolation).unwrap();
        let review = Review {
            head: "b".repeat(40),
            base: "a".repeat(40),
            committed_for_agent: true,
            commits: 1,
            files: Vec::new(),
            insertions: 0,
            deletions: 0,
            diff: String::new(),
            diff_cut: false,
            checks: Checks::Running,
            disposition: Disposition::Open,
            notes: Vec::new(),
        };
        store.set_review(&id, &review).unwrap();
        assert!(matches!(
            store.set_review("nope", &review),
            Err(StoreError::UnknownTask { .. })
        ));
        drop(store);

        let store = TaskStore::open(&path).unwrap();
        let task = store.get(&id).unwrap();
        assert_eq!(task.base.as_deref(), Some("release"));
        assert!(!task.in_place);
        assert_eq!(task.isolation, Some(isolation));
        assert_eq!(task.review, Some(review));
        assert_eq!(task.work_dir(), "/data/worktrees/p-1/t");
        store.clear_review(&id).unwrap();
        assert_eq!(store.get(&id).unwrap().review, None);
    }

    #[test]
    fn a_database_locked_by_another_process_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        drop(TaskStore::open(&path).unwrap());
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

        let error = TaskStore::open_waiting(&path, Duration::from_millis(100))
            .err()
            .unwrap();

        assert!(matches!(error, StoreError::Locked { .. }), "{error}");
        assert!(error.to_string().contains("locked by another process"));
    }
}
