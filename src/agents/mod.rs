//! Agent supervision: which coding agent runs in which terminal, what state it is in and
//! what it asks, from what its terminal shows and tells (agent-lab.md holds the measured
//! facts this builds on).
//!
//! The capability's faces: [`Agents`] (here) takes the tools' [`requests`] and gives back
//! their [`reports`]. Below it, `discover` finds agents by process tree and `observe` turns
//! a terminal into an observation; the rest is a pure core with no I/O:
//!
//! - [`profile`]: agent profiles as data (embedded TOML, user overrides by version) and
//!   recognising an agent's process;
//! - [`rules`]: how a profile reads state: OSC 7501 support, regions, title, screen and
//!   hook rules;
//! - [`keys`]: the keys that answer an agent, and how text is submitted;
//! - [`launch`]: the argv that starts an agent for one run, with hooks and MCP config;
//! - [`osc7501`]: OSC 7501 program-status reports, as the terminal keeps them;
//! - [`prompt`]: a waiting prompt read off the screen, with options and a stable id;
//! - [`detect`]: profile + observation → state, deciding signal and since when.

pub mod detect;
mod discover;
pub mod keys;
pub mod launch;
mod observe;
pub mod osc7501;
pub mod profile;
pub mod prompt;
pub mod reports;
pub mod requests;
pub mod rules;

#[cfg(test)]
mod fixtures;

pub use detect::{
    AgentState, Detection, HookEvent, Millis, Observation, ProcessStatus, Signal, Stamped, Waiting,
    detect,
};
pub use keys::{Keys, Submission, SubmitPlan};
pub use launch::{LaunchError, LaunchVars};
pub use osc7501::{ReportedState, StatusReport};
pub use profile::{ProcessInfo, Profile, ProfileError, Profiles};
pub use prompt::{Prompt, PromptId, PromptOption, extract_prompt};
pub use rules::WaitKind;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::process::procfs::ProcStat;
use crate::terminal::{TerminalError, TerminalProgram, Terminals};
use discover::{Found, ProcessTable};
use observe::{Clock, Seen};
use reports::{AgentInfo, ListReport};
use requests::ListRequest;

/// Why an agent tool could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no agent named {name:?}; agents: {known}")]
    UnknownAgent { name: String, known: String },
    #[error(transparent)]
    Terminal(#[from] TerminalError),
}

/// The agents running in every terminal drydock can see.
pub struct Agents {
    profiles: Profiles,
    profile_errors: Vec<String>,
    terminals: Arc<Terminals>,
    clock: Clock,
    /// The last agent seen in each terminal, by terminal name: its state carries over
    /// (a redraw is not a new state), and once its process is gone it reads as exited.
    known: Mutex<HashMap<String, Known>>,
}

#[derive(Clone)]
struct Known {
    process: ProcStat,
    detection: Detection,
    info: AgentInfo,
}

impl Agents {
    /// The embedded profiles, overridden by those in drydock's config directory
    /// (`~/.config/drydock/agents/NAME.toml`) with a version at least as new.
    pub fn new(terminals: Arc<Terminals>) -> Arc<Agents> {
        let dir = dirs::config_dir().map(|d| d.join("drydock").join("agents"));
        let (profiles, errors) = Profiles::load(dir.as_deref().filter(|d| d.is_dir()));
        for error in &errors {
            tracing::warn!("agent profile not used: {error}");
        }
        Arc::new(Agents {
            profiles,
            profile_errors: errors.iter().map(ToString::to_string).collect(),
            terminals,
            clock: Clock::new(),
            known: Mutex::default(),
        })
    }

    /// Every agent, found by process tree in drydock's sessions and the user's tmux panes,
    /// with its state; or only `req.agent`.
    pub async fn list(&self, req: ListRequest) -> Result<ListReport, AgentError> {
        let terminals = self.terminals.programs().await;
        let found = discover::find(&self.profiles, &terminals, &ProcessTable::read());
        let mut agents = Vec::new();
        for agent in found {
            if req
                .agent
                .as_ref()
                .is_none_or(|only| *only == agent.terminal.name)
            {
                agents.push(self.observe(agent).await?);
            }
        }
        agents.extend(self.gone(&terminals, &agents, req.agent.as_deref()));
        if let Some(only) = req.agent
            && agents.is_empty()
        {
            let known = self.known_names();
            return Err(AgentError::UnknownAgent { name: only, known });
        }
        agents.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ListReport {
            agents,
            profile_errors: self.profile_errors.clone(),
        })
    }

    /// The state of `agent`, from its terminal now and what was seen of it before.
    async fn observe(&self, agent: Found) -> Result<AgentInfo, AgentError> {
        let name = agent.terminal.name.clone();
        let profile = self
            .profiles
            .get(&agent.profile)
            .expect("found agents have a profile");
        let observed = self.terminals.observe(&name).await?;
        let seen = Seen::new(&self.clock, &observed, &agent.process);
        let lines = seen.lines();
        let mut detection = detect(profile, &seen.observation(&lines));
        let mut known = self.known.lock().expect("agents lock");
        let previous = known
            .get(&name)
            .filter(|k| k.process.is_same_process(&agent.process));
        if let Some(previous) = previous {
            detection = detection.continuing(&previous.detection);
        }
        let mut info = AgentInfo {
            name: name.clone(),
            kind: agent.profile.clone(),
            pid: agent.process.pid as u32,
            cwd: agent.cwd.map(|cwd| cwd.display().to_string()),
            users_pane: agent.terminal.users,
            state: String::new(),
            waiting: None,
            exit_code: None,
            signal: String::new(),
            for_ms: 0,
            message: None,
            title: seen.title().to_string(),
        };
        info.state_of(&detection, seen.now());
        known.insert(
            name,
            Known {
                process: agent.process,
                detection,
                info: info.clone(),
            },
        );
        Ok(info)
    }

    /// Agents seen before whose process is gone while their terminal remains: exited.
    /// Terminals that are gone take their agents with them.
    fn gone(
        &self,
        terminals: &[TerminalProgram],
        found: &[AgentInfo],
        only: Option<&str>,
    ) -> Vec<AgentInfo> {
        let now = self.clock.now();
        let mut known = self.known.lock().expect("agents lock");
        known.retain(|name, _| terminals.iter().any(|t| t.name == *name));
        known
            .iter_mut()
            .filter(|(name, _)| !found.iter().any(|a| a.name == **name))
            .filter(|(name, _)| only.is_none_or(|only| only == name.as_str()))
            .map(|(_, known)| {
                if !matches!(known.detection.state, AgentState::Exited { .. }) {
                    known.detection = Detection {
                        state: AgentState::Exited { code: None },
                        signal: Signal::Process,
                        since: now,
                        message: None,
                        recheck_at: None,
                    };
                }
                let mut info = known.info.clone();
                info.state_of(&known.detection, now);
                info
            })
            .collect()
    }

    fn known_names(&self) -> String {
        let known = self.known.lock().expect("agents lock");
        let mut names: Vec<&str> = known.keys().map(String::as_str).collect();
        names.sort();
        match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        }
    }
}
