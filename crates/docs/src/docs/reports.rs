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
    pub results: Vec<LookupResult>,
    /// Said when there are no results: why, and what to do.
    pub message: Option<String>,
}

/// One passage found (docs_lookup) or read (docs_read).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LookupResult {
    /// docs_read's argument for this passage, its section or its neighbours.
    pub id: String,
    /// Where the passage is, and its score. Its text is `content` or `excerpt`: the hit's
    /// own is moved there.
    #[serde(flatten)]
    pub hit: Hit,
    /// The whole passage (the first results, and docs_read's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The sentences of the passage that best match the query (the later results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// Characters of a chunk id that name it: 48 bits, unique far beyond any index's size.
pub const ID_CHARS: usize = 12;

impl LookupResult {
    /// `hit` with its whole passage.
    pub fn whole(mut hit: Hit) -> LookupResult {
        let content = Some(std::mem::take(&mut hit.content));
        LookupResult::of(hit, content, None)
    }

    /// `hit` named by its heading path and id alone.
    pub fn named(hit: Hit) -> LookupResult {
        LookupResult::of(hit, None, None)
    }

    /// `hit` as the sentences that best match `query`.
    pub fn excerpt(hit: Hit, query: &str) -> LookupResult {
        let excerpt = Some(super::excerpt::excerpt(&hit.content, query));
        LookupResult::of(hit, None, excerpt)
    }

    fn of(mut hit: Hit, content: Option<String>, excerpt: Option<String>) -> LookupResult {
        hit.content = String::new();
        LookupResult {
            id: hit.id.chars().take(ID_CHARS).collect(),
            hit,
            content,
            excerpt,
        }
    }

    /// What the reader gets of the passage: the whole of it, or its best sentences.
    pub fn text(&self) -> &str {
        self.content
            .as_deref()
            .or(self.excerpt.as_deref())
            .unwrap_or_default()
    }

    /// Where it is, on one line: `[n] library version file#anchor — heading`, with the
    /// lines (`file:lines`) of a source file (a web page's lines say nothing to the reader).
    fn place(&self, n: usize) -> String {
        let hit = &self.hit;
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
        let lines = match hit.file_path.ends_with(".html") {
            true => String::new(),
            false => format!(":{}-{}", hit.line_start, hit.line_end),
        };
        format!(
            "[{n}] {}{version} {}{anchor}{lines} — {}",
            hit.library, hit.file_path, hit.heading
        )
    }
}

/// docs_read's answer: the passages asked for, in file order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadReport {
    pub passages: Vec<LookupResult>,
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
    /// The embedding model the index was built with (the configured one before it exists).
    pub model: String,
    pub dimension: usize,
    /// The cross-encoder that re-scores lookups, when one is configured.
    pub reranker: Option<String>,
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

impl LookupReport {
    /// `hits` (best first) as the reader gets them: the first `full` whole, the next
    /// `excerpts` as their sentences that best match `query`, the rest named.
    pub fn shaped(
        query: String,
        hits: Vec<Hit>,
        full: usize,
        excerpts: usize,
        message: Option<String>,
    ) -> LookupReport {
        let results = hits
            .into_iter()
            .enumerate()
            .map(|(rank, hit)| match rank {
                rank if rank < full => LookupResult::whole(hit),
                rank if rank < full + excerpts => LookupResult::excerpt(hit, &query),
                _ => LookupResult::named(hit),
            })
            .collect();
        LookupReport {
            query,
            results,
            message,
        }
    }
}

impl Render for LookupReport {
    /// Each result under a line saying where it is, best first: the first ones whole, the
    /// next as their best sentences with the id docs_read reads them whole by, the rest one
    /// line each, their heading path and id.
    fn render(&self) -> String {
        if self.results.is_empty() {
            return self.message.clone().unwrap_or_else(|| "no results".into());
        }
        let mut out = String::new();
        let mut named = false;
        for (i, result) in self.results.iter().enumerate() {
            match (&result.content, &result.excerpt) {
                (Some(content), _) => {
                    out += &format!("{}\n{}\n\n", result.place(i + 1), content.trim_end())
                }
                (None, Some(excerpt)) => {
                    out += &format!("{} (id {})\n{excerpt}\n\n", result.place(i + 1), result.id)
                }
                (None, None) => {
                    if !named {
                        out += "More, by heading:\n";
                        named = true;
                    }
                    out += &format!("[{}] {} ({})\n", i + 1, result.hit.heading, result.id)
                }
            }
        }
        out.trim_end().to_string()
    }
}

impl Render for ReadReport {
    fn render(&self) -> String {
        self.passages
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let content = p.content.as_deref().unwrap_or_default().trim_end();
                format!("{}\n{content}", p.place(i + 1))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
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
