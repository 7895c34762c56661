//! drydock: a developer toolbox served to coding agents over MCP.
//!
//! Each capability (build tools today) lives in its own module and is usable without MCP;
//! `mcp` and `http` are thin adapters over them.

pub mod app;
pub mod build;
pub mod catalog;
pub mod cli;
pub mod config;
#[cfg(feature = "conformance-fixtures")]
pub mod conformance;
pub mod docs;
pub mod events;
pub mod http;
pub mod mcp;
pub mod process;
pub mod terminal;
pub mod text_budget;
pub mod tool_call;
pub mod workspace;
