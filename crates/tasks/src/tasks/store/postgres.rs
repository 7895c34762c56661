//! The queue a team's hosts share, in PostgreSQL (schema `drydock`). Hosts register under a
//! session and renew a lease on the database's clock; a host claims queued tasks it can run
//! in one transaction that holds the team's claim lock, counts the running tasks against
//! the queue's cap and its own, and takes the task `FOR UPDATE SKIP LOCKED`, bumping its
//! epoch. Every later write of the claim carries that epoch (fencing): a host that lost its
//! lease changes nothing of the claim that followed. Changes are announced on a channel
//! (`NOTIFY`) that wakes the other hosts.

use std::time::{Duration, SystemTime};

use ::postgres::{Client, Row, Transaction};
use serde::Serialize;

use super::handle::CALL_DEADLINE;
use super::lease_clock::LeaseClock;
use super::pg_link::{CHANNEL, PgLink, error_of as sql};
use super::{
    Added, Claimer, Heartbeat, HostEntry, HostStatus, Lease, NewTask, Queue, QueueMode,
    QueueSettings, Record, StoreError, Task, fenced, known, next_state,
};
use crate::millis::unix_millis;
use crate::tasks::isolation::{Isolation, Review};
use crate::tasks::landing::Landing;
use crate::tasks::spending::{DailyBudgets, Spending};
use crate::tasks::state::{TaskState, Transition};

/// Advisory lock keys: schema migrations, the team's claims (so two hosts never both take
/// the last slot), the rescue of lost tasks (one host at a time).
const MIGRATE_LOCK: i64 = 0x6472_7964_6f63_6b01;
const CLAIM_LOCK: i64 = 0x6472_7964_6f63_6b02;
const RESCUE_LOCK: i64 = 0x6472_7964_6f63_6b03;

/// How long moving a machine's whole queue into this one may take.
const IMPORT_LIMIT: Duration = Duration::from_secs(600);

/// The schema, one migration per version: version N is reached by running the first N.
const MIGRATIONS: [&str; 9] = [
    r#"
CREATE TABLE drydock.tasks (
    seq BIGSERIAL UNIQUE,
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    project_path TEXT NOT NULL,
    agent_kind TEXT NOT NULL,
    state TEXT NOT NULL,
    priority BIGINT NOT NULL DEFAULT 0,
    created_at_ms BIGINT NOT NULL,
    started_at_ms BIGINT,
    finished_at_ms BIGINT,
    session TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    summary TEXT,
    failure TEXT,
    exit_code INTEGER,
    transcript TEXT,
    timeout_s BIGINT,
    policy TEXT,
    attention TEXT,
    base TEXT,
    in_place BOOLEAN NOT NULL DEFAULT false,
    isolation TEXT,
    review TEXT,
    host TEXT,
    epoch BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX tasks_queued ON drydock.tasks (priority DESC, created_at_ms, seq)
    WHERE state = 'queued';
CREATE INDEX tasks_running ON drydock.tasks (host) WHERE state = 'running';
CREATE TABLE drydock.queue_settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mode TEXT NOT NULL,
    max_concurrent INTEGER NOT NULL
);
INSERT INTO drydock.queue_settings (id, mode, max_concurrent) VALUES (1, 'manual', 2);
CREATE TABLE drydock.hosts (
    name TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    url TEXT NOT NULL,
    roots TEXT NOT NULL,
    agents TEXT NOT NULL,
    cap INTEGER,
    started_at_ms BIGINT NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    lease_expires_at TIMESTAMPTZ NOT NULL
);
"#,
    // One-time codes for a person to open another host's dashboard from this one.
    r#"
CREATE TABLE drydock.viewer_codes (
    code TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
"#,
    // Its project as any host names it (root name and path below it), as JSON.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN place TEXT;
"#,
    // The git remote a host without the project clones it from.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN repository TEXT;
"#,
    // Its result's way to its branch (the landing queue), as JSON.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN landing TEXT;
"#,
    // The files it is expected to change (globs), as JSON.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN touches TEXT;
"#,
    // The name its author gave it: one task a key.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN request_key TEXT UNIQUE;
"#,
    // What its agent spent, attempt by attempt, as JSON.
    r#"
ALTER TABLE drydock.tasks ADD COLUMN usage TEXT;
"#,
    // What the tasks starting in one day may spend, as JSON.
    r#"
ALTER TABLE drydock.queue_settings ADD COLUMN daily_budgets TEXT;
"#,
];

pub struct PgStore {
    link: PgLink,
    url: String,
    shown: String,
    clock: LeaseClock,
}

impl PgStore {
    /// Connects to the database at `url` and brings the schema up to date (one host at a
    /// time: hosts that start together wait for each other's migration).
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        Self::open_with_clock(url, LeaseClock::default())
    }

    /// [`Self::open`], its leases on `clock`.
    pub fn open_with_clock(url: &str, clock: LeaseClock) -> Result<PgStore, StoreError> {
        let shown = redacted(url);
        let link = PgLink::connect(url, &shown)?;
        let store = PgStore {
            link,
            url: url.to_string(),
            shown,
            clock,
        };
        store.migrate()?;
        Ok(store)
    }

    /// The URL it was opened with (password and all: for the listener's connection).
    pub fn url(&self) -> &str {
        &self.url
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let shown = self.shown.clone();
        self.checked(move |tx| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])?;
            tx.batch_execute(
                "CREATE SCHEMA IF NOT EXISTS drydock;
                 CREATE TABLE IF NOT EXISTS drydock.schema_version (version INTEGER NOT NULL);",
            )?;
            let found: Option<i32> = tx
                .query_opt("SELECT version FROM drydock.schema_version", &[])?
                .map(|row| row.get(0));
            let found = found.unwrap_or(0) as usize;
            if found > MIGRATIONS.len() {
                return Ok(Err(StoreError::TooNew {
                    path: shown,
                    found,
                    known: MIGRATIONS.len(),
                }));
            }
            for migration in MIGRATIONS.iter().skip(found) {
                tx.batch_execute(migration)?;
            }
            tx.execute("DELETE FROM drydock.schema_version", &[])?;
            tx.execute(
                "INSERT INTO drydock.schema_version (version) VALUES ($1)",
                &[&(MIGRATIONS.len() as i32)],
            )?;
            Ok(Ok(()))
        })
    }

    /// Runs `work` in one transaction, committed when it returns Ok. Its own outcome (a
    /// refusal) is the inner Result, so a refusal rolls back too.
    fn transaction<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Transaction<'_>) -> Result<T, ::postgres::Error> + Send + 'static,
    ) -> Result<T, StoreError> {
        let shown = self.shown.clone();
        self.link.run(move |client: &mut Client| {
            let mut tx = client.transaction().map_err(|e| sql(&shown, e))?;
            let value = work(&mut tx).map_err(|e| sql(&shown, e))?;
            tx.commit().map_err(|e| sql(&shown, e))?;
            Ok(value)
        })
    }

    /// Runs `work` in a transaction that commits only when it succeeds.
    fn checked<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Transaction<'_>) -> Result<Result<T, StoreError>, ::postgres::Error>
        + Send
        + 'static,
    ) -> Result<T, StoreError> {
        self.checked_within(CALL_DEADLINE, work)
    }

    /// [`Self::checked`] for work that may take up to `limit`.
    fn checked_within<T: Send + 'static>(
        &self,
        limit: Duration,
        work: impl FnOnce(&mut Transaction<'_>) -> Result<Result<T, StoreError>, ::postgres::Error>
        + Send
        + 'static,
    ) -> Result<T, StoreError> {
        let shown = self.shown.clone();
        self.link.run_within(limit, move |client: &mut Client| {
            let mut tx = client.transaction().map_err(|e| sql(&shown, e))?;
            let value = work(&mut tx).map_err(|e| sql(&shown, e))?;
            match value {
                Ok(value) => {
                    tx.commit().map_err(|e| sql(&shown, e))?;
                    Ok(value)
                }
                // Dropping the transaction rolls it back.
                Err(refusal) => Err(refusal),
            }
        })
    }

    /// Stores `tasks` as they are (ids, states, records) and `settings`, in one transaction,
    /// into an empty queue; Err(n) when it holds n tasks already. How many were stored.
    pub fn import(
        &self,
        tasks: Vec<Task>,
        settings: QueueSettings,
    ) -> Result<Result<usize, usize>, StoreError> {
        let shown = self.shown.clone();
        self.checked_within(IMPORT_LIMIT, move |tx| {
            let present: i64 = tx
                .query_one("SELECT COUNT(*) FROM drydock.tasks", &[])?
                .get(0);
            if present > 0 {
                return Ok(Ok(Err(present as usize)));
            }
            for task in &tasks {
                tx.execute(
                    "INSERT INTO drydock.tasks (id, title, description, project_path, agent_kind,
                        state, priority, created_at_ms, started_at_ms, finished_at_ms, session,
                        attempts, summary, failure, exit_code, transcript, timeout_s, policy,
                        attention, base, in_place, isolation, review, host, epoch, place,
                        repository, landing, touches, request_key, usage)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                        $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29,
                        $30, $31)",
                    &[
                        &task.id,
                        &task.title,
                        &task.description,
                        &task.project_path,
                        &task.agent_kind,
                        &task.state.name(),
                        &task.priority,
                        &(task.created_at_ms as i64),
                        &task.started_at_ms.map(|v| v as i64),
                        &task.finished_at_ms.map(|v| v as i64),
                        &task.session,
                        &(task.attempts as i32),
                        &task.summary,
                        &task.failure,
                        &task.exit_code,
                        &task.transcript,
                        &task.timeout_s.map(|v| v as i64),
                        &task.policy,
                        &task.attention,
                        &task.base,
                        &task.in_place,
                        &task.isolation.as_ref().map(to_json),
                        &task.review.as_ref().map(to_json),
                        &task.host,
                        &task.epoch,
                        &task.place.as_ref().map(to_json),
                        &task.repository,
                        &task.landing.as_ref().map(to_json),
                        &touches_json(&task.touches),
                        &task.key,
                        &task.usage.as_ref().map(to_json),
                    ],
                )?;
            }
            tx.execute(
                "UPDATE drydock.queue_settings SET mode = $1, max_concurrent = $2 WHERE id = 1",
                &[&settings.mode.name(), &(settings.max_concurrent as i32)],
            )?;
            let stored: i64 = tx
                .query_one("SELECT COUNT(*) FROM drydock.tasks", &[])?
                .get(0);
            if stored as usize != tasks.len() {
                return Ok(Err(StoreError::Sql {
                    path: shown,
                    message: format!(
                        "{stored} task(s) stored of {}; nothing was kept",
                        tasks.len()
                    ),
                }));
            }
            notify(tx)?;
            Ok(Ok(Ok(stored as usize)))
        })
    }

    fn query_tasks(
        &self,
        sql_text: &'static str,
        state: Option<&str>,
    ) -> Result<Vec<Task>, StoreError> {
        let state = state.map(str::to_string);
        let shown = self.shown.clone();
        self.link.run(move |client| {
            let rows = client
                .query(sql_text, &[&state])
                .map_err(|e| sql(&shown, e))?;
            rows.iter().map(|row| task_of(row, &shown)).collect()
        })
    }

    fn set_json(
        &self,
        id: &str,
        column: &'static str,
        value: &impl Serialize,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(value).expect("task records serialize");
        let id = id.to_string();
        let changed = self.transaction(move |tx| {
            tx.execute(
                &format!("UPDATE drydock.tasks SET {column} = $2 WHERE id = $1"),
                &[&id, &json],
            )
            .map(|n| (n, id))
        })?;
        match changed {
            (0, id) => Err(StoreError::UnknownTask { id }),
            _ => Ok(()),
        }
    }
}

impl Queue for PgStore {
    fn location(&self) -> String {
        self.shown.clone()
    }

    fn add_all(&self, new: Vec<NewTask>) -> Result<Vec<Added>, StoreError> {
        let shown = self.shown.clone();
        self.checked(move |tx| {
            let mut added = Vec::with_capacity(new.len());
            for new in new {
                match add_in(tx, new, &shown)? {
                    Ok(one) => added.push(one),
                    Err(refusal) => return Ok(Err(refusal)),
                }
            }
            notify(tx)?;
            Ok(Ok(added))
        })
    }

    fn get(&self, id: &str) -> Result<Task, StoreError> {
        let id = id.to_string();
        let shown = self.shown.clone();
        self.link.run(move |client| {
            let row = client
                .query_opt("SELECT * FROM drydock.tasks WHERE id = $1", &[&id])
                .map_err(|e| sql(&shown, e))?;
            match row {
                Some(row) => task_of(&row, &shown),
                None => Err(StoreError::UnknownTask { id }),
            }
        })
    }

    fn list(&self, state: Option<TaskState>) -> Result<Vec<Task>, StoreError> {
        self.query_tasks(
            "SELECT * FROM drydock.tasks WHERE $1::text IS NULL OR state = $1
             ORDER BY created_at_ms, seq",
            state.map(TaskState::name),
        )
    }

    fn queued_in_order(&self) -> Result<Vec<Task>, StoreError> {
        self.query_tasks(
            "SELECT * FROM drydock.tasks WHERE state = $1
             ORDER BY priority DESC, created_at_ms, seq",
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
        let attention = landing.attention().map(str::to_string);
        let id = id.to_string();
        let changed = self.transaction(move |tx| {
            let changed = tx.execute(
                "UPDATE drydock.tasks SET landing = $2, attention = $3 WHERE id = $1",
                &[&id, &json, &attention],
            )?;
            if changed > 0 {
                notify(tx)?;
            }
            Ok((changed, id))
        })?;
        match changed {
            (0, id) => Err(StoreError::UnknownTask { id }),
            _ => Ok(()),
        }
    }

    fn clear_review(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.transaction(move |tx| {
            tx.execute(
                "UPDATE drydock.tasks SET review = NULL WHERE id = $1",
                &[&id],
            )
        })?;
        Ok(())
    }

    fn transition(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
        lease: Option<&Lease>,
    ) -> Result<Task, StoreError> {
        let id = id.to_string();
        let lease = lease.cloned();
        let shown = self.shown.clone();
        self.checked(move |tx| {
            let Some(row) = tx.query_opt(
                "SELECT * FROM drydock.tasks WHERE id = $1 FOR UPDATE",
                &[&id],
            )?
            else {
                return Ok(Err(StoreError::UnknownTask { id }));
            };
            let task = match task_of(&row, &shown) {
                Ok(task) => task,
                Err(error) => return Ok(Err(error)),
            };
            let to = match next_state(&task, transition, lease.as_ref()) {
                Ok(to) => to,
                Err(refused) => return Ok(Err(refused)),
            };
            let now = unix_millis(SystemTime::now()) as i64;
            match transition {
                Transition::Retry | Transition::SendBack => tx.execute(
                    "UPDATE drydock.tasks SET state = $2, attempts = attempts + 1,
                        started_at_ms = NULL, finished_at_ms = NULL, session = NULL,
                        summary = NULL, failure = NULL, exit_code = NULL, attention = NULL
                     WHERE id = $1",
                    &[&id, &to.name()],
                )?,
                _ => tx.execute(
                    "UPDATE drydock.tasks SET state = $2, finished_at_ms = $3, attention = NULL,
                        session = COALESCE($4, session) WHERE id = $1",
                    &[&id, &to.name(), &now, &record.session],
                )?,
            };
            let row = tx.query_one(
                "UPDATE drydock.tasks SET summary = COALESCE($2, summary),
                    failure = COALESCE($3, failure), exit_code = COALESCE($4, exit_code),
                    transcript = COALESCE($5, transcript)
                 WHERE id = $1 RETURNING *",
                &[
                    &id,
                    &record.summary,
                    &record.failure,
                    &record.exit_code,
                    &record.transcript,
                ],
            )?;
            notify(tx)?;
            Ok(task_of(&row, &shown))
        })
    }

    fn claim(&self, candidates: &[String], claimer: &Claimer) -> Result<Option<Task>, StoreError> {
        let candidates = candidates.to_vec();
        let claimer = claimer.clone();
        let shown = self.shown.clone();
        let now = unix_millis(SystemTime::now()) as i64;
        let ahead = self.clock.ahead_s();
        self.checked(move |tx| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CLAIM_LOCK])?;
            let counts = tx.query_one(
                "SELECT (SELECT max_concurrent FROM drydock.queue_settings WHERE id = 1),
                    (SELECT COUNT(*) FROM drydock.tasks WHERE state = 'running'),
                    (SELECT COUNT(*) FROM drydock.tasks WHERE state = 'running' AND host = $1),
                    EXISTS (SELECT 1 FROM drydock.hosts WHERE name = $1 AND session = $2
                        AND lease_expires_at > now() + make_interval(secs => $3))",
                &[&claimer.host, &claimer.session, &ahead],
            )?;
            let cap: i32 = counts.get(0);
            let running: i64 = counts.get(1);
            let here: i64 = counts.get(2);
            let leased: bool = counts.get(3);
            let full =
                running >= i64::from(cap) || claimer.cap.is_some_and(|cap| here >= i64::from(cap));
            if !leased || full {
                return Ok(Ok(None));
            }
            let claimed = tx.query_opt(
                "WITH pick AS (
                    SELECT id FROM drydock.tasks WHERE state = 'queued' AND id = ANY($1)
                    ORDER BY priority DESC, created_at_ms, seq
                    LIMIT 1 FOR UPDATE SKIP LOCKED)
                 UPDATE drydock.tasks t SET state = 'running', started_at_ms = $2,
                    finished_at_ms = NULL, host = $3, epoch = t.epoch + 1,
                    session = 'task-' || t.id
                        || CASE WHEN t.epoch = 0 THEN '' ELSE '-' || (t.epoch + 1) END
                 FROM pick WHERE t.id = pick.id RETURNING t.*",
                &[&candidates, &now, &claimer.host],
            )?;
            Ok(claimed.map(|row| task_of(&row, &shown)).transpose())
        })
    }

    fn relocate(&self, id: &str, lease: &Lease, project_path: &str) -> Result<Task, StoreError> {
        let (id, path) = (id.to_string(), project_path.to_string());
        let lease = lease.clone();
        let shown = self.shown.clone();
        self.checked(move |tx| {
            let moved = tx.query_opt(
                "UPDATE drydock.tasks SET project_path = $4
                 WHERE id = $1 AND state = 'running' AND host = $2 AND epoch = $3
                 RETURNING *",
                &[&id, &lease.host, &lease.epoch, &path],
            )?;
            if let Some(row) = moved {
                return Ok(task_of(&row, &shown));
            }
            let now = tx.query_opt("SELECT * FROM drydock.tasks WHERE id = $1", &[&id])?;
            Ok(match now.map(|row| task_of(&row, &shown)) {
                Some(Ok(task)) => Err(fenced(&task, &lease)),
                Some(Err(error)) => Err(error),
                None => Err(StoreError::UnknownTask { id }),
            })
        })
    }

    fn set_attention(
        &self,
        id: &str,
        why: Option<&str>,
        lease: Option<&Lease>,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        let why = why.map(str::to_string);
        let (host, epoch) = (lease.map(|l| l.host.clone()), lease.map(|l| l.epoch));
        let changed = self.transaction(move |tx| {
            let changed = tx.execute(
                "UPDATE drydock.tasks SET attention = $2
                 WHERE id = $1 AND state IN ('running', 'done') AND attention IS DISTINCT FROM $2
                    AND ($3::text IS NULL OR (host = $3 AND epoch = $4))",
                &[&id, &why, &host, &epoch],
            )?;
            if changed > 0 {
                notify(tx)?;
            }
            Ok(changed)
        })?;
        Ok(changed > 0)
    }

    fn set_transcript(&self, id: &str, transcript: &str) -> Result<(), StoreError> {
        let (id, transcript) = (id.to_string(), transcript.to_string());
        self.transaction(move |tx| {
            tx.execute(
                "UPDATE drydock.tasks SET transcript = $2 WHERE id = $1",
                &[&id, &transcript],
            )
        })?;
        Ok(())
    }

    fn count(&self, state: TaskState) -> Result<u32, StoreError> {
        let state = state.name();
        let shown = self.shown.clone();
        self.link.run(move |client| {
            let row = client
                .query_one(
                    "SELECT COUNT(*) FROM drydock.tasks WHERE state = $1",
                    &[&state],
                )
                .map_err(|e| sql(&shown, e))?;
            Ok(row.get::<_, i64>(0) as u32)
        })
    }

    fn settings(&self) -> Result<QueueSettings, StoreError> {
        let shown = self.shown.clone();
        self.link.run(move |client| {
            let row = client
                .query_one(
                    "SELECT mode, max_concurrent FROM drydock.queue_settings WHERE id = 1",
                    &[],
                )
                .map_err(|e| sql(&shown, e))?;
            Ok(QueueSettings {
                mode: QueueMode::parse(row.get(0)),
                max_concurrent: row.get::<_, i32>(1) as u32,
            })
        })
    }

    fn daily_budgets(&self) -> Result<DailyBudgets, StoreError> {
        let shown = self.shown.clone();
        self.link.run(move |client| {
            let row = client
                .query_one(
                    "SELECT daily_budgets FROM drydock.queue_settings WHERE id = 1",
                    &[],
                )
                .map_err(|e| sql(&shown, e))?;
            let json: Option<String> = row.get(0);
            Ok(json
                .and_then(|json| serde_json::from_str(&json).ok())
                .unwrap_or_default())
        })
    }

    fn set_daily_budgets(&self, budgets: &DailyBudgets) -> Result<(), StoreError> {
        let json = serde_json::to_string(budgets).expect("budgets serialize");
        self.transaction(move |tx| {
            tx.execute(
                "UPDATE drydock.queue_settings SET daily_budgets = $1 WHERE id = 1",
                &[&json],
            )?;
            notify(tx)
        })
    }

    fn set_settings(&self, settings: QueueSettings) -> Result<(), StoreError> {
        self.transaction(move |tx| {
            tx.execute(
                "UPDATE drydock.queue_settings SET mode = $1, max_concurrent = $2 WHERE id = 1",
                &[&settings.mode.name(), &(settings.max_concurrent as i32)],
            )?;
            notify(tx)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn register_host(
        &self,
        entry: &HostEntry,
        session: &str,
        lease_ms: u64,
    ) -> Result<(), StoreError> {
        let entry = entry.clone();
        let session = session.to_string();
        let roots = serde_json::to_string(&entry.roots).expect("strings serialize");
        let agents = serde_json::to_string(&entry.agents).expect("strings serialize");
        let started = unix_millis(SystemTime::now()) as i64;
        let ahead = self.clock.ahead_s();
        self.transaction(move |tx| {
            tx.execute(
                "INSERT INTO drydock.hosts (name, session, url, roots, agents, cap, started_at_ms,
                    heartbeat_at, lease_expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $9),
                    now() + make_interval(secs => $9::float8 + $8::float8))
                 ON CONFLICT (name) DO UPDATE SET session = $2, url = $3, roots = $4,
                    agents = $5, cap = $6, started_at_ms = $7,
                    heartbeat_at = now() + make_interval(secs => $9),
                    lease_expires_at = now() + make_interval(secs => $9::float8 + $8::float8)",
                &[
                    &entry.name,
                    &session,
                    &entry.url,
                    &roots,
                    &agents,
                    &entry.cap.map(|c| c as i32),
                    &started,
                    &(lease_ms as f64 / 1000.0),
                    &ahead,
                ],
            )?;
            notify(tx)
        })
    }

    fn heartbeat(&self, name: &str, session: &str, lease_ms: u64) -> Result<Heartbeat, StoreError> {
        let (name, session) = (name.to_string(), session.to_string());
        let ahead = self.clock.ahead_s();
        let renewed = self.transaction(move |tx| {
            tx.execute(
                "UPDATE drydock.hosts SET heartbeat_at = now() + make_interval(secs => $4),
                    lease_expires_at = now() + make_interval(secs => $4::float8 + $3::float8)
                 WHERE name = $1 AND session = $2",
                &[&name, &session, &(lease_ms as f64 / 1000.0), &ahead],
            )
        })?;
        Ok(match renewed {
            0 => Heartbeat::Superseded,
            _ => Heartbeat::Renewed,
        })
    }

    fn rescue_lost(&self, requeue: bool) -> Result<Vec<Task>, StoreError> {
        let shown = self.shown.clone();
        let now = unix_millis(SystemTime::now()) as i64;
        let ahead = self.clock.ahead_s();
        self.checked(move |tx| {
            let ours: bool = tx
                .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&RESCUE_LOCK])?
                .get(0);
            if !ours {
                return Ok(Ok(Vec::new()));
            }
            let lost = tx.query(
                "SELECT t.id, t.host, t.epoch FROM drydock.tasks t
                 WHERE t.state = 'running' AND t.host IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM drydock.hosts h
                    WHERE h.name = t.host
                        AND h.lease_expires_at > now() + make_interval(secs => $1))
                 FOR UPDATE OF t",
                &[&ahead],
            )?;
            let mut rescued = Vec::new();
            for row in &lost {
                let (id, host, epoch): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
                let failure = format!("lost: its host {host} stopped renewing its lease");
                let row = match requeue {
                    true => tx.query_one(
                        "UPDATE drydock.tasks SET state = 'queued', attempts = attempts + 1,
                            started_at_ms = NULL, finished_at_ms = NULL, session = NULL,
                            attention = NULL, summary = NULL, failure = $3, exit_code = NULL
                         WHERE id = $1 AND state = 'running' AND epoch = $2 RETURNING *",
                        &[&id, &epoch, &failure],
                    )?,
                    false => tx.query_one(
                        "UPDATE drydock.tasks SET state = 'lost', finished_at_ms = $3,
                            attention = NULL, failure = $4
                         WHERE id = $1 AND state = 'running' AND epoch = $2 RETURNING *",
                        &[&id, &epoch, &now, &failure],
                    )?,
                };
                rescued.push(row);
            }
            if !rescued.is_empty() {
                notify(tx)?;
            }
            Ok(rescued.iter().map(|row| task_of(row, &shown)).collect())
        })
    }

    fn hosts(&self) -> Result<Vec<HostStatus>, StoreError> {
        let shown = self.shown.clone();
        let ahead = self.clock.ahead_s();
        self.link.run(move |client| {
            let rows = client
                .query(
                    "WITH clock AS (SELECT now() + make_interval(secs => $1) AS now)
                     SELECT h.name, h.url, h.roots, h.agents, h.cap, h.started_at_ms,
                        h.lease_expires_at > clock.now AS up,
                        (EXTRACT(EPOCH FROM clock.now - h.heartbeat_at) * 1000)::bigint AS ago,
                        ARRAY(SELECT t.id FROM drydock.tasks t
                              WHERE t.state = 'running' AND t.host = h.name ORDER BY t.id)
                     FROM drydock.hosts h, clock ORDER BY h.name",
                    &[&ahead],
                )
                .map_err(|e| sql(&shown, e))?;
            Ok(rows.iter().map(host_of).collect())
        })
    }

    fn issue_viewer_code(&self, host: &str) -> Result<Option<String>, StoreError> {
        let (host, code) = (host.to_string(), crate::private::random_hex(24));
        let issued = code.clone();
        self.transaction(move |tx| {
            tx.execute(
                "DELETE FROM drydock.viewer_codes WHERE expires_at < now()",
                &[],
            )?;
            tx.execute(
                "INSERT INTO drydock.viewer_codes (code, host, expires_at)
                 VALUES ($1, $2, now() + interval '1 minute')",
                &[&code, &host],
            )
        })?;
        Ok(Some(issued))
    }

    fn take_viewer_code(&self, host: &str, code: &str) -> Result<bool, StoreError> {
        let (host, code) = (host.to_string(), code.to_string());
        let taken = self.transaction(move |tx| {
            let row = tx.query_opt(
                "DELETE FROM drydock.viewer_codes WHERE code = $1
                 RETURNING host = $2 AND expires_at > now()",
                &[&code, &host],
            )?;
            Ok(row.is_some_and(|row| row.get::<_, bool>(0)))
        })?;
        Ok(taken)
    }
}

/// Wakes every host listening (delivered when the transaction commits; several in one
/// transaction arrive as one).
fn notify(tx: &mut Transaction<'_>) -> Result<(), ::postgres::Error> {
    tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])
        .map(|_| ())
}

/// `url` without its password, whether in its user information or a `password=` parameter.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // As libpq reads it: the user information ends at the last `@` before the first `/`.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (shown, tail) = match rest[..authority_end].rsplit_once('@') {
        Some((credentials, _)) => {
            let user = credentials
                .split_once(':')
                .map_or(credentials, |(user, _)| user);
            let hidden = match credentials.contains(':') {
                true => format!("{user}:***@"),
                false => format!("{user}@"),
            };
            (hidden, &rest[credentials.len() + 1..])
        }
        None => (String::new(), rest),
    };
    format!("{scheme}://{shown}{}", without_password_parameters(tail))
}

/// `place` (host, path, parameters) with each `password=` parameter's value hidden.
fn without_password_parameters(place: &str) -> String {
    let Some((before, query)) = place.split_once('?') else {
        return place.to_string();
    };
    let parameters: Vec<String> = query
        .split('&')
        .map(|parameter| match parameter.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => parameter.to_string(),
        })
        .collect();
    format!("{before}?{}", parameters.join("&"))
}

/// Adds `new` inside `tx`, unless its key names a task already. Another host adding the same
/// key at the same time waits for this one's commit at the insert (the key is unique), then
/// finds the task.
fn add_in(
    tx: &mut Transaction<'_>,
    new: NewTask,
    shown: &str,
) -> Result<Result<Added, StoreError>, ::postgres::Error> {
    let now = unix_millis(SystemTime::now()) as i64;
    loop {
        if let Some(key) = &new.key
            && let Some(row) =
                tx.query_opt("SELECT * FROM drydock.tasks WHERE request_key = $1", &[key])?
        {
            return Ok(task_of(&row, shown).and_then(|holder| known(&new, key, holder)));
        }
        let id = crate::private::random_hex(4);
        // A taken id or key inserts nothing: the loop looks again.
        let inserted = tx.query_opt(
            "INSERT INTO drydock.tasks (id, title, description, project_path, agent_kind,
                state, priority, created_at_ms, timeout_s, policy, base, in_place, place,
                repository, touches, request_key, usage)
             VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10, $11, $12, $13,
                $14, $15, $16)
             ON CONFLICT DO NOTHING RETURNING *",
            &[
                &id,
                &new.title,
                &new.description,
                &new.project_path,
                &new.agent_kind,
                &new.priority,
                &now,
                &new.timeout_s.map(|s| s as i64),
                &new.policy,
                &new.base,
                &new.in_place,
                &new.place.as_ref().map(to_json),
                &new.repository,
                &touches_json(&new.touches),
                &new.key,
                &new.usage().as_ref().map(to_json),
            ],
        )?;
        if let Some(row) = inserted {
            return Ok(task_of(&row, shown).map(Added::Queued));
        }
    }
}

fn task_of(row: &Row, shown: &str) -> Result<Task, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt {
        path: shown.to_string(),
        message,
    };
    let state: String = row.get("state");
    Ok(Task {
        id: row.get("id"),
        title: row.get("title"),
        description: row.get("description"),
        project_path: row.get("project_path"),
        place: json_column(row, "place").map_err(corrupt)?,
        repository: row.get("repository"),
        agent_kind: row.get("agent_kind"),
        state: TaskState::parse(&state)
            .ok_or_else(|| corrupt(format!("unknown task state {state:?}")))?,
        priority: row.get("priority"),
        created_at_ms: row.get::<_, i64>("created_at_ms") as u64,
        started_at_ms: row.get::<_, Option<i64>>("started_at_ms").map(|v| v as u64),
        finished_at_ms: row
            .get::<_, Option<i64>>("finished_at_ms")
            .map(|v| v as u64),
        session: row.get("session"),
        attempts: row.get::<_, i32>("attempts") as u32,
        summary: row.get("summary"),
        failure: row.get("failure"),
        exit_code: row.get("exit_code"),
        transcript: row.get("transcript"),
        timeout_s: row.get::<_, Option<i64>>("timeout_s").map(|v| v as u64),
        policy: row.get("policy"),
        attention: row.get("attention"),
        base: row.get("base"),
        in_place: row.get("in_place"),
        isolation: json_column(row, "isolation").map_err(corrupt)?,
        review: json_column(row, "review").map_err(corrupt)?,
        landing: json_column(row, "landing").map_err(corrupt)?,
        usage: json_column(row, "usage").map_err(corrupt)?,
        touches: json_column(row, "touches")
            .map_err(corrupt)?
            .unwrap_or_default(),
        host: row.get("host"),
        epoch: row.get("epoch"),
        key: row.get("request_key"),
    })
}

/// A task's `touches`, NULL when it names none.
fn touches_json(touches: &[String]) -> Option<String> {
    (!touches.is_empty()).then(|| to_json(&touches))
}

fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("task records serialize")
}

fn json_column<T: serde::de::DeserializeOwned>(row: &Row, name: &str) -> Result<Option<T>, String> {
    row.get::<_, Option<String>>(name)
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| format!("{name}: {e}"))
}

fn host_of(row: &Row) -> HostStatus {
    let list = |text: String| serde_json::from_str(&text).unwrap_or_default();
    HostStatus {
        entry: HostEntry {
            name: row.get(0),
            url: row.get(1),
            roots: list(row.get(2)),
            agents: list(row.get(3)),
            cap: row.get::<_, Option<i32>>(4).map(|c| c as u32),
        },
        started_at_ms: row.get::<_, i64>(5) as u64,
        up: row.get(6),
        last_seen_ms_ago: row.get::<_, i64>(7).max(0) as u64,
        running: row.get(8),
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_password_is_never_shown_wherever_the_url_holds_it() {
        for (url, shown) in [
            (
                "postgres://q:secret@db:5432/q",
                "postgres://q:***@db:5432/q",
            ),
            (
                "postgres://db/q?user=q&password=secret&sslmode=require",
                "postgres://db/q?user=q&password=***&sslmode=require",
            ),
            (
                "postgresql://db?PASSWORD=secret",
                "postgresql://db?PASSWORD=***",
            ),
            (
                "postgres://q:se@cr?et@db/q?password=x",
                "postgres://q:***@db/q?password=***",
            ),
            ("postgres://q@db/q", "postgres://q@db/q"),
            ("postgres://db/q", "postgres://db/q"),
        ] {
            assert_eq!(redacted(url), shown);
            assert!(!redacted(url).contains("secret"), "{url}");
        }
    }
}
