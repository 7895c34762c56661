//! A task agent's token on every MCP method besides `tools/call` (whose tools
//! `tool_call` holds, as it does for every face): one check per kind of method, for resources (list, read,
//! subscribe), prompts, completion and notifications. Under a task's token a session sees its
//! own task (`drydock://tasks/ID`), the docs and its project's memory: no terminal, no agent,
//! no other task and no project but its own.

use std::path::Path;

use rmcp::ErrorData as McpError;
use rmcp::model::{Extensions, Resource, ResourceTemplate};

use super::{resources, task_resources};
use crate::tasks::TaskScope;
use crate::tool_call::Refusal;

/// The task a message's token is limited to, when it is a task agent's token.
pub(super) fn scope_of(extensions: &Extensions) -> Option<TaskScope> {
    extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<TaskScope>()
        .cloned()
}

fn refused(scope: &TaskScope, what: &str) -> McpError {
    McpError::invalid_request(Refusal::beyond(scope, what).to_string(), None)
}

/// Ok when the session may read or subscribe to `uri`: any resource unscoped; under a scope
/// its own task, passages of the docs by id and its project's memory (not the index's list of
/// what is indexed, which names every project).
pub(super) fn check_resource(scope: Option<&TaskScope>, uri: &str) -> Result<(), McpError> {
    match scope {
        Some(scope) if !reaches(scope, uri) => Err(refused(scope, uri)),
        _ => Ok(()),
    }
}

fn reaches(scope: &TaskScope, uri: &str) -> bool {
    if resources::is_passage_uri(uri) || task_resources::is_one_task(uri, &scope.task_id) {
        return true;
    }
    resources::history_project(uri).is_some_and(|project| scope.memory_of(Some(&project)).is_ok())
}

/// The resources a session is shown: all of them unscoped; under a scope those it reaches,
/// with its own task and its project's memory named.
pub(super) fn resources_shown(scope: Option<&TaskScope>, all: Vec<Resource>) -> Vec<Resource> {
    let Some(scope) = scope else {
        return all;
    };
    let mut shown: Vec<Resource> = all
        .into_iter()
        .filter(|resource| reaches(scope, &resource.uri))
        .collect();
    shown.push(task_resources::one_task(&scope.task_id));
    shown.push(resources::history_resource(&scope.project));
    shown
}

/// The templates a session is shown: under a scope only those whose every resource it may read
/// (the docs'; its task and its memory are listed by name instead).
pub(super) fn templates_shown(
    scope: Option<&TaskScope>,
    all: Vec<ResourceTemplate>,
) -> Vec<ResourceTemplate> {
    match scope {
        None => all,
        Some(_) => all
            .into_iter()
            .filter(|template| resources::is_docs_uri(&template.uri_template))
            .collect(),
    }
}

/// The prompts that teach what a task's token can do: the build workflows (the terminal and
/// agent ones use tools it may not call).
const TASK_PROMPTS: &[&str] = &["fix_build", "fix_failing_test"];

pub(super) fn prompt_shown(scope: Option<&TaskScope>, name: &str) -> bool {
    scope.is_none() || TASK_PROMPTS.contains(&name)
}

pub(super) fn check_prompt(scope: Option<&TaskScope>, name: &str) -> Result<(), McpError> {
    match scope {
        Some(scope) if !prompt_shown(Some(scope), name) => {
            Err(refused(scope, &format!("the prompt {name}")))
        }
        _ => Ok(()),
    }
}

/// The project paths completion may offer from `candidates`: under a scope only its project.
pub(super) fn projects_shown(scope: Option<&TaskScope>, candidates: Vec<String>) -> Vec<String> {
    match scope {
        None => candidates,
        Some(scope) => {
            let project = scope
                .project
                .canonicalize()
                .unwrap_or(scope.project.clone());
            candidates
                .into_iter()
                .filter(|path| Path::new(path) == project)
                .collect()
        }
    }
}

/// Whether the session hears of every agent that starts waiting (its question and screen):
/// not under a task's token.
pub(super) fn hears_agents(scope: Option<&TaskScope>) -> bool {
    scope.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope_in(base: &Path) -> TaskScope {
        let project = base.join("project");
        std::fs::create_dir_all(&project).unwrap();
        TaskScope {
            task_id: "t1".into(),
            claim: 1,
            dir: project.clone(),
            project,
        }
    }

    #[test]
    fn a_scope_reads_its_task_the_docs_and_its_projects_memory_only() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("other")).unwrap();
        let scope = scope_in(&base);
        let project = scope.project.display().to_string().replace('/', "%2F");
        for uri in [
            "drydock://tasks/t1".to_string(),
            "drydock://docs/passage/abc".into(),
            format!("drydock://history/{project}"),
        ] {
            assert!(check_resource(Some(&scope), &uri).is_ok(), "{uri}");
            assert!(check_resource(None, &uri).is_ok(), "{uri}");
        }
        for uri in [
            "drydock://tasks/t2".to_string(),
            "drydock://docs".into(),
            "drydock://tasks/t1/".into(),
            "drydock://tasks".into(),
            "drydock://sessions/task-t1/screen".into(),
            "drydock://sessions/tmux:main:0.0/scrollback".into(),
            "drydock://agents".into(),
            "drydock://approvals".into(),
            "drydock://projects".into(),
            "drydock://server".into(),
            format!("drydock://history/{}", base.join("other").display()),
            format!("drydock://history/{project}%2F..%2Fother"),
        ] {
            let refused = check_resource(Some(&scope), &uri).unwrap_err();
            assert!(
                refused.message.contains("is not for the agent of task t1"),
                "{uri}: {refused:?}"
            );
            assert!(check_resource(None, &uri).is_ok(), "{uri}");
        }
    }

    #[test]
    fn a_scope_is_shown_its_own_resources_prompts_and_project() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let scope = scope_in(&base);
        let all = vec![
            Resource::new("drydock://server", "server"),
            Resource::new("drydock://docs", "docs"),
            Resource::new("drydock://sessions/w/screen", "w screen"),
            Resource::new("drydock://tasks", "tasks"),
        ];
        let uris = |shown: Vec<Resource>| -> Vec<String> {
            shown.into_iter().map(|r| r.uri.to_string()).collect()
        };
        let encoded = scope.project.display().to_string().replace('/', "%2F");
        assert_eq!(
            uris(resources_shown(Some(&scope), all.clone())),
            [
                "drydock://tasks/t1".to_string(),
                format!("drydock://history/{encoded}"),
            ]
        );
        assert_eq!(uris(resources_shown(None, all.clone())).len(), all.len());
        assert!(prompt_shown(Some(&scope), "fix_build"));
        assert!(!prompt_shown(Some(&scope), "drive_terminal"));
        assert!(check_prompt(Some(&scope), "supervise_agents").is_err());
        assert!(check_prompt(None, "supervise_agents").is_ok());
        let candidates = vec![
            scope.project.display().to_string(),
            base.join("other").display().to_string(),
        ];
        assert_eq!(
            projects_shown(Some(&scope), candidates.clone()),
            [scope.project.display().to_string()]
        );
        assert_eq!(projects_shown(None, candidates.clone()), candidates);
        assert!(!hears_agents(Some(&scope)) && hears_agents(None));
    }
}
