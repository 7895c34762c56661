//! Answering an agent's prompt and giving it its next one, safely: only in the state that
//! takes the keys (never a blind Enter into a working agent), only on the prompt the caller
//! saw, after the profile's settle delay (keys sent the instant a prompt is drawn get lost,
//! agent-lab §8.2), text and Enter as separate writes with the profile's gap (§8.1), and
//! checked: the agent must leave the state, or the keys go once more.

use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::decisions::Decision;
use super::keys::SubmitPlan;
use super::profile::Profile;
use super::reports::{AgentInfo, AnswerReport, SendReport};
use super::requests::{AnswerAction, AnswerRequest, ListRequest, SendRequest};
use super::{AgentError, Agents};
use crate::call::Call;

/// How long a prompt that a status report announced may take to be drawn.
const PROMPT_DRAWN: Duration = Duration::from_secs(5);
/// How long the agent has to react to the keys before they are sent once more.
const REACTION: Duration = Duration::from_secs(3);
const ATTEMPTS: u32 = 2;

impl Agents {
    /// Answers the prompt `req.agent` waits at: see the module doc.
    pub fn answer<'a>(
        &'a self,
        req: AnswerRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<AnswerReport, AgentError>> {
        async move {
            let agent = self.one(&req.agent).await?;
            let profile = self.profile_of(&agent)?;
            if agent.state != "waiting" {
                return Err(not_in(&agent, "waiting", "there is no prompt to answer"));
            }
            // A status report says `blocked` a moment before the prompt is drawn; on a loaded
            // machine the screen may read `working` for a moment in between.
            let drawn = |a: &AgentInfo| {
                a.waiting.as_ref().is_some_and(|w| w.prompt_id.is_some())
                    || matches!(a.state.as_str(), "idle" | "exited")
            };
            let (_, agent) = self
                .until(
                    &req.agent,
                    Instant::now() + PROMPT_DRAWN,
                    &call.cancel,
                    drawn,
                )
                .await?;
            let Some(prompt) = agent.waiting.clone().filter(|w| w.prompt_id.is_some()) else {
                return Err(not_in(&agent, "waiting", "no prompt is drawn to answer"));
            };
            let prompt_id = prompt.prompt_id.clone().unwrap_or_default();
            if let Some(seen) = &req.seen
                && *seen != prompt_id
            {
                return Err(AgentError::InvalidArgument(format!(
                    "the prompt changed since you saw it (seen {seen}, now {prompt_id}: {}): read it again with agent_list",
                    prompt.question.as_deref().unwrap_or("")
                )));
            }
            let keys = answer_keys(profile, &req, &prompt.options)?;
            if req.text.is_some() && req.action != AnswerAction::Choose {
                return Err(AgentError::InvalidArgument(
                    "text: only choose takes a text (for an option that asks to type)".into(),
                ));
            }
            let still_open = |a: &AgentInfo| {
                a.state == "waiting"
                    && a.waiting
                        .as_ref()
                        .is_some_and(|w| w.prompt_id.as_deref() == Some(prompt_id.as_str()))
            };
            // A spawned agent's hook waits for the decision: no keys needed.
            let decision = match req.action {
                AnswerAction::Approve => Some(Decision::Allow),
                AnswerAction::Deny => Some(Decision::Deny),
                AnswerAction::ApproveAlways | AnswerAction::Choose => None,
            };
            let decided = match decision {
                Some(decision) => self.decide(&req.agent, decision).await,
                None => false,
            };
            if let (true, Some(decision)) = (decided, decision) {
                let deadline = Instant::now() + REACTION;
                let (left, agent) = self
                    .until(&req.agent, deadline, &call.cancel, |a| !still_open(a))
                    .await?;
                return Ok(AnswerReport {
                    sent: format!("hook:{}", decision.name()),
                    attempts: 1,
                    answered: left,
                    agent,
                });
            }
            settle(profile, &agent, &call.cancel).await?;
            if let Some(text) = &req.text {
                // The chosen option opens a field in place: the prompt stays, so the keys go once.
                self.terminals.write(&req.agent, &keys).await?;
                let (answered, agent) = self.type_answer(profile, &req.agent, text, call).await?;
                return Ok(AnswerReport {
                    sent: format!("{}{text}\r", String::from_utf8_lossy(&keys)),
                    attempts: 1,
                    answered,
                    agent,
                });
            }
            let mut attempts = 0;
            let (answered, agent) = loop {
                attempts += 1;
                self.terminals.write(&req.agent, &keys).await?;
                let deadline = Instant::now() + REACTION;
                let (left, agent) = self
                    .until(&req.agent, deadline, &call.cancel, |a| !still_open(a))
                    .await?;
                if left || attempts == ATTEMPTS {
                    break (left, agent);
                }
            };
            Ok(AnswerReport {
                sent: String::from_utf8_lossy(&keys).into_owned(),
                attempts,
                answered,
                agent,
            })
    }
        .boxed()
    }

    /// Types `text` into the field the chosen option opened and submits it: the agent must
    /// stop waiting.
    async fn type_answer(
        &self,
        profile: &Profile,
        name: &str,
        text: &str,
        call: &Call<'_>,
    ) -> Result<(bool, AgentInfo), AgentError> {
        let gap = profile
            .submit
            .as_ref()
            .map_or(Duration::from_millis(100), |s| {
                Duration::from_millis(s.gap_ms)
            });
        pause(Duration::from_millis(profile.settle_ms), &call.cancel).await?;
        self.terminals.write(name, text.as_bytes()).await?;
        pause(gap, &call.cancel).await?;
        self.terminals.write(name, b"\r").await?;
        let deadline = Instant::now() + REACTION;
        self.until(name, deadline, &call.cancel, |a| a.state != "waiting")
            .await
    }

    /// Gives idle agent `req.agent` its next prompt: see the module doc.
    pub fn send<'a>(
        &'a self,
        req: SendRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<SendReport, AgentError>> {
        async move {
            if req.text.trim().is_empty() {
                return Err(AgentError::InvalidArgument(
                    "text: the prompt is empty".into(),
                ));
            }
            let agent = self.one(&req.agent).await?;
            let profile = self.profile_of(&agent)?;
            if agent.state != "idle" {
                let why = match agent.state.as_str() {
                    "waiting" => "it waits at a prompt: answer it with agent_answer first",
                    "working" | "starting" => "wait until it is idle (agent_wait with [\"idle\"])",
                    _ => "it does not take a prompt now",
                };
                return Err(not_in(&agent, "idle", why));
            }
            let submission = profile.submit.as_ref().ok_or_else(|| {
                AgentError::InvalidArgument(format!(
                    "the {} profile says nothing of how to submit a prompt",
                    profile.name
                ))
            })?;
            settle(profile, &agent, &call.cancel).await?;
            let plan = submission.plan(&req.text);
            let text = match plan {
                SubmitPlan::Typed => req.text.clone().into_bytes(),
                SubmitPlan::Pasted => format!("\x1b[200~{}\x1b[201~", req.text).into_bytes(),
            };
            self.terminals.write(&req.agent, &text).await?;
            let gap = Duration::from_millis(submission.gap_ms);
            let mut attempts = 0;
            let (submitted, agent) = loop {
                attempts += 1;
                pause(gap, &call.cancel).await?;
                self.terminals
                    .write(&req.agent, &submission.enter.0)
                    .await?;
                let deadline = Instant::now() + REACTION;
                let (left, agent) = self
                    .until(&req.agent, deadline, &call.cancel, |a| a.state != "idle")
                    .await?;
                if left || attempts == ATTEMPTS {
                    break (left, agent);
                }
            };
            Ok(SendReport {
                method: match plan {
                    SubmitPlan::Typed => "typed",
                    SubmitPlan::Pasted => "pasted",
                }
                .to_string(),
                attempts,
                submitted,
                agent,
            })
        }
        .boxed()
    }

    /// The agent called `name` now.
    pub fn one<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<AgentInfo, AgentError>> {
        async move {
            let request = ListRequest {
                agent: Some(name.to_string()),
            };
            let mut listing = self.list(request).await?;
            Ok(listing.agents.remove(0))
        }
        .boxed()
    }

    fn profile_of(&self, agent: &AgentInfo) -> Result<&Profile, AgentError> {
        let profile = self
            .profiles
            .get(&agent.kind)
            .expect("listed agents have a profile");
        match profile.keys {
            Some(_) => Ok(profile),
            None => Err(AgentError::InvalidArgument(format!(
                "{} runs {}, whose profile has no keys to answer or prompt it",
                agent.name, agent.kind
            ))),
        }
    }

    /// Looks at `name` on every change until `done` holds (true) or `deadline` passes
    /// (false); with the agent as last seen.
    pub(super) async fn until(
        &self,
        name: &str,
        deadline: Instant,
        cancel: &CancellationToken,
        done: impl Fn(&AgentInfo) -> bool,
    ) -> Result<(bool, AgentInfo), AgentError> {
        loop {
            let watch = self.watch().await;
            let agent = self.one(name).await?;
            if done(&agent) {
                return Ok((true, agent));
            }
            if Instant::now() >= deadline {
                return Ok((false, agent));
            }
            watch.changed(Some(deadline), cancel).await?;
        }
    }
}

/// The keys for `req.action` on a prompt offering `options`.
fn answer_keys(
    profile: &Profile,
    req: &AnswerRequest,
    options: &[super::reports::OptionInfo],
) -> Result<Vec<u8>, AgentError> {
    let keys = profile.keys.as_ref().expect("checked by profile_of");
    let invalid = |message: String| Err(AgentError::InvalidArgument(message));
    match (req.action, req.option.map(|n| n.get() as u32)) {
        (AnswerAction::Choose, None) => invalid("option: choose needs the option's number".into()),
        (AnswerAction::Choose, Some(n)) if !options.iter().any(|o| o.number == n) => {
            let offered: Vec<String> = options
                .iter()
                .map(|o| format!("{}. {}", o.number, o.label))
                .collect();
            invalid(format!(
                "option {n} is not offered; the prompt offers: {}",
                offered.join(", ")
            ))
        }
        (AnswerAction::Choose, Some(n)) => Ok(keys.choose.for_option(n)),
        (_, Some(_)) => invalid("option: only choose takes an option".into()),
        (AnswerAction::Approve, None) => Ok(keys.approve.0.clone()),
        (AnswerAction::ApproveAlways, None) => match &keys.approve_always {
            Some(always) => Ok(always.0.clone()),
            None => invalid(format!("{} offers no approve_always", profile.name)),
        },
        (AnswerAction::Deny, None) => Ok(keys.deny.0.clone()),
    }
}

/// Waits out the rest of the profile's settle delay after the agent entered its state.
async fn settle(
    profile: &Profile,
    agent: &AgentInfo,
    cancel: &CancellationToken,
) -> Result<(), AgentError> {
    // From the prompt's first frame when it is drawn (a status report may announce it half a
    // second earlier), else from the start of the state (idle, for a prompt to send).
    let age = agent
        .waiting
        .as_ref()
        .and_then(|w| w.shown_ms)
        .unwrap_or(agent.for_ms);
    let left = profile.settle_ms.saturating_sub(age);
    pause(Duration::from_millis(left), cancel).await
}

async fn pause(duration: Duration, cancel: &CancellationToken) -> Result<(), AgentError> {
    tokio::select! {
        () = tokio::time::sleep(duration) => Ok(()),
        () = cancel.cancelled() => Err(AgentError::Cancelled),
    }
}

pub(super) fn not_in(agent: &AgentInfo, wanted: &str, why: &str) -> AgentError {
    AgentError::NotInState {
        name: agent.name.clone(),
        state: agent.state.clone(),
        wanted: wanted.to_string(),
        why: why.to_string(),
    }
}
