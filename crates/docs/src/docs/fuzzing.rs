//! Documentation as the fuzzers feed it: every chunker (HTML and rustdoc pages, Markdown and
//! MDX, reStructuredText, AsciiDoc, Rust doc comments, Elixir's docs and sources), and the excerpt a lookup cuts from a
//! passage for a question.

use std::path::Path;

use super::asciidoc::chunk_asciidoc;
use super::chunk::{Chunk, FileMeta, SourceType};
use super::elixir_docs::{chunk_elixir_source, parse_fetch_docs_output};
use super::excerpt::excerpt;
use super::html::{chunk_html, skip_html};
use super::markdown::chunk_markdown;
use super::mdx::chunk_mdx;
use super::rescore::question_ecosystem;
use super::rst::chunk_rst;
use super::rust_source::chunk_rust_source;

fn meta(source_type: SourceType, file: &str) -> FileMeta {
    FileMeta::new("fuzz", source_type, file)
}

/// Every chunk's text, cut for `question` as a lookup cuts it.
fn excerpts(chunks: &[Chunk], question: &str) {
    for chunk in chunks {
        chunk.embedding_text();
        excerpt(&chunk.text, question);
    }
    question_ecosystem(question);
}

pub fn html_page(question: &str, page: &str) {
    skip_html(Path::new("fuzz/index.html"), page);
    excerpts(
        &chunk_html(page, &meta(SourceType::Api, "fuzz/index.html")),
        question,
    );
}

pub fn markdown_page(question: &str, page: &str) {
    excerpts(
        &chunk_markdown(page, &meta(SourceType::Guide, "fuzz.md")),
        question,
    );
}

pub fn mdx_page(question: &str, page: &str) {
    excerpts(
        &chunk_mdx(page, &meta(SourceType::Guide, "fuzz.mdx")),
        question,
    );
}

pub fn rst_page(question: &str, page: &str) {
    excerpts(
        &chunk_rst(page, &meta(SourceType::Guide, "fuzz.rst")),
        question,
    );
}

pub fn asciidoc_page(question: &str, page: &str) {
    excerpts(
        &chunk_asciidoc(page, &meta(SourceType::Guide, "fuzz.adoc")),
        question,
    );
}

pub fn rust_source(question: &str, source: &str) {
    excerpts(
        &chunk_rust_source(source, &meta(SourceType::Api, "src/fuzz.rs")),
        question,
    );
}

/// The fetch-docs script's JSON lines, and the same text read as an Elixir source file.
pub fn elixir_docs(question: &str, text: &str) {
    excerpts(&parse_fetch_docs_output(text), question);
    excerpts(
        &chunk_elixir_source(text, &meta(SourceType::Api, "lib/fuzz.ex")),
        question,
    );
}
