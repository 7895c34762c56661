//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) on drydock's long
//! calls: a build tool's call that is not done within `[http] task_after_ms` answers with a
//! task handle, for a client that declared the extension; `tasks/get` and `tasks/cancel`
//! read and stop it. Everything else answers as it always did.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CreateTaskResult, DetailedTask, GetTaskResult, Task,
    TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{DrydockServer, boundary};
use crate::app::App;
use crate::catalog::ToolName;
pub(super) use crate::long_calls::CallWatch;
use crate::long_calls::{Ending, LongCallError, LongCalls, Owner, Record, State, iso};

/// Whether a call of `tool` may become a task, and must.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    Forbidden,
    Optional,
    /// Only as a task: a client that did not declare the extension is refused (`-32021`).
    /// Only the conformance suite's fixtures need one.
    #[cfg_attr(not(feature = "conformance-fixtures"), allow(dead_code))]
    Required,
}

/// What a call routes to: a tool of the catalog, or a test fixture.
#[derive(Debug, Clone, Copy)]
pub(super) enum Routed {
    Catalog(ToolName),
    Fixture,
}

impl TaskSupport {
    /// The catalog's long tools may become tasks; the others never do.
    pub(super) fn of(tool: ToolName) -> TaskSupport {
        match crate::long_calls::may_become_task(tool) {
            true => TaskSupport::Optional,
            false => TaskSupport::Forbidden,
        }
    }
}

/// Whether a call with `support` in `context` runs as a task (a client that declared the
/// extension, and a drydock that keeps tasks), runs plain, or is refused (`-32021`: it may
/// only run as a task).
pub(super) fn as_task(
    support: TaskSupport,
    app: &App,
    context: &RequestContext<RoleServer>,
) -> Result<bool, McpError> {
    let offered = app.long_calls().is_some() && declares_tasks(context);
    match support {
        TaskSupport::Forbidden => Ok(false),
        TaskSupport::Optional => Ok(offered),
        TaskSupport::Required if offered => Ok(true),
        TaskSupport::Required => Err(McpError::missing_required_client_capability(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
        )),
    }
}

fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// Who a request comes from, as a task's owner.
pub(super) fn owner_of(context: &RequestContext<RoleServer>) -> Owner {
    let scope = match boundary::scope_of(&context.extensions) {
        Some(scope) => format!("task {}", scope.task_id),
        None => "person".to_string(),
    };
    let client = super::tools::client_name(context).unwrap_or_default();
    Owner { scope, client }
}

impl DrydockServer {
    /// Runs `tool` on a task of its own; answers with its result when it ends within the
    /// window, else with a task handle (the call goes on, cancelled only by `tasks/cancel`
    /// or shutdown).
    pub(super) async fn call_as_task(
        &self,
        routed: Routed,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let calls = self.long_calls()?;
        let owner = owner_of(&context);
        let name = request.name.to_string();
        let watch = Arc::new(CallWatch::default());
        context.extensions.insert(watch.clone());
        let request_cancel = context.ct.clone();
        // Not the request's cancellation: the call outlives the request once it is a task.
        let (cancel, tracked) = self.app.call_token(&CancellationToken::new());
        context.ct = cancel.clone();
        let server = self.clone();
        let mut running = tokio::spawn(async move {
            let _tracked = tracked;
            match routed {
                Routed::Catalog(tool) => server.run_tool(tool, request, context).await,
                Routed::Fixture => server.call_fixture(request, context).await,
            }
        });
        tokio::select! {
            ended = &mut running => return joined(ended),
            () = request_cancel.cancelled() => {
                cancel.cancel();
                return joined(running.await);
            }
            () = tokio::time::sleep(calls.after()) => {}
        }
        let record = match calls.begin(owner, &name, cancel.clone(), watch).await {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!("{name} goes on as a plain call: {error}");
                return self.wait_plain(running, &request_cancel, &cancel).await;
            }
        };
        tracing::info!(
            "{name} of {} became MCP task {} (still running after {} ms)",
            record.owner.client,
            record.id,
            calls.after().as_millis()
        );
        let id = record.id.clone();
        let app = self.app.clone();
        tokio::spawn(async move {
            let response = joined(running.await);
            calls.end(&id, ending_of(response, &app)).await;
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task_of(
            &record,
        ))))
    }

    async fn wait_plain(
        &self,
        mut running: JoinHandle<Result<CallToolResponse, McpError>>,
        request_cancel: &CancellationToken,
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        tokio::select! {
            ended = &mut running => joined(ended),
            () = request_cancel.cancelled() => {
                cancel.cancel();
                joined(running.await)
            }
        }
    }

    pub(super) fn long_calls(&self) -> Result<Arc<LongCalls>, McpError> {
        self.app
            .long_calls()
            .cloned()
            .ok_or_else(|| McpError::internal_error("this drydock keeps no MCP tasks", None))
    }

    /// `tasks/get`: the task as its owner may see it.
    pub(super) async fn get_long_call(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let record = self
            .long_calls()?
            .get(id, &owner_of(context))
            .await
            .map_err(refused)?;
        Ok(GetTaskResult::new(detailed(record)))
    }

    /// `tasks/cancel`: stops the task's call and its processes.
    pub(super) async fn cancel_long_call(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.long_calls()?
            .cancel(id, &owner_of(context))
            .await
            .map_err(refused)
    }

    /// `tasks/update`: the client's answers to what the task asked; answers to nothing it
    /// asked are acknowledged and change nothing.
    pub(super) async fn update_long_call(
        &self,
        id: &str,
        responses: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let responses = responses.into_iter().collect();
        self.long_calls()?
            .answer(id, &owner_of(context), responses)
            .await
            .map_err(refused)
    }
}

fn joined(
    ended: Result<Result<CallToolResponse, McpError>, tokio::task::JoinError>,
) -> Result<CallToolResponse, McpError> {
    ended.unwrap_or_else(|e| {
        Err(McpError::internal_error(
            format!("the call failed: {e}"),
            None,
        ))
    })
}

/// How a task's call ended, as the task keeps it.
fn ending_of(response: Result<CallToolResponse, McpError>, app: &App) -> Ending {
    if app.shutdown_token().is_cancelled() {
        return Ending::Failed(object(serde_json::json!({
            "code": -32603,
            "message": "drydock stopped while this call ran; it was not finished",
        })));
    }
    match response {
        Ok(CallToolResponse::Complete(result)) => {
            Ending::Completed(object(serde_json::to_value(result).unwrap_or_default()))
        }
        Ok(_) => Ending::Failed(object(serde_json::json!({
            "code": -32603,
            "message": "the call answered with something other than a result",
        }))),
        Err(error) => Ending::Failed(object(serde_json::to_value(error).unwrap_or_default())),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(object) => object,
        _ => Map::new(),
    }
}

fn refused(error: LongCallError) -> McpError {
    match error {
        LongCallError::Store(error) => McpError::internal_error(error.to_string(), None),
        other => McpError::invalid_params(other.to_string(), None),
    }
}

fn task_of(record: &Record) -> Task {
    let status = match &record.state {
        State::Working => TaskStatus::Working,
        State::InputRequired(_) => TaskStatus::InputRequired,
        State::Ended(Ending::Completed(_)) => TaskStatus::Completed,
        State::Ended(Ending::Failed(_)) | State::Expired => TaskStatus::Failed,
        State::Ended(Ending::Cancelled) => TaskStatus::Cancelled,
    };
    let task = Task::new(
        record.id.clone(),
        status,
        iso(record.created_ms),
        iso(record.updated_ms),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(crate::long_calls::POLL_INTERVAL.as_millis() as u64);
    match &record.message {
        Some(message) => task.with_status_message(message.clone()),
        None => task,
    }
}

fn detailed(record: Record) -> DetailedTask {
    let payload = match &record.state {
        State::Working => TaskPayload::Working,
        State::InputRequired(asked) => match serde_json::from_value(Value::Object(asked.clone())) {
            Ok(input_requests) => TaskPayload::InputRequired { input_requests },
            Err(error) => TaskPayload::Failed {
                error: object(serde_json::json!({
                    "code": -32603,
                    "message": format!("the call asked for input no client can read: {error}"),
                })),
            },
        },
        State::Ended(Ending::Completed(result)) => TaskPayload::Completed {
            result: result.clone(),
        },
        State::Ended(Ending::Failed(error)) => TaskPayload::Failed {
            error: error.clone(),
        },
        State::Ended(Ending::Cancelled) => TaskPayload::Cancelled,
        State::Expired => TaskPayload::Failed {
            error: object(serde_json::json!({"code": -32603, "message": "expired"})),
        },
    };
    DetailedTask::new(task_of(&record), payload)
}
