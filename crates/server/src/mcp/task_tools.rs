//! The task queue as MCP tools.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use serde_json::Value;

use super::DrydockServer;
use super::tools::respond;
use crate::catalog::{ToolName, Toolset};
use crate::history::ProblemKind;
use crate::tasks::TaskScope;
use crate::tasks::reports::{AddReport, ListReport, QueueReport, TaskReport};
use crate::tasks::requests::{
    AddRequest, ClearRequest, CompleteRequest, ConfigureRequest, ListRequest, MergeRequest,
    RetryRequest, TaskRequest,
};

/// Holds a task agent's call to what its token may do: the tools of
/// [`ToolName::for_task_agents`]; a build tool's `project_path` inside the task's own directory
/// (the project's path given by the agent means the task's worktree); the docs of its project;
/// the memory of its project's problems; its own task.
pub(super) fn confine(
    scope: &TaskScope,
    tool: ToolName,
    request: &mut CallToolRequestParams,
) -> Result<(), String> {
    if !tool.for_task_agents() {
        return Err(format!(
            "{tool} is not for the agent of task {}: its token may call the build tools, docs_lookup and docs_read in {} and task_show and task_complete",
            scope.task_id,
            scope.dir.display()
        ));
    }
    let arguments = request.arguments.get_or_insert_with(Default::default);
    match tool {
        ToolName::HistorySearch => confine_memory(scope, arguments),
        // Without a project the lookup would reach every indexed project's docs.
        ToolName::DocsLookup => {
            let dir = Value::String(scope.dir.display().to_string());
            arguments.entry("project_path").or_insert(dir);
            confine_path(arguments, |raw| scope.confine_to_project(raw))
        }
        ToolName::TaskShow => confine_task(scope, arguments),
        _ if tool.toolset() == Toolset::Build => confine_path(arguments, |raw| scope.confine(raw)),
        _ => Ok(()),
    }
}

type Arguments = serde_json::Map<String, Value>;

/// `project_path`, when given, as `confined` takes it.
fn confine_path(
    arguments: &mut Arguments,
    confined: impl Fn(&str) -> Result<String, String>,
) -> Result<(), String> {
    if let Some(Value::String(raw)) = arguments.get("project_path") {
        let path = confined(raw)?;
        arguments.insert("project_path".into(), Value::String(path));
    }
    Ok(())
}

/// The problems the task's builds and its project's met, never the records of terminals'
/// commands or tasks' ends (the person's shell, other agents' transcripts).
fn confine_memory(scope: &TaskScope, arguments: &mut Arguments) -> Result<(), String> {
    let raw = arguments.get("project_path").and_then(Value::as_str);
    let project = scope.memory_of(raw)?;
    arguments.insert("project_path".into(), Value::String(project));
    match arguments.get("kind").and_then(Value::as_str) {
        Some(kind) if !ProblemKind::parse(kind).is_some_and(ProblemKind::is_build_problem) => Err(
            super::boundary::refusal(scope, &format!("history_search of kind {kind}")),
        ),
        _ => Ok(()),
    }
}

fn confine_task(scope: &TaskScope, arguments: &Arguments) -> Result<(), String> {
    match arguments.get("task_id").and_then(Value::as_str) {
        Some(id) if id != scope.task_id => Err(super::boundary::refusal(
            scope,
            &format!("task_show of task {id}"),
        )),
        _ => Ok(()),
    }
}

#[tool_router(router = task_tool_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(
        description = "Queue work for coding agents: one or many tasks, each with a title, a description (the agent's prompt), project_path (inside the allowed roots) and/or repository (its git remote: a host without the project clones it, as [tasks] repositories allows), agent (claude or codex; default from config), priority (higher first), timeout_s (default from config) and auto_approve (a policy name from drydock's config; without one every permission prompt waits for a person), base (the branch or commit its worktree starts from; default the project's HEAD), in_place (work in the project's own directory) and key (a name of your own, unique in the queue: retried after a timeout, the same call queues nothing twice). In auto mode tasks start as slots free up (queue_configure); each runs in its own tmux session drydock-task-ID and, on a git project, in a git worktree and branch of its own (drydock/task-ID, under drydock's data directory), so tasks never see each other's edits; a task in place (not a git project, or in_place) runs alone in its project. A task ends when its agent calls task_complete; its branch is then its result to review (task_show), merge (task_merge) or discard (task_discard). Returns the queued tasks and the queue.",
        output_schema = schema_for_output::<AddReport>()
    )]
    async fn task_add(
        &self,
        Parameters(req): Parameters<AddRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().add(req).await)
    }

    #[tool(
        description = "The tasks (filter by `state`: queued, running, done, deferred, wont_do, discarded, failed, cancelled; or by project_path), oldest first, each with its state, attempts, session, the agent's summary or why it failed, and `attention` when its agent waits at a prompt for a person; and the queue's mode, cap and counts.",
        output_schema = schema_for_output::<ListReport>()
    )]
    async fn task_list(
        &self,
        Parameters(req): Parameters<ListRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().list(req).await)
    }

    #[tool(
        description = "One task in full: description, state, times, session (and how to attach to it while it runs), attempts, outcome and summary, failure and exit code, the end of its transcript (the session's final screen and scrollback, kept after the session is gone), where it worked (its worktree and branch, what was copied in, notes), and its result: the branch's diff against its base (files, insertions, deletions, the diff itself, bounded), the project's checks on it (compile, test), whether it would conflict with the project's branch now, and other open results that changed the same files.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_show(
        &self,
        Parameters(req): Parameters<TaskRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().show(req).await)
    }

    #[tool(
        description = "Start a queued task now, in manual or auto mode, if fewer tasks than the cap run: its agent is started in tmux session drydock-task-ID and the task is returned once the agent shows up (or failed if it cannot start).",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_start(
        &self,
        Parameters(req): Parameters<TaskRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().start(req).await)
    }

    #[tool(
        description = "Cancel a queued task, or a running one: its agent is interrupted, then killed, and its transcript kept. Finished tasks cannot be cancelled.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_cancel(
        &self,
        Parameters(req): Parameters<TaskRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().cancel(req).await)
    }

    #[tool(
        description = "Queue a failed, cancelled or lost task again (attempts + 1), in the same worktree; a done task whose result did not land and waits for a person goes back to its agent for one more attempt, its last failure as its context. A task stopped at its budget goes on only with a larger budget.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_retry(
        &self,
        Parameters(req): Parameters<RetryRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().retry(req).await)
    }

    #[tool(
        description = "For the agent working on a task: say how it ended. outcome done (it is done), deferred (it should wait), wont_do (it should not be done) or discard (throw it away), with a short summary. The task's session is closed a few seconds later. Only for a running task, once.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_complete(
        &self,
        Parameters(req): Parameters<CompleteRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let scope = super::boundary::scope_of(&ctx.extensions);
        respond(self.app.tasks().complete(req, scope.as_ref()).await)
    }

    #[tool(
        description = "Merge a finished task's branch (drydock/task-ID, its result: see task_show) into the branch the project has checked out, or `into` another: strategy auto (a fast-forward when the branch has not moved on, else a merge commit; the default), fast_forward or merge_commit. A merge commit's tree (the branch's tip with the result) is tested with the project's checks before the branch moves. Refused, changing nothing, when it would conflict (the conflicting hunks are shown), when its checks failed or the merged tree is red (unless `force`), when the project's checkout of that branch has uncommitted changes, or when the task's checks still run. Returns the task with its result marked merged.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_merge(
        &self,
        Parameters(req): Parameters<MergeRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().merge(req).await)
    }

    #[tool(
        description = "Throw away a finished task's result: its worktree (with anything in it) and its branch are removed; the branch's last commit is returned in case it is wanted after all. For tasks that worked in a worktree.",
        output_schema = schema_for_output::<TaskReport>()
    )]
    async fn task_discard(
        &self,
        Parameters(req): Parameters<TaskRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().discard(req).await)
    }

    #[tool(
        description = "Set the task queue's mode (manual: tasks wait for task_start; auto: they start as slots free up, highest priority then oldest) and max_concurrent (1-1000; default 2). Switching to auto or raising the cap starts what now fits.",
        output_schema = schema_for_output::<QueueReport>()
    )]
    async fn queue_configure(
        &self,
        Parameters(req): Parameters<ConfigureRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().configure(req).await)
    }

    #[tool(
        description = "Cancel every queued task; running tasks go on.",
        output_schema = schema_for_output::<QueueReport>()
    )]
    async fn queue_clear(
        &self,
        Parameters(_req): Parameters<ClearRequest>,
    ) -> Result<CallToolResult, McpError> {
        respond(self.app.tasks().clear().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 48: a task's docs_lookup without a project reaches its project's docs alone, not
    /// every indexed project's.
    #[test]
    fn a_tasks_docs_lookup_is_its_projects() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let (project, dir) = (base.join("project"), base.join("worktree/project"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let scope = TaskScope {
            task_id: "t1".into(),
            claim: 1,
            project: project.clone(),
            dir,
        };
        let mut request = CallToolRequestParams::new("docs_lookup");
        request.arguments = serde_json::json!({"query": "Vec", "library": "other-project"})
            .as_object()
            .cloned();
        confine(&scope, ToolName::DocsLookup, &mut request).unwrap();
        let arguments = request.arguments.unwrap();
        assert_eq!(arguments["project_path"], project.display().to_string());
        assert_eq!(arguments["library"], "other-project");
    }
}
