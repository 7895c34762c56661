//! The agent tools. `agent_spawn` asks its caller's person for consent when the caller can
//! ask (an MCP client with elicitation), else through drydock's approvals.

use super::Entry;
use super::entry::tool;
use crate::agents::reports::{
    AnswerReport, KillReport, ListReport, SendReport, SpawnReport, WaitReport,
};
use crate::agents::requests::{
    AnswerRequest, KillRequest, ListRequest, SendRequest, SpawnRequest, WaitRequest,
};

pub(super) const TOOLS: &[Entry] = &[
    tool!(
        AgentList(ListRequest) -> ListReport,
        "The coding agents (Claude Code, Codex, Gemini CLI) running in any terminal drydock can see: its own sessions and every pane of the user's tmux server, found by process tree. For each: kind, pid, cwd, state (starting, idle = ready for a prompt, working, waiting, exited, unknown), how long, which signal decided it (OSC 7501 status, screen rule, title), and when waiting the question and its options exactly as shown, with the prompt's id. `agent`: only that one (its terminal's name).",
        |app, request, context| app.agents().list(request),
    ),
    tool!(
        AgentWait(WaitRequest) -> WaitReport,
        "Wait until one of the agents (`agents`: terminal names; default every agent, including ones that start meanwhile) is in one of `states` (e.g. [\"waiting\"], or [\"idle\", \"exited\"] for \"done\") and return it with its question and options; at once if one already is. Event-driven (woken by the agents' terminals and OSC 7501 reports, not by polling screens), so a supervising agent loops on this instead of reading screens. `timeout_ms` default 60000; matched=false when it passes. Cancellable.",
        |app, request, context| app.agents().wait(request, context.call),
    ),
    tool!(
        AgentAnswer(AnswerRequest) -> AnswerReport,
        "Answer the prompt an agent waits at: approve, approve_always, deny, or choose `option` (its number; with `text` for an option that asks to type, such as \"Type something.\"). Only when the agent is waiting, and only on the prompt you saw: pass `seen` (the prompt_id from agent_list/agent_wait) and a prompt that changed meanwhile is refused. Waits out the agent's settle delay (keys sent as a prompt appears get lost), sends the profile's keys, checks the prompt closed and sends them once more if not. Returns what was sent and the agent's new state.",
        |app, request, context| app.agents().answer(request, context.call),
    ),
    tool!(
        AgentSend(SendRequest) -> SendReport,
        "Give an idle agent its next prompt: the text, then Enter as a separate write after the agent's gap (bracketed paste for long or multi-line text), checked: the agent must leave idle (Enter is sent once more if not). Refused while the agent works or waits at a prompt.",
        |app, request, context| app.agents().send(request, context.call),
    ),
    tool!(
        AgentSpawn(SpawnRequest) -> SpawnReport,
        "Start a coding agent (`kind`: claude or codex) on a task (`prompt`) in `cwd` (inside the allowed roots), once a person agrees: the client is asked (elicitation) when it can; otherwise the request waits in drydock://approvals for `drydock approve ID` or `drydock decline ID` (consent_timeout_ms, default 120000). It runs behind a shell in session agent-NAME (tmux by default: `tmux -L drydock attach -t agent-NAME` to watch), with drydock's hooks (its permission prompts can then be answered with agent_answer without keys) and drydock as its MCP server. Returns consent (waived, accepted, approved, declined, timed_out) and the agent, once it took up its prompt (so an agent_wait for idle that follows ends when it has answered).",
        |app, request, context| app.agents().spawn(request, context.ask, context.call),
    ),
    tool!(
        AgentKill(KillRequest) -> KillReport,
        "End an agent: SIGINT to its process and everything it started (tool commands, MCP servers), then SIGTERM, then SIGKILL to whatever is left, until no process of it remains; the terminal it ran in stays, with its last screen. An agent in a pane of the user's own tmux server only with `force: true`. Returns the step that ended it, how many processes it had, and the agent afterwards (exited).",
        |app, request, context| app.agents().kill(request, context.call),
    ),
];
