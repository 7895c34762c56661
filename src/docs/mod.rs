//! Docs lookup: a local hybrid (vector + full-text) index of documentation.
//!
//! Each source format has its own module that produces [`Chunk`]s through the shared rules
//! of [`chunk`] (budget, code fences, merges, hashes):
//!
//! - [`markdown::chunk_markdown`]: heading-aware Markdown;
//! - [`html::chunk_html`] and [`html::skip_html`]: rustdoc and mdBook output;
//! - [`rust_source::chunk_rust_source`]: doc comments with the item they document;
//! - [`elixir_docs::chunk_elixir_beams`] (compiled modules, via `Code.fetch_docs`) and
//!   [`elixir_docs::chunk_elixir_source`] (`.ex` files).
//!
//! [`sources`] says which files are read and how, [`project`] finds a project's dependencies
//! and the toolchain docs, [`ingest`] runs the pipeline (chunk, embed, write, incrementally),
//! [`embed`] turns chunks into vectors with the shipped model, [`store`] keeps them in LanceDB
//! next to a full-text index, [`search`] fuses vector and full-text results and [`rerank`]
//! re-scores the fused candidates, and [`service`]
//! is what the server and the command line call: the facade, taking [`requests`] and
//! answering [`reports`].

pub mod chunk;
pub mod elixir_docs;
pub mod embed;
pub(crate) mod html;
pub mod ingest;
pub(crate) mod markdown;
pub(crate) mod project;
pub mod reports;
pub mod requests;
pub mod rerank;
pub(crate) mod rust_source;
pub mod search;
pub mod service;
pub mod sources;
pub mod store;
pub mod under_way;

#[cfg(test)]
pub(crate) mod wordpiece;

pub use chunk::{Chunk, FileMeta, Section, SourceLine, SourceType};
