//! Requests that wait for a person: starting an agent is one. Listed in `drydock://approvals`
//! and answered with `drydock approve ID` / `drydock decline ID` (or the dashboard); a request
//! whose caller stopped waiting is gone from the list.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::{oneshot, watch};

/// What a person is asked to approve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Approval {
    /// What `drydock approve` and `drydock decline` take.
    pub id: String,
    /// agent_spawn
    pub action: String,
    /// The agent kind (claude, codex…).
    pub kind: String,
    /// The session the agent would run in.
    pub name: String,
    pub cwd: String,
    /// The agent's first prompt.
    pub prompt: String,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub asked_at_ms: u64,
    /// When the request stops waiting, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no pending approval {id:?}; pending: {pending}")]
    Unknown { id: String, pending: String },
}

#[derive(Default)]
pub struct Approvals {
    pending: Mutex<BTreeMap<String, (Approval, oneshot::Sender<bool>)>>,
    changes: watch::Sender<u64>,
}

/// A request on the list; it leaves the list when dropped.
pub struct Asking {
    approvals: Arc<Approvals>,
    id: String,
    answer: oneshot::Receiver<bool>,
}

impl Asking {
    /// The person's answer: true to go ahead. Waits as long as the caller does.
    pub fn answer(&mut self) -> BoxFuture<'_, Option<bool>> {
        async move { (&mut self.answer).await.ok() }.boxed()
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.approvals.remove(&self.id);
    }
}

impl Approvals {
    /// Puts `approval` (its id filled in here) on the list.
    pub fn ask(self: &Arc<Self>, mut approval: Approval) -> (Approval, Asking) {
        let (sender, answer) = oneshot::channel();
        let id = {
            let mut pending = self.pending.lock().expect("approvals lock");
            let id = loop {
                let id = crate::private::random_hex(3);
                if !pending.contains_key(&id) {
                    break id;
                }
            };
            approval.id = id.clone();
            pending.insert(id.clone(), (approval.clone(), sender));
            id
        };
        self.changes.send_modify(|n| *n += 1);
        let asking = Asking {
            approvals: self.clone(),
            id,
            answer,
        };
        (approval, asking)
    }

    /// A person's answer to request `id`.
    pub fn decide(&self, id: &str, approve: bool) -> Result<Approval, ApprovalError> {
        let taken = self.pending.lock().expect("approvals lock").remove(id);
        let Some((approval, sender)) = taken else {
            return Err(ApprovalError::Unknown {
                id: id.to_string(),
                pending: self.ids(),
            });
        };
        let _ = sender.send(approve);
        self.changes.send_modify(|n| *n += 1);
        Ok(approval)
    }

    /// The requests waiting for an answer, oldest id first.
    pub fn list(&self) -> Vec<Approval> {
        let pending = self.pending.lock().expect("approvals lock");
        let mut list: Vec<Approval> = pending.values().map(|(a, _)| a.clone()).collect();
        list.sort_by_key(|a| a.asked_at_ms);
        list
    }

    /// Changes whenever a request is added or leaves the list.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn remove(&self, id: &str) {
        if self
            .pending
            .lock()
            .expect("approvals lock")
            .remove(id)
            .is_some()
        {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    fn ids(&self) -> String {
        let pending = self.pending.lock().expect("approvals lock");
        match pending.is_empty() {
            true => "none".into(),
            false => pending.keys().cloned().collect::<Vec<_>>().join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spawn_request() -> Approval {
        Approval {
            id: String::new(),
            action: "agent_spawn".into(),
            kind: "claude".into(),
            name: "agent-fix".into(),
            cwd: "/work/p".into(),
            prompt: "fix it".into(),
            asked_at_ms: 1,
            expires_at_ms: 2,
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_the_asker_and_the_request_leaves_the_list() {
        let approvals = Arc::new(Approvals::default());
        let changes = approvals.changes();
        let (listed, mut asking) = approvals.ask(spawn_request());
        assert_eq!(listed.id.len(), 6);
        assert_eq!(approvals.list(), std::slice::from_ref(&listed));
        assert!(changes.has_changed().unwrap());

        let decided = approvals.decide(&listed.id, true).unwrap();
        assert_eq!(decided, listed);
        assert_eq!(asking.answer().await, Some(true));
        assert!(approvals.list().is_empty());
        let again = approvals.decide(&listed.id, false).unwrap_err();
        assert_eq!(
            again.to_string(),
            format!("no pending approval {:?}; pending: none", listed.id)
        );
    }

    #[test]
    fn a_request_whose_asker_gave_up_is_gone() {
        let approvals = Arc::new(Approvals::default());
        let (listed, asking) = approvals.ask(spawn_request());
        drop(asking);
        assert!(approvals.list().is_empty());
        assert!(approvals.decide(&listed.id, true).is_err());
    }
}
