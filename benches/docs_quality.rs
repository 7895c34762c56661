//! docs_lookup's retrieval quality and latency on the whole toolchain index, as a user gets
//! it from `drydock index --toolchain-docs` (all of rustup's Rust docs and Elixir's standard
//! library). Not run by CI: the index takes half an hour to build. Build it once:
//!
//! ```sh
//! DRYDOCK_INDEX=~/.cache/drydock-eval/toolchain-index drydock index --toolchain-docs
//! cargo bench --profile dev --bench docs_quality     # or --release for the latency
//! ```
//!
//! (`DRYDOCK_EVAL_INDEX` names another index dir.) A second family of docs, never tuned on:
//! Debian's Python docs (`apt-get install python3-doc`), its tutorial, library, language
//! reference, HOWTOs and FAQ, indexed by the bench itself into
//! `~/.cache/drydock-eval/python-index` (or `DRYDOCK_EVAL_PYTHON_INDEX`; later runs re-embed
//! nothing) and asked the held-out `tests/fixtures/docs-eval/python-questions.json`.
//!
//! Two question sets on the toolchain: the held-out one,
//! `tests/fixtures/docs-eval/toolchain-questions.json` (written without looking at the
//! search, by category, several acceptable places each), and the development one the
//! re-ranking weights were chosen on, `questions.json`. A result answers when it comes from
//! a target's page and is a section holding the target's phrase, or is the same passage
//! where rustdoc publishes it again under another path ("Hybrid, the passage itself" asks
//! more: the returned passage holds the phrase). Prints Hit@1, Hit@5 and
//! MRR@10 by category for vector, full-text and hybrid search, the hybrid misses, and the
//! in-process latency of a lookup (query embedding included, no cache), quiet and with one
//! busy process per core in another session (as a build in another terminal).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

#[path = "docs_support/load.rs"]
mod load;

#[path = "../tests/it/retrieval_scores.rs"]
mod retrieval_scores;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drydock::docs::embed::Embedder;
use drydock::docs::ingest::{IngestOptions, IngestProgress, ingest};
use drydock::docs::reports::LookupReport;
use drydock::docs::rescore::own_heading;
use drydock::docs::search::{
    Hit, SearchFilter, SearchMode, hybrid_candidates, reciprocal_rank_fusion,
};
use drydock::docs::sources::{FileRoot, Library, PathFilter, Root};
use drydock::docs::store::DocStore;
use drydock::docs::{DEFAULT_EXCERPTS, DEFAULT_FULL, DEFAULT_LIMIT};
use drydock::render::Render;
use load::BusyLoad;
use retrieval_scores::{Scores, squash};
use serde::Deserialize;
use support::percentile;
use tokio_util::sync::CancellationToken;

const TOP: usize = DEFAULT_LIMIT;

#[derive(Deserialize)]
struct Target {
    file: String,
    contains: String,
}

#[derive(Deserialize)]
struct HeldOut {
    id: String,
    category: String,
    question: String,
    targets: Vec<Target>,
}

#[derive(Deserialize)]
struct Development {
    id: String,
    question: String,
    file: String,
    contains: String,
}

struct Question {
    id: String,
    set: &'static str,
    category: String,
    text: String,
    targets: Vec<Target>,
}

fn fixture(name: &str) -> String {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs-eval");
    std::fs::read_to_string(fixtures.join(name)).unwrap()
}

fn held_out(name: &str) -> Vec<Question> {
    let held_out: Vec<HeldOut> = serde_json::from_str(&fixture(name)).unwrap();
    held_out
        .into_iter()
        .map(|q| Question {
            id: q.id,
            set: "held-out",
            category: q.category,
            text: q.question,
            targets: q.targets,
        })
        .collect()
}

fn toolchain_questions() -> Vec<Question> {
    let development: Vec<Development> = serde_json::from_str(&fixture("questions.json")).unwrap();
    let mut all = held_out("toolchain-questions.json");
    all.extend(development.into_iter().map(|q| Question {
        id: q.id,
        set: "development",
        category: "development".into(),
        text: q.question,
        targets: vec![Target {
            file: q.file,
            contains: q.contains,
        }],
    }));
    all
}

/// The (file, heading) sections of the index that hold one of the question's phrases, and
/// the same passages under the same heading elsewhere, which docs_lookup shows once (rustdoc
/// publishes a re-exported item's page on each path, `std::collections::HashMap` and
/// `std::collections::hash_map::HashMap`; cargo's command pages repeat whole sections).
async fn answers(store: &DocStore, question: &Question) -> HashSet<(String, String)> {
    let mut sections = HashSet::new();
    for target in &question.targets {
        let phrase = squash(&target.contains);
        for (file, heading, text) in store.file_sections(&target.file).await.unwrap() {
            if squash(&text).contains(&phrase) {
                for (copy, copy_heading, _) in store.chunks_with_text(&text).await.unwrap() {
                    if own_heading(&copy_heading) == own_heading(&heading) {
                        sections.insert((copy, copy_heading));
                    }
                }
                sections.insert((file, heading));
            }
        }
    }
    sections
}

/// `rank` (None: not in the results) for `mode`, in the question's set and category.
fn record(
    scores: &mut BTreeMap<(String, String), Scores>,
    question: &Question,
    mode: &str,
    rank: Option<usize>,
) {
    for category in [
        format!("{} · all", question.set),
        format!("{} · {}", question.set, question.category),
    ] {
        scores
            .entry((mode.to_string(), category))
            .or_default()
            .add(rank);
    }
}

fn index_dir(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/drydock-eval")
                .join(default)
        })
}

/// Debian's Python docs (`python3-doc`), as a root of the index.
fn python_docs() -> Root {
    let html = std::fs::read_dir("/usr/share/doc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path().join("html"))
        .find(|html| {
            html.join("library/json.html").is_file()
                && html
                    .parent()
                    .and_then(|p| p.file_name())
                    .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
        })
        .unwrap_or_else(|| {
            eprintln!("the Python docs are not installed: apt-get install python3-doc");
            std::process::exit(1);
        });
    let include: Vec<String> = ["tutorial", "library", "reference", "howto", "faq"]
        .map(|dir| format!("{dir}/**/*.html"))
        .to_vec();
    Root::Files(FileRoot {
        dir: html.canonicalize().unwrap(),
        only: None,
        library: Library::Named("python".into()),
        version: None,
        filter: PathFilter::new(&include, &[]).unwrap(),
        skip_nested_packages: false,
    })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let embedder = Embedder::load_default().unwrap();
    let dir = index_dir("DRYDOCK_EVAL_INDEX", "toolchain-index");
    let store = DocStore::open(&dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    if store.count_rows().await.unwrap() == 0 {
        eprintln!(
            "{} holds no index: build it with `DRYDOCK_INDEX={} drydock index --toolchain-docs`",
            dir.display(),
            dir.display()
        );
        std::process::exit(1);
    }
    println!("== Rust and Elixir (the toolchain)");
    evaluate(&embedder, &store, &dir, toolchain_questions()).await;
    let python_dir = index_dir("DRYDOCK_EVAL_PYTHON_INDEX", "python-index");
    let python = DocStore::open(&python_dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    let report = ingest(
        &python,
        &embedder,
        vec![python_docs()],
        &IngestOptions::default(),
        Arc::new(IngestProgress::default()),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    println!("{}", report.render());

    println!("\n== Python (python3-doc), never tuned on");
    evaluate(
        &embedder,
        &python,
        &python_dir,
        held_out("python-questions.json"),
    )
    .await;
}

/// Writes, for each question, its answers and the candidates of each half of a hybrid
/// search (as many as it fetches at the default size, passages included) to
/// `$DOCS_QUALITY_CANDIDATES/<index name>.jsonl`, when that variable names a directory: a
/// re-ranking is tried on them offline in seconds, not by a run of this bench each.
async fn dump_candidates(
    embedder: &Embedder,
    store: &DocStore,
    dir: &Path,
    questions: &[Question],
) {
    let Some(out) = std::env::var_os("DOCS_QUALITY_CANDIDATES") else {
        return;
    };
    let half = |hits: Vec<Hit>| -> Vec<serde_json::Value> {
        hits.into_iter()
            .map(|hit| {
                serde_json::json!({
                    "id": hit.id, "file": hit.file_path, "heading": hit.heading,
                    "url": hit.url, "source_type": hit.source_type, "library": hit.library,
                    "content": hit.content, "score": hit.score,
                })
            })
            .collect()
    };
    let mut lines = Vec::new();
    let any = SearchFilter::default();
    for question in questions {
        let vector = embedder.embed_query(&question.text).await.unwrap();
        let search =
            |mode| store.search(mode, &vector, &question.text, &any, hybrid_candidates(TOP));
        let (by_vector, by_text) = (search(SearchMode::Vector), search(SearchMode::FullText));
        let answer: Vec<(String, String)> = answers(store, question).await.into_iter().collect();
        lines.push(
            serde_json::json!({
                "id": question.id, "set": question.set, "category": question.category,
                "question": question.text, "answers": answer,
                "phrases": question.targets.iter().map(|t| squash(&t.contains)).collect::<Vec<_>>(),
                "vector": half(by_vector.await.unwrap()), "text": half(by_text.await.unwrap()),
            })
            .to_string(),
        );
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let file = PathBuf::from(out).join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.join("\n")).unwrap();
    println!("candidates written to {}", file.display());
}

/// Asks `questions` of the index in `dir` and prints the scores, misses, tokens and latency.
async fn evaluate(embedder: &Embedder, store: &DocStore, dir: &Path, questions: Vec<Question>) {
    dump_candidates(embedder, store, dir, &questions).await;
    let store = store.clone();
    let rows = store.count_rows().await.unwrap();
    let mut unanswerable = Vec::new();
    let mut answer_sets = Vec::new();
    for question in &questions {
        let answer = answers(&store, question).await;
        if answer.is_empty() {
            unanswerable.push(question.id.clone());
        }
        answer_sets.push(answer);
    }
    println!(
        "index {}: {rows} chunks; {} questions ({} held out, {} development)",
        dir.display(),
        questions.len(),
        questions.iter().filter(|q| q.set == "held-out").count(),
        questions.iter().filter(|q| q.set == "development").count()
    );
    if !unanswerable.is_empty() {
        println!(
            "no indexed section holds the phrase of {} (they count as misses): {unanswerable:?}",
            unanswerable.len()
        );
    }

    // "Fused" is the first stage alone (reciprocal rank fusion of 50 candidates of each
    // half), to show what the re-ranking adds.
    let modes = [SearchMode::Vector, SearchMode::FullText, SearchMode::Hybrid];
    let mut scores: BTreeMap<(String, String), Scores> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut latencies = Vec::new();
    // cl100k tokens of docs_lookup's text at its default size (10 results, 3 whole), by
    // category.
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    let mut tokens: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (question, answer) in questions.iter().zip(&answer_sets) {
        for mode in modes {
            let started = Instant::now();
            let vector = match mode {
                SearchMode::FullText => Vec::new(),
                _ => embedder.embed_query(&question.text).await.unwrap(),
            };
            let hits = store
                .search(mode, &vector, &question.text, &SearchFilter::default(), TOP)
                .await
                .unwrap();
            if mode == SearchMode::Hybrid {
                latencies.push(started.elapsed());
            }
            let rank_in = |hits: &[Hit]| {
                hits.iter()
                    .position(|hit| answer.contains(&(hit.file_path.clone(), hit.heading.clone())))
                    .map(|i| i + 1)
            };
            let rank = rank_in(&hits);
            if mode == SearchMode::Hybrid {
                let any = SearchFilter::default();
                let (by_vector, by_text) = (
                    store.search(SearchMode::Vector, &vector, &question.text, &any, 50),
                    store.search(SearchMode::FullText, &vector, &question.text, &any, 50),
                );
                let fused: Vec<Hit> = reciprocal_rank_fusion(
                    [by_vector.await.unwrap(), by_text.await.unwrap()],
                    |hit| hit.id.clone(),
                )
                .into_iter()
                .take(TOP)
                .map(|(hit, _)| hit)
                .collect();
                let fused_rank = rank_in(&fused);
                record(&mut scores, question, "Fused", fused_rank);
            }
            if mode == SearchMode::Hybrid {
                let shaped = LookupReport::shaped(
                    question.text.clone(),
                    hits.clone(),
                    DEFAULT_FULL,
                    DEFAULT_EXCERPTS,
                    None,
                );
                let text_tokens = cl100k.encode_with_special_tokens(&shaped.render()).len();
                tokens
                    .entry(question.category.clone())
                    .or_default()
                    .push(text_tokens);
                tokens.entry("all".into()).or_default().push(text_tokens);
                // The reader's measure: a returned passage itself holds the answer's phrase
                // (not only a passage of the section that holds it).
                let phrases: Vec<String> = question
                    .targets
                    .iter()
                    .map(|t| squash(&t.contains))
                    .collect();
                let passage_rank = hits
                    .iter()
                    .position(|hit| {
                        let text = squash(&hit.content);
                        phrases.iter().any(|p| text.contains(p))
                    })
                    .map(|i| i + 1);
                record(
                    &mut scores,
                    question,
                    "Hybrid, the passage itself",
                    passage_rank,
                );
            }
            record(&mut scores, question, &format!("{mode:?}"), rank);
            if mode == SearchMode::Hybrid && rank.is_none_or(|r| r > 5) {
                let top: Vec<String> = hits
                    .iter()
                    .take(3)
                    .map(|h| format!("{} [{}]", h.file_path, h.heading))
                    .collect();
                misses.push(format!(
                    "{} {} (rank {rank:?}): {}\n    top: {top:#?}",
                    question.set, question.id, question.text
                ));
            }
        }
    }
    for mode in [
        "Vector",
        "FullText",
        "Fused",
        "Hybrid",
        "Hybrid, the passage itself",
    ] {
        println!("{mode}");
        for ((m, category), s) in &scores {
            if m == mode {
                println!("  {category:<28} (n={:>3})  {}", s.count, s.line());
            }
        }
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let misses_file = std::env::temp_dir().join(format!("docs-quality-misses-{name}.txt"));
    std::fs::write(&misses_file, misses.join("\n")).unwrap();
    println!(
        "hybrid misses at 5: {} (listed in {})",
        misses.len(),
        misses_file.display()
    );
    for (category, counts) in &mut tokens {
        counts.sort_unstable();
        let at = |p: f64| counts[((counts.len() - 1) as f64 * p).round() as usize];
        println!(
            "docs_lookup text at its default size, {category}: p50 {} p95 {} max {} tokens (cl100k)",
            at(0.5),
            at(0.95),
            counts[counts.len() - 1]
        );
    }
    let latencies: Vec<Duration> = latencies;
    println!(
        "hybrid lookup in-process (query embedding included): p50 {:.1} ms, p99 {:.1} ms over {} queries",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.len()
    );
    let load = BusyLoad::start();
    let mut loaded = Vec::new();
    for question in &questions {
        let started = Instant::now();
        let vector = embedder.embed_query(&question.text).await.unwrap();
        let hits = store
            .search(
                SearchMode::Hybrid,
                &vector,
                &question.text,
                &SearchFilter::default(),
                TOP,
            )
            .await
            .unwrap();
        std::hint::black_box(hits);
        loaded.push(started.elapsed());
    }
    println!(
        "  the same with {} busy processes (a session of their own) in the background: p50 {:.1} ms, p99 {:.1} ms (ratio of p50s {:.2})",
        load.processes(),
        percentile(&loaded, 50.0),
        percentile(&loaded, 99.0),
        percentile(&loaded, 50.0) / percentile(&latencies, 50.0)
    );
}
