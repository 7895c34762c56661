use std::sync::OnceLock;

use super::*;
use crate::docs::embed::Embedder;
use crate::docs::store::{ChunkRecord, FileChunks};
use crate::docs::{Chunk, SourceType};

fn embedder() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| Embedder::load_default().unwrap())
}

struct Passage {
    id: &'static str,
    heading: &'static str,
    text: &'static str,
}

const BOOK: [Passage; 4] = [
    Passage {
        id: "book-e0502",
        heading: "Errors > E0502",
        text: "error[E0502]: cannot borrow `v` as mutable because it is also borrowed as \
                   immutable. A value was borrowed mutably while a shared borrow of it was still \
                   alive; end the shared borrow first.",
    },
    Passage {
        id: "book-threads",
        heading: "Fearless Concurrency > Shared State",
        text: "To share state between threads, wrap the value in Arc<Mutex<T>>: Arc counts \
                   the owners atomically and Mutex lets one thread at a time change the value.",
    },
    Passage {
        id: "book-closures",
        heading: "Functional Features > Closures",
        text: "Closures are anonymous functions you can save in a variable or pass as \
                   arguments; they capture values from the scope in which they are defined.",
    },
    Passage {
        id: "book-strings",
        heading: "Collections > Strings",
        text: "A String is a growable, UTF-8 encoded piece of text stored on the heap; \
                   push_str appends a string slice to it.",
    },
];

const CARGO: [Passage; 4] = [
    Passage {
        id: "cargo-message-format",
        heading: "cargo build > Output Options",
        text: "--message-format FMT: the output format for diagnostic messages. Valid values: \
                   human (default), short, json, json-diagnostic-short, json-render-diagnostics.",
    },
    Passage {
        id: "cargo-profiles",
        heading: "Profiles > release",
        text: "The release profile is intended for optimized artifacts used for releases and \
                   in production: opt-level = 3, debug = false, lto = false.",
    },
    Passage {
        id: "cargo-workspaces",
        heading: "Workspaces",
        text: "A workspace is a collection of one or more packages that share a common \
                   Cargo.lock and output directory.",
    },
    Passage {
        id: "cargo-features",
        heading: "Features",
        text: "Cargo features provide a mechanism to express conditional compilation and \
                   optional dependencies, declared in the [features] table of Cargo.toml.",
    },
];

async fn records(
    passages: &[Passage],
    file_path: &str,
    library: &str,
    version: Option<&str>,
    source_type: SourceType,
) -> Vec<ChunkRecord> {
    let texts = passages.iter().map(|p| p.text.to_string()).collect();
    let vectors = embedder().embed_passages(texts).await.unwrap();
    passages
        .iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, (p, vector))| ChunkRecord {
            chunk: Chunk {
                text: p.text.to_string(),
                library: library.to_string(),
                version: version.map(str::to_string),
                source_type,
                file_path: file_path.to_string(),
                heading_path: p.heading.split(" > ").map(String::from).collect(),
                anchor: None,
                line_start: 10 * i as u32 + 1,
                line_end: 10 * i as u32 + 8,
                url: Some(format!("https://example.invalid/{}", p.id)),
                content_hash: p.id.to_string(),
            },
            embedding_key: format!("key-{}", p.id),
            vector,
        })
        .collect()
}

/// The book as a guide (no version) and cargo's docs as api at 1.95.0, in two commits,
/// so the second file's rows are not in the full-text index yet.
async fn two_file_index(dir: &std::path::Path) -> DocStore {
    let embedder = embedder();
    let store = DocStore::open(dir, embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    store
        .upsert_file(
            "/docs/book/ch16.md",
            "h-book",
            records(&BOOK, "book/ch16.md", "rust-book", None, SourceType::Guide).await,
        )
        .await
        .unwrap();
    store
        .upsert_files(vec![FileChunks {
            source: "/docs/cargo/build.md".into(),
            file_hash: "h-cargo".into(),
            chunks: records(
                &CARGO,
                "cargo/build.md",
                "cargo",
                Some("1.95.0"),
                SourceType::Api,
            )
            .await,
        }])
        .await
        .unwrap();
    store
}

async fn ids(
    store: &DocStore,
    mode: SearchMode,
    query: &str,
    filter: &SearchFilter,
) -> Vec<String> {
    let vector = embedder().embed_query(query).await.unwrap();
    store
        .search(mode, &vector, query, filter, 3)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.id)
        .collect()
}

#[tokio::test]
async fn exact_identifiers_by_full_text_paraphrases_by_vector_both_by_hybrid() {
    let dir = tempfile::tempdir().unwrap();
    let store = two_file_index(dir.path()).await;
    let any = SearchFilter::default();
    let paraphrase = "which settings make the shipped binary fast";

    for mode in [SearchMode::FullText, SearchMode::Hybrid] {
        assert_eq!(
            ids(&store, mode, "E0502", &any).await[0],
            "book-e0502",
            "{mode:?}"
        );
        assert_eq!(
            ids(&store, mode, "--message-format", &any).await[0],
            "cargo-message-format",
            "{mode:?}"
        );
    }
    for mode in [SearchMode::Vector, SearchMode::Hybrid] {
        assert_eq!(
            ids(&store, mode, paraphrase, &any).await[0],
            "cargo-profiles",
            "{mode:?}"
        );
        assert_eq!(
            ids(
                &store,
                mode,
                "how do two threads change the same data safely",
                &any
            )
            .await[0],
            "book-threads",
            "{mode:?}"
        );
    }
    // A word of the heading path alone finds the passage under it.
    assert_eq!(
        ids(&store, SearchMode::FullText, "fearless", &any).await[0],
        "book-threads"
    );
    assert_ne!(
        ids(&store, SearchMode::FullText, paraphrase, &any).await[0],
        "cargo-profiles",
        "the paraphrase shares no word but `the` with the passage"
    );

    // Hits carry their location and a score in the mode's scale.
    let vector = embedder().embed_query("E0502").await.unwrap();
    let hit = &store
        .search(SearchMode::Hybrid, &vector, "E0502", &any, 1)
        .await
        .unwrap()[0];
    assert_eq!(
        (
            hit.library.as_str(),
            hit.version.as_deref(),
            hit.file_path.as_str()
        ),
        ("rust-book", None, "book/ch16.md")
    );
    assert_eq!(
        (hit.heading.as_str(), hit.line_start, hit.line_end),
        ("Errors > E0502", 1, 8)
    );
    assert_eq!(
        hit.url.as_deref(),
        Some("https://example.invalid/book-e0502")
    );
    assert!(
        hit.score > 1.0 / (RRF_K + 1.0),
        "in both lists: {}",
        hit.score
    );
    let hits = store
        .search(SearchMode::Vector, &vector, "", &any, 8)
        .await
        .unwrap();
    assert_eq!(hits.len(), 8);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| (-1.0..=1.0).contains(&h.score)));
}

#[tokio::test]
async fn filters_narrow_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = two_file_index(dir.path()).await;
    let query = "how do I share data between threads";
    let vector = embedder().embed_query(query).await.unwrap();
    let search = |filter: SearchFilter, mode| {
        let store = store.clone();
        let vector = vector.clone();
        async move {
            store
                .search(mode, &vector, query, &filter, 10)
                .await
                .unwrap()
        }
    };
    for mode in [SearchMode::Vector, SearchMode::FullText, SearchMode::Hybrid] {
        let cargo = search(
            SearchFilter {
                library: Some("cargo".into()),
                ..Default::default()
            },
            mode,
        )
        .await;
        assert!(cargo.iter().all(|h| h.library == "cargo"), "{mode:?}");
        let guides = search(
            SearchFilter {
                source_types: vec!["guide".into()],
                ..Default::default()
            },
            mode,
        )
        .await;
        assert!(
            !guides.is_empty() && guides.iter().all(|h| h.source_type == "guide"),
            "{mode:?}"
        );
    }
    let all = search(SearchFilter::default(), SearchMode::Vector).await;
    assert_eq!(all.len(), 8);
    let count = |hits: Vec<Hit>| hits.len();
    let scope = |version: &str| SearchFilter {
        scope: Some(ProjectScope {
            source_prefixes: vec!["/docs/book/".into()],
            libraries: vec![("cargo".into(), Some(version.into()))],
        }),
        ..Default::default()
    };
    assert_eq!(count(search(scope("1.95.0"), SearchMode::Vector).await), 8);
    let other_version = search(scope("1.80.0"), SearchMode::Vector).await;
    assert!(other_version.len() == 4 && other_version.iter().all(|h| h.library == "rust-book"));
    let versioned = SearchFilter {
        version: Some("1.95.0".into()),
        ..Default::default()
    };
    assert_eq!(count(search(versioned, SearchMode::Vector).await), 4);
    let quoted = SearchFilter {
        library: Some("o'reilly \\ co".into()),
        ..Default::default()
    };
    assert_eq!(count(search(quoted, SearchMode::Hybrid).await), 0);
    let empty_scope = SearchFilter {
        scope: Some(ProjectScope::default()),
        ..Default::default()
    };
    assert_eq!(count(search(empty_scope, SearchMode::Hybrid).await), 0);
}

#[tokio::test]
async fn replaced_and_removed_files_leave_search_and_reopening_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = two_file_index(dir.path()).await;
    let any = SearchFilter::default();
    // book/ch16.md changes: E0502 is gone, closures stay.
    store
        .upsert_file(
            "/docs/book/ch16.md",
            "h-book-2",
            records(
                &BOOK[2..],
                "book/ch16.md",
                "rust-book",
                None,
                SourceType::Guide,
            )
            .await,
        )
        .await
        .unwrap();
    assert!(
        !ids(&store, SearchMode::FullText, "E0502", &any)
            .await
            .contains(&"book-e0502".into())
    );
    assert_eq!(store.count_rows().await.unwrap(), 6);
    store.optimize().await.unwrap();
    assert_eq!(
        ids(&store, SearchMode::Hybrid, "--message-format", &any).await[0],
        "cargo-message-format"
    );

    store
        .remove_files(&["/docs/book/ch16.md".into()])
        .await
        .unwrap();
    drop(store);
    let embedder = embedder();
    let store = DocStore::open(dir.path(), embedder.model_name(), embedder.dimension())
        .await
        .unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 4);
    let hits = ids(&store, SearchMode::Hybrid, "closures capture values", &any).await;
    assert!(hits.iter().all(|id| id.starts_with("cargo-")), "{hits:?}");
    assert_eq!(
        store
            .file_hashes()
            .await
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        [("/docs/cargo/build.md".to_string(), "h-cargo".to_string())]
    );
}

/// Rows found before another process rewrote the index (a file indexed again, then
/// compacted) are never read as other passages: what is gone is left out, so the
/// search knows to look again, and then finds the passages where they are now.
#[tokio::test]
async fn rows_found_before_a_rewrite_are_found_again_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let store = two_file_index(dir.path()).await;
    store.optimize().await.unwrap();
    let any = SearchFilter::default();
    let query = "share state between threads";
    let vector = embedder().embed_query(query).await.unwrap();
    let ready = async { Ok::<_, IndexError>(vector.clone()) };
    let (_, found) = store
        .find(SearchMode::Hybrid, ready, query, &None, 8)
        .await
        .unwrap();
    let before = store.read_rows(&found).await.unwrap();
    assert_eq!(before.len(), found.len());

    let rewritten = records(&BOOK, "book/ch16.md", "rust-book", None, SourceType::Guide).await;
    store
        .upsert_file("/docs/book/ch16.md", "h-book-2", rewritten)
        .await
        .unwrap();
    store.optimize().await.unwrap();
    let after = store.read_rows(&found).await.unwrap_or_default();
    assert!(
        after.len() < found.len(),
        "{} of {} read",
        after.len(),
        found.len()
    );
    for hit in &after {
        let same = before
            .iter()
            .find(|b| b.id == hit.id)
            .expect("a passage found before");
        assert_eq!((&hit.heading, &hit.content), (&same.heading, &same.content));
    }

    let hits = store
        .search(SearchMode::Hybrid, &vector, query, &any, 8)
        .await
        .unwrap();
    assert_eq!(hits.len(), 8);
    assert_eq!(hits[0].id, "book-threads");
}

#[tokio::test]
async fn an_empty_index_returns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = DocStore::open(dir.path(), "m", 384).await.unwrap();
    let hits = store
        .search(
            SearchMode::Hybrid,
            &[0.0; 384],
            "anything",
            &SearchFilter::default(),
            5,
        )
        .await
        .unwrap();
    assert!(hits.is_empty());
}

#[test]
fn rank_fusion_adds_reciprocal_ranks() {
    let fused = reciprocal_rank_fusion([vec!["a", "b"], vec!["b", "c"]], |item| *item);
    let order: Vec<&str> = fused.iter().map(|(item, _)| *item).collect();
    // a and c tie: the first list's comes first.
    assert_eq!(order, ["b", "a", "c"]);
    assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
    assert!((fused[1].1 - 1.0 / 61.0).abs() < 1e-6);
    assert!((fused[2].1 - 1.0 / 62.0).abs() < 1e-6);
}

#[test]
fn filters_become_predicates() {
    assert_eq!(SearchFilter::default().to_predicate(), None);
    let filter = SearchFilter {
        library: Some("it's".into()),
        version: None,
        source_types: vec!["api".into(), "guide".into()],
        scope: Some(ProjectScope {
            source_prefixes: vec!["/p/docs/".into()],
            libraries: vec![("serde".into(), Some("1.0.1".into())), ("x".into(), None)],
        }),
    };
    assert_eq!(
        filter.to_predicate().unwrap(),
        "library = 'it''s' AND source_type IN ('api', 'guide') AND \
             (starts_with(source, '/p/docs/') OR (library = 'serde' AND version = '1.0.1') \
             OR library = 'x')"
    );
}
