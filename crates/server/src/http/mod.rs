//! The HTTP face of drydock: MCP at /mcp, /health, with the local-first guards in front.

mod fixture_sessions;
#[doc(hidden)]
pub mod fuzzing;
mod guards;
mod local;
mod peer;
mod sandbox;
mod serve;
mod sessions;
#[cfg(test)]
mod tool_surface;

pub use peer::Peers;
pub use sandbox::serve as serve_sandbox;
pub use serve::serve;
pub use sessions::{SessionLimits, Sessions, SessionsError, TrackedStream};

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router, middleware};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::dashboard::Login;
use crate::mcp::DrydockServer;

use fixture_sessions::{SessionManager, session_manager};

/// How often an idle SSE stream gets a keep-alive: also how soon a vanished client is noticed.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(5);

/// What the server serves: on its port, and to tasks' sandboxes.
pub struct Routers {
    pub main: Router,
    /// `/mcp`, `/hooks` and `/tasks` as a sandbox reaches them (see [`serve_sandbox`]); None
    /// without the local routes.
    pub sandbox: Option<Router>,
}

/// `/mcp` and `/health`, the dashboard (`/`, behind `login`), and the local commands'
/// `/hooks`, `/approvals` and `/tasks` when given their token; `stop` ends every MCP session
/// and stream.
pub fn router(
    app: Arc<App>,
    stop: &CancellationToken,
    local_token: Option<String>,
    login: Arc<Login>,
) -> Routers {
    let config = app.config().clone();
    let dashboard = crate::dashboard::routes(app.clone(), login);
    let local_routes = local_token.map(|token| local::routes(app.clone(), token));
    let mut mcp_config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_cancellation_token(stop.child_token())
        .with_max_request_body_bytes(config.limits.max_request_bytes);
    if !config.bind.ip().is_loopback() {
        // Reached by other names than localhost; the bearer token guards it instead.
        mcp_config = mcp_config.disable_allowed_hosts();
    }
    let sessions = Sessions::new(
        SessionLimits {
            idle_timeout: config.http.session_idle_timeout,
            max_sessions: config.http.max_sessions,
        },
        stop,
    );
    let guard_state = Arc::new(guards::GuardConfig {
        token: config.token.clone(),
        task_tokens: app.tasks().tokens().clone(),
        max_request_bytes: config.limits.max_request_bytes,
        body_read_timeout: config.http.body_read_timeout,
        sessions: sessions.clone(),
    });
    let mcp: StreamableHttpService<DrydockServer, SessionManager> = StreamableHttpService::new(
        {
            let prototype = DrydockServer::new(app.clone());
            move || Ok(prototype.for_session())
        },
        session_manager(sessions),
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
    let mut router = Router::new()
        .route("/health", get(health))
        .merge(mcp_routes.clone())
        .merge(dashboard);
    let sandbox = local_routes.clone().map(|local| {
        Router::new()
            .merge(mcp_routes)
            .merge(local)
            .layer(middleware::from_fn(guards::reject_foreign_origin))
    });
    if let Some(local_routes) = local_routes {
        router = router.merge(local_routes);
    }
    let mut main = router.layer(middleware::from_fn(guards::reject_foreign_origin));
    if config.bind.ip().is_loopback() {
        main = main.layer(middleware::from_fn(guards::reject_foreign_host));
    }
    Routers { main, sandbox }
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "name": "drydock", "version": env!("CARGO_PKG_VERSION") }))
}
