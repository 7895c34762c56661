//! MCP over stdin/stdout for one client (`drydock mcp`).

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio::task::JoinError;

use super::DrydockServer;
use crate::app::App;

/// Why MCP over stdio ended other than by its client closing stdin.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("MCP over stdio failed to start: {0}")]
    Start(#[from] Box<ServerInitializeError>),
    #[error("MCP over stdio stopped: {0}")]
    Stopped(#[from] JoinError),
}

/// Serves `app` to the client on stdin/stdout until it closes stdin.
pub fn serve_stdio(app: Arc<App>) -> BoxFuture<'static, Result<(), StdioError>> {
    async move {
        let running = DrydockServer::new(app)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(Box::new)?;
        running.waiting().await?;
        Ok(())
    }
    .boxed()
}
