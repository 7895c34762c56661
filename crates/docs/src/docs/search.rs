//! Searching the docs index: vector search (cosine) and full-text search (BM25 over the
//! passage and its heading path, see [`super::store::SEARCH_TEXT`]) run separately and are
//! fused here with reciprocal rank fusion, so the score is ours and each half can also run
//! alone (for the evaluation of vector-only, full-text-only and hybrid).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use arrow_array::{Array, Float32Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use futures::FutureExt;
use futures::TryStreamExt;
use futures::future::BoxFuture;
use lancedb::DistanceType;
use lancedb::index::scalar::{FullTextSearchQuery, MatchQuery};
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use tokio_util::task::AbortOnDropHandle;

use super::store::{
    DocStore, IndexError, Result, SEARCH_TEXT, TextIndex, column, scan, sql_string,
};

/// The constant of reciprocal rank fusion: a hit at rank r (from 1) adds 1 / (K + r).
pub const RRF_K: f32 = 60.0;
/// Each half of a hybrid search fetches this many candidates per requested hit (at least
/// [`MIN_CANDIDATES`]), so a passage ranked modestly by both can still win once
/// [`super::rerank`] weighs them.
const CANDIDATES_PER_HIT: usize = 5;
const MIN_CANDIDATES: usize = 50;

/// How many candidates each half of a hybrid search for `limit` hits fetches.
pub fn hybrid_candidates(limit: usize) -> usize {
    (limit * CANDIDATES_PER_HIT).max(MIN_CANDIDATES)
}

/// A hybrid search reads the passages of this many fused candidates per requested hit: the
/// rerank demotes some and folds copies, and the rest fill in.
const READ_PER_HIT: usize = 2;
/// The halves read no column of the rows they find, only their row ids and scores.
const NO_COLUMNS: [&str; 0] = [];
/// The row id column a search adds with `with_row_id`.
const ROW_ID: &str = "_rowid";

const HIT_COLUMNS: [&str; 11] = [
    "id",
    "text",
    "library",
    "version",
    "source_type",
    "file_path",
    "heading",
    "anchor",
    "line_start",
    "line_end",
    "url",
];

#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Vectors and full text, fused by reciprocal rank; score = the fused RRF score.
    #[default]
    Hybrid,
    /// Nearest vectors; score = cosine similarity.
    Vector,
    /// BM25 over the text and its heading path; score = the BM25 score.
    FullText,
}

/// Which rows may be returned. All given conditions must hold; an empty filter allows all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchFilter {
    pub library: Option<String>,
    pub version: Option<String>,
    /// Any of these source types (guide, api, readme, source); empty = any.
    pub source_types: Vec<String>,
    /// A project's scope: when given, a row must belong to it.
    pub scope: Option<ProjectScope>,
}

/// What a project sees: its own files and its dependencies at their locked versions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectScope {
    /// Ingested paths (the `source` column: absolute) whose rows belong to the project,
    /// by prefix: the project's own directory.
    pub source_prefixes: Vec<String>,
    /// `(library, version)` pairs; a `None` version matches any version of the library.
    pub libraries: Vec<(String, Option<String>)>,
}

impl SearchFilter {
    /// The filter as a LanceDB SQL predicate, or `None` when it allows every row.
    pub fn to_predicate(&self) -> Option<String> {
        let mut all = Vec::new();
        if let Some(library) = &self.library {
            all.push(format!("library = {}", sql_string(library)));
        }
        if let Some(version) = &self.version {
            all.push(format!("version = {}", sql_string(version)));
        }
        if !self.source_types.is_empty() {
            let types: Vec<String> = self.source_types.iter().map(|t| sql_string(t)).collect();
            all.push(format!("source_type IN ({})", types.join(", ")));
        }
        if let Some(scope) = &self.scope {
            let mut any: Vec<String> = scope
                .source_prefixes
                .iter()
                .map(|prefix| format!("starts_with(source, {})", sql_string(prefix)))
                .collect();
            any.extend(
                scope
                    .libraries
                    .iter()
                    .map(|(library, version)| match version {
                        Some(v) => format!(
                            "(library = {} AND version = {})",
                            sql_string(library),
                            sql_string(v)
                        ),
                        None => format!("library = {}", sql_string(library)),
                    }),
            );
            // An empty scope is a project with nothing indexed: nothing matches.
            all.push(if any.is_empty() {
                "false".to_string()
            } else {
                format!("({})", any.join(" OR "))
            });
        }
        (!all.is_empty()).then(|| all.join(" AND "))
    }
}

/// One search result: a passage, where it is, and its score. docs_lookup returns its place
/// and score as they are, and its text whole or in part ([`super::reports::LookupResult`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Hit {
    /// The chunk's content hash, for fusing result lists.
    #[serde(skip)]
    pub id: String,
    /// The passage.
    #[serde(skip)]
    pub content: String,
    pub library: String,
    pub version: Option<String>,
    pub source_type: String,
    pub file_path: String,
    /// The heading path, outermost first, joined with " > ".
    pub heading: String,
    pub anchor: Option<String>,
    pub line_start: u32,
    pub line_end: u32,
    pub url: Option<String>,
    /// Higher is better; its meaning depends on the [`SearchMode`] (hybrid: reciprocal-rank
    /// fusion; vector: cosine similarity; full text: BM25).
    pub score: f32,
}

impl DocStore {
    /// The `limit` best chunks for a query. `query_vector` is the embedded query (unused by
    /// [`SearchMode::FullText`]), `query_text` the query as typed (unused by
    /// [`SearchMode::Vector`]).
    pub fn search<'a>(
        &'a self,
        mode: SearchMode,
        query_vector: &'a [f32],
        query_text: &'a str,
        filter: &'a SearchFilter,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        async move {
            let vector = query_vector.to_vec();
            self.search_embedding(mode, query_text, async { Ok(vector) }, filter, limit)
                .await
        }
        .boxed()
    }

    /// As [`DocStore::search`], while the query's `embedding` is still being computed: a
    /// hybrid search starts its full-text half on another worker first, so a lookup costs
    /// the slower of the full-text half and the embedding plus the vector half, not the sum
    /// of all three. A full-text search never awaits `embedding`.
    pub async fn search_embedding<E: From<IndexError>>(
        &self,
        mode: SearchMode,
        query_text: &str,
        embedding: impl Future<Output = std::result::Result<Vec<f32>, E>>,
        filter: &SearchFilter,
        limit: usize,
    ) -> std::result::Result<Vec<Hit>, E> {
        if limit == 0 || self.count_rows().await? == 0 {
            return Ok(Vec::new());
        }
        let predicate = filter.to_predicate();
        // The halves find rows; their passages are read afterwards, for the best only. A
        // write in between (another process indexing) can move rows: then the search is
        // done once more, on the new version.
        let (vector, found) = self
            .find(mode, embedding, query_text, &predicate, limit)
            .await?;
        let hits = match self.read_rows(&found).await {
            Ok(hits) if hits.len() == found.len() => hits,
            _ => {
                let again = async { Ok::<_, IndexError>(vector) };
                let (_, found) = self
                    .find(mode, again, query_text, &predicate, limit)
                    .await?;
                self.read_rows(&found).await?
            }
        };
        Ok(match mode {
            SearchMode::Hybrid => super::rescore::rescore(query_text, hits, limit),
            SearchMode::Vector | SearchMode::FullText => hits,
        })
    }

    /// The query's embedding (empty for full text) and the rows whose passages a search
    /// reads, best first: the `limit` best of a half, or for hybrid the best fused
    /// candidates of both, the full-text half running on another worker meanwhile.
    async fn find<E: From<IndexError>>(
        &self,
        mode: SearchMode,
        embedding: impl Future<Output = std::result::Result<Vec<f32>, E>>,
        query_text: &str,
        predicate: &Option<String>,
        limit: usize,
    ) -> std::result::Result<(Vec<f32>, Vec<Found>), E> {
        match mode {
            SearchMode::FullText => {
                let found = self.text_rows(query_text, predicate.clone(), limit).await?;
                Ok((Vec::new(), found))
            }
            SearchMode::Vector => {
                let vector = embedding.await?;
                let found = self.vector_rows(&vector, predicate.clone(), limit).await?;
                Ok((vector, found))
            }
            SearchMode::Hybrid => {
                let candidates = hybrid_candidates(limit);
                let by_text = {
                    let (store, text, predicate) =
                        (self.clone(), query_text.to_string(), predicate.clone());
                    AbortOnDropHandle::new(tokio::spawn(async move {
                        store.text_rows(&text, predicate, candidates).await
                    }))
                };
                let vector = embedding.await?;
                let by_vector = self
                    .vector_rows(&vector, predicate.clone(), candidates)
                    .await?;
                let by_text = by_text
                    .await
                    .map_err(|e| IndexError::Task(e.to_string()))??;
                let found = reciprocal_rank_fusion([by_vector, by_text], |found| found.row)
                    .into_iter()
                    .take(limit * READ_PER_HIT)
                    .map(|(found, score)| Found { score, ..found })
                    .collect();
                Ok((vector, found))
            }
        }
    }

    /// The rows nearest to `query_vector`, best first; score = cosine similarity.
    async fn vector_rows(
        &self,
        query_vector: &[f32],
        predicate: Option<String>,
        limit: usize,
    ) -> Result<Vec<Found>> {
        if query_vector.len() != self.dimension() {
            return Err(IndexError::WrongDimension {
                got: query_vector.len(),
                want: self.dimension(),
            });
        }
        let mut query = self
            .table()
            .query()
            .nearest_to(query_vector)?
            .distance_type(DistanceType::Cosine)
            .select(Select::columns(&NO_COLUMNS))
            .with_row_id()
            .limit(limit);
        if let Some(predicate) = predicate {
            query = query.only_if(predicate);
        }
        let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
        // Cosine distance is 1 - cosine similarity.
        found_in(&batches, "_distance", |distance| 1.0 - distance)
    }

    /// The rows that match `query_text` best by BM25, best first; score = the BM25 score.
    async fn text_rows(
        &self,
        query_text: &str,
        predicate: Option<String>,
        limit: usize,
    ) -> Result<Vec<Found>> {
        if query_text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let column = match self.text_index().await? {
            TextIndex::None => return Ok(Vec::new()),
            TextIndex::TextOnly => "text",
            TextIndex::Current => SEARCH_TEXT,
        };
        let terms = MatchQuery::new(query_text.to_string()).with_column(Some(column.to_string()));
        let search = FullTextSearchQuery::new_query(terms.into());
        let mut query = self
            .table()
            .query()
            .full_text_search(search)
            .select(Select::columns(&NO_COLUMNS))
            .with_row_id()
            .limit(limit);
        if let Some(predicate) = predicate {
            query = query.only_if(predicate);
        }
        let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
        found_in(&batches, "_score", |score| score)
    }

    /// The passages of `found`, in its order and with its scores; a row that is gone (the
    /// index changed since it was found) is left out.
    async fn read_rows(&self, found: &[Found]) -> Result<Vec<Hit>> {
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let batches: Vec<RecordBatch> = self
            .table()
            .take_row_ids(found.iter().map(|f| f.row).collect())
            .select(Select::columns(&HIT_COLUMNS))
            .with_row_id()
            .execute()
            .await?
            .try_collect()
            .await?;
        let mut read: HashMap<u64, Hit> = HashMap::new();
        for batch in &batches {
            let rows = column::<UInt64Array>(batch, ROW_ID)?;
            for (row, hit) in rows.values().iter().zip(hits_of(batch)?) {
                read.insert(*row, hit);
            }
        }
        Ok(found
            .iter()
            .filter_map(|f| {
                read.remove(&f.row).map(|hit| Hit {
                    score: f.score,
                    ..hit
                })
            })
            .collect())
    }
}

/// A row a search half found, before its passage is read.
#[derive(Debug, Clone, Copy)]
struct Found {
    row: u64,
    score: f32,
}

/// The rows of `batches` (with their row ids) and the scores their `score_column` gives,
/// best first.
fn found_in(
    batches: &[RecordBatch],
    score_column: &str,
    score: impl Fn(f32) -> f32,
) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    for batch in batches {
        let rows = column::<UInt64Array>(batch, ROW_ID)?;
        let scores = column::<Float32Array>(batch, score_column)?;
        found.extend(
            rows.values()
                .iter()
                .zip(scores.values())
                .map(|(row, s)| Found {
                    row: *row,
                    score: score(*s),
                }),
        );
    }
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(found)
}

/// Fuses ranked lists: each item scores the sum of 1 / (RRF_K + rank) over the lists it is
/// in (rank from 1), the same item in two lists being the one with the same `key`. Best
/// first with its fused score; ties keep the order of first appearance (first list first).
pub fn reciprocal_rank_fusion<T, K: Hash + Eq, const N: usize>(
    lists: [Vec<T>; N],
    key: impl Fn(&T) -> K,
) -> Vec<(T, f32)> {
    let mut fused: Vec<(T, f32)> = Vec::new();
    let mut position: HashMap<K, usize> = HashMap::new();
    for list in lists {
        for (rank, item) in list.into_iter().enumerate() {
            let contribution = 1.0 / (RRF_K + rank as f32 + 1.0);
            match position.entry(key(&item)) {
                Entry::Occupied(at) => fused[*at.get()].1 += contribution,
                Entry::Vacant(at) => {
                    at.insert(fused.len());
                    fused.push((item, contribution));
                }
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

impl DocStore {
    /// The chunks whose id starts with `prefix` (docs_lookup's short ids), at score 0.
    pub fn chunks_with_id_prefix<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<Hit>>> {
        async move {
            let prefix: String = prefix.chars().filter(char::is_ascii_hexdigit).collect();
            self.chunks_where(format!("id LIKE '{prefix}%'")).await
        }
        .boxed()
    }

    /// Every chunk of the file `file_path` of `library` at `version`, in line order.
    pub fn chunks_of_file<'a>(
        &'a self,
        library: &'a str,
        version: Option<&'a str>,
        file_path: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        async move {
            let version = match version {
                Some(v) => format!("version = {}", sql_string(v)),
                None => "version IS NULL".to_string(),
            };
            let mut hits = self
                .chunks_where(format!(
                    "library = {} AND {version} AND file_path = {}",
                    sql_string(library),
                    sql_string(file_path)
                ))
                .await?;
            hits.sort_by_key(|h| (h.line_start, h.line_end));
            Ok(hits)
        }
        .boxed()
    }

    async fn chunks_where(&self, predicate: String) -> Result<Vec<Hit>> {
        let batches = scan(self.table(), Some(predicate), &HIT_COLUMNS).await?;
        Ok(batches
            .iter()
            .map(hits_of)
            .collect::<Result<Vec<_>>>()?
            .concat())
    }
}

/// The passages of `batch`'s rows (read with [`HIT_COLUMNS`]), in its order, at score 0.
fn hits_of(batch: &RecordBatch) -> Result<Vec<Hit>> {
    let text = |name| column::<StringArray>(batch, name);
    let optional = |name, row| -> Result<Option<String>> {
        let column = column::<StringArray>(batch, name)?;
        Ok(column.is_valid(row).then(|| column.value(row).to_string()))
    };
    (0..batch.num_rows())
        .map(|row| {
            Ok(Hit {
                id: text("id")?.value(row).to_string(),
                content: text("text")?.value(row).to_string(),
                library: text("library")?.value(row).to_string(),
                version: optional("version", row)?,
                source_type: text("source_type")?.value(row).to_string(),
                file_path: text("file_path")?.value(row).to_string(),
                heading: text("heading")?.value(row).to_string(),
                anchor: optional("anchor", row)?,
                line_start: column::<UInt32Array>(batch, "line_start")?.value(row),
                line_end: column::<UInt32Array>(batch, "line_end")?.value(row),
                url: optional("url", row)?,
                score: 0.0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
