//! The HTTP face of drydock: MCP at /mcp, /health, with the local-first guards in front.

mod guards;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router, middleware};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::build::BuildTools;
use crate::docs::service::Docs;
use crate::mcp::DrydockServer;
use crate::terminal::registry::Terminals;

/// rmcp's in-memory sessions; the conformance fixtures wrap them so their `test_reconnection`
/// tool can close its own SSE stream.
#[cfg(not(feature = "conformance-fixtures"))]
type Sessions = rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
#[cfg(feature = "conformance-fixtures")]
type Sessions = crate::conformance::FixtureSessions;

/// How often an idle SSE stream gets a keep-alive: also how soon a vanished client is noticed.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(5);

pub fn router(
    tools: BuildTools,
    terminals: Arc<Terminals>,
    docs: Arc<Docs>,
    shutdown: &CancellationToken,
) -> Router {
    let config = tools.config();
    let mut mcp_config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(config.limits.max_request_bytes);
    if !config.bind.ip().is_loopback() {
        // Reached by other names than localhost; the bearer token guards it instead.
        mcp_config = mcp_config.disable_allowed_hosts();
    }
    let guard_state = Arc::new(guards::GuardConfig {
        token: config.token.clone(),
        max_request_bytes: config.limits.max_request_bytes,
    });
    let factory_tools = tools.clone();
    let mcp: StreamableHttpService<DrydockServer, Sessions> = StreamableHttpService::new(
        move || {
            Ok(DrydockServer::new(
                factory_tools.clone(),
                terminals.clone(),
                docs.clone(),
            ))
        },
        Arc::new(Sessions::default()),
        mcp_config,
    );
    let mcp_routes = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(
            guard_state.clone(),
            guards::check_json_rpc,
        ))
        .layer(middleware::from_fn_with_state(
            guard_state,
            guards::require_token,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(mcp_routes)
        .layer(middleware::from_fn(guards::reject_foreign_origin))
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "name": "drydock", "version": env!("CARGO_PKG_VERSION") }))
}
