//! The docs index, on the Rust book that rustup installs:
//! - ingest throughput (chunks embedded per second, walking, chunking and writing included)
//!   against the raw throughput of the same model on the same passages, in the same run;
//! - re-indexing the unchanged corpus against reading and hashing its files;
//! - docs_lookup latency p50/p99 (hybrid, query embedding and the result's shaping included)
//!   at 10k and 100k chunks, at its default size;
//! - what a reranker adds: the tiny cross-encoder the tests write (ONNX Runtime's and the
//!   tokenizer's cost alone) on a lookup's candidates, and per candidate the forward pass of
//!   a model of jina-reranker-v1-turbo-en's shape (6 layers, 384 wide: the shipped MiniLM's
//!   shape) over the question and the passage;
//! - index size on disk per 10k chunks.
//!
//! The 10k and 100k indexes hold the book many times over (hard-linked copies under other
//! paths: their passages are reused, not embedded again, which the ingest does by design), so
//! building them costs chunking and writing only. They are kept in cargo's target tmp dir.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drydock::docs::chunk::hex_sha256;
use drydock::docs::cross_encoder::CrossEncoder;
use drydock::docs::embed::Embedder;
use drydock::docs::ingest::{IngestOptions, IngestProgress, ingest};
use drydock::docs::models::RerankerSpec;
use drydock::docs::reports::IngestReport;
use drydock::docs::reports::LookupReport;
use drydock::docs::search::{Hit, SearchFilter, SearchMode};
use drydock::docs::sources::{FileKind, FileRoot, Library, PathFilter, Root, chunk_file, text_of};
use drydock::docs::store::DocStore;
use drydock::docs::{DEFAULT_EXCERPTS, DEFAULT_FULL, DEFAULT_LIMIT};
use drydock::render::Render;
use support::{dir_size, iterations, percentile};
use tokio_util::sync::CancellationToken;

fn rust_html() -> PathBuf {
    let output = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc");
    let sysroot = String::from_utf8(output.stdout).unwrap();
    PathBuf::from(sysroot.trim())
        .join("share/doc/rust/html")
        .canonicalize()
        .expect("the Rust docs: rustup component add rust-docs")
}

fn book(dir: &Path) -> Root {
    Root::Files(FileRoot {
        dir: dir.to_path_buf(),
        only: None,
        library: Library::FirstDirectory {
            top_level: "rust".into(),
        },
        version: None,
        filter: PathFilter::new(&["book/**".into()], &[]).unwrap(),
        skip_nested_packages: false,
    })
}

async fn index(store: &DocStore, embedder: &Embedder, roots: Vec<Root>) -> IngestReport {
    ingest(
        store,
        embedder,
        roots,
        &IngestOptions::default(),
        Arc::new(IngestProgress::default()),
        &CancellationToken::new(),
    )
    .await
    .unwrap()
}

/// A copy of `book/` made of hard links, under `root/copyN/book`.
fn linked_copy(source: &Path, root: &Path, n: usize) -> PathBuf {
    let copy = root.join(format!("copy{n:03}"));
    if copy.is_dir() {
        return copy;
    }
    for entry in walkdir::WalkDir::new(source.join("book"))
        .into_iter()
        .filter_map(Result::ok)
    {
        let to = copy.join(entry.path().strip_prefix(source).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::hard_link(entry.path(), &to).unwrap();
        }
    }
    copy
}

#[derive(serde::Deserialize)]
struct Question {
    question: String,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let html = rust_html();
    let embedder = Embedder::load_default().unwrap();
    let Root::Files(book_root) = book(&html) else {
        unreachable!()
    };

    // The passages the ingest will embed, chunked here for the raw model baseline.
    let mut texts = Vec::new();
    for (path, relative) in book_root.files() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(content) = text_of(&bytes) else {
            continue;
        };
        let kind = FileKind::of(&path).unwrap();
        let meta = book_root.meta(&relative, kind, content);
        if let Ok(chunks) = chunk_file(kind, content, &meta) {
            texts.extend(chunks.iter().map(|c| c.embedding_text()));
        }
    }
    let sample: Vec<String> = texts.iter().take(iterations(640)).cloned().collect();
    embedder
        .embed_passages(sample[..32].to_vec())
        .await
        .unwrap();
    let start = Instant::now();
    embedder.embed_passages(sample.clone()).await.unwrap();
    let raw = sample.len() as f64 / start.elapsed().as_secs_f64();

    println!("docs: the Rust book ({} passages)", texts.len());
    let fresh = tempfile::tempdir().unwrap();
    let store = DocStore::open(fresh.path(), embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    let first = index(&store, &embedder, vec![book(&html)]).await;
    let ingest_rate = first.chunks_embedded as f64 / first.seconds;
    println!(
        "  ingest        {:>7.1} chunks embedded/s ({} embedded, {} reused, {} written in {:.1} s)",
        ingest_rate,
        first.chunks_embedded,
        first.chunks_reused,
        first.chunks_written,
        first.seconds
    );
    println!(
        "  raw model     {raw:>7.1} passages/s ({} passages, batch 32)",
        sample.len()
    );
    println!("  ratio ingest / raw model: {:.2}", ingest_rate / raw);

    let start = Instant::now();
    let mut bytes = 0;
    for (path, _) in book_root.files() {
        let content = std::fs::read(&path).unwrap();
        bytes += content.len();
        hex_sha256(&[&content]);
    }
    let hashing = start.elapsed();
    let again = index(&store, &embedder, vec![book(&html)]).await;
    assert_eq!(again.chunks_embedded, 0);
    println!(
        "  re-index unchanged: {:.2} s ({} files, {} unchanged) vs reading + hashing {:.1} MB: {:.2} s (ratio {:.1})",
        again.seconds,
        again.files_seen,
        again.files_unchanged,
        bytes as f64 / 1e6,
        hashing.as_secs_f64(),
        again.seconds / hashing.as_secs_f64()
    );

    let questions: Vec<Question> =
        serde_json::from_str(include_str!("../tests/fixtures/docs-eval/questions.json")).unwrap();
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs-bench");
    for target in [10_000usize, 100_000] {
        let dir = work.join(format!("index-{target}"));
        let store = DocStore::open(&dir, embedder.model_name(), embedder.dimension())
            .await
            .unwrap();
        let copies = target.div_ceil(first.chunks_written.max(1) as usize);
        let start = Instant::now();
        let roots: Vec<Root> = (0..copies)
            .map(|n| book(&linked_copy(&html, &work.join("corpus"), n)))
            .collect();
        let built = index(&store, &embedder, roots).await;
        let rows = store.count_rows().await.unwrap();
        let mut latencies: Vec<Duration> = Vec::new();
        let mut last = Vec::new();
        for question in questions.iter().cycle().take(iterations(200)) {
            let start = Instant::now();
            let vector = embedder.embed_query(&question.question).await.unwrap();
            let hits = store
                .search(
                    SearchMode::Hybrid,
                    &vector,
                    &question.question,
                    &SearchFilter::default(),
                    DEFAULT_LIMIT,
                )
                .await
                .unwrap();
            let shaped = LookupReport::shaped(
                question.question.clone(),
                hits.clone(),
                DEFAULT_FULL,
                DEFAULT_EXCERPTS,
                None,
            );
            std::hint::black_box(shaped.render());
            latencies.push(start.elapsed());
            last = hits;
        }
        let mut embedding: Vec<Duration> = Vec::new();
        for question in questions.iter().take(50) {
            let start = Instant::now();
            embedder.embed_query(&question.question).await.unwrap();
            embedding.push(start.elapsed());
        }
        let size = dir_size(&dir);
        println!(
            "  {rows} chunks ({} files, built or checked in {:.0} s; vector index: {}): docs_lookup p50 {:.1} ms, p99 {:.1} ms (query embedding alone p50 {:.1} ms); {:.1} MB on disk, {:.1} MB per 10k chunks",
            built.files_seen,
            start.elapsed().as_secs_f64(),
            store.has_vector_index().await.unwrap(),
            percentile(&latencies, 50.0),
            percentile(&latencies, 99.0),
            percentile(&embedding, 50.0),
            size as f64 / 1e6,
            size as f64 / 1e6 / rows as f64 * 10_000.0
        );
        if target == 100_000 {
            reranker_cost(&embedder, &questions, last).await;
        }
    }
}

/// What `[docs] reranker` adds to a lookup of `hits`' size.
async fn reranker_cost(embedder: &Embedder, questions: &[Question], hits: Vec<Hit>) {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/cross-encoder/make_tiny_cross_encoder.py"
        ))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let tiny = CrossEncoder::load(&RerankerSpec {
        name: "tiny".into(),
        dir: dir.path().to_path_buf(),
        onnx: "model.onnx".into(),
    })
    .unwrap();
    let pairs: Vec<String> = hits
        .iter()
        .map(|h| format!("{}\n{}", h.heading, h.content))
        .collect();
    let mut framework = Vec::new();
    let mut forward = Vec::new();
    for question in questions.iter().cycle().take(iterations(20)) {
        let start = Instant::now();
        tiny.rerank(&question.question, hits.clone()).await.unwrap();
        framework.push(start.elapsed());
        let joined = pairs
            .iter()
            .map(|p| format!("{} {p}", question.question))
            .collect();
        let start = Instant::now();
        embedder.embed_passages(joined).await.unwrap();
        forward.push(start.elapsed());
    }
    let n = hits.len().max(1) as f64;
    println!(
        "  reranker on {} candidates: tokenizing and ONNX Runtime alone (the tiny cross-encoder) p50 {:.1} ms; a 6-layer, 384-wide model's forward pass p50 {:.1} ms, {:.2} ms per candidate",
        hits.len(),
        percentile(&framework, 50.0),
        percentile(&forward, 50.0),
        percentile(&forward, 50.0) / n
    );
}
