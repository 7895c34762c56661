//! Resources for terminal sessions: the list, and each session's screen and scrollback.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};

use crate::terminal::registry::Terminals;
use crate::terminal::requests::ListRequest;

const SESSIONS_URI: &str = "drydock://sessions";
const PREFIX: &str = "drydock://sessions/";

pub fn list(terminals: &Terminals) -> Vec<Resource> {
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

pub fn templates() -> Vec<ResourceTemplate> {
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

/// `None` when the URI is not a session resource.
pub async fn read(
    terminals: &Terminals,
    uri: &str,
) -> Option<Result<ReadResourceResult, McpError>> {
    if uri == SESSIONS_URI {
        let listed = terminals
            .list(ListRequest::default())
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))
            .map(|report| {
                let text = serde_json::to_string_pretty(&report).expect("JSON values serialize");
                ReadResourceResult::new(vec![
                    ResourceContents::text(text, uri).with_mime_type("application/json"),
                ])
            });
        return Some(listed);
    }
    let rest = uri.strip_prefix(PREFIX)?;
    let (name, kind) = rest.rsplit_once('/')?;
    let scrollback = match kind {
        "screen" => false,
        "scrollback" => true,
        _ => return None,
    };
    Some(
        terminals
            .read_text(name, scrollback)
            .await
            .map_err(|e| McpError::resource_not_found(e.to_string(), None))
            .map(|text| {
                ReadResourceResult::new(vec![
                    ResourceContents::text(text, uri).with_mime_type("text/plain"),
                ])
            }),
    )
}
