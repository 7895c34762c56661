//! Resources for terminal sessions: the list, and each session's screen and scrollback.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};

use tokio_util::sync::CancellationToken;

use crate::terminal::Terminals;
use crate::terminal::core::{TerminalCore, WaitFor};
use crate::terminal::requests::ListRequest;

pub(super) const SESSIONS_URI: &str = "drydock://sessions";
const PREFIX: &str = "drydock://sessions/";

pub(super) fn list(terminals: &Terminals) -> Vec<Resource> {
    let mut resources = vec![
        Resource::new(SESSIONS_URI, "sessions")
            .with_description(
                "terminal sessions: drydock's own and the panes of the user's tmux server",
            )
            .with_mime_type("application/json"),
    ];
    for name in terminals
        .names()
        .into_iter()
        .filter(|n| !n.starts_with("tmux:"))
    {
        for (kind, what) in [("screen", "visible screen"), ("scrollback", "scrollback")] {
            resources.push(
                Resource::new(format!("{PREFIX}{name}/{kind}"), format!("{name} {kind}"))
                    .with_description(format!("the {what} of terminal session {name}"))
                    .with_mime_type("text/plain"),
            );
        }
    }
    resources
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    [("screen", "visible screen"), ("scrollback", "scrollback")]
        .into_iter()
        .map(|(kind, what)| {
            ResourceTemplate::new(format!("{PREFIX}{{name}}/{kind}"), format!("session {kind}"))
                .with_description(format!(
                    "the {what} of a terminal session (a name from drydock://sessions, or tmux:SESSION:WINDOW.PANE)"
                ))
                .with_mime_type("text/plain")
        })
        .collect()
}

/// The session a `drydock://sessions/{name}/screen|scrollback` URI names.
pub(super) fn session_of(uri: &str) -> Option<&str> {
    let (name, kind) = uri.strip_prefix(PREFIX)?.rsplit_once('/')?;
    matches!(kind, "screen" | "scrollback").then_some(name)
}

/// Sends `notifications/resources/updated` for `uri` whenever the session's screen changes
/// (at most every quarter second), until the client is gone or the session ends. The
/// watcher is stopped by aborting its task.
pub(super) async fn watch(core: Arc<TerminalCore>, peer: Peer<RoleServer>, uri: String) {
    let mut seen = core.generation();
    let never = CancellationToken::new();
    loop {
        let change = WaitFor {
            after_generation: Some(seen),
            max_wait: Duration::from_secs(3600),
            ..Default::default()
        };
        let Ok(outcome) = core.wait(change, &never).await else {
            return;
        };
        if outcome.generation > seen {
            seen = outcome.generation;
            let updated = ResourceUpdatedNotificationParam::new(uri.clone());
            if peer.notify_resource_updated(updated).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if core.has_exited() {
            return;
        }
    }
}

/// Whether `uri` is `drydock://sessions` or one session's screen or scrollback.
pub(super) fn is_session_uri(uri: &str) -> bool {
    uri == SESSIONS_URI || session_of(uri).is_some()
}

/// Reads `drydock://sessions` or a session's resource (see [`is_session_uri`]).
pub(super) async fn read(terminals: &Terminals, uri: &str) -> Result<ReadResourceResult, McpError> {
    if uri == SESSIONS_URI {
        return terminals
            .list(ListRequest::default())
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))
            .map(|report| {
                let text = serde_json::to_string_pretty(&report).expect("JSON values serialize");
                ReadResourceResult::new(vec![
                    ResourceContents::text(text, uri).with_mime_type("application/json"),
                ])
            });
    }
    let Some(name) = session_of(uri) else {
        return Err(McpError::resource_not_found(
            format!("unknown resource `{uri}`"),
            None,
        ));
    };
    let scrollback = uri.ends_with("/scrollback");
    terminals
        .read_text(name, scrollback)
        .await
        .map_err(|e| McpError::resource_not_found(e.to_string(), None))
        .map(|text| {
            ReadResourceResult::new(vec![
                ResourceContents::text(text, uri).with_mime_type("text/plain"),
            ])
        })
}
