//! `POST /hooks`: the events `drydock hook` relays from agents' hooks, behind a token of their
//! own (published in the data directory for the hook command to read), never the MCP token.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router, routing::post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::constant_time_eq;
use crate::agents::Agents;

/// What `drydock hook` posts.
#[derive(Debug, Deserialize)]
pub struct Delivery {
    /// The hook process: the agent is found above it.
    pub pid: i32,
    /// The hook's input as the agent gave it.
    pub payload: Value,
}

struct HookState {
    agents: Arc<Agents>,
    token: String,
}

pub fn routes(agents: Arc<Agents>, token: String) -> Router {
    Router::new()
        .route("/hooks", post(receive))
        .with_state(Arc::new(HookState { agents, token }))
}

async fn receive(
    State(state): State<Arc<HookState>>,
    headers: HeaderMap,
    delivery: Result<Json<Delivery>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !presented.is_some_and(|t| constant_time_eq(t.as_bytes(), state.token.as_bytes())) {
        return (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: not drydock's hook token",
        )
            .into_response();
    }
    let Json(delivery) = match delivery {
        Ok(delivery) => delivery,
        Err(rejection) => return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response(),
    };
    let sender = state.agents.hook(delivery.pid, &delivery.payload);
    let event = delivery.payload["hook_event_name"].as_str().unwrap_or("?");
    match &sender {
        Some(sender) => tracing::debug!(event, agent = sender.process.pid, "hook event"),
        None => tracing::debug!(
            event,
            hook = delivery.pid,
            "hook event from no agent drydock knows"
        ),
    }
    Json(json!({"agent_pid": sender.map(|s| s.process.pid)})).into_response()
}
