//! The agent tools as MCP tools.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::DrydockServer;
use super::tools::{ProgressNotifier, respond, serve_call};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::Peer;
use serde_json::json;

use crate::agents::AskClient;
use crate::agents::reports::{
    AnswerReport, KillReport, ListReport, SendReport, SpawnReport, WaitReport,
};
use crate::agents::requests::{
    AnswerRequest, KillRequest, ListRequest, SendRequest, SpawnRequest, WaitRequest,
};
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

    #[tool(
        description = "Answer the prompt an agent waits at: approve, approve_always, deny, or choose `option` (its number; with `text` for an option that asks to type, such as \"Type something.\"). Only when the agent is waiting, and only on the prompt you saw: pass `seen` (the prompt_id from agent_list/agent_wait) and a prompt that changed meanwhile is refused. Waits out the agent's settle delay (keys sent as a prompt appears get lost), sends the profile's keys, checks the prompt closed and sends them once more if not. Returns what was sent and the agent's new state.",
        output_schema = schema_for_output::<AnswerReport>()
    )]
    async fn agent_answer(
        &self,
        Parameters(req): Parameters<AnswerRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.agents().answer(req, &call))
    }

    #[tool(
        description = "Give an idle agent its next prompt: the text, then Enter as a separate write after the agent's gap (bracketed paste for long or multi-line text), checked: the agent must leave idle (Enter is sent once more if not). Refused while the agent works or waits at a prompt.",
        output_schema = schema_for_output::<SendReport>()
    )]
    async fn agent_send(
        &self,
        Parameters(req): Parameters<SendRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.agents().send(req, &call))
    }

    #[tool(
        description = "End an agent: SIGINT to its process and everything it started (tool commands, MCP servers), then SIGTERM, then SIGKILL to whatever is left, until no process of it remains; the terminal it ran in stays, with its last screen. An agent in a pane of the user's own tmux server only with `force: true`. Returns the step that ended it, how many processes it had, and the agent afterwards (exited).",
        output_schema = schema_for_output::<KillReport>()
    )]
    async fn agent_kill(
        &self,
        Parameters(req): Parameters<KillRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.agents().kill(req, &call))
    }

    #[tool(
        description = "Start a coding agent (`kind`: claude or codex) on a task (`prompt`) in `cwd` (inside the allowed roots), once a person agrees: the client is asked (elicitation) when it can; otherwise the request waits in drydock://approvals for `drydock approve ID` or `drydock decline ID` (consent_timeout_ms, default 120000). It runs behind a shell in session agent-NAME (tmux by default: `tmux -L drydock attach -t agent-NAME` to watch), with drydock's hooks (its permission prompts can then be answered with agent_answer without keys) and drydock as its MCP server. Returns consent (waived, accepted, approved, declined, timed_out) and the agent, once it took up its prompt (so an agent_wait for idle that follows ends when it has answered).",
        output_schema = schema_for_output::<SpawnReport>()
    )]
    async fn agent_spawn(
        &self,
        Parameters(req): Parameters<SpawnRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let ask = can_elicit(&ctx.peer).then(|| ask_client(ctx.peer.clone()));
        serve_call!(self, ctx, |call| self.app.agents().spawn(req, ask, &call))
    }
}

/// Whether the client said it can ask its user (elicitation).
fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the client's user with a form: accept (start: true) starts the agent.
fn ask_client(peer: Peer<RoleServer>) -> AskClient {
    Box::new(move |question: String| {
        Box::pin(async move {
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "form",
                "message": question,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "start": {
                            "type": "boolean",
                            "title": "Start the agent",
                            "default": true
                        }
                    }
                }
            }))
            .expect("a valid form");
            let result = peer.create_elicitation(params).await.ok()?;
            Some(match result.action {
                ElicitationAction::Accept => result
                    .content
                    .as_ref()
                    .and_then(|c| c.get("start"))
                    .and_then(|s| s.as_bool())
                    .unwrap_or(true),
                _ => false,
            })
        })
    })
}
