//! What drydock's local commands reach, behind a token of their own (published in the data
//! directory for them to read), never the MCP token: `POST /hooks` (the events `drydock hook`
//! relays from agents' hooks), `GET /approvals` and `POST /approvals/{id}` (`drydock approve`,
//! `drydock decline`), and `POST /tasks/{tool}` (`drydock task …`, `drydock queue`: the task
//! tools, run by the server that runs the queue).

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::{bearer, bearer_matches, task_ended};
use super::sandbox::SandboxCaller;
use crate::app::App;
use crate::call::Call;
use crate::catalog::{ToolName, Toolset};
use crate::tasks::TaskScope;
use crate::tool_call::{self, CallError, Caller};

/// What `drydock hook` posts.
#[derive(Debug, Deserialize)]
pub(super) struct Delivery {
    /// The hook process: the agent is found above it.
    pub pid: i32,
    /// The hook's input as the agent gave it.
    pub payload: Value,
}

/// A person's answer to a pending approval.
#[derive(Debug, Deserialize)]
pub(super) struct Answer {
    pub approve: bool,
}

struct LocalState {
    app: Arc<App>,
    token: String,
}

/// Every local route asks for the local token (not the MCP one); the task tools take a
/// running task's token too, limited to its task (`drydock task complete` in its agent's
/// shell).
async fn require_local_token(
    State(state): State<Arc<LocalState>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(caller) = request.extensions().get::<SandboxCaller>() {
        let path = request.uri().path();
        if !path.starts_with("/tasks/") && path != "/hooks" {
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: not from inside a task's sandbox",
            )
                .into_response();
        }
        return match state.app.tasks().tokens().scope_of(&caller.token) {
            Some(scope) => {
                request.extensions_mut().insert(scope);
                next.run(request).await
            }
            None => task_ended(),
        };
    }
    let task_scope = bearer(request.headers())
        .filter(|_| request.uri().path().starts_with("/tasks/"))
        .and_then(|token| state.app.tasks().tokens().scope_of(token));
    if let Some(scope) = task_scope {
        request.extensions_mut().insert(scope);
        return next.run(request).await;
    }
    match bearer_matches(request.headers(), &state.token) {
        true => next.run(request).await,
        false => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: not drydock's local token",
        )
            .into_response(),
    }
}

pub(super) fn routes(app: Arc<App>, token: String) -> Router {
    let state = Arc::new(LocalState { app, token });
    Router::new()
        .route("/hooks", post(receive))
        .route("/tasks/{tool}", post(task_tool))
        .route("/approvals", get(approvals))
        .route("/approvals/{id}", post(decide))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_local_token,
        ))
        .with_state(state)
}

async fn approvals(State(state): State<Arc<LocalState>>) -> Response {
    Json(json!({"pending": state.app.agents().approvals().list()})).into_response()
}

async fn decide(
    State(state): State<Arc<LocalState>>,
    Path(id): Path<String>,
    answer: Result<Json<Answer>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(answer) = match answer {
        Ok(answer) => answer,
        Err(rejection) => return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response(),
    };
    match state
        .app
        .decide_approval(&id, answer.approve, "drydock approve")
    {
        Ok(approval) => {
            Json(json!({"decided": approval, "approve": answer.approve})).into_response()
        }
        Err(error) => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": error.to_string()})),
        )
            .into_response(),
    }
}

/// Runs a task tool for the CLI: 200 with the result, 400 with the error; under a task's
/// token what `tool_call` lets it do (`task_show` and `task_complete` of its own task), 403
/// otherwise.
async fn task_tool(
    State(state): State<Arc<LocalState>>,
    Path(tool): Path<String>,
    scope: Option<Extension<TaskScope>>,
    arguments: Result<Json<Value>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(arguments) = match arguments {
        Ok(arguments) => arguments,
        Err(rejection) => return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response(),
    };
    let served = tool_call::served_tool(state.app.config(), &tool)
        .ok()
        .filter(|t: &ToolName| t.toolset() == Toolset::Tasks);
    let Some(tool) = served else {
        let error = format!("{tool} is not a task tool this drydock serves");
        return (StatusCode::NOT_FOUND, Json(json!({"error": error}))).into_response();
    };
    let scope = scope.map(|Extension(scope)| scope);
    let call = Call::silent(state.app.shutdown_token().child_token());
    let client = match &scope {
        Some(scope) => format!("task {}", scope.task_id),
        None => "drydock call".to_string(),
    };
    let caller = Caller {
        client: Some(client),
        scope: scope.as_ref(),
        ..Caller::default()
    };
    match tool_call::call_tool_by(&state.app, tool, arguments, &call, caller).await {
        Ok(outcome) => {
            Json(json!({"result": outcome.structured, "text": outcome.text})).into_response()
        }
        Err(error) => {
            let status = match error {
                CallError::Refused(_) => StatusCode::FORBIDDEN,
                _ => StatusCode::BAD_REQUEST,
            };
            (status, Json(json!({"error": error.to_string()}))).into_response()
        }
    }
}

async fn receive(
    State(state): State<Arc<LocalState>>,
    caller: Option<Extension<SandboxCaller>>,
    delivery: Result<Json<Delivery>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(mut delivery) = match delivery {
        Ok(delivery) => delivery,
        Err(rejection) => return (StatusCode::BAD_REQUEST, rejection.body_text()).into_response(),
    };
    // The pid a sandboxed hook knows is its sandbox's; the socket knows drydock's.
    if let Some(Extension(caller)) = caller {
        let Some(pid) = caller.pid else {
            return (StatusCode::BAD_REQUEST, "the hook's process is unknown").into_response();
        };
        delivery.pid = pid;
    }
    let (sender, output) = state
        .app
        .agents()
        .hook(delivery.pid, &delivery.payload)
        .await;
    let event = delivery.payload["hook_event_name"].as_str().unwrap_or("?");
    match &sender {
        Some(sender) => tracing::debug!(event, agent = sender.process.pid, "hook event"),
        None => tracing::debug!(
            event,
            hook = delivery.pid,
            "hook event from no agent drydock knows"
        ),
    }
    Json(json!({"agent_pid": sender.map(|s| s.process.pid), "output": output})).into_response()
}
