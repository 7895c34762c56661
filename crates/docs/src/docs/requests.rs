//! What the docs tools are asked: docs_lookup's, docs_read's and docs_index's arguments.

use schemars::JsonSchema;
use serde::Deserialize;

use super::MAX_LIMIT;
use super::chunk::SourceType;
use super::search::SearchMode;
use crate::bounded::Bounded;

/// A count of docs_lookup's results.
pub type ResultCount = Bounded<0, { MAX_LIMIT as u64 }>;

/// docs_lookup's arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LookupRequest {
    /// What you want to know, in words ("how do I share a Vec between threads") or an exact
    /// identifier (`E0502`, `Enum.chunk_every`, `--message-format`).
    pub query: String,
    /// Only this library (crate, hex package, or toolchain part such as `std`, `book`,
    /// `cargo`, `elixir`).
    pub library: Option<String>,
    /// Only this version of it.
    pub version: Option<String>,
    /// Only these kinds of passages: guide, api, readme, source.
    pub source_types: Option<Vec<SourceType>>,
    /// A project inside the allowed roots: only its own docs, its dependencies at the
    /// versions its lock file pins, and its language's toolchain docs.
    pub project_path: Option<String>,
    /// How many results (default 30, at most 50).
    pub limit: Option<Bounded<1, { MAX_LIMIT as u64 }>>,
    /// How many of the first results carry their whole passage (default 3).
    pub full: Option<ResultCount>,
    /// How many results after those carry the sentences that best match the query (default
    /// 7); the rest are named by their heading path. Each has an id that docs_read turns into
    /// the passage.
    pub excerpts: Option<ResultCount>,
    /// hybrid (default: vectors and full text fused), vector or full_text.
    pub mode: Option<SearchMode>,
}

/// docs_read's arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRequest {
    /// A result's id, as docs_lookup gave it.
    pub id: String,
    /// What to return: the passage (default), its whole section (every passage under the same
    /// heading), or its neighbours (the passages just before and after it in its file).
    pub around: Option<Around>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Around {
    #[default]
    Passage,
    Section,
    Neighbours,
}

/// docs_index's arguments: at least one of them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexRequest {
    /// Files or directories inside the allowed roots (Markdown, text, HTML, Rust and Elixir
    /// sources).
    pub paths: Option<Vec<String>>,
    /// A cargo or mix project: its own docs and its dependencies' at their locked versions.
    pub project_path: Option<String>,
    /// With project_path: every package in Cargo.lock, not only direct dependencies.
    pub transitive: Option<bool>,
    /// The Rust docs rustup installed and Elixir's standard library.
    pub toolchain_docs: Option<bool>,
    /// Library name for `paths` (default: each path's directory name).
    pub library: Option<String>,
}
