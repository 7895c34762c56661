//! The conformance suite's fixtures for the MCP tasks extension (its `tasks-*` scenarios):
//! tools that run as tasks for a client that declares the extension, with the names and
//! behaviour the scenarios expect. Test-only, like [`conformance`](super::conformance).

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::InputResponses;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::long_calls::{CallWatch, TaskSupport};
use crate::mcp::DrydockServer;

/// How long the jobs that end on their own take: longer than the window the suite's server
/// is given (`scripts/conformance.sh`), so that each becomes a task.
const JOB: Duration = Duration::from_secs(1);

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct GreetArgs {
    /// Who to greet.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SlowArgs {
    /// How long to compute, in seconds.
    pub seconds: u64,
    /// A label to say back.
    #[serde(default)]
    pub label: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct DeleteArgs {
    /// The file to (pretend to) delete.
    pub filename: String,
}

/// Whether the fixture `name` may become a task.
pub fn task_support(name: &str) -> TaskSupport {
    match name {
        "slow_compute" => TaskSupport::Optional,
        "failing_job"
        | "protocol_error_job"
        | "confirm_delete"
        | "multi_input"
        | "test_tool_with_task" => TaskSupport::Required,
        _ => TaskSupport::Forbidden,
    }
}

#[tool_router(router = task_fixture_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(description = "Conformance fixture (tasks): says hello, never as a task")]
    async fn greet(&self, Parameters(args): Parameters<GreetArgs>) -> CallToolResult {
        text(format!("Hello, {}!", args.name))
    }

    #[tool(
        description = "Conformance fixture (tasks): computes for `seconds`, as a task when the client declares tasks"
    )]
    async fn slow_compute(
        &self,
        Parameters(args): Parameters<SlowArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let label = args.label.unwrap_or_default();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(args.seconds)) => {
                text(format!("computed {label} in {} s", args.seconds))
            }
            () = ctx.ct.cancelled() => CallToolResult::error(vec![ContentBlock::text("cancelled")]),
        }
    }

    #[tool(
        description = "Conformance fixture (tasks): a task whose tool fails (isError) after 1 s"
    )]
    async fn failing_job(&self) -> CallToolResult {
        tokio::time::sleep(JOB).await;
        CallToolResult::error(vec![ContentBlock::text("the job failed")])
    }

    #[tool(
        description = "Conformance fixture (tasks): a task that fails with a JSON-RPC error after 1 s"
    )]
    async fn protocol_error_job(&self) -> Result<CallToolResult, McpError> {
        tokio::time::sleep(JOB).await;
        Err(McpError::internal_error("the job broke", None))
    }

    #[tool(description = "Conformance fixture (tasks): asks the user to confirm, then deletes")]
    async fn confirm_delete(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let question = format!("Delete {}?", args.filename);
        let answers = ask(
            &ctx,
            [("confirm", elicitation(&question, "confirm", "boolean"))],
        )
        .await?;
        let confirmed = answers["confirm"]["content"]["confirm"] == true;
        Ok(text(match confirmed {
            true => format!("deleted {}", args.filename),
            false => format!("kept {}", args.filename),
        }))
    }

    #[tool(description = "Conformance fixture (tasks): asks two questions at once")]
    async fn multi_input(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let answers = ask(
            &ctx,
            [
                ("name", elicitation("Your name?", "name", "string")),
                ("confirm", elicitation("Go on?", "confirm", "boolean")),
            ],
        )
        .await?;
        Ok(text(format!("answered {}", Value::Object(answers))))
    }

    #[tool(
        description = "Conformance fixture (tasks): asks for a name (MRTR), then greets as a task"
    )]
    async fn test_tool_with_task(
        &self,
        InputResponses(responses): InputResponses,
    ) -> CallToolResponse {
        let name = responses
            .unwrap_or_default()
            .values()
            .find_map(|answer| answer["content"]["name"].as_str().map(str::to_string));
        let Some(name) = name else {
            let requests = json!({"name": elicitation("Your name?", "name", "string")});
            let requests = serde_json::from_value(requests).expect("an elicitation request");
            return CallToolResponse::InputRequired(InputRequiredResult::from_input_requests(
                requests,
            ));
        };
        tokio::time::sleep(JOB).await;
        CallToolResponse::Complete(text(format!("Hello, {name}, from a task")))
    }
}

fn text(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// An `elicitation/create` request for one field.
fn elicitation(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field]
            }
        }
    })
}

/// Asks the client through the call's task; its answers by key.
async fn ask<const N: usize>(
    ctx: &RequestContext<RoleServer>,
    requests: [(&str, Value); N],
) -> Result<Map<String, Value>, McpError> {
    let watch = ctx
        .extensions
        .get::<Arc<CallWatch>>()
        .cloned()
        .ok_or_else(|| McpError::internal_error("asked outside a task", None))?;
    let requests = requests
        .into_iter()
        .map(|(key, request)| (key.to_string(), request))
        .collect();
    tokio::select! {
        answers = watch.ask(requests) => Ok(answers),
        () = ctx.ct.cancelled() => Err(McpError::internal_error("cancelled", None)),
    }
}

/// The task fixtures, beside the other fixtures.
pub(super) fn extend(tools: &mut ToolRouter<DrydockServer>) {
    tools.merge(DrydockServer::task_fixture_router());
}
