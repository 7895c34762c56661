//! The build tools as MCP tools: schemas, annotations, structured results and progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use serde::Serialize;
use tokio::sync::mpsc;

use super::DrydockServer;
use crate::call::Call;
use crate::call::Progress;
use crate::history::reports::SearchReport;
use crate::history::requests::SearchRequest;
use crate::long_calls::CallWatch;
use crate::render::Render;
use crate::text_budget;
use crate::tool_call::history_reach;
use crate::toolchain::BuildKind;
use crate::toolchain::reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use crate::toolchain::requests::{
    CompileRequest, FormatRequest, ProjectInfoRequest, RunRequest, TestRequest,
};

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

/// Runs one tool call with progress and cancellation wired to the request, then responds.
macro_rules! serve_call {
    ($server:ident, $ctx:ident, |$call:ident| $work:expr) => {{
        let notifier = ProgressNotifier::for_request($server, &$ctx);
        let $call = Call::new(&notifier, $ctx.ct.clone()).by($crate::mcp::tools::client_of(&$ctx));
        let result = $work.await;
        drop($call);
        notifier.flush().await;
        respond(result)
    }};
}

pub(super) use serve_call;

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

pub(super) fn respond<T: Serialize + Render, E: std::fmt::Display>(
    result: Result<T, E>,
) -> Result<CallToolResult, McpError> {
    match result {
        Ok(report) => {
            let structured = serde_json::to_value(&report)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let text = text_budget::fit(
                &report.render(),
                TEXT_BUDGET,
                "structuredContent has the whole result",
            );
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            Ok(result)
        }
        Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(
            error.to_string(),
        )])),
    }
}

#[tool_router(vis = "pub(crate)")]
impl DrydockServer {
    #[tool(
        description = "Describe a cargo or mix project: name, version, edition (cargo) or Elixir requirement (mix), toolchain versions (rustc/cargo or Elixir/OTP), workspace packages or umbrella apps, targets, dependencies with the versions Cargo.lock or mix.lock locked, and the files that hold tests.",
        output_schema = schema_for_output::<ProjectInfo>()
    )]
    async fn project_info(
        &self,
        Parameters(req): Parameters<ProjectInfoRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self
            .app
            .toolchains()
            .project_info(req, &call))
    }

    #[tool(
        description = "Build the project (cargo build, or mix compile) and return its errors and warnings with file, line, column, code, message and label. A failing build is a normal result with status \"failed\". mix: `force` recompiles everything, `warnings_as_errors` fails on warnings. At most 50 errors and 50 warnings are listed; `omitted_errors` and `omitted_warnings` count the rest.",
        output_schema = schema_for_output::<BuildReport>()
    )]
    async fn compile(
        &self,
        Parameters(req): Parameters<CompileRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().build(
            BuildKind::Compile,
            req,
            &call
        ))
    }

    #[tool(
        description = "Type-check the project: cargo check --all-targets (the fastest way to see every error, including in tests and examples), or for mix, dialyzer (mix dialyzer with dialyxir, else Erlang's dialyzer on the compiled beams; its first run builds a PLT for several minutes).",
        output_schema = schema_for_output::<BuildReport>()
    )]
    async fn type_check(
        &self,
        Parameters(req): Parameters<CompileRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().build(
            BuildKind::TypeCheck,
            req,
            &call
        ))
    }

    #[tool(
        description = "Run the tests (cargo test: every binary, unit, integration and doc tests; or mix test). Returns passed/failed/ignored/filtered-out (and, for ExUnit, invalid) counts and each failure with its file, line, message, left/right values and captured output or stacktrace. Tests that do not compile come back with the build's errors and warnings (status \"build_failed\", stage \"build\"). A run in which no test ran is not a pass: status \"no_tests_matched\" when filter, tags, path or exclude selected no test, \"no_tests\" when the project has none (or all are ignored), with a `reason`. mix options: path (file or file:line), tags, exclude, seed, max_failures.",
        output_schema = schema_for_output::<TestReport>()
    )]
    async fn test(
        &self,
        Parameters(req): Parameters<TestRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().test(req, &call))
    }

    #[tool(
        description = "Build and run the project's program with arguments (like cargo run), or an allowed cargo subcommand given as `task`; for mix, an allowed mix task (default `run`, e.g. args [\"-e\", \"IO.puts 1\"]). Returns status ok/error/build_failed/timeout/cancelled and `stage` (\"build\" or \"run\": where it ended), exit code, stdout and stderr separately; a program that does not build comes back with the build's errors and warnings (status \"build_failed\"). stdin is empty unless given.",
        output_schema = schema_for_output::<RunReport>()
    )]
    async fn run(
        &self,
        Parameters(req): Parameters<RunRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().run(req, &call))
    }

    #[tool(
        description = "Check formatting (cargo fmt --check, or mix format --check-formatted): list the files that need formatting with a short diff. With apply=true, format them and list what changed.",
        output_schema = schema_for_output::<FormatReport>()
    )]
    async fn format(
        &self,
        Parameters(req): Parameters<FormatRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().format(req, &call))
    }

    #[tool(
        description = "Lint the project (cargo clippy, or mix credo when the project has it, else the compiler's warnings) and return its warnings and errors with file, line, column, lint code (e.g. clippy::needless_return) and message, plus machine-applicable suggestions.",
        output_schema = schema_for_output::<BuildReport>()
    )]
    async fn lint(
        &self,
        Parameters(req): Parameters<CompileRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.toolchains().build(
            BuildKind::Lint,
            req,
            &call
        ))
    }

    #[tool(
        description = "Search drydock's project memory: every error, warning and failing test the build tools (compile, type_check, lint, test, run, format) reported, where and when it was seen, how often, by which client or task, and whether a later run of the same check no longer had it, with the change that fixed it (the diff between the last failing and the first passing run, whether or not it was committed). Ask with the error's text, a code (E0502), a test's name or a sentence saying what goes wrong; narrow by project_path, kind (error, warning, test; command for a terminal's commands, task for tasks' ends) and time (since_ms, until_ms). Returns the best `limit` (default 5).",
        output_schema = schema_for_output::<SearchReport>()
    )]
    async fn history_search(
        &self,
        Parameters(req): Parameters<SearchRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let reach = history_reach(super::boundary::scope_of(&ctx.extensions).as_ref());
        respond(self.app.history().search(req, reach).await)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::handler::server::common::schema_for_output;
    use rmcp::model::JsonObject;
    use serde_json::{Value, json};

    use crate::toolchain::reports::{BuildReport, RunReport, TestReport};

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
