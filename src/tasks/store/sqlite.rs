//! The task queue on disk: an SQLite file in drydock's data directory, its schema brought up
//! to date by numbered migrations (`PRAGMA user_version`), every change of state checked
//! against the legal transitions inside one transaction. One machine's queue: its one host
//! claims tasks like a team's hosts do, so the runner is the same over either store.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, params};
use serde::Serialize;

use super::{
    Claimer, Lease, NewTask, Queue, QueueMode, QueueSettings, Record, StoreError, Task, fenced,
    next_state,
};
use crate::millis::unix_millis;
use crate::tasks::isolation::{Isolation, Review};
use crate::tasks::landing::Landing;
use crate::tasks::state::{TaskState, Transition};

/// The schema, one migration per version: version N is reached by running the first N.
const MIGRATIONS: [&str; 9] = [
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

    fn add(&self, new: NewTask) -> Result<Task, StoreError> {
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
                    priority, created_at_ms, timeout_s, policy, base, in_place, place,
                    repository, touches)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
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
                ],
            )
            .map_err(|e| self.error(e))?;
        drop(connection);
        self.get(&id)
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

    fn set_landing(&self, id: &str, landing: &Landing) -> Result<(), StoreError> {
        self.set_json(id, "landing", landing)
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
        touches: json_column(row, "touches")?.unwrap_or_default(),
        host: row.get("host")?,
        epoch: row.get("epoch")?,
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

    fn start(store: &SqliteStore, id: &str) -> Task {
        let here = Claimer {
            host: "here".into(),
            session: "s".into(),
            cap: None,
        };
        store
            .claim(&[id.to_string()], &here)
            .unwrap()
            .expect("claimed")
    }

    fn task(title: &str, priority: i64) -> NewTask {
        NewTask {
            title: title.into(),
            description: format!("{title}, please"),
            project_path: "/work/p".into(),
            place: None,
            repository: None,
            agent_kind: "claude".into(),
            priority,
            timeout_s: None,
            policy: None,
            base: None,
            in_place: false,
            touches: Vec::new(),
        }
    }

    #[test]
    fn tasks_are_stored_listed_and_kept_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/tasks.sqlite3");
        let store = SqliteStore::open(&path).unwrap();
        let first = store.add(task("fix the flaky test", 0)).unwrap();
        let urgent = store.add(task("bump serde", 5)).unwrap();
        assert_eq!(first.state, TaskState::Queued);
        assert_eq!(first.attempts, 1);
        assert_eq!(first.id.len(), 8);
        assert_eq!(store.queued_in_order().unwrap()[0].id, urgent.id);
        assert_eq!(store.list(None).unwrap().len(), 2);
        drop(store);

        let store = SqliteStore::open(&path).unwrap();
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
        assert_eq!(SqliteStore::open(&path).unwrap().settings().unwrap(), auto);
    }

    #[test]
    fn tasks_added_in_the_same_millisecond_keep_the_order_they_were_added_in() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
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
        assert_eq!(store.queued_in_order().unwrap()[0].id, added[0]);
    }

    #[test]
    fn transitions_are_checked_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let id = store.add(task("t", 0)).unwrap().id;
        let running = start(&store, &id);
        assert_eq!(running.state, TaskState::Running);
        assert!(running.started_at_ms.is_some());
        assert_eq!(running.session, Some(format!("task-{id}")));
        assert_eq!((running.host.as_deref(), running.epoch), (Some("here"), 1));
        let bare_start = store.transition(&id, Transition::Start, Record::default(), None);
        assert!(matches!(bare_start, Err(StoreError::Illegal { .. })));
        let elsewhere = Lease {
            host: "there".into(),
            epoch: 1,
        };
        let fenced = store.transition(&id, Transition::Fail, Record::default(), Some(&elsewhere));
        assert!(
            matches!(fenced, Err(StoreError::Fenced { .. })),
            "{fenced:?}"
        );
        let failed = Record {
            failure: Some("session lost while drydock was down".into()),
            exit_code: Some(3),
            transcript: Some("last screen".into()),
            ..Record::default()
        };
        let failed = store
            .transition(&id, Transition::Fail, failed, None)
            .unwrap();
        assert_eq!(failed.state, TaskState::Failed);
        assert_eq!(failed.exit_code, Some(3));
        assert_eq!(failed.session, Some(format!("task-{id}")), "kept");

        let again = store.transition(&id, Transition::Fail, Record::default(), None);
        assert_eq!(
            again.unwrap_err().to_string(),
            format!("task {id}: a failed task cannot be failed")
        );
        let retried = store
            .transition(&id, Transition::Retry, Record::default(), None)
            .unwrap();
        assert_eq!((retried.state, retried.attempts), (TaskState::Queued, 2));
        assert_eq!(retried.failure, None);
        assert_eq!(retried.transcript.as_deref(), Some("last screen"), "kept");
        assert_eq!(start(&store, &id).epoch, 2, "a new claim");
        let done = Record {
            summary: Some("fixed".into()),
            ..Record::default()
        };
        let mine = Lease {
            host: "here".into(),
            epoch: 2,
        };
        let done = store
            .transition(&id, Transition::Complete(Outcome::Done), done, Some(&mine))
            .unwrap();
        assert_eq!(done.state, TaskState::Done);
        assert_eq!(done.summary.as_deref(), Some("fixed"));
        let twice = store.transition(
            &id,
            Transition::Complete(Outcome::Done),
            Record::default(),
            None,
        );
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
        let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let running = store.add(task("a", 0)).unwrap().id;
        start(&store, &running);
        store.add(task("b", 0)).unwrap();
        store.add(task("c", 0)).unwrap();

        let cancelled = store.clear_queue().unwrap();

        assert_eq!(cancelled.len(), 2);
        assert!(cancelled.iter().all(|t| t.state == TaskState::Cancelled));
        assert_eq!(store.get(&running).unwrap().state, TaskState::Running);
        assert_eq!(store.queued_in_order().unwrap(), Vec::new());
    }

    #[test]
    fn an_empty_file_is_migrated_and_a_newer_or_foreign_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.sqlite3");
        std::fs::write(&empty, b"").unwrap();
        let store = SqliteStore::open(&empty).unwrap();
        store.add(task("a", 0)).unwrap();
        drop(store);
        // Opening at the current version runs no migration again.
        assert_eq!(
            SqliteStore::open(&empty).unwrap().list(None).unwrap().len(),
            1
        );

        let newer = dir.path().join("newer.sqlite3");
        let connection = Connection::open(&newer).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
        drop(connection);
        let error = SqliteStore::open(&newer).err().unwrap().to_string();
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
        let error = SqliteStore::open(&foreign).err().unwrap();
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

        let store = SqliteStore::open(&path).unwrap();
        let old = store.get("0000beef").unwrap();
        assert_eq!((old.title.as_str(), old.state), ("old", TaskState::Running));
        assert_eq!(
            (old.timeout_s, old.policy, old.attention),
            (None, None, None)
        );
        assert!(
            store
                .set_attention("0000beef", Some("waits: permission"), None)
                .unwrap()
        );
        assert!(
            !store
                .set_attention("0000beef", Some("waits: permission"), None)
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
            .transition("0000beef", Transition::Fail, Record::default(), None)
            .unwrap();
        assert_eq!(failed.attention, None, "a finished task needs no one");
    }

    #[test]
    fn a_task_keeps_its_worktree_and_result_across_a_reopen() {
        use crate::tasks::isolation::{Checks, Disposition, Review, Worktree};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = SqliteStore::open(&path).unwrap();
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
            confinement: Some("bubblewrap".into()),
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

        let store = SqliteStore::open(&path).unwrap();
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
    fn a_done_task_sent_back_keeps_its_landing_and_waits_for_a_person_with_why() {
        use crate::tasks::landing::{Failure, LandingState, SentBack};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = SqliteStore::open(&path).unwrap();
        let id = store.add(task("lands", 0)).unwrap().id;
        start(&store, &id);
        let done = Record {
            summary: Some("renamed it".into()),
            ..Record::default()
        };
        store
            .transition(&id, Transition::Complete(Outcome::Done), done, None)
            .unwrap();
        let mut landing = Landing::waiting("main", 1);
        landing.sent_back.push(SentBack {
            attempt: 1,
            head: "b".repeat(40),
            into: "main".into(),
            tip: "c".repeat(40),
            failure: Failure::Red {
                on_merged_tree: true,
                check: "test".into(),
                status: "build_failed".into(),
                detail: "error[E0425]".into(),
            },
            at_ms: 2,
        });
        landing.state = LandingState::SentBack { attempt: 2 };
        store.set_landing(&id, &landing).unwrap();
        assert!(store.set_attention(&id, Some("a note"), None).unwrap());

        let again = store
            .transition(&id, Transition::SendBack, Record::default(), None)
            .unwrap();
        assert_eq!((again.state, again.attempts), (TaskState::Queued, 2));
        assert_eq!((again.summary, again.attention), (None, None));
        let sent_twice = store.transition(&id, Transition::SendBack, Record::default(), None);
        assert!(matches!(sent_twice, Err(StoreError::Illegal { .. })));
        drop(store);

        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.get(&id).unwrap().landing, Some(landing));
        assert!(
            !store.set_attention(&id, Some("queued"), None).unwrap(),
            "only a running or done task needs a person"
        );
    }

    #[test]
    fn a_database_locked_by_another_process_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        drop(SqliteStore::open(&path).unwrap());
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

        let error = SqliteStore::open_waiting(&path, Duration::from_millis(100))
            .err()
            .unwrap();

        assert!(matches!(error, StoreError::Locked { .. }), "{error}");
        assert!(error.to_string().contains("locked by another process"));
    }
}
