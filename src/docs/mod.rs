//! Docs lookup: a local hybrid (vector + full-text) index of documentation.

pub mod embed;
pub mod search;
pub mod store;
