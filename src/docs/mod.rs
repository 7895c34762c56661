//! Docs lookup: turning documentation sources into chunks for the local hybrid index.
//!
//! Each source format has its own module that produces [`chunk::Chunk`]s through the shared
//! rules of [`chunk`]: `markdown` (heading-aware Markdown), `html` (rustdoc and mdBook
//! output), `rust_source` (doc comments with the item they document) and `elixir_docs`
//! (docs of compiled Elixir modules via `Code.fetch_docs`, and `.ex` sources).

pub mod chunk;
pub mod elixir_docs;
pub mod html;
pub mod markdown;
pub mod rust_source;

#[cfg(test)]
pub(crate) mod wordpiece;

pub use chunk::{Chunk, FileMeta, Section, SourceLine, SourceType};
