//! Detection: a pure function from a profile and what was observed of one agent to its
//! state, the signal that decided it and since when.
//!
//! The signals and how they combine (agent-lab §4–§6, §12):
//!
//! 1. The process: an exited agent is exited, whatever else says.
//! 2. Event signals, in this order of authority, the first that has anything: OSC 7501
//!    reports (after the last `clear`), hook events, the window title. The channel's
//!    latest event gives the state; the earliest event, on any channel, of the run that
//!    agrees with it gives the time it began.
//! 3. The screen: the matching screen rule of highest priority. It confirms an event
//!    signal, or contradicts it. A contradicting screen wins only when it is newer than
//!    the latest event and its rule allows it: at once (a permission prompt cannot be
//!    drawn in any other state), once that event is `stale_ms` old (after an
//!    Escape-interrupt no Stop hook comes, and the idle screen must win), or never (Codex
//!    streams under an idle-looking composer).
//! 4. Without any of these: quiet time (the generic profile), else starting for
//!    `startup_ms`, else unknown.
//!
//! Times are milliseconds since any epoch the caller picks, the same for every field.

use super::osc7501::{ReportedState, StatusReport};
use super::profile::Profile;
use super::prompt::{Prompt, extract_prompt};
use super::rules::{Conclusion, Osc7501Support, Overrides, Region, WaitKind};

pub type Millis = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamped<T> {
    pub at: Millis,
    pub value: T,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    /// `hook_event_name`: `PermissionRequest`, `Stop`…
    pub name: String,
    /// The payload's `tool_name`, when it has one.
    pub tool_name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessStatus {
    Running { started_at: Millis },
    Exited { code: Option<i32>, at: Millis },
}

/// Everything known about one agent at `now`. Lists are oldest first.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    pub now: Millis,
    pub process: ProcessStatus,
    /// The screen's rows as plain text.
    pub screen: &'a [&'a str],
    /// When the screen last changed.
    pub screen_at: Millis,
    pub title: Option<Stamped<&'a str>>,
    pub osc: &'a [Stamped<StatusReport>],
    pub hooks: &'a [Stamped<HookEvent>],
    pub last_output_at: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    Starting,
    /// Ready for a prompt.
    Idle,
    Working,
    Waiting(Waiting),
    Exited {
        code: Option<i32>,
    },
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// The prompt is on screen; only this can be answered.
    OnScreen(Prompt),
    /// A signal says the agent waits, but no prompt can be read (not drawn yet, or a
    /// dialog without a menu).
    Signalled { kind: WaitKind },
}

impl Waiting {
    pub fn kind(&self) -> WaitKind {
        match self {
            Waiting::OnScreen(prompt) => prompt.kind,
            Waiting::Signalled { kind } => *kind,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    Osc7501,
    Hook(String),
    /// The id of the screen rule.
    Screen(String),
    /// The id of the title rule.
    Title(String),
    Quiet,
    Process,
}

impl std::fmt::Display for Signal {
    /// `osc7501`, `hook:Stop`, `screen:claude-idle`, `title:…`, `quiet`, `process`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signal::Osc7501 => f.write_str("osc7501"),
            Signal::Hook(name) => write!(f, "hook:{name}"),
            Signal::Screen(rule) => write!(f, "screen:{rule}"),
            Signal::Title(rule) => write!(f, "title:{rule}"),
            Signal::Quiet => f.write_str("quiet"),
            Signal::Process => f.write_str("process"),
        }
    }
}

impl AgentState {
    /// The same state as `previous`: for a waiting agent the same prompt (the highlight may
    /// have moved), or a prompt drawn after the signal that announced it.
    pub fn continues(&self, previous: &AgentState) -> bool {
        use Waiting::{OnScreen, Signalled};
        match (self, previous) {
            (AgentState::Waiting(OnScreen(now)), AgentState::Waiting(OnScreen(before))) => {
                now.id == before.id
            }
            (AgentState::Waiting(now), AgentState::Waiting(before)) => {
                now.kind() == before.kind() && matches!(before, Signalled { .. })
            }
            _ => self == previous,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            AgentState::Starting => "starting",
            AgentState::Idle => "idle",
            AgentState::Working => "working",
            AgentState::Waiting(_) => "waiting",
            AgentState::Exited { .. } => "exited",
            AgentState::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub state: AgentState,
    pub signal: Signal,
    pub since: Millis,
    /// The agent's own words on its state (OSC 7501 `msg`: "approve Bash: echo hi > x").
    pub message: Option<String>,
    /// The decision may change at this time with no new input (a stale signal expires, a
    /// quiet period ends): detect again then.
    pub recheck_at: Option<Millis>,
}

impl Detection {
    /// This detection, keeping `previous`'s signal and start when the state did not change
    /// (the same prompt, for a waiting agent): a redraw is not a new state.
    pub fn continuing(self, previous: &Detection) -> Detection {
        match self.state.continues(&previous.state) {
            true => Detection {
                signal: previous.signal.clone(),
                since: previous.since.min(self.since),
                ..self
            },
            false => self,
        }
    }
}

/// One signal's conclusion and when it began to hold.
#[derive(Debug, Clone)]
struct Evidence {
    outcome: Conclusion,
    /// When the state began, by this signal.
    at: Millis,
    /// When this signal last said so.
    latest: Millis,
    signal: Signal,
    message: Option<String>,
}

pub fn detect(profile: &Profile, observation: &Observation<'_>) -> Detection {
    let started_at = match observation.process {
        ProcessStatus::Exited { code, at } => {
            return decided(AgentState::Exited { code }, Signal::Process, at);
        }
        ProcessStatus::Running { started_at } => started_at,
    };
    let event = event_evidence(profile, observation);
    let screen = screen_evidence(profile, observation);
    let screen_waits = screen
        .as_ref()
        .is_some_and(|(s, _)| matches!(s.outcome, Conclusion::Waiting(_)));
    let (evidence, recheck_at) = match reconcile(profile, observation.now, event, screen) {
        Some(found) => found,
        None => return fallback(profile, observation, started_at),
    };
    let state = match evidence.outcome {
        Conclusion::Starting => AgentState::Starting,
        Conclusion::Idle => AgentState::Idle,
        Conclusion::Working => AgentState::Working,
        Conclusion::Waiting(kind) => {
            AgentState::Waiting(waiting(profile, observation, kind, screen_waits))
        }
    };
    Detection {
        state,
        signal: evidence.signal,
        since: evidence.at,
        message: evidence.message,
        recheck_at,
    }
}

fn decided(state: AgentState, signal: Signal, since: Millis) -> Detection {
    Detection {
        state,
        signal,
        since,
        message: None,
        recheck_at: None,
    }
}

/// The state from the most authoritative event channel that has one, dated from the
/// earliest channel that agrees (OSC `blocked` comes ~90 ms before PermissionRequest).
fn event_evidence(profile: &Profile, observation: &Observation<'_>) -> Option<Evidence> {
    let osc = match profile.state.osc7501 {
        Osc7501Support::Never => None,
        _ => osc_evidence(observation.osc),
    };
    let hooks = hook_evidence(profile, observation.hooks);
    let title = title_evidence(profile, observation.title);
    let mut channels = [osc, hooks, title].into_iter().flatten();
    let primary = channels.next()?;
    let agreeing: Vec<Evidence> = channels
        .filter(|other| same_state(other.outcome, primary.outcome))
        .collect();
    let latest = agreeing
        .iter()
        .map(|other| other.latest)
        .fold(primary.latest, Millis::max);
    let earliest = agreeing.into_iter().min_by_key(|other| other.at);
    Some(match earliest {
        Some(other) if other.at < primary.at => Evidence {
            at: other.at,
            latest,
            signal: other.signal,
            ..primary
        },
        _ => Evidence { latest, ..primary },
    })
}

fn osc_evidence(reports: &[Stamped<StatusReport>]) -> Option<Evidence> {
    let after_clear = reports
        .iter()
        .rposition(|r| r.value.state == ReportedState::Clear)
        .map_or(0, |i| i + 1);
    let outcomes: Vec<(Millis, Conclusion, Option<&String>)> = reports[after_clear..]
        .iter()
        .filter_map(|r| osc_outcome(&r.value).map(|o| (r.at, o, r.value.message.as_ref())))
        .collect();
    let run = latest_run(&outcomes, |(_, outcome, _)| *outcome)?;
    let (latest, outcome, _) = *run.last().expect("a run is not empty");
    Some(Evidence {
        outcome,
        at: run[0].0,
        latest,
        signal: Signal::Osc7501,
        message: run.iter().rev().find_map(|(_, _, m)| m.cloned()),
    })
}

fn osc_outcome(report: &StatusReport) -> Option<Conclusion> {
    match report.state {
        ReportedState::Idle | ReportedState::Done => Some(Conclusion::Idle),
        ReportedState::Working => Some(Conclusion::Working),
        ReportedState::Blocked => {
            let kind = report.kind.as_deref().and_then(WaitKind::parse);
            Some(Conclusion::Waiting(kind.unwrap_or(WaitKind::Permission)))
        }
        ReportedState::Clear | ReportedState::Other(_) => None,
    }
}

fn hook_evidence(profile: &Profile, hooks: &[Stamped<HookEvent>]) -> Option<Evidence> {
    let outcomes: Vec<(Millis, Conclusion, &str)> = hooks
        .iter()
        .filter_map(|hook| {
            let rule = profile.state.hooks.iter().find(|rule| {
                rule.event == hook.value.name
                    && rule
                        .tool
                        .as_ref()
                        .is_none_or(|tool| hook.value.tool_name.as_ref() == Some(tool))
            })?;
            Some((hook.at, rule.state, hook.value.name.as_str()))
        })
        .collect();
    let run = latest_run(&outcomes, |(_, outcome, _)| *outcome)?;
    let (at, _, name) = run[0];
    let (latest, outcome, _) = *run.last().expect("a run is not empty");
    Some(Evidence {
        outcome,
        at,
        latest,
        signal: Signal::Hook(name.to_string()),
        message: None,
    })
}

fn title_evidence(profile: &Profile, title: Option<Stamped<&str>>) -> Option<Evidence> {
    let title = title?;
    let rule = profile
        .state
        .title
        .iter()
        .find(|rule| rule.regex.is_match(title.value))?;
    Some(Evidence {
        outcome: rule.state,
        at: title.at,
        latest: title.at,
        signal: Signal::Title(rule.id.clone()),
        message: None,
    })
}

/// The last items that agree on the state (same state; any waiting kind).
fn latest_run<T>(items: &[T], outcome: impl Fn(&T) -> Conclusion) -> Option<&[T]> {
    let last = outcome(items.last()?);
    let start = items
        .iter()
        .rposition(|item| !same_state(outcome(item), last))
        .map_or(0, |i| i + 1);
    Some(&items[start..])
}

fn same_state(a: Conclusion, b: Conclusion) -> bool {
    std::mem::discriminant(&a) == std::mem::discriminant(&b)
}

fn screen_evidence(
    profile: &Profile,
    observation: &Observation<'_>,
) -> Option<(Evidence, Overrides)> {
    let regions = &profile.state.regions;
    let texts = [Region::Footer, Region::Prompt, Region::Screen]
        .map(|region| (region, regions.text(region, observation.screen)));
    let text_of = |region| {
        &texts
            .iter()
            .find(|(r, _)| *r == region)
            .expect("every region")
            .1
    };
    let (_, rule) = profile
        .state
        .screen
        .iter()
        .enumerate()
        .filter(|(_, rule)| {
            let text = text_of(rule.region);
            rule.regex.is_match(text) && !rule.unless.as_ref().is_some_and(|u| u.is_match(text))
        })
        .max_by_key(|(index, rule)| (rule.priority, std::cmp::Reverse(*index)))?;
    let evidence = Evidence {
        outcome: rule.state,
        at: observation.screen_at,
        latest: observation.screen_at,
        signal: Signal::Screen(rule.id.clone()),
        message: None,
    };
    Some((evidence, rule.overrides))
}

/// The evidence that decides, and when the decision may change by itself.
fn reconcile(
    profile: &Profile,
    now: Millis,
    event: Option<Evidence>,
    screen: Option<(Evidence, Overrides)>,
) -> Option<(Evidence, Option<Millis>)> {
    let (event, (screen, overrides)) = match (event, screen) {
        (None, None) => return None,
        (Some(event), None) => return Some((event, None)),
        (None, Some((screen, _))) => return Some((screen, None)),
        (Some(event), Some(screen)) => (event, screen),
    };
    if same_state(event.outcome, screen.outcome) {
        // The earlier signal started the state; the screen knows the kind of waiting.
        let outcome = screen.outcome;
        let message = event.message.clone();
        let first = match event.at <= screen.at {
            true => event,
            false => screen,
        };
        let agreed = Evidence {
            outcome,
            message,
            ..first
        };
        return Some((agreed, None));
    }
    let stale_at = event.latest + profile.state.stale_ms;
    let screen_newer = screen.at > event.latest;
    // A prompt cannot be drawn in any other state: it wins over an event of the same moment
    // too (a title read with the screen, a report in the chunk that drew it).
    let screen_as_new = screen.at >= event.latest;
    match overrides {
        Overrides::AtOnce if screen_as_new => Some((screen, None)),
        Overrides::WhenStale if screen_newer && now >= stale_at => Some((screen, None)),
        Overrides::WhenStale if screen_newer => Some((event, Some(stale_at))),
        _ => Some((event, None)),
    }
}

fn waiting(
    profile: &Profile,
    observation: &Observation<'_>,
    kind: WaitKind,
    on_screen: bool,
) -> Waiting {
    let region = profile
        .state
        .regions
        .text(Region::Prompt, observation.screen);
    let lines: Vec<&str> = region.lines().collect();
    let prompt = on_screen
        .then(|| extract_prompt(kind, &lines, profile.prompt.context_above))
        .flatten();
    match prompt {
        Some(prompt) => Waiting::OnScreen(prompt),
        None => Waiting::Signalled { kind },
    }
}

fn fallback(profile: &Profile, observation: &Observation<'_>, started_at: Millis) -> Detection {
    let now = observation.now;
    if let Some(quiet_ms) = profile.state.quiet_ms {
        let last = observation.last_output_at.unwrap_or(started_at);
        let quiet_from = last + quiet_ms;
        return match now < quiet_from {
            true => Detection {
                recheck_at: Some(quiet_from),
                ..decided(AgentState::Working, Signal::Quiet, last)
            },
            false => decided(AgentState::Idle, Signal::Quiet, quiet_from),
        };
    }
    let startup_ends = started_at + profile.state.startup_ms;
    match now < startup_ends {
        true => Detection {
            recheck_at: Some(startup_ends),
            ..decided(AgentState::Starting, Signal::Process, started_at)
        },
        false => decided(AgentState::Unknown, Signal::Process, startup_ends),
    }
}

#[cfg(test)]
mod tests;
