//! The hook events agents sent through `drydock hook`, kept per agent process: the hook runs
//! as a descendant of the agent (Claude Code → a shell → `drydock hook`), so walking up from
//! the hook's pid to the first process a profile recognises names the agent that sent it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::watch;

use super::detect::{HookEvent, Millis, Stamped};
use super::profile::{ProcessInfo, Profiles};
use crate::process::procfs::{self, ProcStat};

/// Events kept per agent: enough for the detector, which reads the latest few.
const KEPT: usize = 32;
/// How far up from the hook the agent may be.
const MAX_DEPTH: usize = 8;

/// An agent process: pid and start time, so a reused pid is another agent.
type ProcessKey = (i32, u64);

pub(super) struct HookInbox {
    events: Mutex<HashMap<ProcessKey, VecDeque<Stamped<HookEvent>>>>,
    arrivals: watch::Sender<u64>,
}

/// Which agent a hook event came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    pub process: ProcStat,
    pub profile: String,
}

impl HookInbox {
    pub(super) fn new() -> HookInbox {
        HookInbox {
            events: Mutex::default(),
            arrivals: watch::Sender::new(0),
        }
    }

    /// Files `payload` (a Claude Code hook payload, or a Codex notification) under the agent
    /// that ran the hook process `hook_pid`, at `at`. None when no agent is among its
    /// ancestors.
    pub(super) fn deliver(
        &self,
        profiles: &Profiles,
        hook_pid: i32,
        payload: &Value,
        at: Millis,
    ) -> Option<Sender> {
        let sender = sender_of(profiles, hook_pid)?;
        let event = Stamped {
            at,
            value: event_of(payload),
        };
        let mut events = self.events.lock().expect("hook inbox lock");
        events.retain(|(pid, start), _| {
            ProcStat::read(*pid).is_some_and(|p| p.start_time == *start && !p.is_gone())
        });
        let queue = events
            .entry((sender.process.pid, sender.process.start_time))
            .or_default();
        queue.push_back(event);
        if queue.len() > KEPT {
            queue.pop_front();
        }
        drop(events);
        self.arrivals.send_modify(|n| *n += 1);
        Some(sender)
    }

    /// The events of agent `process`, oldest first.
    pub(super) fn of(&self, process: &ProcStat) -> Vec<Stamped<HookEvent>> {
        let events = self.events.lock().expect("hook inbox lock");
        events
            .get(&(process.pid, process.start_time))
            .map(|queue| queue.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Changes on every event delivered.
    pub(super) fn arrivals(&self) -> watch::Receiver<u64> {
        self.arrivals.subscribe()
    }
}

fn event_of(payload: &Value) -> HookEvent {
    let text = |key: &str| payload.get(key).and_then(Value::as_str).map(str::to_string);
    HookEvent {
        // Codex's notify program gets `{"type": "agent-turn-complete", …}`.
        name: text("hook_event_name")
            .or_else(|| text("type"))
            .unwrap_or_else(|| "unknown".into()),
        tool_name: text("tool_name"),
    }
}

/// The nearest ancestor of `pid` that a profile recognises.
fn sender_of(profiles: &Profiles, pid: i32) -> Option<Sender> {
    let mut process = ProcStat::read(pid)?;
    for _ in 0..MAX_DEPTH {
        process = ProcStat::read(process.ppid)?;
        let executable = procfs::executable(process.pid).unwrap_or_default();
        let argv = procfs::argv(process.pid);
        let info = ProcessInfo {
            executable: &executable,
            argv: &argv,
        };
        if let Some((profile, _)) = profiles.recognise(std::slice::from_ref(&info)) {
            return Some(Sender {
                process,
                profile: profile.name.clone(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_is_filed_under_the_agent_above_the_hook_process() {
        // A copy of `sh` named `claude` runs a shell that runs the "hook" (a sleep).
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        std::fs::copy("/bin/sh", &claude).unwrap();
        let mut agent = std::process::Command::new(&claude)
            .args(["-c", "sh -c 'sleep 30; true'; true"])
            .spawn()
            .unwrap();
        let agent_pid = agent.id() as i32;
        let mut hook = None;
        for _ in 0..200 {
            hook = procfs::all_processes()
                .into_iter()
                .find(|p| ProcStat::read(p.ppid).is_some_and(|parent| parent.ppid == agent_pid));
            if hook.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let hook = hook.expect("the hook's sleep");
        let profiles = Profiles::embedded();
        let inbox = HookInbox::new();
        let arrivals = inbox.arrivals();
        let payload = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash"});

        let sender = inbox.deliver(&profiles, hook.pid, &payload, 42);
        let unmatched = inbox.deliver(&profiles, std::process::id() as i32, &payload, 43);
        agent.kill().unwrap();
        agent.wait().unwrap();

        let sender = sender.expect("found the agent");
        assert_eq!(sender.profile, "claude");
        assert_eq!(sender.process.pid, agent_pid);
        assert_eq!(unmatched, None, "no agent above the test");
        let events = inbox.of(&sender.process);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].at, 42);
        assert_eq!(events[0].value.name, "PermissionRequest");
        assert_eq!(events[0].value.tool_name.as_deref(), Some("Bash"));
        assert!(arrivals.has_changed().unwrap());
        assert_eq!(
            event_of(&json!({"type": "agent-turn-complete"})).name,
            "agent-turn-complete"
        );
    }
}
