//! What the docs tools answer, and their text renderings.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::search::Hit;
use super::store::LibrarySummary;
use crate::render::Render;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LookupReport {
    pub query: String,
    pub results: Vec<Hit>,
    /// Said when there are no results: why, and what to do.
    pub message: Option<String>,
}

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct IngestReport {
    /// The indexed paths.
    pub roots: Vec<String>,
    /// Supported files found under the roots.
    pub files_seen: u64,
    /// Files whose content hash matched the index: not read again.
    pub files_unchanged: u64,
    /// New or changed files written to the index.
    pub files_indexed: u64,
    /// Files gone from the roots, removed from the index.
    pub files_removed: u64,
    /// Files left out, by reason (binary, huge, generated, unsupported).
    pub files_skipped: BTreeMap<String, u64>,
    pub chunks_written: u64,
    /// Chunks that went through the model.
    pub chunks_embedded: u64,
    /// Chunks whose vector was already known (unchanged passages, the same text elsewhere).
    pub chunks_reused: u64,
    pub seconds: f64,
    pub embeddings_per_second: f64,
    /// Rows in the index afterwards.
    pub index_rows: u64,
    /// True when the ingest was stopped before the end: what was committed stays, the next
    /// run continues.
    pub cancelled: bool,
    /// Files that could not be read or parsed (the first few of `error_count`).
    pub errors: Vec<String>,
    pub error_count: u64,
}

/// What the index holds (the drydock://docs resource).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexSummary {
    pub index_dir: String,
    pub model: String,
    pub dimension: usize,
    pub chunks: usize,
    pub libraries: Vec<LibrarySummary>,
    /// When the index last changed (RFC 3339), if it exists.
    pub last_update: Option<String>,
    pub vector_index: bool,
    /// The running ingest's progress, if one is running.
    pub ingest_running: Option<String>,
    /// How to fill an empty index.
    pub message: Option<String>,
}

impl Render for LookupReport {
    /// Each passage under a line saying where it is, best first.
    fn render(&self) -> String {
        if self.results.is_empty() {
            return self.message.clone().unwrap_or_else(|| "no results".into());
        }
        let mut out = String::new();
        for (i, hit) in self.results.iter().enumerate() {
            let version = hit
                .version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            let anchor = hit
                .anchor
                .as_deref()
                .map(|a| format!("#{a}"))
                .unwrap_or_default();
            out += &format!(
                "[{}] {}{version} ({}) {}{anchor}:{}-{} — {}\n{}\n\n",
                i + 1,
                hit.library,
                hit.source_type,
                hit.file_path,
                hit.line_start,
                hit.line_end,
                hit.heading,
                hit.content.trim_end()
            );
        }
        out.trim_end().to_string()
    }
}

impl Render for IngestReport {
    fn render(&self) -> String {
        let mut out = format!(
            "{}: {} files ({} unchanged, {} indexed, {} removed), {} chunks written ({} \
             embedded at {:.1}/s, {} reused) in {:.1} s; the index holds {} chunks",
            if self.cancelled {
                "stopped early"
            } else {
                "indexed"
            },
            self.files_seen,
            self.files_unchanged,
            self.files_indexed,
            self.files_removed,
            self.chunks_written,
            self.chunks_embedded,
            self.embeddings_per_second,
            self.chunks_reused,
            self.seconds,
            self.index_rows,
        );
        if !self.files_skipped.is_empty() {
            let skipped: Vec<String> = self
                .files_skipped
                .iter()
                .map(|(reason, n)| format!("{n} {reason}"))
                .collect();
            out += &format!("; skipped {}", skipped.join(", "));
        }
        if self.error_count > 0 {
            out += &format!("\n{} files could not be read:", self.error_count);
            for error in &self.errors {
                out += &format!("\n  {error}");
            }
        }
        out
    }
}
