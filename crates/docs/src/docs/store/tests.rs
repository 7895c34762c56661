use super::*;
use crate::docs::SourceType;

const DIM: usize = 384;
const MODEL: &str = "all-MiniLM-L6-v2-int8";

/// A unit vector pointing mostly along axis `seed`.
fn vector(seed: usize) -> Vec<f32> {
    let mut v = vec![0.01; DIM];
    v[seed % DIM] = 1.0;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn chunk(id: &str, library: &str, version: Option<&str>, seed: usize) -> ChunkRecord {
    ChunkRecord {
        chunk: Chunk {
            text: format!("text of {id}"),
            library: library.to_string(),
            version: version.map(str::to_string),
            source_type: SourceType::Guide,
            file_path: format!("docs/{id}.md"),
            heading_path: vec!["Guide".into(), id.into()],
            anchor: Some(format!("#{id}")),
            line_start: seed as u32,
            line_end: seed as u32 + 3,
            url: None,
            content_hash: id.to_string(),
        },
        embedding_key: format!("key-{id}"),
        vector: vector(seed),
    }
}

/// From [`VECTOR_INDEX_MIN_ROWS`] rows on, and not before, optimizing builds the vector
/// index, and searches through it still find the nearest.
#[tokio::test]
async fn the_vector_index_is_built_from_its_size_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    store
        .upsert_files(vec![file("a", 0..VECTOR_INDEX_MIN_ROWS - 1)])
        .await
        .unwrap();
    assert!(!store.needs_vector_index().await.unwrap());
    assert!(!store.optimize().await.unwrap().created_vector_index);

    store.upsert_files(vec![file("b", 0..1)]).await.unwrap();
    assert!(store.needs_vector_index().await.unwrap());
    assert!(store.optimize().await.unwrap().created_vector_index);
    assert!(store.has_vector_index().await.unwrap());
    assert!(!store.needs_vector_index().await.unwrap());
    let hits = store
        .search(
            crate::docs::search::SearchMode::Vector,
            &vector(7),
            "",
            &crate::docs::search::SearchFilter::default(),
            5,
        )
        .await
        .unwrap();
    assert_eq!(hits.len(), 5);
    assert!(
        hits.iter().all(|hit| hit.line_start as usize % DIM == 7),
        "{hits:?}"
    );
}

#[tokio::test]
async fn files_are_replaced_removed_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 0);
    assert!(store.file_hashes().await.unwrap().is_empty());
    store
        .upsert_files(vec![
            FileChunks {
                source: "a.md".into(),
                file_hash: "ha1".into(),
                chunks: vec![
                    chunk("a1", "alpha", Some("1.0"), 1),
                    chunk("a2", "alpha", Some("1.0"), 2),
                ],
            },
            FileChunks {
                source: "b's dir\\b.md".into(),
                file_hash: "hb1".into(),
                chunks: vec![chunk("b1", "beta", None, 3)],
            },
        ])
        .await
        .unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 3);
    let hashes = store.file_hashes().await.unwrap();
    assert_eq!(hashes.len(), 2);
    assert_eq!(hashes["b's dir\\b.md"], "hb1");

    store
        .upsert_file("a.md", "ha2", vec![chunk("a3", "alpha", Some("1.0"), 4)])
        .await
        .unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 2);
    assert_eq!(store.file_hashes().await.unwrap()["a.md"], "ha2");
    let known = store
        .known_vectors(&[
            "key-a1".into(),
            "key-a3".into(),
            "key-b1".into(),
            "key-zz".into(),
        ])
        .await
        .unwrap();
    let mut keys: Vec<&String> = known.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["key-a3", "key-b1"],
        "a1 left with the old version of a.md"
    );
    assert_eq!(known["key-b1"], vector(3));

    assert_eq!(
        store.libraries().await.unwrap(),
        vec![
            LibrarySummary {
                library: "alpha".into(),
                version: Some("1.0".into()),
                chunks: 1
            },
            LibrarySummary {
                library: "beta".into(),
                version: None,
                chunks: 1
            },
        ]
    );

    store.remove_files(&["b's dir\\b.md".into()]).await.unwrap();
    let hashes = store.file_hashes().await.unwrap();
    assert_eq!(hashes.keys().collect::<Vec<_>>(), ["a.md"]);
    // An empty file list and a file without chunks are fine.
    store.upsert_files(Vec::new()).await.unwrap();
    store.upsert_file("a.md", "ha3", Vec::new()).await.unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 0);
    // A file without chunks is still known, so the next ingest skips it.
    assert_eq!(store.file_hashes().await.unwrap()["a.md"], "ha3");
}

fn file(name: &str, chunks: std::ops::Range<usize>) -> FileChunks {
    FileChunks {
        source: format!("{name}.md"),
        file_hash: format!("h-{name}"),
        chunks: chunks
            .map(|i| chunk(&format!("{name}{i}"), "alpha", None, i))
            .collect(),
    }
}

async fn search_text_of(store: &DocStore, id: &str) -> String {
    let filter = format!("id = {}", sql_string(id));
    let rows = scan(&store.table, Some(filter), &[SEARCH_TEXT])
        .await
        .unwrap();
    column::<StringArray>(&rows[0], SEARCH_TEXT)
        .unwrap()
        .value(0)
        .to_string()
}

async fn index_names(store: &DocStore) -> Vec<String> {
    let mut names: Vec<String> = (store.table.list_indices().await.unwrap())
        .into_iter()
        .map(|index| index.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_table_from_an_older_drydock_gets_the_text_index_and_many_new_rows_rebuild_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    // The table as an older drydock left it: no search_text column, a default full-text
    // index on the text.
    store.table.drop_columns(&[SEARCH_TEXT]).await.unwrap();
    let batch = store.record_batch(&[file("a", 0..40)]).unwrap();
    let old = batch.project(&(0..batch.num_columns() - 1).collect::<Vec<_>>());
    store.table.add(old.unwrap()).execute().await.unwrap();
    store
        .table
        .create_index(&["text"], Index::FTS(FtsIndexBuilder::default()))
        .execute()
        .await
        .unwrap();
    assert_eq!(store.text_index().await.unwrap(), TextIndex::TextOnly);
    assert!(store.lacks_an_index().await.unwrap());

    let done = store.optimize().await.unwrap();
    assert!(done.built_text_index);
    assert_eq!(store.text_index().await.unwrap(), TextIndex::Current);
    assert_eq!(
        index_names(&store).await,
        ["file_path_idx", "id_idx", TEXT_INDEX]
    );
    assert!(!store.lacks_an_index().await.unwrap());
    assert_eq!(search_text_of(&store, "a7").await, "Guide > a7 text of a7");
    assert!(!store.optimize().await.unwrap().built_text_index);

    // New rows of the new shape; a few are added to the index, many rebuild it.
    store.upsert_files(vec![file("b", 0..3)]).await.unwrap();
    assert!(!store.optimize().await.unwrap().built_text_index);
    store.upsert_files(vec![file("c", 0..10)]).await.unwrap();
    assert!(store.optimize().await.unwrap().built_text_index);
    let stats = store.table.index_stats(TEXT_INDEX).await.unwrap().unwrap();
    assert_eq!((stats.num_indexed_rows, stats.num_unindexed_rows), (53, 0));
    assert_eq!(search_text_of(&store, "c3").await, "Guide > c3 text of c3");
    let stats = store.table.index_stats("id_idx").await.unwrap().unwrap();
    assert_eq!((stats.num_indexed_rows, stats.num_unindexed_rows), (53, 0));
}

#[tokio::test]
async fn a_reopened_index_has_the_data_and_refuses_another_model() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
        store
            .upsert_file("a.md", "h", vec![chunk("a1", "alpha", None, 1)])
            .await
            .unwrap();
    }
    let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    assert_eq!(store.count_rows().await.unwrap(), 1);
    assert_eq!(store.file_hashes().await.unwrap()["a.md"], "h");

    let error = DocStore::open(dir.path(), "bge-small-en-v1.5", DIM)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, IndexError::ModelMismatch { .. }),
        "{message}"
    );
    assert!(
        message.contains("all-MiniLM-L6-v2-int8") && message.contains("bge-small-en-v1.5"),
        "{message}"
    );
    let error = DocStore::open(dir.path(), MODEL, 768).await.unwrap_err();
    assert!(error.to_string().contains("768"), "{error}");
}

#[tokio::test]
async fn a_table_without_a_model_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    std::fs::remove_file(dir.path().join(METADATA_FILE)).unwrap();
    let error = DocStore::open(dir.path(), MODEL, DIM).await.unwrap_err();
    assert!(matches!(error, IndexError::UnknownModel { .. }), "{error}");
}

#[tokio::test]
async fn vectors_of_the_wrong_size_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = DocStore::open(dir.path(), MODEL, DIM).await.unwrap();
    let mut bad = chunk("a1", "alpha", None, 1);
    bad.vector.truncate(10);
    let error = store.upsert_file("a.md", "h", vec![bad]).await.unwrap_err();
    assert!(matches!(
        error,
        IndexError::WrongDimension { got: 10, want: 384 }
    ));
    assert_eq!(store.count_rows().await.unwrap(), 0);
}

#[test]
fn predicates_quote_strings() {
    assert_eq!(sql_string("it's"), "'it''s'");
    assert_eq!(in_list("id", &["a", "b'c"]), "id IN ('a', 'b''c')");
}
