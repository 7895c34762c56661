//! The project memory's SQLite file (`DATA_DIR/history.sqlite3`): runs, the problems they
//! had, the contents of the files they saw (kept once per distinct content), and the fixes.
//! Several drydock servers may write one data directory: SQLite's own locking orders them
//! (WAL, a busy timeout), and each run is written in one transaction.
//!
//! Every call here may wait (on another process's lock, up to a busy timeout): callers make
//! them off the async runtime (`super::access`). Reads have a connection of their own: in WAL
//! mode they see the last commit without waiting for any writer, so a build's `seen_before`
//! never queues behind a recording, this process's or another's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::fix::{self, Fix};
use super::problem::{Problem, ProblemKind};
use super::snapshot::{Content, Manifest};

const MIGRATIONS: [&str; 1] = [r#"
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    project TEXT NOT NULL,
    toolchain TEXT NOT NULL,
    tool TEXT NOT NULL,
    check_key TEXT NOT NULL,
    arguments TEXT NOT NULL,
    status TEXT NOT NULL,
    complete INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    client TEXT,
    head TEXT,
    manifest TEXT
);
CREATE INDEX runs_of_check ON runs (project, check_key, id);
CREATE TABLE problems (
    id INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    toolchain TEXT NOT NULL,
    check_key TEXT NOT NULL,
    identity TEXT NOT NULL,
    family TEXT NOT NULL,
    kind TEXT NOT NULL,
    code TEXT,
    test TEXT,
    message TEXT NOT NULL,
    file TEXT,
    line INTEGER,
    text TEXT NOT NULL,
    first_run INTEGER NOT NULL,
    last_run INTEGER NOT NULL,
    first_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    seen INTEGER NOT NULL,
    client TEXT,
    resolved_run INTEGER,
    resolved_ms INTEGER,
    fix TEXT,
    UNIQUE (project, check_key, identity)
);
CREATE INDEX problems_by_family ON problems (family, resolved_ms);
CREATE TABLE contents (
    hash TEXT PRIMARY KEY,
    bytes BLOB NOT NULL
);
CREATE VIRTUAL TABLE problem_text USING fts5(code, message, file, text, fix);
CREATE TABLE vectors (
    problem INTEGER PRIMARY KEY,
    vector BLOB NOT NULL
);
"#];

/// How long a write waits for another connection's lock before it fails busy (and the
/// recorder tries again later).
const WRITE_WAITS: Duration = Duration::from_secs(5);
/// How long a read waits for a lock: reads are on tool calls' paths, and one that waits holds
/// up the reads behind it.
const READ_WAITS: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum HistoryStoreError {
    #[error("the project memory at {path}: {message}")]
    Sqlite { path: PathBuf, message: String },
    /// Another connection holds the lock the call needed, or the call did not answer in time:
    /// worth trying again later.
    #[error("the project memory at {path} is busy: {message}")]
    Busy { path: PathBuf, message: String },
}

impl HistoryStoreError {
    /// What SQLite said, as this file's error: busy when another connection held the lock.
    fn of(path: &Path, e: rusqlite::Error) -> HistoryStoreError {
        let (path, message) = (path.to_path_buf(), e.to_string());
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                HistoryStoreError::Busy { path, message }
            }
            _ => HistoryStoreError::Sqlite { path, message },
        }
    }

    pub fn is_busy(&self) -> bool {
        matches!(self, HistoryStoreError::Busy { .. })
    }

    /// What went wrong, without the file's name.
    pub fn reason(&self) -> &str {
        match self {
            HistoryStoreError::Sqlite { message, .. } | HistoryStoreError::Busy { message, .. } => {
                message
            }
        }
    }
}

/// A finished run as recorded.
pub struct NewRun<'a> {
    pub at_ms: u64,
    pub project: &'a str,
    pub toolchain: &'a str,
    pub tool: &'a str,
    pub check_key: &'a str,
    pub arguments: &'a str,
    pub status: &'a str,
    /// The run checked what it checks to the end (not stopped by a timeout or a cancel), so a
    /// problem it no longer has is fixed.
    pub complete: bool,
    pub duration_ms: u64,
    pub client: Option<&'a str>,
    pub head: Option<&'a str>,
    pub manifest: Option<&'a Manifest>,
    pub contents: &'a [Content],
}

/// A problem as remembered.
#[derive(Debug, Clone)]
pub struct Remembered {
    pub id: i64,
    pub project: String,
    pub toolchain: String,
    /// As its last run had it.
    pub problem: Problem,
    pub first_ms: u64,
    pub last_ms: u64,
    pub seen: u32,
    pub client: Option<String>,
    pub resolved_ms: Option<u64>,
    pub fix: Option<Fix>,
}

/// What recording a run changed.
#[derive(Debug, Default, PartialEq)]
pub struct Recorded {
    pub run: i64,
    pub opened: Vec<i64>,
    pub resolved: Vec<i64>,
}

pub struct HistoryStore {
    path: PathBuf,
    /// Writes, one transaction at a time.
    writer: Mutex<Connection>,
    /// Reads, which never wait for a writer.
    reader: Mutex<Connection>,
}

type Result<T> = std::result::Result<T, HistoryStoreError>;

impl HistoryStore {
    /// Opens (and creates or migrates) the file. Only a migration takes the write lock, so
    /// a file another process is writing opens all the same.
    pub fn open(path: &Path) -> Result<HistoryStore> {
        let failed = |e: rusqlite::Error| HistoryStoreError::of(path, e);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| HistoryStoreError::Sqlite {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        }
        crate::private::make_private_database(path).map_err(|e| HistoryStoreError::Sqlite {
            path: path.to_path_buf(),
            message: format!("cannot make it private: {e}"),
        })?;
        let mut writer = Connection::open(path).map_err(failed)?;
        writer.busy_timeout(WRITE_WAITS).map_err(failed)?;
        // What is deleted (forgotten, pruned) is overwritten, not left in free pages.
        writer
            .pragma_update(None, "secure_delete", "ON")
            .map_err(failed)?;
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(failed)?;
        if schema_version(&writer).map_err(failed)? != MIGRATIONS.len() {
            migrate(&mut writer, path)?;
        }
        let reader = Connection::open(path).map_err(failed)?;
        reader.busy_timeout(READ_WAITS).map_err(failed)?;
        Ok(HistoryStore {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, e: rusqlite::Error) -> HistoryStoreError {
        HistoryStoreError::of(&self.path, e)
    }

    fn writing(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reading(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.reader.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether content `hash` is kept.
    pub fn has_content(&self, hash: &str) -> Result<bool> {
        self.reading()
            .query_row("SELECT 1 FROM contents WHERE hash = ?1", [hash], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.error(e))
    }

    /// Records `run` with its `problems`, in one transaction: each problem opened (or seen
    /// again, or reopened), and, when the run is complete, each open problem of the same
    /// check it no longer has resolved, with its fix: the change between the files of the
    /// last run that had it and this one's.
    pub fn record(
        &self,
        run: &NewRun<'_>,
        problems: &[(Problem, String, String)],
    ) -> Result<Recorded> {
        let mut connection = self.writing();
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let recorded = record_in(&tx, run, problems).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(recorded)
    }

    /// Records what happened in `project` that is not a check's result (a terminal's
    /// command, a task's end): a run of its own and one record, kept, searched and
    /// forgotten like the problems; it opens and resolves nothing.
    pub fn record_note(&self, note: &Note<'_>) -> Result<i64> {
        let mut connection = self.writing();
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let id = note_in(&tx, note).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(id)
    }

    /// Resolved problems of `family`, this project's before others', the most recently
    /// fixed first; at most `limit`.
    pub fn fixed_in_family(
        &self,
        family: &str,
        project: &str,
        limit: usize,
    ) -> Result<Vec<Remembered>> {
        let connection = self.reading();
        let mut statement = connection
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM problems
                 WHERE family = ?1 AND resolved_ms IS NOT NULL
                 ORDER BY project = ?2 DESC, resolved_ms DESC LIMIT ?3"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![family, project, limit as i64], remembered)
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    pub fn problem(&self, id: i64) -> Result<Option<Remembered>> {
        self.reading()
            .query_row(
                &format!("SELECT {COLUMNS} FROM problems WHERE id = ?1"),
                [id],
                remembered,
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Problems whose text matches `query` (FTS5 syntax, already made safe), best first.
    pub fn text_matches(&self, query: &str, limit: usize) -> Result<Vec<i64>> {
        let connection = self.reading();
        let mut statement = connection
            .prepare_cached(
                "SELECT rowid FROM problem_text WHERE problem_text MATCH ?1
                 ORDER BY bm25(problem_text, 4.0, 2.0, 1.0, 1.0, 0.5) LIMIT ?2",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![query, limit as i64], |r| r.get(0))
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// Problems without a vector yet (new, or fixed since they were embedded), each with
    /// the text to embed: what it is, where, and the lines its fix changed.
    pub fn unembedded(&self, limit: usize) -> Result<Vec<(i64, String)>> {
        let connection = self.reading();
        let mut statement = connection
            .prepare_cached(
                "SELECT id, code, test, message, file, fix FROM problems
                 WHERE id NOT IN (SELECT problem FROM vectors) ORDER BY id LIMIT ?1",
            )
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([limit as i64], |r| {
                let fix: Option<String> = r.get(5)?;
                let fix: Option<Fix> = fix.and_then(|json| serde_json::from_str(&json).ok());
                let parts: [Option<String>; 4] = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
                Ok((r.get(0)?, embedding_text(&parts, fix.as_ref())))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    pub fn put_vectors(&self, vectors: &[(i64, Vec<f32>)]) -> Result<()> {
        let mut connection = self.writing();
        let tx = connection.transaction().map_err(|e| self.error(e))?;
        for (id, vector) in vectors {
            let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
            tx.execute(
                "INSERT OR REPLACE INTO vectors (problem, vector) VALUES (?1, ?2)",
                params![id, bytes],
            )
            .map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))
    }

    /// Every problem's vector (a project's memory is thousands of problems: a scan is
    /// milliseconds).
    pub fn vectors(&self) -> Result<Vec<(i64, Vec<f32>)>> {
        let connection = self.reading();
        let mut statement = connection
            .prepare_cached("SELECT problem, vector FROM vectors")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |r| {
                let bytes: Vec<u8> = r.get(1)?;
                let vector = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                Ok((r.get(0)?, vector))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// A project's problems, open first, then the most recently fixed; at most `limit`.
    pub fn of_project(&self, project: &str, limit: usize) -> Result<Vec<Remembered>> {
        let connection = self.reading();
        let mut statement = connection
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM problems WHERE project = ?1
                 ORDER BY resolved_ms IS NOT NULL, coalesce(resolved_ms, last_ms) DESC LIMIT ?2"
            ))
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![project, limit as i64], remembered)
            .map_err(|e| self.error(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.error(e))
    }

    /// Forgets `project`'s runs and problems (every project's when None); the counts removed.
    pub fn forget(&self, project: Option<&str>) -> Result<(usize, usize)> {
        let mut connection = self.writing();
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let counts = forget_in(&tx, project).map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        // The full-text index keeps a deleted row's words until its segments are merged, and
        // the write-ahead log keeps the pages as they were until it is checkpointed.
        connection
            .execute_batch(
                "INSERT INTO problem_text(problem_text) VALUES('optimize');
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .map_err(|e| self.error(e))?;
        Ok(counts)
    }

    /// Drops the oldest runs (and the problems only they saw) until the runs are younger
    /// than `max_age_ms` and at most `max_runs`, then contents no run refers to.
    pub fn prune(&self, now_ms: u64, max_age_ms: u64, max_runs: usize) -> Result<usize> {
        let mut connection = self.writing();
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let oldest_kept = now_ms.saturating_sub(max_age_ms) as i64;
        let dropped = tx
            .execute(
                "DELETE FROM runs WHERE at_ms < ?1 OR id NOT IN
                    (SELECT id FROM runs ORDER BY id DESC LIMIT ?2)",
                params![oldest_kept, max_runs as i64],
            )
            .map_err(|e| self.error(e))?;
        if dropped > 0 {
            tx.execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS gone (id INTEGER PRIMARY KEY);
                 DELETE FROM temp.gone;
                 INSERT INTO temp.gone SELECT id FROM problems
                    WHERE last_run NOT IN (SELECT id FROM runs)
                      AND coalesce(resolved_run, 0) NOT IN (SELECT id FROM runs);
                 DELETE FROM problem_text WHERE rowid IN (SELECT id FROM temp.gone);",
            )
            .map_err(|e| self.error(e))?;
            forget_rows(&tx).map_err(|e| self.error(e))?;
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok(dropped)
    }

    /// The bytes the file's pages in use take.
    pub fn file_bytes(&self) -> Result<u64> {
        self.reading()
            .query_row(
                "SELECT (page_count - freelist_count) * page_size
                 FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|bytes| bytes as u64)
            .map_err(|e| self.error(e))
    }

    /// (runs, problems, contents, bytes of contents) kept.
    pub fn sizes(&self) -> Result<(u64, u64, u64, u64)> {
        self.reading()
            .query_row(
                "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM problems),
                        (SELECT count(*) FROM contents),
                        (SELECT coalesce(sum(length(bytes)), 0) FROM contents)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .map_err(|e| self.error(e))
    }
}

fn schema_version(connection: &Connection) -> rusqlite::Result<usize> {
    connection.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the file's schema up to this drydock's, in one transaction (two drydocks opening a
/// new file at once: the second finds it done).
fn migrate(connection: &mut Connection, path: &Path) -> Result<()> {
    let failed = |e: rusqlite::Error| HistoryStoreError::of(path, e);
    let tx = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    let version = schema_version(&tx).map_err(failed)?;
    if version > MIGRATIONS.len() {
        return Err(HistoryStoreError::Sqlite {
            path: path.to_path_buf(),
            message: format!(
                "written by a newer drydock (schema {version}, this one knows {})",
                MIGRATIONS.len()
            ),
        });
    }
    for (n, migration) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.execute_batch(migration).map_err(failed)?;
        tx.pragma_update(None, "user_version", n + 1)
            .map_err(failed)?;
    }
    tx.commit().map_err(failed)
}

/// A problem as the embedding model reads it: its code, its test (words, not `::` and
/// `_`), its message, its file, and the lines its fix changed, within the model's reach.
fn embedding_text(parts: &[Option<String>; 4], fix: Option<&Fix>) -> String {
    let mut text: String = parts
        .iter()
        .flatten()
        .map(|part| part.replace("::", " ").replace('_', " "))
        .collect::<Vec<_>>()
        .join(" \n");
    if let Some(fix) = fix {
        let changed = fix
            .diff
            .lines()
            .filter(|l| {
                (l.starts_with('+') || l.starts_with('-'))
                    && !l.starts_with("+++")
                    && !l.starts_with("---")
            })
            .map(|l| l[1..].trim())
            .filter(|l| !l.is_empty());
        for line in changed {
            if text.len() > 1200 {
                break;
            }
            text.push('\n');
            text.push_str(line);
        }
    }
    text
}

/// A command or a task's end, as recorded.
pub struct Note<'a> {
    pub at_ms: u64,
    pub kind: ProblemKind,
    pub project: &'a str,
    /// The command line, or the task's title.
    pub title: &'a str,
    /// The command's output, or the task's result and transcript.
    pub text: &'a str,
    /// The exit code, or how the task ended.
    pub status: &'a str,
    pub duration_ms: u64,
    /// The session, or the task.
    pub by: &'a str,
}

fn note_in(tx: &rusqlite::Transaction<'_>, note: &Note<'_>) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO runs (at_ms, project, toolchain, tool, check_key, arguments, status,
            complete, duration_ms, client)
         VALUES (?1, ?2, '', ?3, ?3, '{}', ?4, 0, ?5, ?6)",
        params![
            note.at_ms as i64,
            note.project,
            note.kind.name(),
            note.status,
            note.duration_ms as i64,
            note.by
        ],
    )?;
    let run = tx.last_insert_rowid();
    tx.execute(
        "INSERT INTO problems (project, toolchain, check_key, identity, family, kind, code,
            message, text, first_run, last_run, first_ms, last_ms, seen, client)
         VALUES (?1, '', ?2, ?3, ?2, ?2, ?4, ?5, ?6, ?7, ?7, ?8, ?8, 1, ?9)",
        params![
            note.project,
            note.kind.name(),
            format!("{}|{run}", note.kind.name()),
            note.status,
            note.title,
            note.text,
            run,
            note.at_ms as i64,
            note.by
        ],
    )?;
    let id = tx.last_insert_rowid();
    reindex(
        tx,
        id,
        &(
            Some(note.status.to_string()),
            note.title.to_string(),
            None,
            note.text.to_string(),
        ),
        None,
    )?;
    Ok(id)
}

const COLUMNS: &str = "id, project, toolchain, kind, code, test, message, file, line, text,
    first_ms, last_ms, seen, client, resolved_ms, fix";

fn remembered(r: &rusqlite::Row<'_>) -> rusqlite::Result<Remembered> {
    let kind: String = r.get(3)?;
    let fix: Option<String> = r.get(15)?;
    Ok(Remembered {
        id: r.get(0)?,
        project: r.get(1)?,
        toolchain: r.get(2)?,
        problem: Problem {
            kind: ProblemKind::parse(&kind).unwrap_or(ProblemKind::Error),
            code: r.get(4)?,
            test: r.get(5)?,
            message: r.get(6)?,
            file: r.get(7)?,
            line: r.get(8)?,
            text: r.get(9)?,
        },
        first_ms: r.get::<_, i64>(10)? as u64,
        last_ms: r.get::<_, i64>(11)? as u64,
        seen: r.get(12)?,
        client: r.get(13)?,
        resolved_ms: r.get::<_, Option<i64>>(14)?.map(|v| v as u64),
        fix: fix.and_then(|json| serde_json::from_str(&json).ok()),
    })
}

fn record_in(
    tx: &rusqlite::Transaction<'_>,
    run: &NewRun<'_>,
    problems: &[(Problem, String, String)],
) -> rusqlite::Result<Recorded> {
    for content in run.contents {
        tx.execute(
            "INSERT OR IGNORE INTO contents (hash, bytes) VALUES (?1, ?2)",
            params![content.hash, content.bytes],
        )?;
    }
    let manifest_json = run
        .manifest
        .map(|m| serde_json::to_string(m).expect("a manifest serializes"));
    tx.execute(
        "INSERT INTO runs (at_ms, project, toolchain, tool, check_key, arguments, status,
            complete, duration_ms, client, head, manifest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            run.at_ms as i64,
            run.project,
            run.toolchain,
            run.tool,
            run.check_key,
            run.arguments,
            run.status,
            run.complete,
            run.duration_ms as i64,
            run.client,
            run.head,
            manifest_json,
        ],
    )?;
    let run_id = tx.last_insert_rowid();
    let mut recorded = Recorded {
        run: run_id,
        ..Recorded::default()
    };
    let mut seen_now = Vec::new();
    for (problem, identity, family) in problems {
        let existing: Option<(i64, Option<i64>)> = tx
            .query_row(
                "SELECT id, resolved_run FROM problems
                 WHERE project = ?1 AND check_key = ?2 AND identity = ?3",
                params![run.project, run.check_key, identity],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let id = match existing {
            Some((id, resolved)) => {
                tx.execute(
                    "UPDATE problems SET last_run = ?2, last_ms = ?3, seen = seen + 1,
                        line = ?4, text = ?5, resolved_run = NULL, resolved_ms = NULL
                     WHERE id = ?1",
                    params![id, run_id, run.at_ms as i64, problem.line, problem.text],
                )?;
                if resolved.is_some() {
                    recorded.opened.push(id);
                }
                id
            }
            None => {
                tx.execute(
                    "INSERT INTO problems (project, toolchain, check_key, identity, family, kind,
                        code, test, message, file, line, text, first_run, last_run, first_ms,
                        last_ms, seen, client)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14,
                        ?14, 1, ?15)",
                    params![
                        run.project,
                        run.toolchain,
                        run.check_key,
                        identity,
                        family,
                        problem.kind.name(),
                        problem.code,
                        problem.test,
                        problem.message,
                        problem.file,
                        problem.line,
                        problem.text,
                        run_id,
                        run.at_ms as i64,
                        run.client,
                    ],
                )?;
                let id = tx.last_insert_rowid();
                recorded.opened.push(id);
                id
            }
        };
        seen_now.push(id);
        index_text(tx, id, problem, None)?;
    }
    if !run.complete {
        return Ok(recorded);
    }
    let mut statement = tx.prepare(
        "SELECT p.id, p.file, r.manifest FROM problems p JOIN runs r ON r.id = p.last_run
         WHERE p.project = ?1 AND p.check_key = ?2 AND p.resolved_run IS NULL",
    )?;
    let open: Vec<(i64, Option<String>, Option<String>)> = statement
        .query_map(params![run.project, run.check_key], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    drop(statement);
    let content = |hash: &str| -> Option<Vec<u8>> {
        tx.query_row("SELECT bytes FROM contents WHERE hash = ?1", [hash], |r| {
            r.get(0)
        })
        .optional()
        .ok()
        .flatten()
    };
    for (id, file, before) in open.into_iter().filter(|(id, ..)| !seen_now.contains(id)) {
        let before: Option<Manifest> = before.and_then(|json| serde_json::from_str(&json).ok());
        let fixed = match (before, run.manifest) {
            (Some(before), Some(after)) => {
                let own: Vec<String> = file.into_iter().collect();
                Some(fix::between(&before, after, &own, content))
            }
            _ => None,
        };
        let fix_json = fixed
            .as_ref()
            .map(|f| serde_json::to_string(f).expect("a fix serializes"));
        tx.execute(
            "UPDATE problems SET resolved_run = ?2, resolved_ms = ?3, fix = ?4 WHERE id = ?1",
            params![id, run_id, run.at_ms as i64, fix_json],
        )?;
        // Embedded again with its fix.
        tx.execute("DELETE FROM vectors WHERE problem = ?1", [id])?;
        let problem: (Option<String>, String, Option<String>, String) = tx.query_row(
            "SELECT code, message, file, text FROM problems WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        reindex(tx, id, &problem, fixed.as_ref().map(|f| f.diff.as_str()))?;
        recorded.resolved.push(id);
    }
    Ok(recorded)
}

fn index_text(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    problem: &Problem,
    fix: Option<&str>,
) -> rusqlite::Result<()> {
    let code = problem.code.clone().or(problem.test.clone());
    reindex(
        tx,
        id,
        &(
            code,
            problem.message.clone(),
            problem.file.clone(),
            problem.text.clone(),
        ),
        fix,
    )
}

/// The problem's row in the full-text index, replaced.
fn reindex(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    (code, message, file, text): &(Option<String>, String, Option<String>, String),
    fix: Option<&str>,
) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM problem_text WHERE rowid = ?1", [id])?;
    tx.execute(
        "INSERT INTO problem_text (rowid, code, message, file, text, fix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, code, message, file, text, fix.unwrap_or("")],
    )?;
    Ok(())
}

/// The memory's file, and its write-ahead log and shared memory beside it when they exist,
/// readable by the user alone (SQLite makes the latter two with the file's permissions).
fn forget_in(
    tx: &rusqlite::Transaction<'_>,
    project: Option<&str>,
) -> rusqlite::Result<(usize, usize)> {
    let runs = tx.execute(
        "DELETE FROM runs WHERE ?1 IS NULL OR project = ?1",
        [project],
    )?;
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS gone (id INTEGER PRIMARY KEY); DELETE FROM temp.gone;",
    )?;
    let problems = tx.execute(
        "INSERT INTO temp.gone SELECT id FROM problems WHERE ?1 IS NULL OR project = ?1",
        [project],
    )?;
    tx.execute(
        "DELETE FROM problem_text WHERE rowid IN (SELECT id FROM temp.gone)",
        [],
    )?;
    forget_rows(tx)?;
    Ok((runs, problems))
}

/// Deletes the problems in `temp.gone`, their vectors, and contents no run refers to.
fn forget_rows(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "DELETE FROM vectors WHERE problem IN (SELECT id FROM temp.gone);
         DELETE FROM problems WHERE id IN (SELECT id FROM temp.gone);",
    )?;
    let mut referenced = std::collections::HashSet::new();
    {
        let mut statement = tx.prepare("SELECT manifest FROM runs WHERE manifest IS NOT NULL")?;
        let manifests = statement.query_map([], |r| r.get::<_, String>(0))?;
        for manifest in manifests {
            if let Ok(manifest) = serde_json::from_str::<Manifest>(&manifest?) {
                referenced.extend(manifest.into_values());
            }
        }
    }
    let hashes: Vec<String> = {
        let mut statement = tx.prepare("SELECT hash FROM contents")?;
        let rows = statement.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for hash in hashes.iter().filter(|h| !referenced.contains(*h)) {
        tx.execute("DELETE FROM contents WHERE hash = ?1", [hash])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
