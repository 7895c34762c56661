//! drydock's project memory: every build and test result it ran, the problems they had, and
//! the change that fixed each one, kept in the data directory and findable (history_search),
//! and told to the agent that meets the same kind of problem again (`seen_before`).
//!
//! A build tool's result is handed over as its call ends ([`Observer`]): what was seen
//! before is looked up then (an indexed query), and the recording itself (the project's
//! files, the run, the problems' lives) goes on in the background, one run after another in
//! the order they ended, so a call never waits for it and never fails because of it.

pub mod fix;
pub mod problem;
pub mod reports;
pub mod requests;
mod search;
pub mod snapshot;
pub mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};

use self::problem::{Problem, ProblemKind};
use self::snapshot::{Content, Manifest, SeenFiles};
use self::store::{HistoryStore, HistoryStoreError, NewRun, Note, Remembered};
use crate::config::Config;
use crate::docs::Docs;
use crate::events::unix_millis;
use crate::git::Git;
use crate::text_budget;
use crate::toolchain::observe::{Observed, ObservedResult, Observer, Started};
use crate::toolchain::reports::{BuildStatus, FormatStatus, RunEnd, SeenBefore, TestEnd};

/// At most this many `seen_before` entries in one result.
const MOST_SEEN_BEFORE: usize = 5;
/// A `seen_before` diff is cut at this size (history_search has the whole fix).
const SEEN_BEFORE_DIFF: usize = 4 * 1024;
/// The limits are enforced after every this many runs, or sooner once the contents kept
/// since grew by a tenth of the size limit.
const PRUNE_EVERY: u64 = 50;
/// The most of one problem's or note's text kept: its head and its tail (a test that printed
/// 50 MB is remembered by its failure, not by its output).
const LONGEST_TEXT: usize = 32 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] HistoryStoreError),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("the project memory is switched off ([history] enabled = false)")]
    Off,
}

/// The project memory of this drydock.
pub struct History {
    config: Arc<Config>,
    docs: Arc<Docs>,
    store: Arc<StoreSlot>,
    /// Runs waiting to be recorded, in the order they ended.
    jobs: Mutex<Option<mpsc::UnboundedSender<Work>>>,
    /// What was read of each project's files, so an unchanged file is not read again.
    seen_files: Arc<Mutex<HashMap<PathBuf, SeenFiles>>>,
}

/// The memory's file, opened on first use; a failed opening (a data directory not writable
/// yet) is tried again at the next use.
struct StoreSlot {
    path: PathBuf,
    store: Mutex<Option<Arc<HistoryStore>>>,
}

impl StoreSlot {
    fn get(&self) -> Result<Arc<HistoryStore>, HistoryError> {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = &*store {
            return Ok(store.clone());
        }
        let opened = Arc::new(HistoryStore::open(&self.path)?);
        *store = Some(opened.clone());
        Ok(opened)
    }
}

/// The project's files as a run saw them, read while it ran.
type Snapshot = tokio::task::JoinHandle<Option<(Manifest, Vec<Content>)>>;

/// A run to record.
struct Job {
    at_ms: u64,
    project: PathBuf,
    toolchain: &'static str,
    tool: &'static str,
    check: String,
    status: String,
    complete: bool,
    duration_ms: u64,
    client: Option<String>,
    problems: Vec<Problem>,
    snapshot: Option<Snapshot>,
}

/// A terminal's command or a task's end to record.
pub struct NoteJob {
    pub at_ms: u64,
    pub kind: ProblemKind,
    pub project: PathBuf,
    pub title: String,
    pub text: String,
    pub status: String,
    pub duration_ms: u64,
    pub by: String,
}

enum Work {
    Record(Box<Job>),
    Note(Box<NoteJob>),
    /// Answered once every run handed over before it is recorded.
    Flush(oneshot::Sender<()>),
}

impl History {
    pub fn new(config: Arc<Config>, docs: Arc<Docs>) -> Arc<History> {
        let store = Arc::new(StoreSlot {
            path: config.data_dir.join("history.sqlite3"),
            store: Mutex::new(None),
        });
        Arc::new(History {
            config,
            docs,
            store,
            jobs: Mutex::new(None),
            seen_files: Arc::default(),
        })
    }

    pub fn store(&self) -> Result<Arc<HistoryStore>, HistoryError> {
        self.store.get()
    }

    /// Waits until every run handed over so far is recorded.
    pub async fn flush(&self) {
        let (done, recorded) = oneshot::channel();
        if self.send(Work::Flush(done)) {
            let _ = recorded.await;
        }
    }

    fn send(&self, work: Work) -> bool {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let sender = jobs.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(worker(self.config.clone(), self.store.clone(), receiver));
            sender
        });
        sender.send(work).is_ok()
    }

    /// What this run's errors and failures share with problems fixed before.
    fn seen_before(&self, problems: &[Problem], toolchain: &str, project: &str) -> Vec<SeenBefore> {
        let Ok(store) = self.store() else {
            return Vec::new();
        };
        // Warnings count when they are all there is (a build with warnings as errors).
        let errors = problems.iter().any(|p| p.kind != ProblemKind::Warning);
        let mut seen = Vec::new();
        for problem in problems
            .iter()
            .filter(|p| !errors || p.kind != ProblemKind::Warning)
        {
            let family = problem.family(toolchain);
            let identity = problem.identity(toolchain);
            let Ok(earlier) = store.fixed_in_family(&family, project, 20) else {
                continue;
            };
            // The same problem fixed and back, then the same test, then the same file, then
            // the latest of its kind (the query put this project's first).
            let closeness = |e: &Remembered| {
                (
                    e.project == project,
                    e.problem.identity(toolchain) == identity,
                    e.problem.test.is_some() && e.problem.test == problem.test,
                    e.problem.file.is_some() && e.problem.file == problem.file,
                )
            };
            let Some(earlier) = earlier
                .into_iter()
                .filter(|e| e.fix.as_ref().is_some_and(|f| !f.files.is_empty()))
                .enumerate()
                .max_by_key(|(rank, e)| (closeness(e), std::cmp::Reverse(*rank)))
                .map(|(_, e)| e)
            else {
                continue;
            };
            if seen.iter().any(|s: &SeenBefore| s.history_id == earlier.id) {
                continue;
            }
            seen.push(seen_before_of(problem, &earlier, project));
            if seen.len() == MOST_SEEN_BEFORE {
                break;
            }
        }
        seen
    }
}

fn seen_before_of(problem: &Problem, earlier: &Remembered, project: &str) -> SeenBefore {
    let fix = earlier.fix.clone().unwrap_or_else(|| fix::Fix {
        files: Vec::new(),
        others: Vec::new(),
        diff: String::new(),
    });
    let diff = text_budget::head(
        &fix.diff,
        SEEN_BEFORE_DIFF,
        "history_search has the whole fix",
    );
    let name = problem
        .code
        .as_deref()
        .or(problem.test.as_deref())
        .map(|c| format!("{c}: "))
        .unwrap_or_default();
    SeenBefore {
        problem: format!("{name}{}", problem.message),
        earlier: match (&earlier.problem.file, earlier.problem.line) {
            (Some(file), Some(line)) => format!("{} ({file}:{line})", earlier.problem.message),
            (Some(file), None) => format!("{} ({file})", earlier.problem.message),
            _ => earlier.problem.message.clone(),
        },
        file: earlier.problem.file.clone(),
        other_project: (earlier.project != project).then(|| earlier.project.clone()),
        seen: earlier.seen,
        fixed_at_ms: earlier.resolved_ms.unwrap_or_default(),
        by: earlier.client.clone(),
        fix_files: fix.files,
        fix_others: fix.others,
        diff,
        history_id: earlier.id,
    }
}

impl Observer for History {
    fn starting(&self, project: &Path) -> Started {
        if !self.config.history.records(project) {
            return Started(Box::new(()));
        }
        let seen_files = self.seen_files.clone();
        let store = self.store().ok();
        let project = project.to_path_buf();
        let snapshot: Snapshot = tokio::spawn(async move {
            let paths = snapshot::files_of(&project).await;
            tokio::task::spawn_blocking(move || {
                let mut seen_files = seen_files.lock().unwrap_or_else(|e| e.into_inner());
                let seen = seen_files.entry(project.clone()).or_default();
                let known = |hash: &str| store.as_ref().is_some_and(|s| s.has_content(hash));
                snapshot::read(&project, paths, seen, known)
            })
            .await
            .ok()
        });
        Started(Box::new(snapshot))
    }

    fn observe(&self, started: Started, run: Observed<'_>) -> Vec<SeenBefore> {
        if !self.config.history.records(run.project) {
            return Vec::new();
        }
        // A format that applies changes the files itself: what it left is read at its end.
        let applied =
            matches!(run.result, ObservedResult::Format(r) if r.status == FormatStatus::Applied);
        let snapshot = match applied {
            true => None,
            false => started.0.downcast::<Snapshot>().ok().map(|s| *s),
        };
        let toolchain = match run.toolchain {
            crate::workspace::Toolchain::Cargo => "cargo",
            crate::workspace::Toolchain::Mix => "mix",
        };
        let (problems, status, complete, duration_ms) = match run.result {
            ObservedResult::Build(report) => (
                Problem::of_build(report),
                format!("{:?}", report.status).to_lowercase(),
                matches!(report.status, BuildStatus::Ok | BuildStatus::Failed),
                report.duration_ms,
            ),
            ObservedResult::Test(report) => (
                Problem::of_test(report),
                format!("{:?}", report.end.status()).to_lowercase(),
                matches!(
                    report.end,
                    TestEnd::Passed | TestEnd::Failed | TestEnd::BuildFailed(_)
                ),
                report.duration_ms,
            ),
            ObservedResult::Run(report) => (
                Problem::of_run(report),
                format!("{:?}", report.end.status()).to_lowercase(),
                !matches!(report.end, RunEnd::Timeout(_) | RunEnd::Cancelled(_)),
                report.duration_ms,
            ),
            ObservedResult::Format(report) => (
                Problem::of_format(report),
                format!("{:?}", report.status).to_lowercase(),
                matches!(
                    report.status,
                    FormatStatus::Formatted | FormatStatus::NeedsFormatting | FormatStatus::Applied
                ),
                report.duration_ms,
            ),
        };
        let project = run.project.display().to_string();
        let seen = self.seen_before(&problems, toolchain, &project);
        let job = Job {
            at_ms: unix_millis(SystemTime::now()),
            project: run.project.to_path_buf(),
            toolchain,
            tool: run.tool.name(),
            check: run.check,
            status,
            complete,
            duration_ms,
            client: run.client.map(str::to_string),
            problems,
            snapshot,
        };
        self.send(Work::Record(Box::new(job)));
        seen
    }
}

/// Records the runs handed over, one after another.
async fn worker(
    config: Arc<Config>,
    slot: Arc<StoreSlot>,
    mut jobs: mpsc::UnboundedReceiver<Work>,
) {
    let (mut recorded, mut grown) = (0u64, 0u64);
    let secrets = secrets_of(&config);
    while let Some(work) = jobs.recv().await {
        let mut job = match work {
            Work::Flush(done) => {
                let _ = done.send(());
                continue;
            }
            Work::Note(note) => {
                let recorded = usable(&slot).map(|store| record_note(&store, &note, &secrets));
                if let Some(Err(error)) = recorded {
                    let kind = note.kind.name();
                    tracing::warn!("the project memory did not record a {kind}: {error}");
                }
                continue;
            }
            Work::Record(job) => job,
        };
        let Some(store) = usable(&slot) else {
            continue;
        };
        match record(&store, &mut job, &secrets).await {
            Ok(bytes) => grown += bytes,
            Err(error) => {
                let tool = job.tool;
                tracing::warn!("the project memory did not record a {tool} run: {error}");
                continue;
            }
        }
        recorded += 1;
        if recorded.is_multiple_of(PRUNE_EVERY) || grown > config.history.max_bytes / 10 {
            prune(&store, &config);
            grown = 0;
        }
    }
}

/// The store, or None (said in the log) while it cannot be opened.
fn usable(slot: &StoreSlot) -> Option<Arc<HistoryStore>> {
    slot.get()
        .map_err(|error| tracing::warn!("the project memory records nothing: {error}"))
        .ok()
}

fn record_note(
    store: &HistoryStore,
    note: &NoteJob,
    secrets: &[String],
) -> Result<i64, HistoryError> {
    let project = note.project.display().to_string();
    let (title, text) = (kept(&note.title, secrets), kept(&note.text, secrets));
    Ok(store.record_note(&Note {
        at_ms: note.at_ms,
        kind: note.kind,
        project: &project,
        title: &title,
        text: &text,
        status: &note.status,
        duration_ms: note.duration_ms,
        by: &note.by,
    })?)
}

/// Records `job`; the bytes of new contents it kept.
async fn record(
    store: &HistoryStore,
    job: &mut Job,
    secrets: &[String],
) -> Result<u64, HistoryError> {
    let taken = match job.snapshot.take() {
        Some(snapshot) => snapshot.await.ok().flatten(),
        None => None,
    };
    let (manifest, contents) = match taken {
        Some(taken) => taken,
        None => {
            let mut seen = SeenFiles::default();
            snapshot::take(&job.project, &mut seen, |hash| store.has_content(hash)).await
        }
    };
    let head = Git::at(&job.project).commit_of("HEAD").await;
    let problems: Vec<(Problem, String, String)> = job
        .problems
        .iter()
        .map(|problem| {
            let mut problem = problem.clone();
            problem.text = kept(&problem.text, secrets);
            problem.message = kept(&problem.message, secrets);
            let identity = problem.identity(job.toolchain);
            let family = problem.family(job.toolchain);
            (problem, identity, family)
        })
        .collect();
    let project = job.project.display().to_string();
    let arguments = scrub(&job.check, secrets);
    store.record(
        &NewRun {
            at_ms: job.at_ms,
            project: &project,
            toolchain: job.toolchain,
            tool: job.tool,
            check_key: &job.check,
            arguments: &arguments,
            status: &job.status,
            complete: job.complete,
            duration_ms: job.duration_ms,
            client: job.client.as_deref(),
            head: head.as_deref(),
            manifest: Some(&manifest),
            contents: &contents,
        },
        &problems,
    )?;
    Ok(contents.iter().map(|c| c.bytes.len() as u64).sum())
}

/// Drops the oldest runs past the age limit, then while the file is over its size limit.
fn prune(store: &HistoryStore, config: &Config) {
    let now = unix_millis(SystemTime::now());
    let max_age = config.history.max_age.as_millis() as u64;
    let mut max_runs = usize::MAX;
    for _ in 0..10 {
        if let Err(error) = store.prune(now, max_age, max_runs) {
            tracing::warn!("keeping the project memory within its limits: {error}");
            return;
        }
        let size = store.file_bytes().unwrap_or(0);
        if size <= config.history.max_bytes {
            return;
        }
        let runs = store.sizes().map(|s| s.0 as usize).unwrap_or(0);
        if runs == 0 {
            return;
        }
        max_runs = runs - runs.div_ceil(10);
    }
}

/// The values recorded text must never hold: drydock's token and the environment's secrets.
fn secrets_of(config: &Config) -> Vec<String> {
    let mut secrets: Vec<String> = config
        .env_remove
        .iter()
        .filter(|name| !name.contains('*'))
        .filter_map(|name| std::env::var(name).ok())
        .chain(config.token.clone())
        .filter(|value| value.len() >= 6)
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// What is recorded of `text`: scrubbed, and within [`LONGEST_TEXT`].
fn kept(text: &str, secrets: &[String]) -> String {
    text_budget::fit(
        &scrub(text, secrets),
        LONGEST_TEXT,
        "not kept in the project memory",
    )
}

fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), "***");
        }
    }
    text
}

impl History {
    /// Records a terminal's finished command or a task's end, in the background, when its
    /// project is recorded.
    pub fn note(&self, note: NoteJob) {
        if self.config.history.records(&note.project) {
            self.send(Work::Note(Box::new(note)));
        }
    }

    /// Records what the event feed tells of: each command a terminal's shell finishes in an
    /// allowed directory. (Tasks' ends are recorded by the app, which reads their
    /// transcripts.)
    pub fn command_of(event: &crate::events::Event) -> Option<NoteJob> {
        let crate::events::EventKind::TerminalCommandFinished {
            session,
            cwd,
            command,
            exit_code,
            output,
            duration_ms,
        } = &event.kind
        else {
            return None;
        };
        Some(NoteJob {
            at_ms: event.at_ms,
            kind: ProblemKind::Command,
            project: PathBuf::from(cwd.as_ref()?),
            title: command.clone(),
            text: output.clone(),
            status: match exit_code {
                Some(code) => format!("exit {code}"),
                None => "exit unknown".into(),
            },
            duration_ms: *duration_ms,
            by: session.clone(),
        })
    }

    /// Forgets `project`'s runs and problems (every project's when None).
    pub async fn forget(&self, project: Option<&Path>) -> Result<(usize, usize), HistoryError> {
        self.flush().await;
        let store = self.store()?;
        Ok(store.forget(project.map(|p| p.display().to_string()).as_deref())?)
    }

    pub fn project_problems(
        &self,
        project: &Path,
        limit: usize,
    ) -> Result<Vec<Remembered>, HistoryError> {
        Ok(self
            .store()?
            .of_project(&project.display().to_string(), limit)?)
    }
}
