//! What the agent tools answer.

use schemars::JsonSchema;
use serde::Serialize;

use super::detect::{AgentState, Detection, Waiting};
use super::prompt::Prompt;
use crate::render::Render;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListReport {
    pub agents: Vec<AgentInfo>,
    /// User profiles that could not be used (file, line, why); the embedded ones stand.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profile_errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WaitReport {
    /// An agent reached one of the states; false when the timeout passed first.
    pub matched: bool,
    /// The agent that did (the first by name when several did at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentInfo>,
    pub waited_ms: u64,
}

impl Render for WaitReport {
    fn render(&self) -> String {
        match &self.agent {
            Some(agent) => {
                let list = ListReport {
                    agents: vec![agent.clone()],
                    profile_errors: Vec::new(),
                };
                format!("after {} ms: {}", self.waited_ms, list.render())
            }
            None => format!("no agent got there in {} ms", self.waited_ms),
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AnswerReport {
    /// The keys sent, as text (`\r` is Enter, `\u001b` Escape), or `hook:allow` /
    /// `hook:deny` when a spawned agent's permission hook took the decision.
    pub sent: String,
    /// How many times they were sent: a second time when the first left the prompt open.
    pub attempts: u32,
    /// The prompt closed: the agent left it.
    pub answered: bool,
    /// The agent afterwards.
    pub agent: AgentInfo,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SendReport {
    /// typed (text, then Enter after the profile's gap) or pasted (bracketed paste).
    pub method: String,
    /// How many times Enter was sent: again when the first did not submit.
    pub attempts: u32,
    /// The agent took the prompt: it left idle.
    pub submitted: bool,
    /// The agent afterwards.
    pub agent: AgentInfo,
}

impl Render for AnswerReport {
    fn render(&self) -> String {
        format!(
            "sent {:?} ({} attempt(s)); {}: {} is {}",
            self.sent,
            self.attempts,
            if self.answered {
                "answered"
            } else {
                "the prompt is still open"
            },
            self.agent.name,
            self.agent.state
        )
    }
}

impl Render for SendReport {
    fn render(&self) -> String {
        format!(
            "{} the prompt ({} Enter(s)); {}: {} is {}",
            self.method,
            self.attempts,
            if self.submitted {
                "submitted"
            } else {
                "not taken"
            },
            self.agent.name,
            self.agent.state
        )
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SpawnReport {
    /// The agent runs.
    pub started: bool,
    /// waived (config), accepted (at the client), approved (`drydock approve`), declined or
    /// timed_out.
    pub consent: String,
    /// The pending approval a person was asked through, when the client could not ask.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The session it runs in: the agent's name for the other agent tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// How a person can watch it (tmux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
    /// Its hooks reach drydock (a permission prompt can be decided without keys).
    pub hooks: bool,
    /// It has drydock as an MCP server.
    pub mcp: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentInfo>,
}

impl Render for SpawnReport {
    fn render(&self) -> String {
        match (&self.session, &self.agent) {
            (Some(session), Some(agent)) => format!(
                "started {} in {session} (consent {}); it is {}{}",
                agent.kind,
                self.consent,
                agent.state,
                self.attach
                    .as_deref()
                    .map(|a| format!("; watch with `{a}`"))
                    .unwrap_or_default()
            ),
            (Some(session), None) => format!(
                "session {session} started (consent {}), but no agent showed up in it: read it with terminal_screen",
                self.consent
            ),
            (None, _) => format!("not started: consent {}", self.consent),
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KillReport {
    /// The step that ended the agent's processes: interrupt (SIGINT), terminate (SIGTERM) or
    /// kill (SIGKILL); absent when some outlived them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// How many processes the agent's tree had: the agent and what it started.
    pub processes: usize,
    /// Processes of its tree still alive afterwards (none, unless the kernel holds one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<u32>,
    /// The agent afterwards.
    pub agent: AgentInfo,
}

impl Render for KillReport {
    fn render(&self) -> String {
        let how = match &self.ended_by {
            Some(step) => format!("ended by {step}"),
            None => format!("still running: pids {:?}", self.remaining),
        };
        format!(
            "{} ({} process(es)) {how}; it is {}",
            self.agent.name, self.processes, self.agent.state
        )
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentInfo {
    /// The agent's name: its terminal's, as the terminal tools address it.
    pub name: String,
    /// Its profile: claude, codex, gemini, or a generic program named in config.
    pub kind: String,
    pub pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// It runs in a pane of the user's own tmux server.
    pub users_pane: bool,
    /// starting, idle (ready for a prompt), working, waiting, exited or unknown.
    pub state: String,
    /// What it waits for, when waiting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WaitingInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that decided the state: osc7501, hook:NAME, screen:RULE, title:RULE,
    /// quiet or process.
    pub signal: String,
    /// How long it has been in this state.
    pub for_ms: u64,
    /// The agent's own words on its state (e.g. "approve Bash: echo hi > x").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// The last hook event drydock received from it (with its tool), when its hooks reach
    /// drydock (`drydock hooks install`, or an agent drydock spawned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_hook: Option<String>,
    /// drydock started it (agent_spawn).
    pub spawned: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WaitingInfo {
    /// permission, choice, question or dialog.
    pub kind: String,
    /// The question as shown; absent when a signal says it waits but no prompt is drawn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// What the question is about: the tool, the command or file, the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// The options exactly as offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<OptionInfo>,
    /// The prompt's id: an answer names it, so a prompt that changed meanwhile is not
    /// answered by mistake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// How long the prompt has been on screen, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OptionInfo {
    pub number: u32,
    pub label: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub description: Vec<String>,
    /// The highlighted option (Enter picks it).
    pub selected: bool,
}

impl WaitingInfo {
    pub(super) fn of(waiting: &Waiting) -> WaitingInfo {
        match waiting {
            Waiting::OnScreen(prompt) => WaitingInfo::on_screen(prompt),
            Waiting::Signalled { kind } => WaitingInfo {
                kind: kind.name().to_string(),
                question: None,
                context: Vec::new(),
                options: Vec::new(),
                prompt_id: None,
                shown_ms: None,
            },
        }
    }

    fn on_screen(prompt: &Prompt) -> WaitingInfo {
        WaitingInfo {
            kind: prompt.kind.name().to_string(),
            question: Some(prompt.question.clone()),
            context: prompt.context.clone(),
            options: prompt
                .options
                .iter()
                .map(|option| OptionInfo {
                    number: option.number,
                    label: option.label.clone(),
                    description: option.description.clone(),
                    selected: option.selected,
                })
                .collect(),
            prompt_id: Some(prompt.id.to_string()),
            shown_ms: None,
        }
    }
}

impl AgentInfo {
    /// The state fields of `detection`, `now` being on the same clock.
    /// The id of the prompt it waits at, once drawn.
    pub(super) fn prompt_id(&self) -> Option<String> {
        self.waiting.as_ref()?.prompt_id.clone()
    }

    pub(super) fn state_of(&mut self, detection: &Detection, now: u64) {
        self.state = detection.state.name().to_string();
        self.waiting = match &detection.state {
            AgentState::Waiting(waiting) => Some(WaitingInfo::of(waiting)),
            _ => None,
        };
        self.exit_code = match detection.state {
            AgentState::Exited { code } => code,
            _ => None,
        };
        self.signal = detection.signal.to_string();
        self.for_ms = now.saturating_sub(detection.since);
        self.message = detection.message.clone();
    }
}

impl Render for ListReport {
    fn render(&self) -> String {
        let mut out = match self.agents.len() {
            0 => "no agents running in any terminal".to_string(),
            n => format!("{n} agent(s):"),
        };
        for agent in &self.agents {
            out.push_str(&format!(
                "\n{} ({}, pid {}): {} for {} ms [{}]",
                agent.name, agent.kind, agent.pid, agent.state, agent.for_ms, agent.signal
            ));
            if let Some(waiting) = &agent.waiting {
                out.push_str(&format!(
                    "\n  {}: {}",
                    waiting.kind,
                    waiting
                        .question
                        .as_deref()
                        .unwrap_or("(no prompt on screen yet)")
                ));
                for option in &waiting.options {
                    let marker = if option.selected { ">" } else { " " };
                    out.push_str(&format!("\n  {marker} {}. {}", option.number, option.label));
                }
            }
        }
        for error in &self.profile_errors {
            out.push_str(&format!("\nprofile error: {error}"));
        }
        out
    }
}
