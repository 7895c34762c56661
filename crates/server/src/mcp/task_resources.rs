//! Resources for tasks: `drydock://tasks` (the queue) and `drydock://tasks/{id}` (one task),
//! each updated (`resources/updated`) whenever a task it shows changes, from the event feed.

use rmcp::model::{
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};

use crate::events::{Event, EventKind, Received, Subscription};
use crate::tasks::Tasks;
use crate::tasks::requests::{ListRequest, TaskRequest};

pub(super) const TASKS_URI: &str = "drydock://tasks";
const PREFIX: &str = "drydock://tasks/";

pub(super) fn list() -> Vec<Resource> {
    vec![
        Resource::new(TASKS_URI, "tasks")
            .with_description(
                "the task queue: every task with its state (and whether it needs a person), the mode and cap",
            )
            .with_mime_type("application/json"),
    ]
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{PREFIX}{{id}}"), "task")
            .with_description("one task in full, with the end of its transcript")
            .with_mime_type("application/json"),
    ]
}

/// Task `id`'s own resource.
pub(super) fn one_task(id: &str) -> Resource {
    Resource::new(format!("{PREFIX}{id}"), format!("task {id}"))
        .with_description("this task in full, with the end of its transcript")
        .with_mime_type("application/json")
}

/// Whether `uri` is task `id`'s own resource.
pub(super) fn is_one_task(uri: &str, id: &str) -> bool {
    task_of(uri) == Some(id)
}

pub(super) fn is_task_uri(uri: &str) -> bool {
    uri == TASKS_URI || task_of(uri).is_some()
}

fn task_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(PREFIX).filter(|id| !id.is_empty())
}

pub(super) async fn read(tasks: &Tasks, uri: &str) -> Result<ReadResourceResult, McpError> {
    let not_found = |e: crate::tasks::TaskError| McpError::resource_not_found(e.to_string(), None);
    let text = match task_of(uri) {
        Some(id) => {
            let report = tasks
                .show(TaskRequest {
                    task_id: id.to_string(),
                })
                .await
                .map_err(not_found)?;
            serde_json::to_string_pretty(&report)
        }
        None => serde_json::to_string_pretty(
            &tasks
                .list(ListRequest::default())
                .await
                .map_err(not_found)?,
        ),
    };
    let text = text.expect("JSON values serialize");
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ]))
}

/// Sends `notifications/resources/updated` for `uri` whenever a task it shows changes (the
/// queue's settings too, for `drydock://tasks`), until the client is gone. Stopped by
/// aborting its task.
pub(super) async fn watch(mut feed: Subscription, peer: Peer<RoleServer>, uri: String) {
    let only = task_of(&uri).map(str::to_owned);
    while let Some(received) = feed.recv().await {
        let relevant = match received {
            Received::Missed(_) => true,
            Received::Event(Event { kind, .. }) => match kind {
                EventKind::TaskChanged(change) => {
                    only.as_ref().is_none_or(|id| *id == change.task_id)
                }
                EventKind::QueueConfigured { .. } => only.is_none(),
                // Which task changed is not said: every view of the queue is read again.
                EventKind::QueueChanged | EventKind::QueueHealth { .. } => true,
                _ => false,
            },
        };
        if relevant {
            let updated = ResourceUpdatedNotificationParam::new(uri.clone());
            if peer.notify_resource_updated(updated).await.is_err() {
                return;
            }
        }
    }
}
