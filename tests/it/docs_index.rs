//! The docs index end to end, in process: real projects (their own docs and their
//! dependencies from cargo's registry or mix's deps/), the shipped model, LanceDB on disk.
//! Incremental re-runs, replaced and deleted files, project scopes and the empty index.

use std::path::Path;
use std::sync::Arc;

use drydock::call::Call;
use drydock::config::{Config, Overrides};
use drydock::docs::Docs;
use drydock::docs::ingest::IngestProgress;
use drydock::docs::reports::{IngestReport, LookupReport};
use drydock::docs::requests::{IndexRequest, LookupRequest};
use drydock::render::Render;
use tokio_util::sync::CancellationToken;

use crate::support::copy_project;

fn docs_at(index: &Path) -> Arc<Docs> {
    let cwd = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        index_dir: Some(index.to_path_buf()),
        allow_roots: vec!["/".into()],
        ..Overrides::default()
    };
    let config = Config::resolve(&overrides, &|_| None, cwd.path()).unwrap();
    Docs::for_command_line(Arc::new(config))
}

async fn index(docs: &Docs, request: IndexRequest) -> IngestReport {
    docs.index(request, &Call::silent(CancellationToken::new()))
        .await
        .unwrap()
}

fn project(dir: &Path) -> IndexRequest {
    IndexRequest {
        project_path: Some(dir.display().to_string()),
        ..IndexRequest::default()
    }
}

async fn lookup(docs: &Docs, query: &str, project: Option<&Path>) -> LookupReport {
    docs.lookup(LookupRequest {
        query: query.into(),
        project_path: project.map(|p| p.display().to_string()),
        ..LookupRequest::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cargo_project_and_its_locked_dependencies_index_incrementally() {
    let index_dir = tempfile::tempdir().unwrap();
    let docs = docs_at(index_dir.path());
    let (_keep, dir) = copy_project("docs-deps");

    let empty = lookup(&docs, "badge colour", None).await;
    assert!(empty.results.is_empty());
    let message = empty.message.unwrap();
    assert!(message.contains("drydock index --project"), "{message}");
    assert!(
        !index_dir.path().join("chunks.lance").exists(),
        "a lookup does not create the index"
    );

    let first = index(&docs, project(&dir)).await;
    assert!(first.files_indexed >= 5, "{first:?}");
    assert_eq!(first.files_unchanged, 0);
    assert!(
        first.chunks_embedded > 0 && first.error_count == 0,
        "{first:?}"
    );
    let summary = docs.summary().await.unwrap();
    let libraries: Vec<(String, Option<String>)> = summary
        .libraries
        .iter()
        .map(|l| (l.library.clone(), l.version.clone()))
        .collect();
    for expected in [
        ("docs-deps", "0.3.0"),
        ("itoa", "1.0.18"),
        ("semver", "1.0.28"),
    ] {
        assert!(
            libraries.contains(&(expected.0.into(), Some(expected.1.into()))),
            "{expected:?} not in {libraries:?}"
        );
    }
    assert_eq!(summary.model, "all-MiniLM-L6-v2-int8");
    assert!(summary.last_update.is_some());

    // The project's own guide, by paraphrase; a dependency's API by identifier.
    let colour = lookup(
        &docs,
        "what colour is the badge drawn in for a pre-release version",
        Some(&dir),
    )
    .await;
    let top = &colour.results[0];
    assert_eq!(top.hit.library, "docs-deps", "{colour:#?}");
    assert!(top.text().contains("purple"), "{}", top.text());
    let parse = lookup(&docs, "semver Version::parse", Some(&dir)).await;
    assert!(
        parse
            .results
            .iter()
            .take(3)
            .any(|r| r.hit.library == "semver"
                && r.hit.version.as_deref() == Some("1.0.28")
                && r.hit.file_path.starts_with("src/")),
        "{parse:#?}"
    );
    let hit = &parse.results[0];
    assert!(hit.hit.line_start >= 1 && hit.hit.line_end >= hit.hit.line_start);
    assert!(hit.hit.url.as_deref().unwrap().starts_with("file:///"));

    // Unchanged: nothing embedded, nothing written.
    let again = index(&docs, project(&dir)).await;
    // Every file is unchanged or, like Cargo.toml and Cargo.lock, counted as skipped.
    let skipped: u64 = again.files_skipped.values().sum();
    assert_eq!(
        again.files_unchanged + skipped,
        again.files_seen,
        "{again:?}"
    );
    assert_eq!(
        again.files_skipped.get("unsupported .toml"),
        Some(&1),
        "{again:?}"
    );
    assert_eq!((again.chunks_embedded, again.chunks_written), (0, 0));
    assert_eq!(again.index_rows, first.index_rows);

    // A changed file is replaced; its unchanged passages keep their vectors.
    let guide = dir.join("docs/guide.md");
    let text = std::fs::read_to_string(&guide).unwrap();
    std::fs::write(
        &guide,
        format!("{text}\n## Badge sizes\n\nBadges are twenty pixels high at every zoom level.\n"),
    )
    .unwrap();
    let changed = index(&docs, project(&dir)).await;
    assert_eq!(changed.files_indexed, 1, "{changed:?}");
    assert!(
        changed.chunks_reused > 0 || changed.chunks_embedded <= 2,
        "{changed:?}"
    );
    let sizes = lookup(&docs, "how tall are the badges", Some(&dir)).await;
    assert!(
        sizes.results[0].text().contains("twenty pixels"),
        "{sizes:#?}"
    );

    // A deleted file leaves the index.
    std::fs::remove_file(&guide).unwrap();
    let removed = index(&docs, project(&dir)).await;
    assert_eq!(removed.files_removed, 1, "{removed:?}");
    let gone = lookup(&docs, "twenty pixels high", Some(&dir)).await;
    assert!(
        gone.results
            .iter()
            .all(|r| !r.text().contains("twenty pixels")),
        "{gone:#?}"
    );

    // Another project's scope does not see this one's docs.
    let (_keep_mix, mix) = copy_project("mix-docs-deps");
    let other = lookup(
        &docs,
        "what colour is the badge drawn in for a pre-release version",
        Some(&mix),
    )
    .await;
    assert!(
        other.results.iter().all(|r| r.hit.library != "docs-deps"),
        "{other:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mix_project_indexes_its_deps_and_shares_identical_chunks() {
    let index_dir = tempfile::tempdir().unwrap();
    let docs = docs_at(index_dir.path());
    let (_keep, dir) = copy_project("mix-docs-deps");
    let report = index(&docs, project(&dir)).await;
    assert!(
        report.files_indexed >= 3 && report.error_count == 0,
        "{report:?}"
    );
    let summary = docs.summary().await.unwrap();
    assert!(
        summary
            .libraries
            .iter()
            .any(|l| l.library == "tiny_json" && l.version.as_deref() == Some("0.3.1")),
        "{:?}",
        summary.libraries
    );
    let escaping = lookup(&docs, "how are quotes escaped in JSON strings", Some(&dir)).await;
    assert_eq!(
        escaping.results[0].hit.library, "tiny_json",
        "{escaping:#?}"
    );
    // The function's doc comes first or second: the README ("A minimal JSON encoder") is
    // first by vector and second by full text, the function the other way round, and a tie
    // in the fused score goes to the vector order.
    let encode = lookup(&docs, "TinyJson.encode", Some(&dir)).await;
    let function = encode.results[..2]
        .iter()
        .find(|hit| hit.hit.heading.contains("encode/1"))
        .unwrap_or_else(|| panic!("{encode:#?}"));
    assert_eq!(
        (
            function.hit.library.as_str(),
            function.hit.file_path.as_str()
        ),
        ("tiny_json", "lib/tiny_json.ex")
    );
    assert!(function.hit.line_start > 1);

    // The same dependency in a second project: its chunks are reused, not embedded again.
    let (_keep_copy, copy) = copy_project("mix-docs-deps");
    let second = index(&docs, project(&copy)).await;
    assert!(second.files_indexed >= 3, "{second:?}");
    assert_eq!(second.chunks_embedded, 0, "{second:?}");
    assert_eq!(second.chunks_reused, second.chunks_written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_skip_binary_and_generated_files_and_bad_requests_change_nothing() {
    let index_dir = tempfile::tempdir().unwrap();
    let docs = docs_at(index_dir.path());
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("notes é");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("tips.md"),
        "# Tips\n\n## Caching\n\nKeep the cargo target directory outside the clone so CI stays incremental.\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/blob.md"), b"\x00\x01binary\x00").unwrap();
    std::fs::write(
        dir.join("sub/redirect.html"),
        "<html><head><meta http-equiv=\"refresh\" content=\"0;URL=x.html\"></head></html>",
    )
    .unwrap();
    std::fs::write(dir.join("sub/data.json"), "{}").unwrap();
    std::fs::write(dir.join("sub/huge.md"), "word ".repeat(2 * 1024 * 1024)).unwrap();

    for bad in [
        IndexRequest::default(),
        IndexRequest {
            paths: Some(vec!["/no/such/dir".into()]),
            ..IndexRequest::default()
        },
        IndexRequest {
            paths: Some(vec![dir.display().to_string()]),
            transitive: Some(true),
            ..IndexRequest::default()
        },
    ] {
        let error = docs
            .index(bad, &Call::silent(CancellationToken::new()))
            .await
            .unwrap_err();
        assert!(!error.to_string().is_empty());
    }
    assert!(!index_dir.path().join("chunks.lance").exists());

    let report = index(
        &docs,
        IndexRequest {
            paths: Some(vec![dir.display().to_string()]),
            ..IndexRequest::default()
        },
    )
    .await;
    assert_eq!(report.files_seen, 5, "{report:?}");
    assert_eq!(report.files_indexed, 1);
    // Every skip is counted by reason and type; a file drydock reads but cannot is listed.
    assert_eq!(report.files_skipped.get("generated .html"), Some(&1));
    assert_eq!(report.files_skipped.get("huge .md"), Some(&1));
    assert_eq!(report.files_skipped.get("unsupported .json"), Some(&1));
    assert_eq!(report.files_skipped.len(), 3, "{report:?}");
    assert_eq!(report.error_count, 1);
    assert!(
        report.errors[0].contains("blob.md: not UTF-8 text"),
        "{report:?}"
    );
    let text = report.render();
    assert!(
        text.contains("skipped 1 generated .html, 1 huge .md, 1 unsupported .json"),
        "{text}"
    );
    assert!(text.contains("1 files could not be read:"), "{text}");
    let hit = lookup(&docs, "where should the target dir live", None).await;
    let top = &hit.results[0];
    assert_eq!(
        (top.hit.library.as_str(), top.hit.file_path.as_str()),
        ("notes é", "tips.md")
    );
    assert_eq!(top.hit.heading, "Tips > Caching");
    assert!(
        top.hit
            .url
            .as_deref()
            .unwrap()
            .contains("notes%20%C3%A9/tips.md")
    );

    let no_results =
        serde_json::from_value::<LookupRequest>(serde_json::json!({"query": "x", "limit": 0}));
    assert!(no_results.is_err(), "{no_results:?}");
    for bad in [
        LookupRequest::default(),
        LookupRequest {
            query: "x".into(),
            project_path: Some(root.path().display().to_string()),
            ..LookupRequest::default()
        },
    ] {
        assert!(docs.lookup(bad).await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_ingest_keeps_a_readable_index_and_the_next_run_finishes_it() {
    let index_dir = tempfile::tempdir().unwrap();
    let docs = docs_at(index_dir.path());
    let root = tempfile::tempdir().unwrap();
    for i in 0..40 {
        let text: String = (0..30)
            .map(|j| {
                format!(
                    "## Topic {i}.{j}\n\nParagraph {j} of file {i} explains thing number {}.\n\n",
                    i * 100 + j
                )
            })
            .collect();
        std::fs::write(
            root.path().join(format!("doc{i:02}.md")),
            format!("# File {i}\n\n{text}"),
        )
        .unwrap();
    }
    let request = IndexRequest {
        paths: Some(vec![root.path().display().to_string()]),
        ..IndexRequest::default()
    };
    let cancel = CancellationToken::new();
    let progress = Arc::new(IngestProgress::default());
    let watcher = {
        let progress = Arc::clone(&progress);
        let cancel = cancel.clone();
        tokio::spawn(async move {
            while progress.snapshot().chunks_embedded < 64 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            cancel.cancel();
        })
    };
    let roots = docs.roots_of(&request).await.unwrap();
    let stopped = docs
        .ingest_roots(roots, progress, &Call::silent(cancel.clone()))
        .await
        .unwrap();
    watcher.await.unwrap();
    assert!(stopped.cancelled, "{stopped:?}");
    assert!(stopped.files_indexed < 40, "{stopped:?}");
    // Readable, with whole files only.
    let summary = docs.summary().await.unwrap();
    assert_eq!(summary.chunks as u64, stopped.index_rows);

    let finished = index(&docs, request).await;
    assert!(!finished.cancelled);
    assert_eq!(
        finished.files_unchanged + finished.files_indexed,
        40,
        "{finished:?}"
    );
    assert_eq!(finished.files_unchanged, stopped.files_indexed);
    let hit = lookup(&docs, "thing number 3917", None).await;
    assert!(
        hit.results.iter().any(|r| r.text().contains("3917")),
        "{hit:#?}"
    );
}
