//! The tools as MCP shows them (`tools/list`: `tool_call`'s entries with the catalog's
//! annotations) and answers them (structured results, progress notifications).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;

use super::DrydockServer;
use crate::call::Progress;
use crate::catalog::ToolName;
use crate::config::Config;
use crate::long_calls::CallWatch;
use crate::text_budget;
use crate::tool_call::{self, CallError, ToolOutput};

/// One progress report on its way to the client.
struct Step {
    message: String,
    count: Option<(u64, u64)>,
}

/// Sends progress notifications in order, from a task of their own, so a tool never
/// waits on a slow client.
pub(super) struct ProgressNotifier {
    sender: mpsc::UnboundedSender<Step>,
    forwarder: tokio::task::JoinHandle<()>,
}

impl Progress for ProgressNotifier {
    fn report(&self, message: &str) {
        let _ = self.sender.send(Step {
            message: message.to_string(),
            count: None,
        });
    }

    fn report_count(&self, done: u64, total: u64, message: &str) {
        let _ = self.sender.send(Step {
            message: message.to_string(),
            count: Some((done, total)),
        });
    }
}

impl ProgressNotifier {
    pub(super) fn for_request(server: &DrydockServer, ctx: &RequestContext<RoleServer>) -> Self {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Step>();
        let token = ctx.meta.get_progress_token();
        let peer = ctx.peer.clone();
        let logging = server.logging.clone();
        let steps = Arc::new(AtomicU64::new(0));
        // A call that may become an MCP task keeps its latest step for `tasks/get`.
        let watch = ctx.extensions.get::<Arc<CallWatch>>().cloned();
        let forwarder = tokio::spawn(async move {
            while let Some(step) = receiver.recv().await {
                if let Some(watch) = &watch {
                    watch.report(match step.count {
                        Some((done, total)) => format!("{done}/{total} {}", step.message),
                        None => step.message.clone(),
                    });
                }
                if let Some(token) = &token {
                    let param = match step.count {
                        Some((done, total)) => {
                            ProgressNotificationParam::new(token.clone(), done as f64)
                                .with_total(total as f64)
                        }
                        None => {
                            let n = steps.fetch_add(1, Ordering::Relaxed) + 1;
                            ProgressNotificationParam::new(token.clone(), n as f64)
                        }
                    };
                    let _ = peer
                        .notify_progress(param.with_message(step.message.clone()))
                        .await;
                }
                logging.info(&peer, &step.message).await;
            }
        });
        Self { sender, forwarder }
    }

    /// Wait until every report has been sent, so none arrives after the result.
    pub(super) async fn flush(self) {
        drop(self.sender);
        let _ = self.forwarder.await;
    }
}

/// The name the client gives itself: in the request's `_meta` (2026-07-28, where the
/// session's own peer info is a stand-in), else at `initialize`.
pub(super) fn client_name(ctx: &RequestContext<RoleServer>) -> Option<String> {
    ctx.meta.client_info().map(|info| info.name).or_else(|| {
        ctx.peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
    })
}

/// Who makes a request: "task ID" for a task's agent, else the client's name.
pub(super) fn client_of(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let name = client_name(ctx);
    match super::boundary::scope_of(&ctx.extensions) {
        Some(scope) => Some(format!("task {}", scope.task_id)),
        None => name,
    }
}

/// How large the text content of a result may be as JSON. structuredContent carries the whole
/// report, so a large rendering (a flood of output) is cut here rather than sent twice.
const TEXT_BUDGET: usize = 64 * 1024;

/// A tool's answer: its report as structured content and (cut to the budget) as text, or its
/// error as an error result.
pub(super) fn respond(result: Result<ToolOutput, CallError>) -> CallToolResult {
    match result {
        Ok(output) => {
            let text = text_budget::fit(
                &output.text,
                TEXT_BUDGET,
                "structuredContent has the whole result",
            );
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(output.structured);
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

/// The served tools as `tools/list` shows them, by name.
pub(super) fn served(config: &Config) -> Vec<Tool> {
    let mut tools: Vec<Tool> = config.enabled_tools().map(described).collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// `tool` as MCP describes it: its entry's description and schemas (without their top-level
/// title and description, which name the request and report types) and the catalog's
/// annotations.
pub(super) fn described(tool: ToolName) -> Tool {
    let entry = tool_call::entry(tool);
    let input = stripped((entry.input_schema)());
    assert_eq!(
        input.get("type"),
        Some(&Value::from("object")),
        "the arguments of `{tool}` are not an object"
    );
    Tool::new_with_raw(tool.name(), Some(entry.description.into()), input)
        .with_raw_output_schema(stripped((entry.output_schema)()))
        .with_annotations(annotations(tool))
}

fn stripped(schema: schemars::Schema) -> Arc<JsonObject> {
    let Value::Object(mut object) = schema.to_value() else {
        panic!("a tool's schema is an object");
    };
    object.remove("title");
    object.remove("description");
    Arc::new(object)
}

/// The MCP annotations of `tool`: what the catalog says of its effects.
fn annotations(tool: ToolName) -> ToolAnnotations {
    let effects = tool.effects();
    ToolAnnotations::new()
        .read_only(effects.read_only)
        .destructive(effects.destructive)
        .idempotent(effects.idempotent)
        .open_world(effects.open_world)
}

#[cfg(test)]
mod tests {
    use rmcp::handler::server::common::schema_for_output;
    use rmcp::model::JsonObject;
    use serde_json::{Value, json};

    use crate::toolchain::reports::{BuildReport, RunReport, TestReport};

    /// A tool's schemas are those rmcp's own `#[tool]` would give its request and report
    /// types: `tools/list` reads the same as when each tool was a method of rmcp's router.
    #[test]
    fn a_tools_schemas_are_rmcps_of_its_request_and_report() {
        use crate::agents::{reports::SpawnReport, requests::SpawnRequest};
        use crate::catalog::ToolName;
        use crate::tasks::{reports::TaskReport, requests::CompleteRequest};
        use crate::terminal::{reports::CommandReport, requests::CommandRequest};
        use crate::toolchain::requests::TestRequest;
        use rmcp::handler::server::common::schema_for_input;
        let expected = [
            (
                ToolName::Test,
                schema_for_input::<TestRequest>(),
                schema_for_output::<TestReport>(),
            ),
            (
                ToolName::TerminalRun,
                schema_for_input::<CommandRequest>(),
                schema_for_output::<CommandReport>(),
            ),
            (
                ToolName::AgentSpawn,
                schema_for_input::<SpawnRequest>(),
                schema_for_output::<SpawnReport>(),
            ),
            (
                ToolName::TaskComplete,
                schema_for_input::<CompleteRequest>(),
                schema_for_output::<TaskReport>(),
            ),
        ];
        for (tool, input, output) in expected {
            let described = super::described(tool);
            assert_eq!(described.input_schema, input.unwrap(), "{tool}");
            assert_eq!(described.output_schema, Some(output), "{tool}");
        }
    }

    /// The output schemas list `status` and `stage` as plain required fields, and the build
    /// diagnostics of a failed build as optional ones.
    #[test]
    fn output_schemas_show_status_stage_and_diagnostics_as_flat_fields() {
        let schema_of = |schema: std::sync::Arc<JsonObject>| Value::Object(schema.as_ref().clone());
        for schema in [
            schema_of(schema_for_output::<TestReport>()),
            schema_of(schema_for_output::<RunReport>()),
        ] {
            let properties = &schema["properties"];
            for field in ["status", "stage", "errors", "warnings", "omitted_errors"] {
                assert!(properties.get(field).is_some(), "{field} in {schema}");
            }
            let required = schema["required"].as_array().unwrap();
            assert!(required.contains(&json!("status")) && required.contains(&json!("stage")));
            assert!(!required.contains(&json!("errors")), "{schema}");
        }
        let build = schema_of(schema_for_output::<BuildReport>());
        let required = build["required"].as_array().unwrap();
        assert!(required.contains(&json!("omitted_warnings")), "{build}");
    }
}
