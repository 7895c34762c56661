//! The agent tools as MCP tools.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::DrydockServer;
use super::tools::{ProgressNotifier, respond, serve_call};
use crate::agents::reports::{ListReport, WaitReport};
use crate::agents::requests::{ListRequest, WaitRequest};
use crate::call::Call;

#[tool_router(router = agent_tool_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(
        description = "The coding agents (Claude Code, Codex, Gemini CLI) running in any terminal drydock can see: its own sessions and every pane of the user's tmux server, found by process tree. For each: kind, pid, cwd, state (starting, idle = ready for a prompt, working, waiting, exited, unknown), how long, which signal decided it (OSC 7501 status, screen rule, title), and when waiting the question and its options exactly as shown, with the prompt's id. `agent`: only that one (its terminal's name).",
        output_schema = schema_for_output::<ListReport>()
    )]
    async fn agent_list(
        &self,
        Parameters(req): Parameters<ListRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.agents().list(req).await)
    }

    #[tool(
        description = "Wait until one of the agents (`agents`: terminal names; default every agent, including ones that start meanwhile) is in one of `states` (e.g. [\"waiting\"], or [\"idle\", \"exited\"] for \"done\") and return it with its question and options; at once if one already is. Event-driven (woken by the agents' terminals and OSC 7501 reports, not by polling screens), so a supervising agent loops on this instead of reading screens. `timeout_ms` default 60000; matched=false when it passes. Cancellable.",
        output_schema = schema_for_output::<WaitReport>()
    )]
    async fn agent_wait(
        &self,
        Parameters(req): Parameters<WaitRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.agents().wait(req, &call))
    }
}
