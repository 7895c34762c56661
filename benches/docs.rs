//! The docs index, on the Rust book that rustup installs:
//! - ingest throughput (chunks embedded per second, walking, chunking and writing included)
//!   against the raw throughput of the same model on the same passages, in the same run;
//! - re-indexing the unchanged corpus against reading and hashing its files;
//! - docs_lookup latency p50/p99 (hybrid, query embedding and the result's shaping included)
//!   at 10k and 100k chunks, at 10 results and at its default size, in a fresh process (as a
//!   server opens an index `drydock index` built); at 100k also through MCP, with docs_read
//!   of the first result's section; at the default size (and at 100k through MCP) both on a
//!   quiet machine and with one busy process per core in another session, as while cargo
//!   builds, in the same run;
//! - what the model choices cost: models of the catalogue's shapes with random weights
//!   (size, embedding rate, a query's embedding, the lookup it makes), and what a reranker of
//!   each shape adds to a lookup of the default size;
//! - index size on disk per 10k chunks.
//!
//! The 10k and 100k indexes hold the book many times over (hard-linked copies under other
//! paths: their passages are reused, not embedded again, which the ingest does by design), so
//! building them costs chunking and writing only. They are kept in cargo's target tmp dir.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

#[path = "docs_support/load.rs"]
mod load;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drydock::app::{App, Mode};
use drydock::config::{Config, Overrides};
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
use drydock::docs::{DEFAULT_EXCERPTS, DEFAULT_FULL, DEFAULT_LIMIT, DocsError};
use drydock::render::Render;
use load::BusyLoad;
use serde_json::json;
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

/// The passages an ingest of `book_root` embeds, chunked here for the raw model baseline.
fn passages(book_root: &FileRoot) -> Vec<String> {
    let mut texts = Vec::new();
    for (path, relative) in book_root.files() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(content) = text_of(&bytes) else {
            continue;
        };
        // The root lists every file; the ingest skips those of no kind it reads.
        let Some(kind) = FileKind::of(&path) else {
            continue;
        };
        let meta = book_root.meta(&relative, kind, content);
        if let Ok(chunks) = chunk_file(kind, content, &meta) {
            texts.extend(chunks.iter().map(|c| c.embedding_text()));
        }
    }
    texts
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, command, dir] = &args[..]
        && command == LOOKUPS_OF
    {
        return lookups_of(Path::new(dir)).await;
    }
    let html = rust_html();
    let embedder = Embedder::load_default().unwrap();
    let Root::Files(book_root) = book(&html) else {
        unreachable!()
    };

    let texts = passages(&book_root);
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
        if FileKind::of(&path).is_none() {
            continue;
        }
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
        let size = dir_size(&dir);
        println!(
            "  {} chunks ({} files, built or checked in {:.0} s; vector index: {}): {:.1} MB on disk, {:.1} MB per 10k chunks",
            rows,
            built.files_seen,
            start.elapsed().as_secs_f64(),
            store.has_vector_index().await.unwrap(),
            size as f64 / 1e6,
            size as f64 / 1e6 / rows as f64 * 10_000.0
        );
        drop(store);
        // Searched as a server searches an index `drydock index` built before: opened anew,
        // in a process of its own.
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .arg(LOOKUPS_OF)
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "the lookups of {}: {status}",
            dir.display()
        );
    }
}

/// The argument that makes this bench measure the lookups of an index in a process of its own.
const LOOKUPS_OF: &str = "lookups-of";

/// docs_lookup on the index at `dir`, opened in this fresh process: in-process at 10 results
/// and at the default size, the query embedding alone; at 100k chunks also through MCP and
/// what the model choices cost.
async fn lookups_of(dir: &Path) {
    let embedder = Embedder::load_default().unwrap();
    let questions: Vec<Question> =
        serde_json::from_str(include_str!("../tests/fixtures/docs-eval/questions.json")).unwrap();
    let store = DocStore::open(dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    let rows = store.count_rows().await.unwrap();
    let (ten, _) = lookups(&store, &embedder, &questions, 10).await;
    let (latencies, last) = lookups(&store, &embedder, &questions, DEFAULT_LIMIT).await;
    let mut embedding: Vec<Duration> = Vec::new();
    for question in questions.iter().take(50) {
        let start = Instant::now();
        embedder.embed_query(&question.question).await.unwrap();
        embedding.push(start.elapsed());
    }
    println!(
        "  {rows} chunks: docs_lookup of 10 results (50 candidates a half) p50 {:.1} ms, p99 {:.1} ms",
        percentile(&ten, 50.0),
        percentile(&ten, 99.0)
    );
    println!(
        "  {rows} chunks: docs_lookup at its default size p50 {:.1} ms, p99 {:.1} ms (query embedding alone p50 {:.1} ms)",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(&embedding, 50.0),
    );
    {
        let load = BusyLoad::start();
        let (loaded, _) = lookups(&store, &embedder, &questions, DEFAULT_LIMIT).await;
        println!(
            "  {rows} chunks: docs_lookup at its default size with {} busy processes (a session of their own) in the background p50 {:.1} ms, p99 {:.1} ms (quiet p50 {:.1} ms: ratio {:.2})",
            load.processes(),
            percentile(&loaded, 50.0),
            percentile(&loaded, 99.0),
            percentile(&latencies, 50.0),
            percentile(&loaded, 50.0) / percentile(&latencies, 50.0)
        );
    }
    if rows >= 100_000 {
        over_mcp(dir, &questions, &latencies).await;
        {
            let load = BusyLoad::start();
            println!(
                "  with {} busy processes (a session of their own) in the background:",
                load.processes()
            );
            over_mcp(dir, &questions, &latencies).await;
        }
        let Root::Files(book_root) = book(&rust_html()) else {
            unreachable!()
        };
        model_costs(
            &embedder,
            &passages(&book_root),
            &questions,
            last,
            percentile(&latencies, 50.0),
        )
        .await;
    }
}

/// docs_lookup's work in-process for `limit` results: the query's embedding, the search and
/// the result's shaping; each lookup's time, and the last one's hits.
async fn lookups(
    store: &DocStore,
    embedder: &Embedder,
    questions: &[Question],
    limit: usize,
) -> (Vec<Duration>, Vec<Hit>) {
    let mut latencies = Vec::new();
    let mut last = Vec::new();
    for question in questions.iter().cycle().take(iterations(200)) {
        let start = Instant::now();
        let hits = store
            .search_embedding(
                SearchMode::Hybrid,
                &question.question,
                async { Ok::<_, DocsError>(embedder.embed_query(&question.question).await?) },
                &SearchFilter::default(),
                limit,
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
    (latencies, last)
}

/// docs_lookup at its default size through MCP (Streamable HTTP, one client) on the index at
/// `dir`, against the same lookups in-process (`in_process`).
async fn over_mcp(dir: &Path, questions: &[Question], in_process: &[Duration]) {
    let data_dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        allow_roots: vec![support::test_projects()],
        bind: Some("127.0.0.1:0".into()),
        index_dir: Some(dir.to_path_buf()),
        data_dir: Some(data_dir.path().to_path_buf()),
        ..Default::default()
    };
    let config = Config::resolve(&overrides, &|_| None, &support::test_projects()).unwrap();
    let app = App::start(Arc::new(config), Mode::Server).await;
    let shutdown = CancellationToken::new();
    let url = support::serve(app, &shutdown).await;
    let client = support::connect(&url).await;
    let mut latencies = Vec::new();
    let mut reads = Vec::new();
    for (n, question) in questions
        .iter()
        .cycle()
        .take(iterations(200) + 5)
        .enumerate()
    {
        let start = Instant::now();
        let found =
            support::call(&client, "docs_lookup", json!({"query": question.question})).await;
        if n >= 5 {
            latencies.push(start.elapsed());
        }
        // What a reader does next: the section of the first result.
        let id = found["results"][0]["id"].as_str().unwrap();
        let start = Instant::now();
        let read =
            support::call(&client, "docs_read", json!({"id": id, "around": "section"})).await;
        reads.push(start.elapsed());
        assert!(!read["passages"].as_array().unwrap().is_empty(), "{read}");
    }
    println!(
        "  docs_lookup over MCP: p50 {:.1} ms, p99 {:.1} ms (in-process p50 {:.1} ms: ratio {:.2}); docs_read of its first result's section p50 {:.1} ms, p99 {:.1} ms",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(in_process, 50.0),
        percentile(&latencies, 50.0) / percentile(in_process, 50.0),
        percentile(&reads, 50.0),
        percentile(&reads, 99.0)
    );
    client.cancel().await.ok();
    shutdown.cancel();
}

/// Runs a generator script of tests/fixtures/onnx with `args`.
fn make_model(script: &str, args: &[&str]) {
    let made = std::process::Command::new("python3")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/onnx")
                .join(script),
        )
        .args(args)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
}

/// What the model choices cost here, measured on models of their shape with random weights
/// (tests/fixtures/onnx/make_bert_shape.py: a forward pass costs the same whatever the
/// weights): size, embedding rate on the book's passages, a query's embedding; and what a
/// reranker adds to a lookup of `hits`.
async fn model_costs(
    shipped: &Embedder,
    passages: &[String],
    questions: &[Question],
    hits: Vec<Hit>,
    lookup_p50: f64,
) {
    let work = tempfile::tempdir().unwrap();
    // The same passages as the raw model's line: the book's first 64 alone embed twice as
    // fast as the 640, which made the shipped model's rate here disagree with that line.
    let sample: Vec<String> = passages.iter().take(iterations(640)).cloned().collect();
    let queries: Vec<&str> = questions
        .iter()
        .take(iterations(30))
        .map(|q| q.question.as_str())
        .collect();
    let query_p50 = |embedder: Embedder| {
        let queries = queries.clone();
        async move {
            let mut times = Vec::new();
            for query in queries {
                let start = Instant::now();
                embedder.embed_query(query).await.unwrap();
                times.push(start.elapsed());
            }
            percentile(&times, 50.0)
        }
    };
    let shipped_query = query_p50(shipped.clone()).await;
    println!(
        "  model choices (fp32 models of the catalogue's shapes, random weights; lookup = at most the shipped model's at 100k chunks plus the difference in query embedding):"
    );
    let shapes = [
        ("all-MiniLM-L6-v2-int8 (shipped)", 0, 0),
        ("bge-small-en-v1.5 (12 layers x 384)", 12, 384),
        (
            "bge-base-en-v1.5, nomic-embed-text-v1.5 (12 x 768)",
            12,
            768,
        ),
    ];
    for (label, layers, hidden) in shapes {
        let (embedder, bytes) = match layers {
            0 => (shipped.clone(), 0),
            _ => {
                let dir = work.path().join(format!("embed-{layers}x{hidden}"));
                make_model(
                    "make_bert_shape.py",
                    &[
                        dir.to_str().unwrap(),
                        &layers.to_string(),
                        &hidden.to_string(),
                        "embedding",
                    ],
                );
                let spec = drydock::docs::models::EmbeddingSpec {
                    name: label.into(),
                    dimension: hidden,
                    source: drydock::docs::embed::ModelSource::Dir(dir.clone()),
                    onnx: "model.onnx".into(),
                    pooling: fastembed::Pooling::Mean,
                    query_prefix: String::new(),
                    passage_prefix: String::new(),
                };
                (
                    Embedder::load_spec(&spec).unwrap(),
                    std::fs::metadata(dir.join("model.onnx")).unwrap().len(),
                )
            }
        };
        let bytes = match bytes {
            0 => std::fs::metadata(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("models/all-MiniLM-L6-v2-int8/model_quantized.onnx"),
            )
            .unwrap()
            .len(),
            n => n,
        };
        let start = Instant::now();
        embedder.embed_passages(sample.clone()).await.unwrap();
        let rate = sample.len() as f64 / start.elapsed().as_secs_f64();
        let query = query_p50(embedder).await;
        println!(
            "    {label:<52} {:>6.1} MB  {rate:>6.1} passages/s  query {query:>6.1} ms  lookup p50 <= {:.1} ms",
            bytes as f64 / 1e6,
            lookup_p50 - shipped_query + query
        );
    }
    // As many candidates as `[docs] rerank_candidates` takes by default (the copies of the
    // book come back once each: repeated, they cost the same).
    let hits: Vec<Hit> = hits.iter().cycle().take(30).cloned().collect();
    let tiny = work.path().join("tiny");
    make_model("make_tiny_cross_encoder.py", &[tiny.to_str().unwrap()]);
    let rerankers = [
        (
            "tokenizer and ONNX Runtime alone (the tests' tiny one)",
            tiny,
            "model.onnx",
        ),
        (
            "jina-reranker-v1-turbo-en (6 x 384)",
            work.path().join("rerank-6x384"),
            "model.onnx",
        ),
        (
            "bge-reranker-base (12 x 768)",
            work.path().join("rerank-12x768"),
            "model.onnx",
        ),
    ];
    println!("  reranker on {} candidates:", hits.len());
    for (label, dir, onnx) in rerankers {
        if let Some(shape) = dir
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .strip_prefix("rerank-")
        {
            let (layers, hidden) = shape.split_once('x').unwrap();
            make_model(
                "make_bert_shape.py",
                &[dir.to_str().unwrap(), layers, hidden, "cross-encoder"],
            );
        }
        let encoder = CrossEncoder::load(&RerankerSpec {
            name: label.into(),
            dir,
            onnx: onnx.into(),
        })
        .unwrap();
        let mut times = Vec::new();
        for query in queries.iter().take(iterations(10)) {
            let start = Instant::now();
            encoder.rerank(query, hits.clone()).await.unwrap();
            times.push(start.elapsed());
        }
        let p50 = percentile(&times, 50.0);
        println!(
            "    {label:<52} p50 {p50:>7.1} ms, {:.2} ms per candidate",
            p50 / hits.len().max(1) as f64
        );
    }
}
