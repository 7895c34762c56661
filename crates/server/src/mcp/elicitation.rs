//! `agent_spawn`'s question to the client's person (elicitation), for a client that said it
//! can ask.

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::Peer;
use serde_json::json;

use crate::agents::AskClient;

/// How `peer`'s person is asked for consent, when the client can ask.
pub(super) fn asker(peer: &Peer<RoleServer>) -> Option<AskClient> {
    can_elicit(peer).then(|| ask_client(peer.clone()))
}

/// Whether the client said it can ask its user (elicitation).
fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the client's user with a form: accept (start: true) starts the agent.
fn ask_client(peer: Peer<RoleServer>) -> AskClient {
    Box::new(move |question: String| {
        Box::pin(async move {
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "form",
                "message": question,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "start": {
                            "type": "boolean",
                            "title": "Start the agent",
                            "default": true
                        }
                    }
                }
            }))
            .expect("a valid form");
            let result = peer.create_elicitation(params).await.ok()?;
            Some(match result.action {
                ElicitationAction::Accept => result
                    .content
                    .as_ref()
                    .and_then(|c| c.get("start"))
                    .and_then(|s| s.as_bool())
                    .unwrap_or(true),
                _ => false,
            })
        })
    })
}
