//! What the agent tools are asked.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::bounded::Bounded;

/// How long a call waits at most, in milliseconds: an hour at most.
pub type WaitMs = Bounded<0, 3_600_000>;
/// A menu option's number: prompts number their options with one or two digits.
pub type OptionNumber = Bounded<1, 99>;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Only this agent (its terminal's name, e.g. `t1` or `tmux:work:0.1`).
    #[serde(default)]
    pub agent: Option<String>,
}

/// The states an agent can be in, as `agent_wait` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    Starting,
    Idle,
    Working,
    Waiting,
    Exited,
    Unknown,
}

impl StateName {
    pub fn name(self) -> &'static str {
        match self {
            StateName::Starting => "starting",
            StateName::Idle => "idle",
            StateName::Working => "working",
            StateName::Waiting => "waiting",
            StateName::Exited => "exited",
            StateName::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitRequest {
    /// Only these agents (terminal names); default: every agent, including ones that start
    /// while waiting.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
    /// Return as soon as one of the agents is in one of these states (at once if one already
    /// is), e.g. ["waiting"] or ["idle", "exited"].
    pub states: Vec<StateName>,
    /// How long to wait at most (default 60000, at most 3600000).
    #[serde(default)]
    pub timeout_ms: Option<WaitMs>,
}

/// What `agent_answer` does to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerAction {
    /// Yes, this once.
    Approve,
    /// Yes, and do not ask again (for this command, or this session), where the agent
    /// offers it.
    ApproveAlways,
    /// No.
    Deny,
    /// Pick `option` (its number as shown).
    Choose,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The agent (its terminal's name, from agent_list).
    pub agent: String,
    pub action: AnswerAction,
    /// For `choose`: the option's number.
    #[serde(default)]
    pub option: Option<OptionNumber>,
    /// For `choose` of an option that asks to type (Claude Code's "Type something."): the
    /// text, typed and submitted once the option is chosen.
    #[serde(default)]
    pub text: Option<String>,
    /// The prompt_id the caller saw: if the prompt on screen is another one now, nothing is
    /// sent.
    #[serde(default)]
    pub seen: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillRequest {
    /// The agent (its terminal's name, from agent_list).
    pub agent: String,
    /// Needed to kill an agent in a pane of the user's own tmux server.
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    /// The agent (its terminal's name, from agent_list).
    pub agent: String,
    /// The next prompt for the agent.
    pub text: String,
}

/// Where a spawned agent runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpawnBackend {
    /// A session on drydock's tmux server: the user can attach, and it outlives drydock.
    #[default]
    Tmux,
    /// drydock's own pseudo-terminal: ends with the server.
    Pty,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnRequest {
    /// The agent: claude or codex (agents whose profile says how to start them).
    pub kind: String,
    /// Its task: the first prompt.
    pub prompt: String,
    /// Where it works: a directory inside an allowed root.
    pub cwd: String,
    /// Its name (letters, digits, `-`, `_`); the session is `agent-NAME`. Default
    /// `agent-KIND-N`.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub backend: Option<SpawnBackend>,
    /// How long to wait for a person's consent (default from config, 120000; at most
    /// 3600000).
    #[serde(default)]
    pub consent_timeout_ms: Option<Bounded<1, 3_600_000>>,
}
