//! Hook events in, and for agents drydock spawned, permission decisions out: a spawned
//! agent's PermissionRequest hook waits here until `agent_answer` decides (agent-lab §7.2:
//! the hook's answer closes the prompt on screen by itself, no keystroke involved), until the
//! prompt is answered some other way, or until the hook's time is up.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::spawn::DECISION_WAIT;
use super::{Agents, HookSender};

/// How far apart a permission prompt's hook and its first frame may come, at most.
const HOOK_AND_PROMPT_APART: Duration = Duration::from_secs(1);

/// What a person decided about a spawned agent's permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    Allow,
    Deny,
}

impl Decision {
    pub(super) fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

/// The permission prompts waiting for a decision, by session.
#[derive(Default)]
pub(super) struct Decisions {
    waiting: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    registered: Notify,
}

impl Decisions {
    /// Hands `decision` to the hook waiting on `session`'s prompt; false when none waits.
    fn decide(&self, session: &str, decision: Decision) -> bool {
        let waiting = self.waiting.lock().expect("decisions lock").remove(session);
        waiting.is_some_and(|hook| hook.send(decision).is_ok())
    }

    /// [`Decisions::decide`], waiting up to `limit` for the hook to ask.
    async fn decide_within(&self, session: &str, decision: Decision, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let registered = self.registered.notified();
            tokio::pin!(registered);
            registered.as_mut().enable();
            if self.decide(session, decision) {
                return true;
            }
            tokio::select! {
                () = registered => {}
                () = tokio::time::sleep_until(deadline) => return self.decide(session, decision),
            }
        }
    }

    fn wait(&self, session: &str) -> oneshot::Receiver<Decision> {
        let (sender, receiver) = oneshot::channel();
        self.waiting
            .lock()
            .expect("decisions lock")
            .insert(session.to_string(), sender);
        self.registered.notify_waiters();
        receiver
    }

    fn forget(&self, session: &str) {
        self.waiting.lock().expect("decisions lock").remove(session);
    }
}

/// What the hook prints for the agent.
fn hook_output(decision: Decision) -> Value {
    let decision = match decision {
        Decision::Allow => json!({"behavior": "allow"}),
        Decision::Deny => json!({"behavior": "deny", "message": "denied through drydock"}),
    };
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
}

impl Agents {
    /// Takes a hook event (`drydock hook` posted it) from the hook process `hook_pid`. For a
    /// spawned agent's permission prompt, waits for the decision and returns what the hook
    /// prints; None otherwise. Also names the agent that sent it (None when no agent is above
    /// the hook process).
    pub fn hook<'a>(
        &'a self,
        hook_pid: i32,
        payload: &'a Value,
    ) -> BoxFuture<'a, (Option<HookSender>, Option<Value>)> {
        async move {
            let sender = self
                .hooks
                .deliver(&self.profiles, hook_pid, payload, self.clock.now());
            let Some(sender) = sender else {
                return (None, None);
            };
            let decidable = payload["hook_event_name"] == "PermissionRequest"
                && payload["tool_name"] != "AskUserQuestion";
            if !decidable {
                return (Some(sender), None);
            }
            let Some(session) = self
                .session_of(&sender)
                .await
                .filter(|s| self.hooks_reach_us(s))
            else {
                return (Some(sender), None);
            };
            let tool = payload["tool_name"].as_str().unwrap_or("");
            if let Some(decision) = self.policy(&session, tool) {
                tracing::info!(
                    session,
                    ?decision,
                    "a permission prompt decided by the config"
                );
                return (Some(sender), Some(hook_output(decision)));
            }
            let output = self.await_decision(&session).await.map(hook_output);
            (Some(sender), output)
        }
        .boxed()
    }

    /// The session the agent `sender` runs in, as agent_list names it.
    async fn session_of(&self, sender: &HookSender) -> Option<String> {
        let find = || {
            let known = self.known.lock().expect("agents lock");
            known
                .iter()
                .find(|(_, k)| k.process.is_same_process(&sender.process))
                .map(|(name, _)| name.clone())
        };
        if let Some(name) = find() {
            return Some(name);
        }
        let _ = self.list(Default::default()).await;
        find()
    }

    /// The decision on `session`'s prompt; None once the prompt closed without one (a person
    /// answered it with keys, or the agent went away) or the hook's time is up.
    async fn await_decision(&self, session: &str) -> Option<Decision> {
        let mut decision = self.decisions.wait(session);
        let asked = Instant::now();
        let deadline = asked + DECISION_WAIT;
        let never = CancellationToken::new();
        // The hook comes within a moment of the prompt being drawn (agent-lab §5.3), before or
        // after: a prompt not seen open by then was answered before the hook came.
        let mut seen_waiting = false;
        loop {
            let watch = self.watch().await;
            let state = self.one(session).await.map(|a| a.state).unwrap_or_default();
            seen_waiting |= state == "waiting";
            let answered_before = !seen_waiting && asked.elapsed() >= HOOK_AND_PROMPT_APART;
            let closed =
                seen_waiting && state != "waiting" || state == "exited" || state.is_empty();
            if closed || answered_before || Instant::now() >= deadline {
                self.decisions.forget(session);
                return decision.try_recv().ok();
            }
            let wake = match seen_waiting {
                true => deadline,
                false => asked + HOOK_AND_PROMPT_APART,
            };
            tokio::select! {
                decided = &mut decision => return decided.ok(),
                _ = watch.changed(Some(wake), &never) => {}
            }
        }
    }

    /// What the config decides for `tool` (`[agents] auto_deny`, then `auto_allow`), or the
    /// run's own allowed tools (a task's approval policy).
    fn policy(&self, session: &str, tool: &str) -> Option<Decision> {
        let agents = &self.config.agents;
        let names = |list: &[String]| list.iter().any(|t| t == tool);
        let run_allows = self
            .run_traits(session)
            .is_some_and(|run| names(&run.allow));
        match (
            names(&agents.auto_deny),
            names(&agents.auto_allow) || run_allows,
        ) {
            (true, _) => Some(Decision::Deny),
            (false, true) => Some(Decision::Allow),
            (false, false) => None,
        }
    }

    /// Decides `session`'s prompt through its waiting hook, if drydock hears its hooks: the
    /// hook may come a moment after the prompt is drawn.
    pub(super) async fn decide(&self, session: &str, decision: Decision) -> bool {
        self.hooks_reach_us(session)
            && self
                .decisions
                .decide_within(session, decision, HOOK_AND_PROMPT_APART)
                .await
    }
}
