//! The agent tools as MCP tools.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::DrydockServer;
use super::tools::respond;
use crate::agents::reports::ListReport;
use crate::agents::requests::ListRequest;

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
}
