//! Chunks: the unit the docs index embeds, stores and returns, and the rules that cut
//! a document's sections into them.
//!
//! Every source format (Markdown, HTML, Rust sources, Elixir docs) is first turned into
//! [`Section`]s: a heading path, an anchor and body lines that each remember the source line
//! they came from. [`chunk_sections`] then applies the same rules to all of them:
//!
//! - **Structure first.** A chunk never spans two sections, except that a tiny section
//!   (under [`MIN_TOKENS`]) is merged with the sections that follow it under the same parent
//!   (its siblings and their children) while the result fits; the merged-in headings are kept
//!   inline as `## Heading` lines. Sections marked not `mergeable` (API items: a signature and
//!   its doc) always stand alone.
//! - **Budget.** The embedding model (all-MiniLM-L6-v2) sees at most 256 word pieces,
//!   `[CLS]` and `[SEP]` included. A chunk's [`Chunk::embedding_text`] (heading path + text)
//!   is kept within [`TARGET_TOKENS`] = 200 *estimated* pieces; see [`estimate_tokens`] for the
//!   estimate, which is checked against the model's real WordPiece vocabulary in the tests
//!   to stay under the window with margin.
//! - **Code blocks are never cut in half.** A fenced block that fits in the budget goes into
//!   one chunk whole. A block longer than the whole budget is split at line boundaries, each
//!   piece re-opened and closed with the original fence (so every chunk is valid Markdown).
//!   A single line longer than the budget (minified code, a data URL) is split at word
//!   boundaries, then at characters: the only case where a line is cut.
//! - Long prose is split at paragraph boundaries, then at line boundaries, then at words.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Estimated word pieces allowed in a chunk's embedding text (heading path prefix included).
/// The model window is 256; the estimate overcounts on typical docs, so this keeps a margin.
pub const TARGET_TOKENS: usize = 200;
/// Sections whose text estimates below this are merged with the next section under the same
/// parent when the merge fits in [`TARGET_TOKENS`].
pub const MIN_TOKENS: usize = 64;

/// What kind of documentation a chunk comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    /// Prose documentation: books, guides, references.
    Guide,
    /// API documentation of items: rustdoc pages, doc comments, Elixir `@doc`.
    Api,
    /// A package's README.
    Readme,
    /// Source files that are not doc comments.
    Source,
}

impl SourceType {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Guide => "guide",
            SourceType::Api => "api",
            SourceType::Readme => "readme",
            SourceType::Source => "source",
        }
    }
}

/// One passage of documentation, ready to embed and store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// The passage (Markdown-like text; code blocks fenced).
    pub text: String,
    pub library: String,
    pub version: Option<String>,
    pub source_type: SourceType,
    /// Path of the source file, relative to the ingested root where there is one
    /// (for Elixir beams: the source path the beam records, e.g. `lib/elixir/lib/enum.ex`).
    pub file_path: String,
    /// Headings above the passage, outermost first (`["Ownership", "References"]`,
    /// `["std::vec::Vec", "push"]`, `["Enum", "any?/2"]`).
    pub heading_path: Vec<String>,
    /// Fragment id of the passage within its page (`references-and-borrowing`, `method.push`).
    pub anchor: Option<String>,
    /// 1-based, inclusive line range in `file_path`.
    pub line_start: u32,
    pub line_end: u32,
    /// A URL-like location (`file:///…/book/ch04-02.html#mutable-references`) when one exists.
    pub url: Option<String>,
    /// Hex SHA-256 of every field above: equal hashes mean an identical stored row.
    pub content_hash: String,
}

impl Chunk {
    /// The text the embedder sees: the heading path as context, then the passage,
    /// e.g. `"Ownership > References and Borrowing > Mutable References: …"`.
    pub fn embedding_text(&self) -> String {
        if self.heading_path.is_empty() {
            self.text.clone()
        } else {
            format!("{}: {}", self.heading_path.join(" > "), self.text)
        }
    }

    /// Hex SHA-256 of [`Chunk::embedding_text`]: chunks with the same key share an embedding
    /// (the same crate version used by two projects is embedded once).
    pub fn embedding_key(&self) -> String {
        hex_sha256(&[self.embedding_text().as_bytes()])
    }

    fn compute_hash(&self) -> String {
        let version = self.version.as_deref().unwrap_or("\u{0}");
        let heading = self.heading_path.join("\u{1f}");
        let anchor = self.anchor.as_deref().unwrap_or("\u{0}");
        let url = self.url.as_deref().unwrap_or("\u{0}");
        let lines = format!("{}-{}", self.line_start, self.line_end);
        hex_sha256(&[
            self.library.as_bytes(),
            version.as_bytes(),
            self.source_type.as_str().as_bytes(),
            self.file_path.as_bytes(),
            heading.as_bytes(),
            anchor.as_bytes(),
            lines.as_bytes(),
            url.as_bytes(),
            self.text.as_bytes(),
        ])
    }
}

/// Hex SHA-256 of the parts, each length-prefixed so that field boundaries count.
pub fn hex_sha256(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What every chunk of one file shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    pub library: String,
    pub version: Option<String>,
    pub source_type: SourceType,
    pub file_path: String,
    /// The file's URL; a chunk's URL is this plus `#anchor` when it has an anchor.
    pub url: Option<String>,
}

impl FileMeta {
    pub fn new(library: &str, source_type: SourceType, file_path: &str) -> FileMeta {
        FileMeta {
            library: library.to_string(),
            version: None,
            source_type,
            file_path: file_path.to_string(),
            url: None,
        }
    }
}

/// One line of a section's body and the 1-based source line it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    pub text: String,
    pub line: u32,
}

impl SourceLine {
    pub fn new(text: impl Into<String>, line: u32) -> SourceLine {
        SourceLine {
            text: text.into(),
            line,
        }
    }
}

/// A unit of document structure, before chunking.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    pub heading_path: Vec<String>,
    pub anchor: Option<String>,
    /// Source line of the section's own heading, if it has one.
    pub heading_line: Option<u32>,
    pub lines: Vec<SourceLine>,
    /// Whether a tiny section may be merged with its neighbours (guides: yes; API items: no).
    pub mergeable: bool,
}

impl Section {
    pub fn is_blank(&self) -> bool {
        self.lines.iter().all(|l| l.text.trim().is_empty())
    }
}

/// Estimated WordPiece count of `text` for a BERT-style uncased vocabulary.
///
/// BERT pre-tokenization splits on whitespace and makes every punctuation character its
/// own token; WordPiece then splits words missing from the vocabulary into pieces. The
/// estimate counts each punctuation or symbol character as one piece, each other character
/// outside ASCII (CJK, emoji) as one piece, and an alphanumeric run of `n` ASCII characters
/// as `1 + (n - 1) / 5` pieces (common words are one piece; identifiers and numbers split).
/// Measured against the real vocabulary on the Rust book, std docs and Elixir docs it
/// overcounts on the whole (see the tests), so [`TARGET_TOKENS`] leaves room under 256.
pub fn estimate_tokens(text: &str) -> usize {
    let mut count = TokenCount::default();
    text.chars().for_each(|c| count.push(c));
    count.total()
}

/// [`estimate_tokens`] of a text that grows a character at a time.
#[derive(Default)]
struct TokenCount {
    pieces: usize,
    /// The alphanumeric ASCII run the text ends with, not yet in `pieces`.
    run: usize,
}

impl TokenCount {
    fn push(&mut self, c: char) {
        if c.is_ascii_alphanumeric() {
            self.run += 1;
            return;
        }
        self.pieces += self.run_pieces();
        self.run = 0;
        if !c.is_whitespace() {
            self.pieces += 1;
        }
    }

    fn total(&self) -> usize {
        self.pieces + self.run_pieces()
    }

    fn run_pieces(&self) -> usize {
        match self.run {
            0 => 0,
            run => word_pieces(run),
        }
    }
}

fn word_pieces(len: usize) -> usize {
    1 + (len - 1) / 5
}

/// Turns sections into chunks following the module's rules.
pub fn chunk_sections(sections: Vec<Section>, meta: &FileMeta) -> Vec<Chunk> {
    let mut drafts: Vec<Draft> = Vec::new();
    for section in sections {
        if section.is_blank() {
            // A heading with no body of its own: it still appears inline if a later
            // tiny section merges into its parent, otherwise it carries nothing to search.
            continue;
        }
        let budget = text_budget(&section.heading_path);
        let pieces = split_lines(&trim_blank(&section.lines), budget);
        let count = pieces.len();
        for (i, lines) in pieces.into_iter().enumerate() {
            let first = i == 0;
            drafts.push(Draft {
                heading_path: section.heading_path.clone(),
                anchor: section.anchor.clone(),
                heading_line: if first { section.heading_line } else { None },
                tokens: estimate_lines(&lines),
                lines,
                mergeable: section.mergeable && count == 1,
                merged_heading_path: section.heading_path.clone(),
            });
        }
    }
    merge_tiny(drafts)
        .into_iter()
        .map(|draft| draft.into_chunk(meta))
        .collect()
}

/// Estimated tokens left for a chunk's text once the heading path prefix is counted.
fn text_budget(heading_path: &[String]) -> usize {
    let prefix = if heading_path.is_empty() {
        0
    } else {
        estimate_tokens(&heading_path.join(" > ")) + 1
    };
    // A pathological heading path (a giant signature) still leaves room for text.
    TARGET_TOKENS.saturating_sub(prefix).max(TARGET_TOKENS / 2)
}

#[derive(Debug)]
struct Draft {
    heading_path: Vec<String>,
    anchor: Option<String>,
    heading_line: Option<u32>,
    lines: Vec<SourceLine>,
    tokens: usize,
    mergeable: bool,
    /// Common prefix of the heading paths merged into this draft.
    merged_heading_path: Vec<String>,
}

impl Draft {
    /// The parent of the first section in the draft: merges stay under it.
    fn parent(&self) -> &[String] {
        let path = &self.heading_path;
        &path[..path.len().saturating_sub(1)]
    }

    fn into_chunk(self, meta: &FileMeta) -> Chunk {
        let text = self
            .lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let mut line_start = self.lines.iter().map(|l| l.line).min().unwrap_or(1);
        let line_end = self
            .lines
            .iter()
            .map(|l| l.line)
            .max()
            .unwrap_or(line_start);
        if let Some(heading) = self.heading_line {
            line_start = line_start.min(heading);
        }
        let url = meta.url.as_ref().map(|url| match &self.anchor {
            Some(anchor) => format!("{url}#{anchor}"),
            None => url.clone(),
        });
        let mut chunk = Chunk {
            text,
            library: meta.library.clone(),
            version: meta.version.clone(),
            source_type: meta.source_type,
            file_path: meta.file_path.clone(),
            heading_path: self.merged_heading_path,
            anchor: self.anchor,
            line_start,
            line_end,
            url,
            content_hash: String::new(),
        };
        chunk.content_hash = chunk.compute_hash();
        chunk
    }
}

fn merge_tiny(drafts: Vec<Draft>) -> Vec<Draft> {
    let mut out: Vec<Draft> = Vec::new();
    for draft in drafts {
        if let Some(last) = out.last_mut()
            && last.mergeable
            && draft.mergeable
            && last.tokens < MIN_TOKENS
            && draft.heading_path.starts_with(last.parent())
        {
            let heading = inline_heading(&draft);
            let prefix = common_prefix(&last.merged_heading_path, &draft.heading_path);
            let tokens = last.tokens + estimate_tokens(&heading.text) + draft.tokens;
            if tokens <= text_budget(&prefix) {
                last.lines.push(SourceLine::new("", heading.line));
                last.lines.push(heading);
                last.lines.extend(draft.lines);
                last.tokens = tokens;
                last.merged_heading_path = prefix;
                continue;
            }
        }
        out.push(draft);
    }
    out
}

fn inline_heading(draft: &Draft) -> SourceLine {
    let title = draft.heading_path.last().cloned().unwrap_or_default();
    let level = draft.heading_path.len().clamp(1, 6);
    let line = draft
        .heading_line
        .or_else(|| draft.lines.first().map(|l| l.line))
        .unwrap_or(1);
    SourceLine::new(format!("{} {title}", "#".repeat(level)), line)
}

fn common_prefix(a: &[String], b: &[String]) -> Vec<String> {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.clone())
        .collect()
}

fn estimate_lines(lines: &[SourceLine]) -> usize {
    lines.iter().map(|l| estimate_tokens(&l.text)).sum()
}

fn trim_blank(lines: &[SourceLine]) -> Vec<SourceLine> {
    let start = lines.iter().position(|l| !l.text.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.text.trim().is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].to_vec(),
        _ => Vec::new(),
    }
}

/// A run of lines packed as a whole when it fits: a paragraph or a fenced code block.
struct Unit {
    lines: Vec<SourceLine>,
    fence: Option<Fence>,
    tokens: usize,
}

#[derive(Clone)]
struct Fence {
    /// Opening line as written (`"```rust"`, `"  ~~~"`).
    open: String,
    /// Closing line to write when a piece has to be closed (`"```"`, `"  ~~~"`).
    close: String,
    marker: char,
    len: usize,
}

/// A fence opening or closing line: optional indentation, then 3+ backticks or tildes.
fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim_start();
    let marker = trimmed.chars().next()?;
    if marker != '`' && marker != '~' {
        return None;
    }
    let len = trimmed.chars().take_while(|&c| c == marker).count();
    if len < 3 {
        return None;
    }
    let rest = &trimmed[len..];
    if marker == '`' && rest.contains('`') {
        return None;
    }
    Some((marker, len, rest))
}

fn units(lines: &[SourceLine]) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut current: Vec<SourceLine> = Vec::new();
    let mut open: Option<Fence> = None;
    let flush = |current: &mut Vec<SourceLine>, fence: Option<Fence>, units: &mut Vec<Unit>| {
        if !current.is_empty() {
            let lines = std::mem::take(current);
            units.push(Unit {
                tokens: estimate_lines(&lines),
                lines,
                fence,
            });
        }
    };
    for line in lines {
        if let Some(fence) = &open {
            current.push(line.clone());
            if let Some((marker, len, rest)) = fence_marker(&line.text)
                && marker == fence.marker
                && len >= fence.len
                && rest.trim().is_empty()
            {
                let fence = open.take();
                flush(&mut current, fence, &mut units);
            }
            continue;
        }
        if let Some((marker, len, _)) = fence_marker(&line.text) {
            flush(&mut current, None, &mut units);
            let indent = &line.text[..line.text.len() - line.text.trim_start().len()];
            open = Some(Fence {
                open: line.text.clone(),
                close: format!("{indent}{}", marker.to_string().repeat(len)),
                marker,
                len,
            });
            current.push(line.clone());
            continue;
        }
        if line.text.trim().is_empty() {
            flush(&mut current, None, &mut units);
            continue;
        }
        current.push(line.clone());
    }
    // An unclosed fence runs to the end of the section, as in CommonMark.
    let fence = open.take();
    flush(&mut current, fence, &mut units);
    units
}

/// Packs a section's lines into pieces that each fit `budget`.
fn split_lines(lines: &[SourceLine], budget: usize) -> Vec<Vec<SourceLine>> {
    let mut pieces: Vec<Vec<SourceLine>> = Vec::new();
    let mut current: Vec<SourceLine> = Vec::new();
    let mut current_tokens = 0;
    for unit in units(lines) {
        if current_tokens + unit.tokens <= budget {
            if let (Some(last), Some(first)) = (current.last(), unit.lines.first()) {
                current.push(SourceLine::new("", last.line.max(first.line)));
            }
            current.extend(unit.lines);
            current_tokens += unit.tokens;
            continue;
        }
        if !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
            current_tokens = 0;
        }
        if unit.tokens <= budget {
            current_tokens = unit.tokens;
            current = unit.lines;
            continue;
        }
        let mut parts = match &unit.fence {
            Some(fence) => split_code(&unit.lines, fence, budget),
            None => split_prose(&unit.lines, budget),
        };
        // The last part may share its chunk with what follows.
        if let Some(last) = parts.pop() {
            pieces.extend(parts);
            current_tokens = estimate_lines(&last);
            current = last;
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Splits a fenced block at line boundaries; every piece is re-opened and closed.
fn split_code(lines: &[SourceLine], fence: &Fence, budget: usize) -> Vec<Vec<SourceLine>> {
    let has_close = lines.len() >= 2
        && fence_marker(&lines[lines.len() - 1].text).is_some_and(|(m, len, rest)| {
            m == fence.marker && len >= fence.len && rest.trim().is_empty()
        });
    let inner_end = if has_close {
        lines.len() - 1
    } else {
        lines.len()
    };
    let inner = &lines[1.min(lines.len())..inner_end];
    let fence_tokens = estimate_tokens(&fence.open) + estimate_tokens(&fence.close);
    let inner_budget = budget.saturating_sub(fence_tokens).max(budget / 2);
    let mut pieces = Vec::new();
    for body in pack_lines(inner, inner_budget) {
        let first = body.first().map_or(lines[0].line, |l| l.line);
        let last = body.last().map_or(first, |l| l.line);
        let mut piece = vec![SourceLine::new(fence.open.clone(), first)];
        piece.extend(body);
        piece.push(SourceLine::new(fence.close.clone(), last));
        pieces.push(piece);
    }
    if let Some(first) = pieces.first_mut() {
        first[0].line = lines[0].line;
    }
    if has_close && let Some(last) = pieces.last_mut() {
        let n = last.len();
        last[n - 1].line = lines[lines.len() - 1].line;
    }
    pieces
}

fn split_prose(lines: &[SourceLine], budget: usize) -> Vec<Vec<SourceLine>> {
    pack_lines(lines, budget)
}

/// Greedy packing of lines; a line over the budget on its own is split at words.
fn pack_lines(lines: &[SourceLine], budget: usize) -> Vec<Vec<SourceLine>> {
    let mut pieces = Vec::new();
    let mut current: Vec<SourceLine> = Vec::new();
    let mut tokens = 0;
    for line in lines {
        let line_tokens = estimate_tokens(&line.text);
        if line_tokens > budget {
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                tokens = 0;
            }
            for part in split_long_line(&line.text, budget) {
                pieces.push(vec![SourceLine::new(part, line.line)]);
            }
            continue;
        }
        if tokens + line_tokens > budget && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
            tokens = 0;
        }
        tokens += line_tokens;
        current.push(line.clone());
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Splits one line at whitespace, and a single word over the budget at characters.
fn split_long_line(line: &str, budget: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut tokens = 0;
    for word in line.split_inclusive(char::is_whitespace) {
        let word_tokens = estimate_tokens(word);
        if word_tokens > budget {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            // Counted as it grows: a word of n characters costs n, not n².
            let mut piece = String::new();
            let mut count = TokenCount::default();
            for c in word.chars() {
                piece.push(c);
                count.push(c);
                if count.total() >= budget {
                    parts.push(std::mem::take(&mut piece));
                    count = TokenCount::default();
                }
            }
            current = piece;
            tokens = estimate_tokens(&current);
            continue;
        }
        if tokens + word_tokens > budget && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
            tokens = 0;
        }
        tokens += word_tokens;
        current.push_str(word);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// Checks used by the format tests: every chunk within budget and every fence closed.
#[cfg(test)]
pub mod checks {
    use super::*;

    /// Each chunk's heading path (joined with " > "), anchor and first line.
    pub fn outline(chunks: &[Chunk]) -> Vec<(String, Option<&str>, u32)> {
        chunks
            .iter()
            .map(|c| {
                (
                    c.heading_path.join(" > "),
                    c.anchor.as_deref(),
                    c.line_start,
                )
            })
            .collect()
    }

    pub fn assert_well_formed(chunks: &[Chunk]) {
        for chunk in chunks {
            let tokens = estimate_tokens(&chunk.embedding_text());
            assert!(
                tokens <= TARGET_TOKENS + 8,
                "chunk over budget ({tokens}): {:?} {}",
                chunk.heading_path,
                chunk.text
            );
            assert!(
                fences_balanced(&chunk.text),
                "unbalanced fence in {:?}:\n{}",
                chunk.heading_path,
                chunk.text
            );
            if let Some(real) = crate::docs::wordpiece::count(&chunk.embedding_text()) {
                assert!(
                    real + 2 <= 256,
                    "chunk over the model window ({real} word pieces, estimated {tokens}): {}",
                    chunk.embedding_text()
                );
            }
            assert!(chunk.line_start >= 1 && chunk.line_start <= chunk.line_end);
            assert!(!chunk.text.trim().is_empty());
        }
    }

    pub fn fences_balanced(text: &str) -> bool {
        let mut open: Option<(char, usize)> = None;
        for line in text.lines() {
            match (open, fence_marker(line)) {
                (None, Some((m, len, _))) => open = Some((m, len)),
                (Some((m, len)), Some((m2, len2, rest)))
                    if m == m2 && len2 >= len && rest.trim().is_empty() =>
                {
                    open = None
                }
                _ => {}
            }
        }
        open.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::checks::*;
    use super::*;

    fn section(path: &[&str], body: &str, first_line: u32) -> Section {
        Section {
            heading_path: path.iter().map(|s| s.to_string()).collect(),
            anchor: None,
            heading_line: Some(first_line - 1),
            lines: body
                .lines()
                .enumerate()
                .map(|(i, l)| SourceLine::new(l, first_line + i as u32))
                .collect(),
            mergeable: true,
        }
    }

    #[test]
    fn a_count_kept_as_the_text_grows_is_the_estimate_of_each_prefix() {
        let text = "fn parse_dialyzer_output(text: &str) -> Vec<Diagnostic> { 42 }\t 漢字 ok";
        let mut count = TokenCount::default();
        for (at, c) in text.char_indices() {
            count.push(c);
            let prefix = &text[..at + c.len_utf8()];
            assert_eq!(count.total(), estimate_tokens(prefix), "{prefix:?}");
        }
    }

    #[test]
    fn a_word_longer_than_the_budget_is_cut_into_pieces_of_the_budget() {
        let word = "x".repeat(200_000);
        let parts = split_long_line(&word, 50);
        assert_eq!(parts.concat(), word);
        let (last, full) = parts.split_last().unwrap();
        assert!(full.iter().all(|part| estimate_tokens(part) == 50));
        assert!(estimate_tokens(last) <= 50);
    }

    #[test]
    fn a_long_code_block_is_split_at_lines_with_fences_reopened() {
        let mut body = String::from("Intro.\n\n```rust\n");
        for i in 0..200 {
            body.push_str(&format!("let value_{i} = compute(value_{i}, {i});\n"));
        }
        body.push_str("```\n\nAfter.");
        let meta = FileMeta::new("lib", SourceType::Guide, "a.md");
        let chunks = chunk_sections(vec![section(&["Title"], &body, 2)], &meta);
        assert!(chunks.len() > 3);
        assert_well_formed(&chunks);
        let code_chunks: Vec<_> = chunks
            .iter()
            .filter(|c| c.text.contains("```rust"))
            .collect();
        assert!(code_chunks.len() > 2);
        for chunk in &code_chunks {
            assert!(fences_balanced(&chunk.text), "{}", chunk.text);
        }
        // Every code line lands in exactly one chunk, on its own source line.
        let all: String = chunks.iter().map(|c| c.text.as_str()).collect();
        for i in 0..200 {
            assert_eq!(all.matches(&format!("let value_{i} =")).count(), 1);
        }
        let first_code = code_chunks[0];
        assert_eq!(
            first_code.line_start, 4,
            "the first piece starts at the opening fence"
        );
        assert_eq!(
            (chunks[0].line_start, chunks[0].line_end),
            (1, 2),
            "heading line, intro"
        );
    }

    #[test]
    fn tiny_sibling_sections_merge_under_their_parent() {
        let meta = FileMeta::new("lib", SourceType::Guide, "a.md");
        let sections = vec![
            section(&["Guide", "Install"], "Run `cargo add x`.", 3),
            section(&["Guide", "Configure"], "Set `X=1`.", 7),
            section(&["Other", "Far"], "Unrelated.", 11),
        ];
        let chunks = chunk_sections(sections, &meta);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].heading_path, vec!["Guide"]);
        assert!(chunks[0].text.contains("## Configure"));
        assert_eq!((chunks[0].line_start, chunks[0].line_end), (2, 7));
        assert_eq!(chunks[1].heading_path, vec!["Other", "Far"]);
    }

    #[test]
    fn a_giant_line_is_split_at_words() {
        let line = "word ".repeat(1000);
        let meta = FileMeta::new("lib", SourceType::Guide, "a.md");
        let chunks = chunk_sections(vec![section(&["T"], &line, 2)], &meta);
        assert!(chunks.len() >= 5);
        assert_well_formed(&chunks);
    }

    #[test]
    fn hash_changes_with_metadata_and_embedding_text_has_the_path() {
        let meta = FileMeta::new("lib", SourceType::Guide, "a.md");
        let a = chunk_sections(vec![section(&["Book", "Ownership"], "Text.", 2)], &meta);
        let mut meta2 = meta.clone();
        meta2.version = Some("1.0.0".into());
        let b = chunk_sections(vec![section(&["Book", "Ownership"], "Text.", 2)], &meta2);
        assert_ne!(a[0].content_hash, b[0].content_hash);
        assert_eq!(a[0].embedding_key(), b[0].embedding_key());
        assert_eq!(a[0].content_hash.len(), 64);
        assert_eq!(a[0].embedding_text(), "Book > Ownership: Text.");
    }
}
