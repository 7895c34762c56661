//! Resources for agents: `drydock://agents` (every agent) and `drydock://agents/{name}`
//! (one), each updated (`resources/updated`) whenever an agent's state or prompt changes, and
//! `drydock://approvals` (what waits for a person), updated whenever that list changes.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;

use super::logging::ClientLogging;
use crate::agents::Agents;
use crate::agents::reports::{AgentInfo, ListReport};
use crate::agents::requests::ListRequest;
use crate::events::{Event, EventKind, Received, Subscription};

pub(super) const AGENTS_URI: &str = "drydock://agents";
pub(super) const APPROVALS_URI: &str = "drydock://approvals";
const PREFIX: &str = "drydock://agents/";

pub(super) fn list() -> Vec<Resource> {
    vec![
        Resource::new(AGENTS_URI, "agents")
            .with_description(
                "the coding agents in every terminal drydock can see, their states and questions",
            )
            .with_mime_type("application/json"),
        Resource::new(APPROVALS_URI, "approvals")
            .with_description(
                "requests waiting for a person (agent_spawn's consent): answer with `drydock approve ID` or `drydock decline ID`",
            )
            .with_mime_type("application/json"),
    ]
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{PREFIX}{{name}}"), "agent")
            .with_description("one agent (a name from drydock://agents): its state and question")
            .with_mime_type("application/json"),
    ]
}

/// Whether `uri` is `drydock://agents` or one agent's.
pub(super) fn is_agent_uri(uri: &str) -> bool {
    uri == AGENTS_URI || uri == APPROVALS_URI || agent_of(uri).is_some()
}

fn agent_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(PREFIX).filter(|name| !name.is_empty())
}

fn request(uri: &str) -> ListRequest {
    ListRequest {
        agent: agent_of(uri).map(str::to_owned),
    }
}

pub(super) async fn read(agents: &Agents, uri: &str) -> Result<ReadResourceResult, McpError> {
    let text = match uri {
        APPROVALS_URI => {
            let pending = serde_json::json!({"pending": agents.approvals().list()});
            serde_json::to_string_pretty(&pending).expect("JSON values serialize")
        }
        _ => {
            let report = agents
                .list(request(uri))
                .await
                .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
            serde_json::to_string_pretty(&report).expect("JSON values serialize")
        }
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ]))
}

/// What a subscriber hears about: each agent's name, state and prompt (not how long).
fn states(report: &ListReport) -> Vec<(String, String, Option<String>)> {
    let prompt = |agent: &AgentInfo| {
        let waiting = agent.waiting.as_ref()?;
        Some(
            waiting
                .prompt_id
                .clone()
                .unwrap_or_else(|| waiting.kind.clone()),
        )
    };
    let mut states: Vec<_> = report
        .agents
        .iter()
        .map(|agent| (agent.name.clone(), agent.state.clone(), prompt(agent)))
        .collect();
    states.sort();
    states
}

/// Sends `notifications/resources/updated` for `uri` whenever the state or prompt of its
/// agents changes (at most every quarter second), until the client is gone. The watcher
/// is stopped by aborting its task.
pub(super) async fn watch(agents: Arc<Agents>, peer: Peer<RoleServer>, uri: String) {
    if uri == APPROVALS_URI {
        return watch_approvals(agents, peer, uri).await;
    }
    let never = CancellationToken::new();
    let mut last = None;
    loop {
        let watch = agents.watch().await;
        let now = agents.list(request(&uri)).await.ok().map(|r| states(&r));
        if last.is_some() && now != last {
            let updated = ResourceUpdatedNotificationParam::new(uri.clone());
            if peer.notify_resource_updated(updated).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        last = now.or(Some(Vec::new()));
        if watch.changed(None, &never).await.is_err() {
            return;
        }
    }
}

async fn watch_approvals(agents: Arc<Agents>, peer: Peer<RoleServer>, uri: String) {
    let mut changes = agents.approvals().changes();
    while changes.changed().await.is_ok() {
        let updated = ResourceUpdatedNotificationParam::new(uri.clone());
        if peer.notify_resource_updated(updated).await.is_err() {
            return;
        }
    }
}

/// Sends a warning-level log message to the client each time an agent waits at a new prompt
/// (once it is drawn, so the message carries the question), from the event feed, until the
/// client is gone. Stopped by aborting its
/// task.
pub(super) async fn announce_waiting(
    mut feed: Subscription,
    logging: ClientLogging,
    peer: Peer<RoleServer>,
) {
    while let Some(received) = feed.recv().await {
        let Received::Event(Event {
            kind: EventKind::AgentState(change),
            ..
        }) = received
        else {
            continue;
        };
        let (true, Some(question)) = (change.state == "waiting", &change.question) else {
            continue;
        };
        let what = change.waiting.as_deref().unwrap_or("input");
        let message = format!(
            "agent {} ({}) is waiting for {what}: {question} (answer it with agent_answer)",
            change.agent, change.kind
        );
        if logging.warning(&peer, &message).await.is_err() {
            return;
        }
    }
}
