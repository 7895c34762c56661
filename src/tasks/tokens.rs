//! The MCP tokens of running tasks: the agent on a task gets a token of its own, that may only
//! call `task_complete` for that task and the read-only tools.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Whose token a request carried: a task's agent, limited to that task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskScope {
    pub task_id: String,
}

/// Tokens by value, shared by the task queue (which issues them) and the HTTP guard (which
/// reads them).
#[derive(Clone, Default)]
pub struct TaskTokens(Arc<Mutex<HashMap<String, String>>>);

impl TaskTokens {
    /// A new token for `task_id` (any earlier one of the task is withdrawn).
    pub fn issue(&self, task_id: &str) -> String {
        let token = crate::agents::endpoint::random_hex(16);
        self.restore(&token, task_id);
        token
    }

    /// Honours `token` for `task_id` again (a task adopted after a restart).
    pub fn restore(&self, token: &str, task_id: &str) {
        let mut tokens = self.0.lock().expect("tokens lock");
        tokens.retain(|_, task| task != task_id);
        tokens.insert(token.to_string(), task_id.to_string());
    }

    pub fn revoke(&self, task_id: &str) {
        self.0
            .lock()
            .expect("tokens lock")
            .retain(|_, task| task != task_id);
    }

    /// The scope of `token`, if it is a task's.
    pub fn scope_of(&self, token: &str) -> Option<TaskScope> {
        let tokens = self.0.lock().expect("tokens lock");
        let task_id = tokens.get(token)?.clone();
        Some(TaskScope { task_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_task_until_withdrawn() {
        let tokens = TaskTokens::default();
        let first = tokens.issue("t1");
        let other = tokens.issue("t2");
        assert_eq!(first.len(), 32);
        assert_eq!(tokens.scope_of(&first).unwrap().task_id, "t1");
        let again = tokens.issue("t1");
        assert_eq!(
            tokens.scope_of(&first),
            None,
            "a new token replaces the old"
        );
        assert_eq!(tokens.scope_of(&again).unwrap().task_id, "t1");
        tokens.revoke("t1");
        assert_eq!(tokens.scope_of(&again), None);
        assert_eq!(tokens.scope_of(&other).unwrap().task_id, "t2");
        assert_eq!(tokens.scope_of("guess"), None);
    }
}
