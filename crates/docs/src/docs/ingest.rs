//! The ingest pipeline: roots → files → chunks → vectors → the index, incrementally.
//!
//! Three stages run at once so the model (the slow part: ~45 passages/s on two cores) never
//! waits:
//! 1. a blocking thread walks the roots, hashes every file and chunks the changed ones;
//! 2. the embedding loop takes their chunks in groups, reuses the vector of every chunk the
//!    index (or this run) has already embedded, and embeds the rest in model batches;
//! 3. a writer task commits finished files to LanceDB in large batches.
//!
//! A file whose hash matches the index is not read again; a changed file is replaced whole;
//! files gone from an indexed root leave the index. Every write is a LanceDB commit of whole
//! files, so stopping at any point (Ctrl-C, a crash, a cancelled call) leaves a consistent
//! index, and the next run picks up the files that were not committed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::chunk::{Chunk, hex_sha256};
use super::elixir_docs;
use super::embed::{BATCH_SIZE, EmbedError, Embedder};
use super::reports::IngestReport;
use super::sources::{BeamRoot, FileKind, FileRoot, Root, Skip, chunk_file, text_of};
use super::store::{ChunkRecord, DocStore, FileChunks, IndexError};
use crate::process::Policy;

/// Bumped when chunking changes, so every file is chunked (not embedded) again.
const CHUNKER_VERSION: &str = "5";
/// Chunks gathered before the embedding loop looks up known vectors and embeds the rest.
const CHUNKS_PER_ROUND: usize = 4 * BATCH_SIZE;
/// The writer commits when it holds this many rows or files, or after [`COMMIT_EVERY`].
const ROWS_PER_COMMIT: usize = 4096;
const FILES_PER_COMMIT: usize = 500;
const COMMIT_EVERY: Duration = Duration::from_secs(15);
/// Vectors of this run kept in memory for chunks repeated before they are committed.
const RUN_CACHE_LIMIT: usize = 50_000;
/// Per-file problems listed in the report (the count is always complete).
const ERRORS_LISTED: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Store(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("the ingest stopped: {0}")]
    Task(String),
}

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub max_file_bytes: u64,
    /// The `elixir` executable that reads docs out of beams.
    pub elixir: PathBuf,
    /// How it runs: its timeout and the secrets it never sees. The ingest's cancellation
    /// stops it too.
    pub helper: Policy,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            max_file_bytes: 8 * 1024 * 1024,
            elixir: PathBuf::from("elixir"),
            helper: elixir_docs::default_policy(),
        }
    }
}

/// Live counters of a running ingest, for progress bars and notifications.
#[derive(Debug)]
pub struct IngestProgress {
    started: Instant,
    planned: AtomicBool,
    pub files_total: AtomicU64,
    /// Files looked at: unchanged, chunked or skipped.
    pub files_done: AtomicU64,
    pub files_changed: AtomicU64,
    /// Chunks of the changed files found so far.
    pub chunks_found: AtomicU64,
    pub chunks_embedded: AtomicU64,
    pub chunks_reused: AtomicU64,
    pub rows_written: AtomicU64,
}

impl Default for IngestProgress {
    fn default() -> Self {
        IngestProgress {
            started: Instant::now(),
            planned: AtomicBool::new(false),
            files_total: AtomicU64::new(0),
            files_done: AtomicU64::new(0),
            files_changed: AtomicU64::new(0),
            chunks_found: AtomicU64::new(0),
            chunks_embedded: AtomicU64::new(0),
            chunks_reused: AtomicU64::new(0),
            rows_written: AtomicU64::new(0),
        }
    }
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgressSnapshot {
    /// False while the roots are still being listed (no total yet).
    pub planned: bool,
    pub files_total: u64,
    pub files_done: u64,
    pub files_changed: u64,
    pub chunks_found: u64,
    pub chunks_embedded: u64,
    pub chunks_reused: u64,
    pub rows_written: u64,
    pub elapsed: Duration,
}

impl ProgressSnapshot {
    pub fn embeddings_per_second(&self) -> f64 {
        self.chunks_embedded as f64 / self.elapsed.as_secs_f64().max(1e-3)
    }

    /// Chunks still to embed or reuse, extrapolating from the files chunked so far.
    pub fn chunks_expected(&self) -> u64 {
        if self.files_done == 0 || !self.planned {
            return self.chunks_found;
        }
        let per_file = self.chunks_found as f64 / self.files_done as f64;
        self.chunks_found + (per_file * (self.files_total - self.files_done) as f64) as u64
    }

    /// Estimated time left, once something has been embedded.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.embeddings_per_second();
        let done = self.chunks_embedded + self.chunks_reused;
        (self.chunks_embedded > 0 && rate > 0.0).then(|| {
            Duration::from_secs_f64(self.chunks_expected().saturating_sub(done) as f64 / rate)
        })
    }

    /// One line: `files 120/7434 · chunks 3400/9100 (2100 new) · 45/s · ETA 2m05s`.
    pub fn line(&self) -> String {
        let mut line = if self.planned {
            format!("files {}/{}", self.files_done, self.files_total)
        } else {
            "listing files".to_string()
        };
        line += &format!(
            " · chunks {}/~{} ({} embedded, {} reused) · {:.1} embeddings/s",
            self.chunks_embedded + self.chunks_reused,
            self.chunks_expected(),
            self.chunks_embedded,
            self.chunks_reused,
            self.embeddings_per_second()
        );
        if let Some(eta) = self.eta() {
            line += &format!(" · ETA {}", human_duration(eta));
        }
        line
    }
}

/// `2h03m`, `4m05s`, `12s`.
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

impl IngestProgress {
    /// Every source is listed: `files_total` is the total.
    pub fn mark_planned(&self) {
        self.planned.store(true, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ProgressSnapshot {
            planned: self.planned.load(Ordering::Relaxed),
            files_total: get(&self.files_total),
            files_done: get(&self.files_done),
            files_changed: get(&self.files_changed),
            chunks_found: get(&self.chunks_found),
            chunks_embedded: get(&self.chunks_embedded),
            chunks_reused: get(&self.chunks_reused),
            rows_written: get(&self.rows_written),
            elapsed: self.started.elapsed(),
        }
    }

    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A changed file, chunked, on its way to the model: each chunk with its embedding key,
/// hashed here on the walking thread rather than on the embedding loop.
struct Prepared {
    source: String,
    hash: String,
    chunks: Vec<(String, Chunk)>,
}

/// What the walking stage found besides the files it sent.
#[derive(Default)]
struct WalkOutcome {
    seen: HashSet<String>,
    /// Directories whose every file was looked at: their missing files leave the index.
    complete_dirs: Vec<String>,
    files_seen: u64,
    unchanged: u64,
    skipped: BTreeMap<String, u64>,
    errors: Vec<String>,
}

/// Indexes `roots` into `store`. Per-file problems are reported, not fatal; a store or
/// model failure stops the ingest (what was committed stays).
pub fn ingest<'a>(
    store: &'a DocStore,
    embedder: &'a Embedder,
    roots: Vec<Root>,
    options: &'a IngestOptions,
    progress: Arc<IngestProgress>,
    cancel: &'a CancellationToken,
) -> BoxFuture<'a, Result<IngestReport, IngestError>> {
    async move {
        let started = Instant::now();
        let root_names: Vec<String> = roots
            .iter()
            .map(|r| r.path().display().to_string())
            .collect();
        let known_hashes = store.file_hashes().await?;
        let existing: HashSet<String> = known_hashes.keys().cloned().collect();

        let _under_way = super::under_way::Marker::start(store.dir(), Arc::clone(&progress));
        let (prepared_tx, prepared_rx) = mpsc::channel::<Prepared>(64);
        // A dropped ingest (a call dropped, the server stopping) stops the walk and its `elixir`.
        let walk_cancel = cancel.child_token();
        let _stop_walk = walk_cancel.clone().drop_guard();
        let walk = {
            let options = options.clone();
            let progress = Arc::clone(&progress);
            let cancel = walk_cancel;
            tokio::task::spawn_blocking(move || {
                walk_roots(
                    &roots,
                    &known_hashes,
                    &options,
                    &progress,
                    &cancel,
                    &prepared_tx,
                )
            })
        };
        let (write_tx, write_rx) = mpsc::channel::<FileChunks>(FILES_PER_COMMIT);
        let writer = tokio::spawn(write_files(store.clone(), write_rx, Arc::clone(&progress)));

        let embedded =
            embed_files(store, embedder, prepared_rx, &write_tx, &progress, cancel).await;
        drop(write_tx);
        let written = writer.await.map_err(|e| IngestError::Task(e.to_string()))?;
        let walked = walk.await.map_err(|e| IngestError::Task(e.to_string()))?;
        embedded?;
        let (files_indexed, chunks_written) = written?;

        let cancelled = cancel.is_cancelled();
        let removed = if cancelled {
            Vec::new()
        } else {
            existing
                .iter()
                .filter(|source| !walked.seen.contains(*source))
                .filter(|source| walked.complete_dirs.iter().any(|d| source.starts_with(d)))
                .cloned()
                .collect()
        };
        store.remove_files(&removed).await?;
        // Also when nothing changed, for the indexes an older drydock built otherwise or not.
        if files_indexed > 0 || !removed.is_empty() || store.lacks_an_index().await? {
            store.optimize().await?;
        }

        let snapshot = progress.snapshot();
        let seconds = started.elapsed().as_secs_f64();
        Ok(IngestReport {
            roots: root_names,
            files_seen: walked.files_seen,
            files_unchanged: walked.unchanged,
            files_indexed,
            files_removed: removed.len() as u64,
            files_skipped: walked.skipped,
            chunks_written,
            chunks_embedded: snapshot.chunks_embedded,
            chunks_reused: snapshot.chunks_reused,
            seconds,
            embeddings_per_second: snapshot.chunks_embedded as f64 / seconds.max(1e-3),
            index_rows: store.count_rows().await? as u64,
            cancelled,
            error_count: walked.errors.len() as u64,
            errors: walked.errors.into_iter().take(ERRORS_LISTED).collect(),
        })
    }
    .boxed()
}

/// Stage 1: list, hash and chunk. Runs on a blocking thread.
fn walk_roots(
    roots: &[Root],
    known_hashes: &HashMap<String, String>,
    options: &IngestOptions,
    progress: &IngestProgress,
    cancel: &CancellationToken,
    prepared: &mpsc::Sender<Prepared>,
) -> WalkOutcome {
    let mut outcome = WalkOutcome::default();
    let planned: Vec<(&Root, Vec<(PathBuf, PathBuf)>)> = roots
        .iter()
        .map(|root| match root {
            Root::Files(files) => (root, files.files()),
            Root::Beams(_) => (root, Vec::new()),
        })
        .collect();
    let total: usize = planned
        .iter()
        .map(|(root, files)| match root {
            Root::Files(_) => files.len(),
            Root::Beams(_) => 1,
        })
        .sum();
    IngestProgress::add(&progress.files_total, total);
    progress.mark_planned();

    for (root, files) in planned {
        match root {
            Root::Files(file_root) => {
                for (path, relative) in files {
                    if cancel.is_cancelled() {
                        return outcome;
                    }
                    outcome.files_seen += 1;
                    let source = path.to_string_lossy().into_owned();
                    outcome.seen.insert(source.clone());
                    let step = prepare_file(file_root, &path, &relative, known_hashes, options);
                    IngestProgress::add(&progress.files_done, 1);
                    if !record(step, source, &mut outcome, progress, prepared) {
                        return outcome;
                    }
                }
                if file_root.only.is_none() {
                    outcome
                        .complete_dirs
                        .push(format!("{}/", file_root.dir.display()));
                }
            }
            Root::Beams(beams) => {
                if cancel.is_cancelled() {
                    return outcome;
                }
                outcome.files_seen += 1;
                let source = beams.ebin.to_string_lossy().into_owned();
                outcome.seen.insert(source.clone());
                let step = prepare_beams(beams, known_hashes, options, cancel);
                if cancel.is_cancelled() {
                    return outcome;
                }
                IngestProgress::add(&progress.files_done, 1);
                if !record(step, source, &mut outcome, progress, prepared) {
                    return outcome;
                }
            }
        }
    }
    outcome
}

/// What became of one file (or ebin directory).
enum Step {
    Unchanged,
    Skipped(Skip),
    Failed(String),
    Changed { hash: String, chunks: Vec<Chunk> },
}

/// Counts a step and sends changed files on; false when the pipeline has stopped.
fn record(
    step: Step,
    source: String,
    outcome: &mut WalkOutcome,
    progress: &IngestProgress,
    prepared: &mpsc::Sender<Prepared>,
) -> bool {
    match step {
        Step::Unchanged => outcome.unchanged += 1,
        Step::Skipped(skip) => {
            let key = skip_key(skip, Path::new(&source));
            *outcome.skipped.entry(key).or_default() += 1;
        }
        Step::Failed(error) => outcome.errors.push(error),
        Step::Changed { hash, chunks } => {
            IngestProgress::add(&progress.files_changed, 1);
            IngestProgress::add(&progress.chunks_found, chunks.len());
            let file = Prepared {
                source,
                hash,
                chunks: chunks.into_iter().map(|c| (c.embedding_key(), c)).collect(),
            };
            if prepared.blocking_send(file).is_err() {
                return false;
            }
        }
    }
    true
}

/// How a skipped file is counted: its reason and its type, `unsupported .json`.
pub fn skip_key(skip: Skip, path: &Path) -> String {
    let reason = match skip {
        Skip::Binary => "binary",
        Skip::Huge => "huge",
        Skip::Generated => "generated",
        Skip::Unsupported => "unsupported",
    };
    match path.extension().and_then(|e| e.to_str()) {
        Some(extension) => format!("{reason} .{}", extension.to_ascii_lowercase()),
        None => format!("{reason} (no extension)"),
    }
}

fn prepare_file(
    root: &FileRoot,
    path: &Path,
    relative: &Path,
    known_hashes: &HashMap<String, String>,
    options: &IngestOptions,
) -> Step {
    let Some(kind) = FileKind::of(path) else {
        return Step::Skipped(Skip::Unsupported);
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > options.max_file_bytes => return Step::Skipped(Skip::Huge),
        Ok(_) => {}
        Err(e) => return Step::Failed(format!("{}: {e}", path.display())),
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return Step::Failed(format!("{}: {e}", path.display())),
    };
    let library = root.library_of(relative);
    let version = root.version.as_deref().unwrap_or("");
    let hash = hex_sha256(&[
        CHUNKER_VERSION.as_bytes(),
        library.as_bytes(),
        version.as_bytes(),
        &bytes,
    ]);
    if known_hashes.get(path.to_string_lossy().as_ref()) == Some(&hash) {
        return Step::Unchanged;
    }
    // A file of a type drydock reads that is not UTF-8 text could not be read: listed.
    let content = match text_of(&bytes) {
        Ok(content) => content,
        Err(_) => {
            return Step::Failed(format!(
                "{}: not UTF-8 text (binary, or another encoding)",
                path.display()
            ));
        }
    };
    let meta = root.meta(relative, kind, content);
    match chunk_file(kind, content, &meta) {
        Ok(chunks) => Step::Changed { hash, chunks },
        Err(skip) => Step::Skipped(skip),
    }
}

fn prepare_beams(
    root: &BeamRoot,
    known_hashes: &HashMap<String, String>,
    options: &IngestOptions,
    cancel: &CancellationToken,
) -> Step {
    let failed = |e: &dyn std::fmt::Display| Step::Failed(format!("{}: {e}", root.ebin.display()));
    let entries = match std::fs::read_dir(&root.ebin) {
        Ok(entries) => entries,
        Err(e) => return failed(&e),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "beam" || x == "app"))
        .collect();
    files.sort();
    let mut parts: Vec<Vec<u8>> = vec![CHUNKER_VERSION.as_bytes().to_vec()];
    for file in &files {
        parts.push(
            file.file_name()
                .unwrap_or_default()
                .as_encoded_bytes()
                .to_vec(),
        );
        match std::fs::read(file) {
            Ok(bytes) => parts.push(bytes),
            Err(e) => return failed(&e),
        }
    }
    let hash = hex_sha256(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>());
    if known_hashes.get(root.ebin.to_string_lossy().as_ref()) == Some(&hash) {
        return Step::Unchanged;
    }
    let ebin = std::slice::from_ref(&root.ebin);
    match elixir_docs::chunk_beams_with(&options.helper, &options.elixir, ebin, cancel) {
        Ok(chunks) => Step::Changed { hash, chunks },
        Err(e) => failed(&e),
    }
}

/// Stage 2: vectors for every chunk, then the files go to the writer.
async fn embed_files(
    store: &DocStore,
    embedder: &Embedder,
    mut prepared: mpsc::Receiver<Prepared>,
    writer: &mpsc::Sender<FileChunks>,
    progress: &IngestProgress,
    cancel: &CancellationToken,
) -> Result<(), IngestError> {
    let mut cache: HashMap<String, Arc<[f32]>> = HashMap::new();
    loop {
        let Some(first) = (tokio::select! {
            file = prepared.recv() => file,
            _ = cancel.cancelled() => None,
        }) else {
            return Ok(());
        };
        let mut round = vec![first];
        let mut chunks = round[0].chunks.len();
        while chunks < CHUNKS_PER_ROUND {
            match prepared.try_recv() {
                Ok(file) => {
                    chunks += file.chunks.len();
                    round.push(file);
                }
                Err(_) => break,
            }
        }
        // Cleared before the lookup, so every key of this round is in the cache below.
        if cache.len() > RUN_CACHE_LIMIT {
            cache.clear();
        }
        let keyed = || round.iter().flat_map(|f| &f.chunks);
        let missing: Vec<String> = keyed()
            .map(|(key, _)| key)
            .filter(|key| !cache.contains_key(*key))
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        for (key, vector) in store.known_vectors(&missing).await? {
            cache.insert(key, vector.into());
        }
        let mut to_embed: Vec<(&String, String)> = Vec::new();
        let mut queued = HashSet::new();
        for (key, chunk) in keyed() {
            if !cache.contains_key(key) && queued.insert(key) {
                to_embed.push((key, chunk.embedding_text()));
            }
        }
        IngestProgress::add(&progress.chunks_reused, keyed().count() - to_embed.len());
        for group in to_embed.chunks(BATCH_SIZE) {
            if cancel.is_cancelled() {
                return Ok(());
            }
            let texts = group.iter().map(|(_, text)| text.clone()).collect();
            let vectors = embedder.embed_passages(texts).await?;
            for ((key, _), vector) in group.iter().zip(vectors) {
                cache.insert((*key).clone(), vector.into());
            }
            IngestProgress::add(&progress.chunks_embedded, group.len());
        }
        for file in round {
            let records = file
                .chunks
                .into_iter()
                .map(|(key, chunk)| ChunkRecord {
                    vector: cache[&key].to_vec(),
                    chunk,
                    embedding_key: key,
                })
                .collect();
            let done = FileChunks {
                source: file.source,
                file_hash: file.hash,
                chunks: records,
            };
            if writer.send(done).await.is_err() {
                return Ok(());
            }
        }
    }
}

/// Stage 3: commit files in large batches. Returns (files, rows) written.
async fn write_files(
    store: DocStore,
    mut files: mpsc::Receiver<FileChunks>,
    progress: Arc<IngestProgress>,
) -> Result<(u64, u64), IngestError> {
    let (mut written_files, mut written_rows) = (0u64, 0u64);
    let mut buffer: Vec<FileChunks> = Vec::new();
    let mut rows = 0;
    let mut since = Instant::now();
    loop {
        let deadline = tokio::time::sleep(COMMIT_EVERY.saturating_sub(since.elapsed()));
        let next = tokio::select! {
            file = files.recv() => Some(file),
            _ = deadline, if !buffer.is_empty() => None,
        };
        let closed = matches!(next, Some(None));
        let timed_out = next.is_none();
        if let Some(Some(file)) = next {
            if buffer.is_empty() {
                since = Instant::now();
            }
            rows += file.chunks.len();
            buffer.push(file);
        }
        let full = rows >= ROWS_PER_COMMIT || buffer.len() >= FILES_PER_COMMIT;
        if !buffer.is_empty() && (full || closed || timed_out) {
            written_files += buffer.len() as u64;
            written_rows += rows as u64;
            store.upsert_files(std::mem::take(&mut buffer)).await?;
            IngestProgress::add(&progress.rows_written, rows);
            rows = 0;
        }
        if closed {
            return Ok((written_files, written_rows));
        }
    }
}
