//! Docs lookup: turning documentation sources into chunks for the local hybrid index.
//!
//! Each source format has its own module that produces [`Chunk`]s through the shared rules
//! of [`chunk`] (budget, code fences, merges, hashes):
//!
//! - [`markdown::chunk_markdown`]: heading-aware Markdown;
//! - [`html::chunk_html`] and [`html::skip_html`]: rustdoc and mdBook output;
//! - [`rust_source::chunk_rust_source`]: doc comments with the item they document;
//! - [`elixir_docs::chunk_elixir_beams`] (compiled modules, via `Code.fetch_docs`) and
//!   [`elixir_docs::chunk_elixir_source`] (`.ex` files).

pub mod chunk;
pub mod elixir_docs;
pub mod html;
pub mod markdown;
pub mod rust_source;

#[cfg(test)]
pub(crate) mod wordpiece;

pub use chunk::{Chunk, FileMeta, Section, SourceLine, SourceType};
