//! Agent supervision: which coding agent runs in which terminal, what state it is in and
//! what it asks, from what its terminal shows and tells (agent-lab.md holds the measured
//! facts this builds on).
//!
//! The capability's faces: [`Agents`] (here) takes the tools' [`requests`] and gives back
//! their [`reports`]. Around it, the parts with I/O:
//!
//! - `discover`: agents found by process tree, in drydock's sessions and the user's panes;
//! - `observe`: a terminal turned into an observation (screen, title, OSC 7501, hooks);
//! - `answer`: keys into a waiting agent, only in the state that takes them, on the prompt
//!   the caller saw;
//! - `spawn` and [`approvals`]: starting an agent with a person's consent (elicitation, or a
//!   pending approval answered with `drydock approve`);
//! - `hook_inbox` and `decisions`: hook events in, permission decisions out;
//! - [`hook_settings`]: drydock's entries in a Claude Code settings file;
//! - [`trust`]: Claude Code's folder trust for a task's worktree;
//! - `kill`: ending an agent and everything it started, and nothing else.
//!
//! The rest is a pure core with no I/O:
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
//!
//! `fixtures` (tests only) checks detection against the recorded screens in
//! `tests/fixtures/agents/`.

mod answer;
pub mod approvals;
mod decisions;
pub mod detect;
mod discover;
#[doc(hidden)]
pub mod fuzzing;
mod hook_inbox;
pub mod hook_settings;
pub mod keys;
mod kill;
pub mod launch;
mod observe;
pub mod osc7501;
pub mod profile;
mod profile_dir;
pub mod prompt;
pub mod reports;
pub mod requests;
pub mod rules;
mod spawn;
pub mod trust;
pub mod usage;

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
pub use spawn::{AskClient, Launched, Run, SandboxedRun};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::call::Call;
use crate::config::Config;
use crate::events::{AgentChange, EventKind, Events};
use crate::local_endpoint::LocalEndpoint;
use crate::process::procfs::ProcStat;
use crate::shared_reading::SharedReading;
use crate::terminal::{TerminalError, TerminalProgram, Terminals};
use crate::workspace::Workspace;
use approvals::Approvals;
use decisions::Decisions;
use discover::{Found, ProcessTable};
use hook_inbox::HookInbox;
pub use hook_inbox::Sender as HookSender;
use observe::{Clock, Seen};
use reports::{AgentInfo, ListReport, WaitReport};
use requests::{ListRequest, WaitRequest};

/// How often `agent_wait` looks for agents that started in a pane of the user's tmux server
/// that drydock does not follow (it follows a pane once an agent runs in it): every other
/// change reaches it as an event.
const REDISCOVER: Duration = Duration::from_secs(2);
/// How long a change waits for the rest of its burst before the agents are looked at again.
const COALESCE: Duration = Duration::from_millis(50);
const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// Why an agent tool could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no agent named {name:?}; agents: {known}")]
    UnknownAgent { name: String, known: String },
    #[error(transparent)]
    Terminal(#[from] TerminalError),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{name} is {state}, not {wanted}: {why}")]
    NotInState {
        name: String,
        state: String,
        wanted: String,
        why: String,
    },
    #[error("cancelled")]
    Cancelled,
}

/// The agents running in every terminal drydock can see.
pub struct Agents {
    config: Arc<Config>,
    workspace: Workspace,
    profiles: Profiles,
    profile_errors: Vec<String>,
    terminals: Arc<Terminals>,
    clock: Clock,
    hooks: HookInbox,
    /// Requests waiting for a person (agent_spawn's consent).
    approvals: Arc<Approvals>,
    /// Spawned agents' permission prompts waiting for a decision through their hook.
    decisions: Decisions,
    /// The sessions drydock started agents in, and whether their hooks reach drydock.
    spawned: Mutex<HashMap<String, spawn::RunTraits>>,
    /// Where the HTTP server takes hooks and MCP, once it listens.
    endpoint: OnceLock<LocalEndpoint>,
    /// Told when `endpoint` is set.
    endpoint_set: tokio::sync::Notify,
    /// The last agent seen in each terminal, by terminal name: its state carries over
    /// (a redraw is not a new state), and once its process is gone it reads as exited.
    known: Mutex<HashMap<String, Known>>,
    /// The terminals' programs and the agents found in them, read once for the callers that
    /// ask together (every listing, and every look at one agent, reads every process).
    found: SharedReading<Arc<(Vec<TerminalProgram>, Vec<Found>)>>,
}

#[derive(Clone)]
struct Known {
    process: ProcStat,
    detection: Detection,
    info: AgentInfo,
    /// When the prompt it waits at was first seen drawn.
    prompt_since: Option<Millis>,
}

impl Agents {
    /// The embedded profiles, overridden by those in the profile directory (default
    /// `~/.config/drydock/agents/NAME.toml`) with a version at least as new, and the
    /// programs config names, watched by quiet time.
    pub fn new(terminals: Arc<Terminals>, config: Arc<Config>) -> Arc<Agents> {
        let dir = config.agents.profile_dir.as_deref().filter(|d| d.is_dir());
        let (mut profiles, errors) = profile_dir::load(dir);
        for program in &config.agents.programs {
            profiles.add_generic(program);
        }
        for error in &errors {
            tracing::warn!("agent profile not used: {error}");
        }
        Arc::new(Agents {
            workspace: Workspace::new(config.allowed_roots.clone()),
            config,
            approvals: Arc::default(),
            decisions: Decisions::default(),
            spawned: Mutex::default(),
            endpoint: OnceLock::new(),
            endpoint_set: tokio::sync::Notify::new(),
            profiles,
            profile_errors: errors.iter().map(ToString::to_string).collect(),
            terminals,
            clock: Clock::new(),
            hooks: HookInbox::new(),
            known: Mutex::default(),
            found: SharedReading::default(),
        })
    }

    /// Every agent, found by process tree in drydock's sessions and the user's tmux panes,
    /// with its state; or only `req.agent`.
    pub fn list(&self, req: ListRequest) -> BoxFuture<'_, Result<ListReport, AgentError>> {
        async move {
            let reading = self
                .found
                .get(|| async {
                    let terminals = self.terminals.programs().await;
                    // Every process's /proc entry, and the command lines of those in the
                    // terminals (a read that waits while that process's memory is locked): on a
                    // blocking thread.
                    let (profiles, programs) = (self.profiles.clone(), terminals.clone());
                    let found = tokio::task::spawn_blocking(move || {
                        discover::find(&profiles, &programs, &ProcessTable::read())
                    })
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                    Arc::new((terminals, found))
                })
                .await;
            let (terminals, found) = (&reading.0, reading.1.clone());
            let mut agents = Vec::new();
            for agent in found {
                if req
                    .agent
                    .as_ref()
                    .is_none_or(|only| *only == agent.terminal.name)
                {
                    // A terminal that ends, or is still being set up, while agents are listed is
                    // left out rather than failing the whole listing.
                    match self.observe(agent).await {
                        Ok(info) => agents.push(info),
                        Err(AgentError::Terminal(error)) => {
                            tracing::debug!("an agent's terminal could not be read: {error}");
                        }
                        Err(other) => return Err(other),
                    }
                }
            }
            agents.extend(self.gone(terminals, &agents, req.agent.as_deref()));
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
        .boxed()
    }

    /// Returns as soon as one of the agents (`req.agents`, default all, including ones that
    /// start meanwhile) is in one of `req.states`; at once if one already is. Woken by every
    /// change of a terminal an agent or drydock's own sessions run in, and when a decision
    /// may change by itself (a stale report expires): no screen is polled.
    pub fn wait<'a>(
        &'a self,
        req: WaitRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<WaitReport, AgentError>> {
        async move {
            if req.states.is_empty() {
                return Err(AgentError::InvalidArgument(
                "states: name at least one of starting, idle, working, waiting, exited, unknown"
                    .into(),
            ));
            }
            let timeout = req
                .timeout_ms
                .map_or(DEFAULT_WAIT, |ms| Duration::from_millis(ms.get()));
            let started = Instant::now();
            let deadline = started + timeout;
            let wanted: Vec<&str> = req.states.iter().map(|state| state.name()).collect();
            loop {
                // Watched from before looking, so a change while looking is not missed.
                let watch = self.watch().await;
                let listing = self.list(ListRequest::default()).await?;
                let agent = listing
                    .agents
                    .into_iter()
                    .filter(|a| {
                        req.agents
                            .as_ref()
                            .is_none_or(|only| only.contains(&a.name))
                    })
                    .find(|a| wanted.contains(&a.state.as_str()));
                if agent.is_some() || Instant::now() >= deadline {
                    return Ok(WaitReport {
                        matched: agent.is_some(),
                        agent,
                        waited_ms: crate::millis::millis(started.elapsed()),
                    });
                }
                watch.changed(Some(deadline), &call.cancel).await?;
            }
        }
        .boxed()
    }

    /// The base URL of drydock's HTTP server, once it serves.
    pub fn base_url(&self) -> Option<&str> {
        self.endpoint.get().map(|endpoint| endpoint.base.as_str())
    }

    /// Where spawned agents reach drydock, once the HTTP server published it.
    pub fn local_endpoint(&self) -> Option<&LocalEndpoint> {
        self.endpoint.get()
    }

    /// From now on, spawned agents get hooks and MCP through `endpoint`.
    pub fn serve_at(&self, endpoint: LocalEndpoint) {
        let _ = self.endpoint.set(endpoint);
        self.endpoint_set.notify_waiters();
    }

    /// Returns once spawned agents can reach drydock (the HTTP server published its
    /// endpoint), or after `limit` (it may never: its data directory is not writable).
    pub fn until_reachable(&self, limit: Duration) -> BoxFuture<'_, ()> {
        async move {
            let deadline = tokio::time::Instant::now() + limit;
            loop {
                let set = self.endpoint_set.notified();
                tokio::pin!(set);
                set.as_mut().enable();
                if self.endpoint.get().is_some() {
                    return;
                }
                if tokio::time::timeout_at(deadline, set).await.is_err() {
                    return;
                }
            }
        }
        .boxed()
    }

    /// The requests waiting for a person.
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.approvals
    }

    /// A watch on everything that can change an agent's state from now on: the output of
    /// drydock's own sessions and of every terminal an agent was seen in, and the time a
    /// decision may change by itself.
    pub fn watch(&self) -> BoxFuture<'_, Watch> {
        async move {
            Watch {
                changes: self.subscribe().await,
                recheck: self.next_recheck(),
            }
        }
        .boxed()
    }

    /// The generations of drydock's own sessions and of every terminal an agent was seen in,
    /// and hook arrivals.
    async fn subscribe(&self) -> Vec<watch::Receiver<u64>> {
        let mut names: Vec<String> = self
            .terminals
            .names()
            .into_iter()
            .filter(|name| !name.starts_with("tmux:"))
            .collect();
        names.extend(self.known.lock().expect("agents lock").keys().cloned());
        names.sort();
        names.dedup();
        let mut receivers = vec![self.hooks.arrivals()];
        for name in names {
            if let Ok(core) = self.terminals.core_of(&name).await {
                receivers.push(core.generations());
            }
        }
        receivers
    }

    /// The earliest time a known agent's state may change with no new output.
    fn next_recheck(&self) -> Option<Instant> {
        let known = self.known.lock().expect("agents lock");
        known
            .values()
            .filter_map(|k| k.detection.recheck_at)
            .min()
            .map(|at| self.clock.instant(at))
    }

    /// The state of `agent`, from its terminal now and what was seen of it before.
    async fn observe(&self, agent: Found) -> Result<AgentInfo, AgentError> {
        let name = agent.terminal.name.clone();
        let profile = self
            .profiles
            .get(&agent.profile)
            .expect("found agents have a profile");
        let observed = self.terminals.observe(&name).await?;
        let hooks = self.hooks.of(&agent.process);
        let seen = Seen::new(&self.clock, &observed, &agent.process, hooks);
        let lines = seen.lines();
        let mut detection = detect(profile, &seen.observation(&lines));
        let mut known = self.known.lock().expect("agents lock");
        let previous = known
            .get(&name)
            .filter(|k| k.process.is_same_process(&agent.process));
        if let Some(previous) = previous {
            detection = detection.continuing(&previous.detection);
        }
        let previous_prompt = previous.and_then(|p| Some((p.info.prompt_id()?, p.prompt_since?)));
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
            last_hook: seen.last_hook(),
            spawned: self.is_spawned(&name),
        };
        info.state_of(&detection, seen.now());
        // When this prompt was first seen drawn: keys sent sooner after that get lost.
        let prompt_since = info.prompt_id().map(|id| match previous_prompt {
            Some((before, since)) if before == id => since,
            _ => seen.now(),
        });
        if let (Some(since), Some(waiting)) = (prompt_since, info.waiting.as_mut()) {
            waiting.shown_ms = Some(seen.now().saturating_sub(since));
        }
        known.insert(
            name,
            Known {
                process: agent.process,
                detection,
                info: info.clone(),
                prompt_since,
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

impl Agents {
    /// Publishes every agent's changes of state or prompt on `events` until `stop`: what the
    /// dashboard and the clients' log notifications hear. Looks only while something listens
    /// (looking runs tmux on the user's server).
    pub fn monitor<'a>(
        &'a self,
        events: &'a Events,
        stop: &'a CancellationToken,
    ) -> BoxFuture<'a, ()> {
        async move {
            let mut last: HashMap<String, (String, Option<String>)> = HashMap::new();
            loop {
                if !events.has_subscribers() {
                    tokio::select! {
                        () = tokio::time::sleep(REDISCOVER) => continue,
                        () = stop.cancelled() => return,
                    }
                }
                let watch = self.watch().await;
                if let Ok(listing) = self.list(ListRequest::default()).await {
                    let mut now = HashMap::new();
                    for agent in listing.agents {
                        let prompt = agent.waiting.as_ref().and_then(|w| w.prompt_id.clone());
                        let current = (agent.state.clone(), prompt);
                        let before = last.remove(&agent.name);
                        if before.as_ref() != Some(&current) {
                            events.publish(EventKind::AgentState(change(&agent, before)));
                        }
                        now.insert(agent.name, current);
                    }
                    last = now;
                }
                if watch.changed(None, stop).await.is_err() {
                    return;
                }
            }
        }
        .boxed()
    }
}

fn change(agent: &AgentInfo, before: Option<(String, Option<String>)>) -> AgentChange {
    AgentChange {
        agent: agent.name.clone(),
        kind: agent.kind.clone(),
        state: agent.state.clone(),
        from: before.map(|(state, _)| state),
        waiting: agent.waiting.as_ref().map(|w| w.kind.clone()),
        question: agent.waiting.as_ref().and_then(|w| w.question.clone()),
        signal: agent.signal.clone(),
    }
}

/// See [`Agents::watch`].
pub struct Watch {
    changes: Vec<watch::Receiver<u64>>,
    recheck: Option<Instant>,
}

impl Watch {
    /// Returns once something changed (or may have: agents starting in the user's own
    /// panes are looked for every [`REDISCOVER`]), at `deadline` at the latest, or with an
    /// error when `cancel` fires.
    pub fn changed(
        self,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> BoxFuture<'_, Result<(), AgentError>> {
        async move {
            let wake = [self.recheck, deadline, Some(Instant::now() + REDISCOVER)]
                .into_iter()
                .flatten()
                .min()
                .expect("REDISCOVER is always there");
            next_change(self.changes, wake, cancel).await
        }
        .boxed()
    }
}

/// Returns when one of `changes` sees a new generation, at `wake`, or with an error when
/// `cancel` fires.
async fn next_change(
    mut changes: Vec<watch::Receiver<u64>>,
    wake: Instant,
    cancel: &CancellationToken,
) -> Result<(), AgentError> {
    let changed = async {
        match changes.is_empty() {
            true => std::future::pending::<()>().await,
            false => {
                let waits = changes.iter_mut().map(|c| Box::pin(c.changed()));
                let _ = futures::future::select_all(waits).await;
            }
        }
    };
    // A burst of output (a spinner redraws ten times a second) is one look, not ten, and
    // each look runs tmux twice.
    let changed_then_settled = async {
        changed.await;
        tokio::time::sleep(COALESCE).await;
    };
    tokio::select! {
        () = changed_then_settled => Ok(()),
        () = tokio::time::sleep_until(wake.into()) => Ok(()),
        () = cancel.cancelled() => Err(AgentError::Cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::core::TerminalCore;

    #[tokio::test]
    async fn a_wait_for_change_ends_on_output_on_time_or_on_cancel() {
        let core = TerminalCore::new(24, 80, 100);
        let far = Instant::now() + Duration::from_secs(600);
        let never = CancellationToken::new();

        let changes = vec![core.generations()];
        let feeder = core.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            feeder.feed(b"output");
        });
        let woke = tokio::time::timeout(Duration::from_secs(10), next_change(changes, far, &never));
        assert!(matches!(woke.await, Ok(Ok(()))), "new output wakes it");

        let soon = Instant::now() + Duration::from_millis(50);
        let timed =
            tokio::time::timeout(Duration::from_secs(10), next_change(vec![], soon, &never));
        assert!(matches!(timed.await, Ok(Ok(()))), "the wake time ends it");

        let cancel = CancellationToken::new();
        cancel.cancel();
        let cancelled = next_change(vec![core.generations()], far, &cancel).await;
        assert!(matches!(cancelled, Err(AgentError::Cancelled)));
    }
}
