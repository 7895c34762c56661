//! docs_lookup's retrieval quality and latency on the whole toolchain index, as a user gets
//! it from `drydock index --toolchain-docs` (all of rustup's Rust docs and Elixir's standard
//! library). Not run by CI: the index takes half an hour to build. Build it once:
//!
//! ```sh
//! DRYDOCK_INDEX=~/.cache/drydock-eval/toolchain-index drydock index --toolchain-docs
//! cargo bench --profile dev --bench docs_quality     # or --release for the latency
//! ```
//!
//! (`DRYDOCK_EVAL_INDEX` names another index dir.) Two question sets: the held-out one,
//! `tests/fixtures/docs-eval/toolchain-questions.json` (written without looking at the
//! search, by category, several acceptable places each), and the development one the
//! re-ranking weights were chosen on, `questions.json`. A result answers when it comes from
//! a target's page and is a section holding the target's phrase, or is the same passage
//! where rustdoc publishes it again under another path ("Hybrid, the passage itself" asks
//! more: the returned passage holds the phrase). Prints Hit@1, Hit@5 and
//! MRR@10 by category for vector, full-text and hybrid search, the hybrid misses, and the
//! in-process latency of a lookup (query embedding included, no cache).

mod support;

#[path = "../tests/it/retrieval_scores.rs"]
mod retrieval_scores;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use drydock::docs::embed::Embedder;
use drydock::docs::reports::LookupReport;
use drydock::docs::rerank::own_heading;
use drydock::docs::search::{Hit, SearchFilter, SearchMode, reciprocal_rank_fusion};
use drydock::docs::store::DocStore;
use drydock::docs::{DEFAULT_EXCERPTS, DEFAULT_FULL, DEFAULT_LIMIT};
use drydock::render::Render;
use retrieval_scores::{Scores, squash};
use serde::Deserialize;
use support::percentile;

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

fn questions() -> Vec<Question> {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs-eval");
    let read = |name: &str| std::fs::read_to_string(fixtures.join(name)).unwrap();
    let held_out: Vec<HeldOut> = serde_json::from_str(&read("toolchain-questions.json")).unwrap();
    let development: Vec<Development> = serde_json::from_str(&read("questions.json")).unwrap();
    let mut all: Vec<Question> = held_out
        .into_iter()
        .map(|q| Question {
            id: q.id,
            set: "held-out",
            category: q.category,
            text: q.question,
            targets: q.targets,
        })
        .collect();
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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let dir = std::env::var_os("DRYDOCK_EVAL_INDEX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/drydock-eval/toolchain-index")
        });
    let embedder = Embedder::load_default().unwrap();
    let store = DocStore::open(&dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    let rows = store.count_rows().await.unwrap();
    if rows == 0 {
        eprintln!(
            "{} holds no index: build it with `DRYDOCK_INDEX={} drydock index --toolchain-docs`",
            dir.display(),
            dir.display()
        );
        std::process::exit(1);
    }
    let questions = questions();
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
    let misses_file = std::env::temp_dir().join("docs-quality-misses.txt");
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
}
