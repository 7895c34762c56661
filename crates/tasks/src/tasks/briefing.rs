//! What a task's agent is told: its task, where it works, how to signal its end, and on a
//! later attempt what went wrong before. The first prompt is short; the task's file
//! (`context.md`) has it in full.

use super::isolation::Isolation;
use super::landing::Failure;
use super::store::Task;

/// How the agent is told its task and how to signal its end, in full (the task's file).
pub(super) fn context(task: &Task, isolation: &Isolation, drydock: &str) -> String {
    format!(
        "# Task {id}: {title}\n\n\
         Project: {project}\n\n\
         {where_}\n\n\
         {description}\n\n\
         {again}\
         ## When you are finished\n\n\
         Say how the task ended: call the MCP tool `task_complete` (server \"drydock\") with\n\
         task_id \"{id}\", an outcome and a short summary. Outcomes:\n\n\
         - done: the task is done;\n\
         - deferred: it should wait (say what for);\n\
         - wont_do: it should not be done (say why);\n\
         - discard: it should be thrown away.\n\n\
         Without MCP, run in a shell:\n\n    {drydock} task complete {id} --outcome done --summary \"what you did\"\n",
        id = task.id,
        title = task.title,
        project = isolation.dir(&task.project_path),
        where_ = where_you_work(task, isolation),
        description = task.description,
        again = attempt_again(task)
            .map(|again| format!("## This attempt\n\n{again}\n\n"))
            .unwrap_or_default(),
    )
}

/// What an attempt after a result that did not land is told: why it did not, and what to
/// do about it.
fn attempt_again(task: &Task) -> Option<String> {
    let landing = task.landing.as_ref()?;
    let last = landing.last_sent_back()?;
    let into = &last.into;
    let next = match &last.failure {
        Failure::Conflicts { .. } => format!(
            "Merge {into} into your branch (git merge {into}), resolve the conflicts keeping both changes' intent, and make the project's checks pass."
        ),
        Failure::Red { .. } => format!(
            "{into} is merged into your branch now: fix your change so that the project's checks (drydock's compile and test tools) pass on it."
        ),
    };
    Some(format!(
        "This is attempt {} of this task: your earlier result did not land on {into} because {} {next}",
        last.attempt + 1,
        last.failure.for_prompt(into),
    ))
}

/// Where the agent works, and what becomes of its changes.
fn where_you_work(task: &Task, isolation: &Isolation) -> String {
    match isolation {
        Isolation::InPlace { .. } => format!(
            "You work in the project's own directory, {}. drydock's build tools (compile, test, \
             type_check, lint, format, run) take it as project_path.",
            task.project_path
        ),
        Isolation::Worktree(worktree) => format!(
            "You work in a git worktree of your own, {dir}, on branch {branch}: a copy of {project} \
             that no other agent touches. drydock's build tools (compile, test, type_check, lint, \
             format, run) take it as project_path ({project} means it too). Commit if you like; \
             what you leave uncommitted is committed for you when you finish; the branch lands \
             on the project's branch only once the project's checks pass on the two merged.",
            dir = worktree.dir,
            branch = worktree.branch,
            project = task.project_path,
        ),
    }
}

/// The agent's first prompt: the task and how to signal its end, on one line (it is typed
/// into the session's shell as an argument).
pub(super) fn prompt(task: &Task, isolation: &Isolation, drydock: &str) -> String {
    let one_line = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = one_line(&task.title);
    let description = match one_line(&task.description) {
        same if same == title => String::new(),
        other => format!(" {other}"),
    };
    let branch = match isolation.worktree() {
        Some(worktree) => format!(
            " (You work on branch {} in your own worktree, {}.)",
            worktree.branch, worktree.dir
        ),
        None => String::new(),
    };
    let again = match attempt_again(task) {
        Some(again) => format!(" {again}"),
        None => String::new(),
    };
    format!(
        "Task {id} from drydock's queue: {title}.{description}{branch}{again} -- When you are finished, call \
         the MCP tool task_complete (server drydock) with task_id \"{id}\", outcome done, \
         deferred, wont_do or discard, and a short summary; without MCP run: {drydock} task \
         complete {id} --outcome done --summary \"...\"",
        id = task.id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::state::TaskState;

    fn task() -> Task {
        Task {
            id: "0a1b2c3d".into(),
            title: "fix the\nflaky test".into(),
            description: "It fails one run in ten.\n\nLook at parser.rs.".into(),
            project_path: "/work/p".into(),
            place: None,
            repository: None,
            agent_kind: "claude".into(),
            state: TaskState::Running,
            priority: 0,
            created_at_ms: 0,
            started_at_ms: None,
            finished_at_ms: None,
            session: None,
            attempts: 1,
            summary: None,
            failure: None,
            exit_code: None,
            transcript: None,
            timeout_s: None,
            policy: None,
            attention: None,
            base: None,
            in_place: false,
            isolation: None,
            review: None,
            landing: None,
            usage: None,
            touches: Vec::new(),
            host: None,
            epoch: 0,
            key: None,
        }
    }

    #[test]
    fn the_agent_is_told_its_task_and_how_to_signal_its_end() {
        let in_place = Isolation::InPlace {
            why: "the project is not in a git repository".into(),
            confinement: None,
        };
        let prompt = prompt(&task(), &in_place, "/bin/drydock");
        assert!(!prompt.contains('\n'), "typed as one argument: {prompt}");
        assert!(prompt.starts_with("Task 0a1b2c3d from drydock's queue: fix the flaky test."));
        assert!(prompt.contains("It fails one run in ten. Look at parser.rs."));
        assert!(prompt.contains("task_id \"0a1b2c3d\""));
        assert!(prompt.contains("/bin/drydock task complete 0a1b2c3d --outcome done"));

        let mut same = task();
        same.description = same.title.clone();
        let once = super::prompt(&same, &in_place, "drydock");
        assert_eq!(once.matches("flaky test").count(), 1, "{once}");

        let context = context(&task(), &in_place, "/bin/drydock");
        assert!(context.contains("# Task 0a1b2c3d: fix the\nflaky test"));
        assert!(context.contains("Look at parser.rs."));
        assert!(context.contains("You work in the project's own directory, /work/p."));
        for outcome in ["done", "deferred", "wont_do", "discard"] {
            assert!(context.contains(&format!("- {outcome}:")), "{outcome}");
        }
    }

    #[test]
    fn an_agent_in_a_worktree_is_told_where_it_works() {
        let worktree = Isolation::Worktree(crate::tasks::isolation::Worktree {
            repo: "/work/p".into(),
            path: "/data/worktrees/p-1/0a1b2c3d".into(),
            dir: "/data/worktrees/p-1/0a1b2c3d".into(),
            branch: "drydock/task-0a1b2c3d".into(),
            base_ref: Some("main".into()),
            base_sha: "0".repeat(40),
            copied: Vec::new(),
            notes: Vec::new(),
            confinement: None,
        });
        let prompt = prompt(&task(), &worktree, "drydock");
        assert!(!prompt.contains('\n'), "{prompt}");
        assert!(
            prompt.contains("(You work on branch drydock/task-0a1b2c3d in your own worktree, /data/worktrees/p-1/0a1b2c3d.)"),
            "{prompt}"
        );
        let context = context(&task(), &worktree, "drydock");
        assert!(
            context.contains("Project: /data/worktrees/p-1/0a1b2c3d\n"),
            "{context}"
        );
        assert!(context.contains("(/work/p means it too)"), "{context}");
    }
}
