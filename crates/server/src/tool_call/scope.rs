//! What a task's token may do with the tools, written once for every face: the tools of
//! [`ToolName::for_task_agents`]; a build tool's `project_path` inside the task's own directory
//! (the project's path given by the agent means the task's worktree); the docs of its
//! project; the memory of its project's build problems; its own task.

use serde_json::{Map, Value};

use crate::catalog::{ToolName, Toolset};
use crate::history::{ProblemKind, Reach};
use crate::tasks::{OutsideScope, TaskScope};

/// Why a task's token may not make a call.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "{tool} is not for the agent of task {task}: its token may call the build tools, docs_lookup and docs_read in {dir} and task_show and task_complete"
    )]
    NotItsTool {
        tool: ToolName,
        task: String,
        dir: String,
    },
    #[error(
        "{what} is not for the agent of task {task}: its token reaches drydock://tasks/{task}, the docs and the memory of its project {project}"
    )]
    Beyond {
        what: String,
        task: String,
        project: String,
    },
    /// A path the task's directory does not hold, as the task's scope says.
    #[error(transparent)]
    Outside(#[from] OutsideScope),
}

impl Refusal {
    /// The refusal of `what` (a resource, a prompt, a call) to `scope`'s agent.
    pub fn beyond(scope: &TaskScope, what: &str) -> Refusal {
        Refusal::Beyond {
            what: what.to_string(),
            task: scope.task_id.clone(),
            project: scope.project.display().to_string(),
        }
    }
}

/// What `history_search` reaches for a caller: a task's agent finds its project's build
/// problems only.
pub fn history_reach(scope: Option<&TaskScope>) -> Reach {
    match scope {
        Some(_) => Reach::BuildProblems,
        None => Reach::Everything,
    }
}

/// Holds a call of `tool` to what `scope`'s token may do, rewriting its `project_path` into
/// the task's directory.
pub(super) fn confine(
    scope: &TaskScope,
    tool: ToolName,
    arguments: &mut Value,
) -> Result<(), Refusal> {
    if !tool.for_task_agents() {
        return Err(Refusal::NotItsTool {
            tool,
            task: scope.task_id.clone(),
            dir: scope.dir.display().to_string(),
        });
    }
    if arguments.is_null() {
        *arguments = Value::Object(Map::new());
    }
    // Arguments that are not an object are refused when the tool reads them.
    let Value::Object(arguments) = arguments else {
        return Ok(());
    };
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

type Arguments = Map<String, Value>;

/// `project_path`, when given, as `confined` takes it.
fn confine_path(
    arguments: &mut Arguments,
    confined: impl Fn(&str) -> Result<String, OutsideScope>,
) -> Result<(), Refusal> {
    if let Some(Value::String(raw)) = arguments.get("project_path") {
        let path = confined(raw).map_err(Refusal::Outside)?;
        arguments.insert("project_path".into(), Value::String(path));
    }
    Ok(())
}

/// The problems the task's builds and its project's met, never the records of terminals'
/// commands or tasks' ends (the person's shell, other agents' transcripts).
fn confine_memory(scope: &TaskScope, arguments: &mut Arguments) -> Result<(), Refusal> {
    let raw = arguments.get("project_path").and_then(Value::as_str);
    let project = scope.memory_of(raw).map_err(Refusal::Outside)?;
    arguments.insert("project_path".into(), Value::String(project));
    match arguments.get("kind").and_then(Value::as_str) {
        Some(kind) if !ProblemKind::parse(kind).is_some_and(ProblemKind::is_build_problem) => Err(
            Refusal::beyond(scope, &format!("history_search of kind {kind}")),
        ),
        _ => Ok(()),
    }
}

fn confine_task(scope: &TaskScope, arguments: &Arguments) -> Result<(), Refusal> {
    match arguments.get("task_id").and_then(Value::as_str) {
        Some(id) if id != scope.task_id => {
            Err(Refusal::beyond(scope, &format!("task_show of task {id}")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope_in(base: &std::path::Path) -> TaskScope {
        let (project, dir) = (base.join("project"), base.join("worktree/project"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        TaskScope {
            task_id: "t1".into(),
            claim: 1,
            project,
            dir,
        }
    }

    /// Issue 48: a task's docs_lookup without a project reaches its project's docs alone, not
    /// every indexed project's.
    #[test]
    fn a_tasks_docs_lookup_is_its_projects() {
        let base = tempfile::tempdir().unwrap();
        let scope = scope_in(&base.path().canonicalize().unwrap());
        let mut arguments = serde_json::json!({"query": "Vec", "library": "other-project"});
        confine(&scope, ToolName::DocsLookup, &mut arguments).unwrap();
        assert_eq!(
            arguments["project_path"],
            scope.project.display().to_string()
        );
        assert_eq!(arguments["library"], "other-project");
    }

    #[test]
    fn a_task_reaches_its_tools_its_task_and_its_build_problems_only() {
        let base = tempfile::tempdir().unwrap();
        let scope = scope_in(&base.path().canonicalize().unwrap());
        let refused = |tool, mut arguments: Value| confine(&scope, tool, &mut arguments).err();
        let not_its = refused(ToolName::TerminalList, Value::Null).unwrap();
        assert!(matches!(not_its, Refusal::NotItsTool { .. }), "{not_its}");
        let other_task = refused(ToolName::TaskShow, serde_json::json!({"task_id": "t2"}));
        assert!(
            matches!(other_task, Some(Refusal::Beyond { .. })),
            "{other_task:?}"
        );
        let commands = serde_json::json!({"query": "x", "kind": "command"});
        let commands = refused(ToolName::HistorySearch, commands);
        assert!(
            matches!(commands, Some(Refusal::Beyond { .. })),
            "{commands:?}"
        );
        let outside = refused(ToolName::Compile, serde_json::json!({"project_path": "/"}));
        assert!(matches!(outside, Some(Refusal::Outside(_))), "{outside:?}");
        let own = serde_json::json!({"task_id": "t1"});
        assert!(refused(ToolName::TaskShow, own).is_none());
        let errors = serde_json::json!({"query": "x", "kind": "error"});
        assert!(refused(ToolName::HistorySearch, errors).is_none());
    }
}
