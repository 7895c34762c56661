//! How a task's terminal sessions are named, and how the processes of a claim are found.
//!
//! Terminal sessions of tasks are `task-ID` for a task's first claim and `task-ID-N` for
//! its Nth (the tmux session `drydock-task-…`): an agent a lost claim left running never
//! stands in the way of the claim that took its task over.

const SESSION_PREFIX: &str = "task-";

/// The variable that names the claim a task's agent runs under.
pub(super) const CLAIM_VARIABLE: &str = "DRYDOCK_TASK_CLAIM";

/// The session of claim `epoch` of task `task_id` (the stores name it the same way when they
/// claim).
pub fn session_of(task_id: &str, epoch: i64) -> String {
    match epoch {
        ..=1 => format!("{SESSION_PREFIX}{task_id}"),
        n => format!("{SESSION_PREFIX}{task_id}-{n}"),
    }
}

/// The task and claim a task's session was started for.
pub(super) fn task_of_session(session: &str) -> Option<(&str, i64)> {
    let rest = session.strip_prefix(SESSION_PREFIX)?;
    match rest.split_once('-') {
        None => Some((rest, 1)),
        Some((id, n)) => Some((id, n.parse().ok().filter(|n| *n > 1)?)),
    }
}

/// A live process started for claim `epoch` of task `id` (its agent, or what the agent
/// runs): every one carries `DRYDOCK_TASK_ID=id` and `DRYDOCK_TASK_CLAIM=epoch` in its
/// environment.
pub(super) fn agent_process(id: &str, epoch: i64) -> Option<i32> {
    let (task, claim) = (
        format!("DRYDOCK_TASK_ID={id}"),
        format!("{CLAIM_VARIABLE}={epoch}"),
    );
    crate::process::procfs::all_processes()
        .into_iter()
        .filter(|p| !p.is_gone())
        .find(|p| {
            crate::process::procfs::environ_contains(p.pid, &task)
                && crate::process::procfs::environ_contains(p.pid, &claim)
        })
        .map(|p| p.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_session_names_the_task_and_its_claim() {
        assert_eq!(
            task_of_session(&session_of("0a1b2c3d", 1)),
            Some(("0a1b2c3d", 1))
        );
        assert_eq!(session_of("0a1b2c3d", 3), "task-0a1b2c3d-3");
        assert_eq!(task_of_session("task-0a1b2c3d-3"), Some(("0a1b2c3d", 3)));
        assert_eq!(task_of_session("agent-x"), None);
        assert_eq!(task_of_session("task-0a1b2c3d-x"), None);
        assert_eq!(task_of_session("task-0a1b2c3d-1"), None);
    }
}
