//! The task queue's tools. `task_complete` completes only its caller's task when a task's
//! token calls it.

use super::Entry;
use super::entry::tool;
use crate::tasks::reports::{AddReport, ListReport, QueueReport, TaskReport};
use crate::tasks::requests::{
    AddRequest, ClearRequest, CompleteRequest, ConfigureRequest, ListRequest, MergeRequest,
    RetryRequest, TaskRequest,
};

pub(super) const TOOLS: &[Entry] = &[
    tool!(
        TaskAdd(AddRequest) -> AddReport,
        "Queue work for coding agents: one or many tasks, each with a title, a description (the agent's prompt), project_path (inside the allowed roots) and/or repository (its git remote: a host without the project clones it, as [tasks] repositories allows), agent (claude or codex; default from config), priority (higher first), timeout_s (default from config) and auto_approve (a policy name from drydock's config; without one every permission prompt waits for a person), base (the branch or commit its worktree starts from; default the project's HEAD), in_place (work in the project's own directory) and key (a name of your own, unique in the queue: retried after a timeout, the same call queues nothing twice). In auto mode tasks start as slots free up (queue_configure); each runs in its own tmux session drydock-task-ID and, on a git project, in a git worktree and branch of its own (drydock/task-ID, under drydock's data directory), so tasks never see each other's edits; a task in place (not a git project, or in_place) runs alone in its project. A task ends when its agent calls task_complete; its branch is then its result to review (task_show), merge (task_merge) or discard (task_discard). Returns the queued tasks and the queue.",
        |app, request, context| app.tasks().add(request),
    ),
    tool!(
        TaskList(ListRequest) -> ListReport,
        "The tasks (filter by `state`: queued, running, done, deferred, wont_do, discarded, failed, cancelled; or by project_path), oldest first, each with its state, attempts, session, the agent's summary or why it failed, and `attention` when its agent waits at a prompt for a person; and the queue's mode, cap and counts.",
        |app, request, context| app.tasks().list(request),
    ),
    tool!(
        TaskShow(TaskRequest) -> TaskReport,
        "One task in full: description, state, times, session (and how to attach to it while it runs), attempts, outcome and summary, failure and exit code, the end of its transcript (the session's final screen and scrollback, kept after the session is gone), where it worked (its worktree and branch, what was copied in, notes), and its result: the branch's diff against its base (files, insertions, deletions, the diff itself, bounded), the project's checks on it (compile, test), whether it would conflict with the project's branch now, and other open results that changed the same files.",
        |app, request, context| app.tasks().show(request),
    ),
    tool!(
        TaskStart(TaskRequest) -> TaskReport,
        "Start a queued task now, in manual or auto mode, if fewer tasks than the cap run: its agent is started in tmux session drydock-task-ID and the task is returned once the agent shows up (or failed if it cannot start).",
        |app, request, context| app.tasks().start(request),
    ),
    tool!(
        TaskCancel(TaskRequest) -> TaskReport,
        "Cancel a queued task, or a running one: its agent is interrupted, then killed, and its transcript kept. Finished tasks cannot be cancelled.",
        |app, request, context| app.tasks().cancel(request),
    ),
    tool!(
        TaskRetry(RetryRequest) -> TaskReport,
        "Queue a failed, cancelled or lost task again (attempts + 1), in the same worktree; a done task whose result did not land and waits for a person goes back to its agent for one more attempt, its last failure as its context. A task stopped at its budget goes on only with a larger budget.",
        |app, request, context| app.tasks().retry(request),
    ),
    tool!(
        TaskComplete(CompleteRequest) -> TaskReport,
        "For the agent working on a task: say how it ended. outcome done (it is done), deferred (it should wait), wont_do (it should not be done) or discard (throw it away), with a short summary. The task's session is closed a few seconds later. Only for a running task, once.",
        |app, request, context| app.tasks().complete(request, context.scope),
    ),
    tool!(
        TaskMerge(MergeRequest) -> TaskReport,
        "Merge a finished task's branch (drydock/task-ID, its result: see task_show) into the branch the project has checked out, or `into` another: strategy auto (a fast-forward when the branch has not moved on, else a merge commit; the default), fast_forward or merge_commit. A merge commit's tree (the branch's tip with the result) is tested with the project's checks before the branch moves. Refused, changing nothing, when it would conflict (the conflicting hunks are shown), when its checks failed or the merged tree is red (unless `force`), when the project's checkout of that branch has uncommitted changes, or when the task's checks still run. Returns the task with its result marked merged.",
        |app, request, context| app.tasks().merge(request),
    ),
    tool!(
        TaskDiscard(TaskRequest) -> TaskReport,
        "Throw away a finished task's result: its worktree (with anything in it) and its branch are removed; the branch's last commit is returned in case it is wanted after all. For tasks that worked in a worktree.",
        |app, request, context| app.tasks().discard(request),
    ),
    tool!(
        QueueConfigure(ConfigureRequest) -> QueueReport,
        "Set the task queue's mode (manual: tasks wait for task_start; auto: they start as slots free up, highest priority then oldest) and max_concurrent (1-1000; default 2). Switching to auto or raising the cap starts what now fits.",
        |app, request, context| app.tasks().configure(request),
    ),
    tool!(
        QueueClear(ClearRequest) -> QueueReport,
        "Cancel every queued task; running tasks go on.",
        |app, _request, context| app.tasks().clear(),
    ),
];
