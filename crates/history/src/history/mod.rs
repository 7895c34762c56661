//! drydock's project memory: every build and test result it ran, the problems they had, and
//! the change that fixed each one, kept in the data directory and findable (history_search),
//! and told to the agent that meets the same kind of problem again (`seen_before`).
//!
//! A build tool's result is handed over as its call ends ([`Observer`]): what was seen
//! before is looked up then (an indexed query, given [`SEEN_BEFORE_WITHIN`]: a result never
//! waits on the memory), and the recording itself (the project's files, the run, the
//! problems' lives) goes on in the background, one run after another in the order they
//! ended, so a call never waits for it and never fails because of it. Every call to the
//! SQLite file is made off the async runtime (`access`).

mod access;
pub mod fix;
pub mod problem;
pub mod reports;
pub mod requests;
mod scrub;
mod search;
pub mod snapshot;
pub mod store;

pub use self::problem::ProblemKind;
pub use self::search::Reach;

use futures::FutureExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use self::access::{Deadline, StoreSlot};
use self::problem::Problem;
use self::scrub::Secrets;
use self::snapshot::{Content, Manifest, SeenFiles};
use self::store::{HistoryStore, HistoryStoreError, NewRun, Note, Remembered};
use crate::config::Config;
use crate::docs::Docs;
use crate::git::Git;
use crate::millis::unix_millis;
use crate::text_budget;
use crate::toolchain::observe::{Observed, ObservedResult, Observer, Started};
use crate::toolchain::reports::{
    BuildStatus, FormatStatus, RunEnd, SeenBefore, TestEnd, status_name,
};

/// At most this many `seen_before` entries in one result.
const MOST_SEEN_BEFORE: usize = 5;
/// A `seen_before` diff is cut at this size (history_search has the whole fix).
const SEEN_BEFORE_DIFF: usize = 4 * 1024;
/// How long a build's result waits for `seen_before` (an indexed query takes milliseconds);
/// past it the result goes without.
const SEEN_BEFORE_WITHIN: Duration = Duration::from_millis(500);
/// How long a history tool waits for the memory (for the runs before it to be recorded, then
/// for each read) before it answers that the memory is busy.
const ANSWERS_WITHIN: Duration = Duration::from_secs(2);
/// How long the recorder waits before it tries a write again that found the file busy (each
/// try itself waits out SQLite's busy timeout).
const RETRY_PAUSE: Duration = Duration::from_secs(1);
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
    /// Why the recorder waits, while the file is busy: what a history tool says when it
    /// cannot answer for every run before it.
    held_up: Arc<Mutex<Option<String>>>,
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
        let store = StoreSlot::new(config.data_dir.join("history.sqlite3"));
        Arc::new(History {
            config,
            docs,
            store,
            jobs: Mutex::new(None),
            seen_files: Arc::default(),
            held_up: Arc::default(),
        })
    }

    /// Waits until every run handed over so far is recorded.
    pub fn flush(&self) -> BoxFuture<'_, ()> {
        async move {
            let (done, recorded) = oneshot::channel();
            if self.send(Work::Flush(done)) {
                let _ = recorded.await;
            }
        }
        .boxed()
    }

    /// Waits until every run handed over so far is recorded, at most [`ANSWERS_WITHIN`]: a
    /// history tool answers for every run that ended before it, or says it cannot.
    async fn recorded(&self) -> Result<(), HistoryStoreError> {
        if tokio::time::timeout(ANSWERS_WITHIN, self.flush())
            .await
            .is_ok()
        {
            return Ok(());
        }
        let held_up = self.held_up.lock().unwrap_or_else(|e| e.into_inner());
        let why = held_up
            .clone()
            .unwrap_or_else(|| "it is still recording them".into());
        Err(access::busy(
            self.store.path(),
            format!("the runs that ended before this call are not recorded yet ({why})"),
        ))
    }

    fn send(&self, work: Work) -> bool {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let sender = jobs.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            let recorder = Recorder {
                config: self.config.clone(),
                slot: self.store.clone(),
                held_up: self.held_up.clone(),
            };
            tokio::spawn(recorder.work(receiver));
            sender
        });
        sender.send(work).is_ok()
    }

    /// What this run's errors and failures share with problems fixed before; nothing when
    /// the memory does not answer within [`SEEN_BEFORE_WITHIN`].
    async fn seen_before(
        &self,
        problems: &[Problem],
        toolchain: &'static str,
        project: &str,
    ) -> Vec<SeenBefore> {
        // Warnings count when they are all there is (a build with warnings as errors).
        let errors = problems.iter().any(|p| p.kind != ProblemKind::Warning);
        let wanted: Vec<Wanted> = problems
            .iter()
            .enumerate()
            .filter(|(_, p)| !errors || p.kind != ProblemKind::Warning)
            .map(|(index, p)| Wanted {
                index,
                family: p.family(toolchain),
                identity: p.identity(toolchain),
                test: p.test.clone(),
                file: p.file.clone(),
            })
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let here = project.to_string();
        let found = self
            .store
            .within(SEEN_BEFORE_WITHIN, move |store| {
                Ok(earlier_fixes(store, &wanted, toolchain, &here))
            })
            .await;
        match found {
            Ok(found) => found
                .iter()
                .map(|(index, earlier)| seen_before_of(&problems[*index], earlier, project))
                .collect(),
            Err(error) => {
                tracing::info!("a result went without seen_before: {error}");
                Vec::new()
            }
        }
    }
}

/// What `seen_before` looks for of one of the run's problems.
struct Wanted {
    /// Its place among the run's problems.
    index: usize,
    family: String,
    identity: String,
    test: Option<String>,
    file: Option<String>,
}

/// For each wanted problem in turn, the closest problem of its family fixed before (one
/// earlier problem once), at most [`MOST_SEEN_BEFORE`].
fn earlier_fixes(
    store: &HistoryStore,
    wanted: &[Wanted],
    toolchain: &str,
    project: &str,
) -> Vec<(usize, Remembered)> {
    let mut seen: Vec<(usize, Remembered)> = Vec::new();
    for problem in wanted {
        let Ok(earlier) = store.fixed_in_family(&problem.family, project, 20) else {
            continue;
        };
        // The same problem fixed and back, then the same test, then the same file, then
        // the latest of its kind (the query put this project's first).
        let closeness = |e: &Remembered| {
            (
                e.project == project,
                e.problem.identity(toolchain) == problem.identity,
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
        if seen.iter().any(|(_, s)| s.id == earlier.id) {
            continue;
        }
        seen.push((problem.index, earlier));
        if seen.len() == MOST_SEEN_BEFORE {
            break;
        }
    }
    seen
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
        if !records(&self.config, project) {
            return Started(Box::new(()));
        }
        let snapshot: Snapshot = tokio::spawn(snapshot_now(
            project.to_path_buf(),
            self.store.clone(),
            self.seen_files.clone(),
        ));
        Started(Box::new(snapshot))
    }

    fn observe<'a>(
        &'a self,
        started: Started,
        run: Observed<'_>,
    ) -> BoxFuture<'a, Vec<SeenBefore>> {
        if !records(&self.config, run.project) {
            return Box::pin(async { Vec::new() });
        }
        // A format that applies changes the files itself: what it left is read at its end.
        let applied =
            matches!(run.result, ObservedResult::Format(r) if r.status == FormatStatus::Applied);
        let snapshot = match applied {
            true => None,
            false => started.0.downcast::<Snapshot>().ok().map(|s| *s),
        };
        let toolchain = run.toolchain.name();
        let (problems, status, complete, duration_ms) = match run.result {
            ObservedResult::Build(report) => (
                Problem::of_build(report),
                status_name(report.status),
                matches!(report.status, BuildStatus::Ok | BuildStatus::Failed),
                report.duration_ms,
            ),
            ObservedResult::Test(report) => (
                Problem::of_test(report),
                status_name(report.end.status()),
                matches!(
                    report.end,
                    TestEnd::Passed | TestEnd::Failed | TestEnd::BuildFailed(_)
                ),
                report.duration_ms,
            ),
            ObservedResult::Run(report) => (
                Problem::of_run(report),
                status_name(report.end.status()),
                !matches!(report.end, RunEnd::Timeout(_) | RunEnd::Cancelled(_)),
                report.duration_ms,
            ),
            ObservedResult::Format(report) => (
                Problem::of_format(report),
                status_name(report.status),
                matches!(
                    report.status,
                    FormatStatus::Formatted | FormatStatus::NeedsFormatting | FormatStatus::Applied
                ),
                report.duration_ms,
            ),
        };
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
        Box::pin(async move {
            // Looked up before the run is recorded: what was fixed before this run.
            let project = job.project.display().to_string();
            let seen = self.seen_before(&job.problems, toolchain, &project).await;
            self.send(Work::Record(Box::new(job)));
            seen
        })
    }
}

/// The project's files now, read on a blocking thread (a project is up to
/// [`snapshot::MOST_FILES`] files), and the contents the memory does not keep yet.
async fn snapshot_now(
    project: PathBuf,
    slot: Arc<StoreSlot>,
    seen_files: Arc<Mutex<HashMap<PathBuf, SeenFiles>>>,
) -> Option<(Manifest, Vec<Content>)> {
    let paths = snapshot::files_of(&project).await;
    tokio::task::spawn_blocking(move || {
        // Not worth a wait behind an opening held up by a lock: without the memory, each
        // content read is kept as new (and written once).
        let store = slot
            .open_blocking(Some(Deadline::after(ANSWERS_WITHIN)))
            .ok();
        let mut seen_files = seen_files.lock().unwrap_or_else(|e| e.into_inner());
        let seen = seen_files.entry(project.clone()).or_default();
        snapshot::read(&project, paths, seen, known_to(store.as_deref()))
    })
    .await
    .ok()
}

/// Whether the memory keeps a content already. Once the memory does not answer, it is not
/// asked again (up to thousands of files, each waiting for a lock): a content kept twice is
/// written once.
fn known_to(store: Option<&HistoryStore>) -> impl FnMut(&str) -> bool + '_ {
    let mut asking = store;
    move |hash| match asking.map(|store| store.has_content(hash)) {
        Some(Ok(kept)) => kept,
        Some(Err(_)) => {
            asking = None;
            false
        }
        None => false,
    }
}

/// Records the runs handed over, one after another, in the order they ended.
struct Recorder {
    config: Arc<Config>,
    slot: Arc<StoreSlot>,
    held_up: Arc<Mutex<Option<String>>>,
}

impl Recorder {
    async fn work(self, mut jobs: mpsc::UnboundedReceiver<Work>) {
        let (mut recorded, mut grown) = (0u64, 0u64);
        let secrets = Secrets::of(&self.config);
        while let Some(work) = jobs.recv().await {
            match work {
                Work::Flush(done) => {
                    let _ = done.send(());
                    continue;
                }
                Work::Note(note) => {
                    let kind = note.kind.name();
                    let bytes = (note.title.len() + note.text.len()) as u64;
                    match self.note(*note, &secrets).await {
                        // Notes count toward the limits as runs do: a terminal's commands alone
                        // must not grow the file past them.
                        Ok(_) => grown += bytes,
                        Err(error) => {
                            tracing::warn!("the project memory did not record a {kind}: {error}");
                            continue;
                        }
                    }
                }
                Work::Record(job) => {
                    let tool = job.tool;
                    match self.record(*job, &secrets).await {
                        Ok(bytes) => grown += bytes,
                        Err(error) => {
                            tracing::warn!(
                                "the project memory did not record a {tool} run: {error}"
                            );
                            continue;
                        }
                    }
                }
            };
            recorded += 1;
            if recorded.is_multiple_of(PRUNE_EVERY) || grown > self.config.history.max_bytes / 10 {
                let config = self.config.clone();
                let pruned = self
                    .slot
                    .run(move |store| {
                        prune(store, &config);
                        Ok(())
                    })
                    .await;
                if let Err(error) = pruned {
                    tracing::warn!("keeping the project memory within its limits: {error}");
                }
                grown = 0;
            }
        }
    }

    /// Records `job`; the bytes of new contents it kept.
    async fn record(&self, mut job: Job, secrets: &Secrets) -> Result<u64, HistoryStoreError> {
        let taken = match job.snapshot.take() {
            Some(snapshot) => snapshot.await.ok().flatten(),
            None => None,
        };
        let (manifest, contents) = match taken {
            Some(taken) => taken,
            None => snapshot_now(job.project.clone(), self.slot.clone(), Arc::default())
                .await
                .unwrap_or_default(),
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
        let bytes = contents.iter().map(|c| c.bytes.len() as u64).sum();
        let run = RunRow {
            project: job.project.display().to_string(),
            arguments: secrets.scrub(&job.check),
            job,
            head,
            manifest,
            contents,
            problems,
        };
        self.written(move |store| store.record(&run.new_run(), &run.problems))
            .await?;
        Ok(bytes)
    }

    async fn note(&self, note: NoteJob, secrets: &Secrets) -> Result<i64, HistoryStoreError> {
        let note = NoteJob {
            title: kept(&note.title, secrets),
            text: kept(&note.text, secrets),
            ..note
        };
        self.written(move |store| {
            let project = note.project.display().to_string();
            store.record_note(&Note {
                at_ms: note.at_ms,
                kind: note.kind,
                project: &project,
                title: &note.title,
                text: &note.text,
                status: &note.status,
                duration_ms: note.duration_ms,
                by: &note.by,
            })
        })
        .await
    }

    /// Writes with `write` until it is done, trying again while the file is busy (another
    /// process holds its lock, maybe since before it was opened): the runs after it wait
    /// their turn, so none is lost or recorded out of order. Another failure is final.
    async fn written<T: Send + 'static>(
        &self,
        write: impl Fn(&HistoryStore) -> Result<T, HistoryStoreError> + Send + Sync + 'static,
    ) -> Result<T, HistoryStoreError> {
        let write = Arc::new(write);
        loop {
            let attempt = write.clone();
            let error = match self.slot.run(move |store| attempt(store)).await {
                Err(error) if error.is_busy() => error,
                done => {
                    if self.held_up().take().is_some() {
                        tracing::info!("the project memory records again");
                    }
                    return done;
                }
            };
            if self.held_up().replace(error.reason().to_string()).is_none() {
                tracing::warn!("{error}; recording waits until it is free");
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    fn held_up(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.held_up.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A run as it is written: all of it owned, so that a write the file's lock held up can be
/// made again.
struct RunRow {
    job: Job,
    project: String,
    arguments: String,
    head: Option<String>,
    manifest: Manifest,
    contents: Vec<Content>,
    problems: Vec<(Problem, String, String)>,
}

impl RunRow {
    fn new_run(&self) -> NewRun<'_> {
        let job = &self.job;
        NewRun {
            at_ms: job.at_ms,
            project: &self.project,
            toolchain: job.toolchain,
            tool: job.tool,
            check_key: &job.check,
            arguments: &self.arguments,
            status: &job.status,
            complete: job.complete,
            duration_ms: job.duration_ms,
            client: job.client.as_deref(),
            head: self.head.as_deref(),
            manifest: Some(&self.manifest),
            contents: &self.contents,
        }
    }
}

/// Drops the oldest runs past the age limit, then while the file is over its size limit.
fn prune(store: &HistoryStore, config: &Config) {
    let now = unix_millis(SystemTime::now());
    let max_age = crate::millis::millis(config.history.max_age);
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

/// Whether `project`'s results are recorded: not when it, or the repository it is a task's
/// worktree of, is in a folder `[history] off` names.
fn records(config: &Config, project: &Path) -> bool {
    config.history.records(project)
        && crate::git::main_work_tree_of(project).is_none_or(|repo| config.history.records(&repo))
}

/// What is recorded of `text`: scrubbed, and within [`LONGEST_TEXT`].
fn kept(text: &str, secrets: &Secrets) -> String {
    text_budget::fit(
        &secrets.scrub(text),
        LONGEST_TEXT,
        "not kept in the project memory",
    )
}

impl History {
    /// Records a terminal's finished command or a task's end, in the background, when its
    /// project is recorded.
    pub fn note(&self, note: NoteJob) {
        if records(&self.config, &note.project) {
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
    pub fn forget<'a>(
        &'a self,
        project: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<(usize, usize), HistoryError>> {
        async move {
            self.recorded().await?;
            let project = project.map(|p| p.display().to_string());
            Ok(self
                .store
                .run(move |store| store.forget(project.as_deref()))
                .await?)
        }
        .boxed()
    }

    /// `project`'s problems, open first; at most `limit`.
    pub fn project_problems<'a>(
        &'a self,
        project: &'a Path,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Remembered>, HistoryError>> {
        async move {
            let project = project.display().to_string();
            Ok(self
                .store
                .within(ANSWERS_WITHIN, move |store| {
                    store.of_project(&project, limit)
                })
                .await?)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::config::Overrides;

    #[test]
    fn a_project_switched_off_is_not_recorded_in_its_tasks_worktrees_either() {
        let repo = crate::git::test_repo::Repo::new();
        let tree = repo.dir.path().join("worktrees/task-1");
        repo.git(&["worktree", "add", "-q", &tree.display().to_string()]);
        let dir = tempfile::tempdir().unwrap();
        let text = format!("[history]\noff = [{:?}]\n", repo.path.display().to_string());
        std::fs::write(dir.path().join("drydock.toml"), text).unwrap();
        let config = Config::resolve(&Overrides::default(), &|_| None, dir.path()).unwrap();

        assert!(!records(&config, &repo.path));
        assert!(
            !records(&config, &tree),
            "a worktree of a project switched off"
        );
        assert!(records(&config, dir.path()));
    }

    fn history_in(dir: &Path) -> Arc<History> {
        let overrides = Overrides {
            data_dir: Some(dir.join("data")),
            ..Overrides::default()
        };
        let config = Arc::new(Config::resolve(&overrides, &|_| None, dir).unwrap());
        History::new(config.clone(), Docs::for_command_line(config))
    }

    fn borrow_error(file: &str) -> Problem {
        Problem {
            kind: ProblemKind::Error,
            code: Some("E0502".into()),
            test: None,
            message: "cannot borrow `v` as mutable".into(),
            file: Some(file.into()),
            line: Some(4),
            text: "error[E0502]: cannot borrow `v` as mutable".into(),
        }
    }

    /// Records `problem` in a run of project `/p`, then a run without it that fixed it.
    fn fixed_before(path: &Path, problem: &Problem) {
        let store = HistoryStore::open(path).unwrap();
        let (broken, fixed) = (snapshot::hash(b"broken"), snapshot::hash(b"fixed"));
        let contents = [
            Content {
                hash: broken.clone(),
                bytes: b"broken".to_vec(),
            },
            Content {
                hash: fixed.clone(),
                bytes: b"fixed".to_vec(),
            },
        ];
        for (at_ms, hash, problems) in [
            (1000, broken, vec![problem.clone()]),
            (2000, fixed, Vec::new()),
        ] {
            let manifest = Manifest::from([(problem.file.clone().unwrap(), hash)]);
            let problems: Vec<_> = problems
                .into_iter()
                .map(|p| (p.clone(), p.identity("cargo"), p.family("cargo")))
                .collect();
            let run = NewRun {
                at_ms,
                project: "/p",
                toolchain: "cargo",
                tool: "compile",
                check_key: "compile",
                arguments: "{}",
                status: "failed",
                complete: true,
                duration_ms: 10,
                client: None,
                head: None,
                manifest: Some(&manifest),
                contents: &contents,
            };
            store.record(&run, &problems).unwrap();
        }
    }

    /// A build's `seen_before` finds the earlier fix; with the memory's file locked so that
    /// it cannot even be read, the same lookup answers nothing, at its deadline.
    #[tokio::test(flavor = "current_thread")]
    async fn seen_before_answers_nothing_at_its_deadline_when_the_memory_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/history.sqlite3");
        let problem = borrow_error("src/lib.rs");
        fixed_before(&path, &problem);

        let free = history_in(dir.path());
        let seen = free.seen_before(std::slice::from_ref(&problem), "cargo", "/p");
        assert_eq!(seen.await.len(), 1, "the fix was not seen before");
        drop(free);

        let holder = rusqlite::Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM runs;")
            .unwrap();
        let locked = history_in(dir.path());
        let started = Instant::now();
        // It answers while the lock is still held: a call that waited on the lock would not.
        let seen = tokio::time::timeout(
            Duration::from_secs(60),
            locked.seen_before(std::slice::from_ref(&problem), "cargo", "/p"),
        )
        .await
        .expect("seen_before answers while the file is locked");
        assert!(seen.is_empty(), "{seen:?}");
        let took = started.elapsed();
        assert!(
            took >= SEEN_BEFORE_WITHIN,
            "it gave up before its deadline: {took:?}"
        );
    }

    /// Under a task agent's reach a search's limit counts the problems it may see: terminals'
    /// commands that match the query better take none of its places.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_search_within_build_problems_fills_its_limit_with_problems() {
        let dir = tempfile::tempdir().unwrap();
        fixed_before(
            &dir.path().join("data/history.sqlite3"),
            &borrow_error("src/lib.rs"),
        );
        let history = history_in(dir.path());
        let project = dir.path().canonicalize().unwrap();
        for n in 0..6 {
            history.note(NoteJob {
                at_ms: 3000 + n,
                kind: ProblemKind::Command,
                project: project.clone(),
                title: "cargo build: error[E0502]: cannot borrow `v` as mutable".into(),
                text: "error[E0502]: cannot borrow `v` as mutable\ncannot borrow `v` as mutable"
                    .into(),
                status: "exit 101".into(),
                duration_ms: 5,
                by: "t1".into(),
            });
        }
        let kinds = |reach: Reach, limit: u64| {
            let history = history.clone();
            async move {
                let request = serde_json::from_value(serde_json::json!({
                    "query": "error[E0502]: cannot borrow `v` as mutable",
                    "limit": limit,
                }))
                .unwrap();
                let found = history.search(request, reach).await.unwrap();
                found
                    .hits
                    .into_iter()
                    .map(|hit| hit.kind)
                    .collect::<Vec<_>>()
            }
        };

        let everything = kinds(Reach::Everything, 1).await;
        assert_eq!(everything, ["command"], "the commands match best");
        let problems = kinds(Reach::BuildProblems, 1).await;
        assert_eq!(problems, ["error"]);
        let all = kinds(Reach::Everything, 20).await;
        assert_eq!(all.len(), 7, "{all:?}");
        assert_eq!(kinds(Reach::BuildProblems, 20).await, ["error"]);
    }

    /// Issue 48: a terminal's commands alone (notes, no build runs) keep the memory within
    /// `[history] max_mb`: they count toward its pruning as runs do.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn notes_alone_keep_the_memory_within_its_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("drydock.toml"), "[history]\nmax_mb = 1\n").unwrap();
        let history = history_in(dir.path());
        let project = dir.path().canonicalize().unwrap();
        for n in 0..120 {
            history.note(NoteJob {
                at_ms: 1000 + n,
                kind: ProblemKind::Command,
                project: project.clone(),
                title: format!("cat big-{n}.log"),
                text: crate::private::random_hex(12 * 1024),
                status: "exit 0".into(),
                duration_ms: 5,
                by: "person".into(),
            });
        }
        history.flush().await;
        let store = HistoryStore::open(&dir.path().join("data/history.sqlite3")).unwrap();
        let size = store.file_bytes().unwrap();
        // 120 notes of 24 KiB are about 3 MiB kept twice (text and index): the limit holds
        // within the pruning's step (a tenth of it) and one note.
        assert!(
            size < 1024 * 1024 + 256 * 1024,
            "{size} bytes for a limit of 1 MiB"
        );
    }

    /// Notes handed over while another connection holds the write lock wait (a history tool
    /// meanwhile says the memory is busy, and why), then are all recorded, in order, once
    /// it lets go.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_recorder_waits_out_a_lock_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let history = history_in(dir.path());
        let path = history.store.path().to_path_buf();
        history.store.run(|store| store.sizes()).await.unwrap();
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE;").unwrap();

        let project = dir.path().canonicalize().unwrap();
        for (n, title) in ["cargo check", "cargo test", "cargo run"]
            .iter()
            .enumerate()
        {
            history.note(NoteJob {
                at_ms: 1000 + n as u64,
                kind: ProblemKind::Command,
                project: project.clone(),
                title: title.to_string(),
                text: String::new(),
                status: "exit 0".into(),
                duration_ms: 5,
                by: "t1".into(),
            });
        }
        let started = Instant::now();
        // It answers while the lock is still held, saying the runs wait.
        let busy = tokio::time::timeout(Duration::from_secs(60), history.recorded())
            .await
            .expect("recorded answers while the file is locked")
            .expect_err("recorded under a lock");
        let said = busy.to_string();
        assert!(
            said.contains("is busy") && said.contains("not recorded yet"),
            "{said}"
        );
        // Once a write has waited out SQLite's busy timeout, the answer says why.
        let mut said = String::new();
        while !said.contains("database is locked") && started.elapsed() < Duration::from_secs(15) {
            said = history.recorded().await.unwrap_err().to_string();
        }
        assert!(said.contains("database is locked"), "{said}");

        holder.execute_batch("ROLLBACK;").unwrap();
        drop(holder);
        tokio::time::timeout(Duration::from_secs(15), history.flush())
            .await
            .expect("recorded once the lock was gone");
        history.recorded().await.unwrap();
        let mut notes = history.project_problems(&project, 10).await.unwrap();
        notes.sort_by_key(|n| n.id);
        let titles: Vec<_> = notes.iter().map(|n| n.problem.message.as_str()).collect();
        assert_eq!(titles, ["cargo check", "cargo test", "cargo run"]);
    }
}
