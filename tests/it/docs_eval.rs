//! Retrieval quality on real documentation: the Rust docs rustup installed (book, cargo,
//! error codes, part of std) and Elixir's standard library, against the questions in
//! `tests/fixtures/docs-eval/questions.json` (paraphrased developer questions and exact
//! identifiers, each with the file and a phrase of the passage that answers it).
//!
//! A hit answers a question when it comes from the question's file and is the passage with
//! the phrase or another chunk of the same section (a long section is cut into several
//! chunks; the section is the answer). Reports Hit@1, Hit@5 and MRR (over the top 10) for
//! vector-only, full-text-only and hybrid search, and requires hybrid to beat both on MRR
//! and Hit@5, and to lose to neither on Hit@1. The index is kept in cargo's target tmp dir, so after the first run (a few
//! minutes of embedding) later runs re-index nothing.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use drydock::docs::Chunk;
use drydock::docs::elixir_docs::chunk_elixir_beams;
use drydock::docs::embed::Embedder;
use drydock::docs::ingest::{IngestOptions, IngestProgress, ingest};
use drydock::docs::search::{SearchFilter, SearchMode};
use drydock::docs::sources::{
    FileKind, FileRoot, Library, PathFilter, Root, chunk_file, elixir_toolchain_roots,
};
use drydock::docs::store::DocStore;
use tokio_util::sync::CancellationToken;

use crate::retrieval_scores::{Scores, squash};

#[derive(serde::Deserialize)]
struct Question {
    id: String,
    question: String,
    file: String,
    contains: String,
    kind: String,
}

fn command_output(program: &str, args: &[&str]) -> String {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(output.status.success(), "{program} {args:?} failed");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

fn corpus() -> Vec<Root> {
    let sysroot = command_output("rustc", &["--print", "sysroot"]);
    let html = PathBuf::from(sysroot).join("share/doc/rust/html");
    assert!(
        html.join("book").is_dir(),
        "the Rust docs are not installed: rustup component add rust-docs"
    );
    let include: Vec<String> = [
        "book/**",
        "cargo/**",
        "error_codes/**",
        "std/option/**",
        "std/result/**",
        "std/vec/**",
        "std/collections/hash_map/**",
    ]
    .map(String::from)
    .to_vec();
    let rust = Root::Files(FileRoot {
        dir: html.canonicalize().unwrap(),
        only: None,
        library: Library::FirstDirectory {
            top_level: "rust".into(),
        },
        version: None,
        filter: PathFilter::new(&include, &[]).unwrap(),
        skip_nested_packages: false,
    });
    let script = "IO.puts(System.version()); IO.puts(:code.lib_dir(:elixir))";
    let elixir = command_output("elixir", &["-e", script]);
    let mut lines = elixir.lines();
    let version = lines.next().unwrap();
    let elixir_app = PathBuf::from(lines.next().unwrap());
    let elixir_roots: Vec<Root> = elixir_toolchain_roots(elixir_app.parent().unwrap(), version)
        .into_iter()
        .filter(|root| root.path().starts_with(&elixir_app))
        .collect();
    assert_eq!(elixir_roots.len(), 1, "Elixir's `elixir` app");
    std::iter::once(rust).chain(elixir_roots).collect()
}

/// Every chunk of the corpus, chunked as the ingest does, to find each question's section.
fn corpus_chunks(roots: &[Root]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for root in roots {
        match root {
            Root::Files(files) => {
                for (path, relative) in files.files() {
                    // The root lists every file; the ingest skips those of no kind it reads.
                    let Some(kind) = FileKind::of(&path) else {
                        continue;
                    };
                    let content = std::fs::read_to_string(&path).unwrap();
                    let meta = files.meta(&relative, kind, &content);
                    chunks.extend(chunk_file(kind, &content, &meta).unwrap_or_default());
                }
            }
            Root::Beams(beams) => chunks.extend(
                chunk_elixir_beams(
                    std::path::Path::new("elixir"),
                    std::slice::from_ref(&beams.ebin),
                )
                .unwrap(),
            ),
        }
    }
    chunks
}

/// The sections (file, heading) whose chunks hold the question's phrase.
fn answer_sections(question: &Question, chunks: &[Chunk]) -> HashSet<(String, String)> {
    let wanted = squash(&question.contains);
    chunks
        .iter()
        .filter(|c| c.file_path.ends_with(&question.file) && squash(&c.text).contains(&wanted))
        .map(|c| (c.file_path.clone(), c.heading_path.join(" > ")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_search_beats_vector_only_and_full_text_only() {
    let questions: Vec<Question> =
        serde_json::from_str(include_str!("../fixtures/docs-eval/questions.json")).unwrap();
    assert!(questions.len() >= 40);

    let embedder = Embedder::load_default().unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs-eval-index");
    let store = DocStore::open(&dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    let report = ingest(
        &store,
        &embedder,
        corpus(),
        &IngestOptions::default(),
        Arc::new(IngestProgress::default()),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    println!(
        "corpus: {} files ({} unchanged), {} chunks in the index; {} embedded this run in {:.0} s",
        report.files_seen,
        report.files_unchanged,
        report.index_rows,
        report.chunks_embedded,
        report.seconds
    );
    assert_eq!(report.error_count, 0, "{:?}", report.errors);

    let chunks = corpus_chunks(&corpus());
    let answers: Vec<HashSet<(String, String)>> = questions
        .iter()
        .map(|q| answer_sections(q, &chunks))
        .collect();
    let unanswerable: Vec<&str> = questions
        .iter()
        .zip(&answers)
        .filter(|(_, a)| a.is_empty())
        .map(|(q, _)| q.id.as_str())
        .collect();
    assert!(
        unanswerable.is_empty(),
        "no chunk holds the phrase of {unanswerable:?}"
    );

    let modes = [SearchMode::Vector, SearchMode::FullText, SearchMode::Hybrid];
    let mut scores: Vec<(SearchMode, String, Scores)> = Vec::new();
    for mode in modes {
        for kind in ["all", "paraphrase", "identifier"] {
            scores.push((mode, kind.to_string(), Scores::default()));
        }
    }
    let mut misses = Vec::new();
    for (question, answer) in questions.iter().zip(&answers) {
        let vector = embedder.embed_query(&question.question).await.unwrap();
        for mode in modes {
            let hits = store
                .search(
                    mode,
                    &vector,
                    &question.question,
                    &SearchFilter::default(),
                    10,
                )
                .await
                .unwrap();
            let rank = hits
                .iter()
                .position(|hit| answer.contains(&(hit.file_path.clone(), hit.heading.clone())))
                .map(|i| i + 1);
            if mode == SearchMode::Hybrid && rank.is_none_or(|r| r > 5) {
                let top = hits
                    .first()
                    .map(|h| format!("{} {}", h.file_path, h.heading));
                misses.push(format!("{} (rank {rank:?}; top: {top:?})", question.id));
            }
            for (m, kind, s) in scores.iter_mut() {
                if *m == mode && (kind == "all" || *kind == question.kind) {
                    s.add(rank);
                }
            }
        }
    }
    println!("{} questions; top 10 searched per mode", questions.len());
    for (mode, kind, s) in &scores {
        println!(
            "{:<9} {:<10} (n={:>2})  {}",
            format!("{mode:?}"),
            kind,
            s.count,
            s.line()
        );
    }
    println!("hybrid misses at 5: {misses:#?}");
    let all = |mode| {
        &scores
            .iter()
            .find(|(m, k, _)| *m == mode && k == "all")
            .unwrap()
            .2
    };
    let (vector, text, hybrid) = (
        all(SearchMode::Vector),
        all(SearchMode::FullText),
        all(SearchMode::Hybrid),
    );
    assert!(
        hybrid.mrr() > vector.mrr() && hybrid.mrr() > text.mrr(),
        "hybrid MRR {:.3} must beat vector {:.3} and full text {:.3}",
        hybrid.mrr(),
        vector.mrr(),
        text.mrr()
    );
    assert!(
        hybrid.hit5 > vector.hit5 && hybrid.hit5 > text.hit5,
        "hybrid Hit@5 {} must beat vector {} and full text {}",
        hybrid.hit5,
        vector.hit5,
        text.hit5
    );
    // Hit@1 moves by a question in 62 from one machine to another with the same code and
    // corpus (seen on an AMD EPYC: hybrid 24 tied full text 24, where earlier machines had
    // hybrid ahead): hybrid must not lose there.
    assert!(
        hybrid.hit1 >= vector.hit1 && hybrid.hit1 >= text.hit1,
        "hybrid Hit@1 {} must not fall below vector {} or full text {}",
        hybrid.hit1,
        vector.hit1,
        text.hit1
    );
}
