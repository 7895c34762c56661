//! Shared by the integration suites: a real drydock server process on a free port, real MCP
//! clients for both protocol eras, a way to see every process a test started, the waits and
//! assertions several suites make, and the turns the suites take on what they share. One
//! module per concern; the suites take them all with `use crate::support::*`.

mod command;
mod mcp_client;
mod processes;
mod projects;
mod raw_http;
mod reports;
mod server;
mod waiting;

pub use command::*;
pub use mcp_client::*;
pub use processes::*;
pub use projects::*;
pub use raw_http::*;
pub use reports::*;
pub use server::*;
pub use waiting::*;

/// Elixir 1.14 has no build lock: two servers compiling one of the mix projects in
/// test-projects/ at once would trip over each other's `_build`. Every test that builds one in
/// place (rather than a copy), in whichever suite, holds this turn while it does.
static MIX_PROJECTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn mix_projects_turn() -> tokio::sync::MutexGuard<'static, ()> {
    MIX_PROJECTS.lock().await
}
