//! `drydock mcp`: MCP over stdin/stdout for one client, until it closes stdin or drydock
//! gets SIGINT or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::{ConfigArgs, Exit, Failure, RootArgs, wait_for_signal};
use crate::app::{App, Mode};
use crate::config::Config;

#[derive(Args, Clone)]
pub(super) struct StdioArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub roots: RootArgs,
}

pub(super) async fn run(config: Arc<Config>) -> Exit {
    tracing::info!(roots = ?config.allowed_roots, "serving MCP on stdio");
    let app = App::start(config, Mode::Stdio).await;
    let served = tokio::select! {
        served = serve(&app) => served,
        _ = wait_for_signal() => Ok(()),
    };
    // However the session ended, nothing drydock started outlives it.
    app.shutdown().await;
    served.map(|()| ExitCode::SUCCESS)
}

async fn serve(app: &Arc<App>) -> Result<(), Failure> {
    crate::mcp::serve_stdio(app.clone())
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))
}
