//! Resources: what this server allows (`drydock://server`), the projects it can build
//! (`drydock://projects`), the docs index (`drydock://docs`); terminal sessions' resources
//! live in `terminal_resources`, the agents' in `agent_resources`.

use std::path::{Path, PathBuf};

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::json;

use super::{agent_resources, fixtures, task_resources, terminal_resources};
use crate::app::App;
use crate::catalog::ToolName;
use crate::config::Config;
use crate::docs::requests::ReadRequest;
use crate::docs::{Docs, DocsError};
use crate::toolchain;
use crate::workspace::Workspace;

const SERVER_URI: &str = "drydock://server";
const PROJECTS_URI: &str = "drydock://projects";
pub(super) const DOCS_URI: &str = "drydock://docs";
/// A passage docs_lookup found, by its id: `drydock://docs/passage/{id}`.
const PASSAGE_PREFIX: &str = "drydock://docs/passage/";
/// A project's open and recently fixed problems: `drydock://history/{project}` (its path,
/// percent-encoded or as it is).
const HISTORY_PREFIX: &str = "drydock://history/";

/// How deep below an allowed root projects are looked for.
const PROJECT_SEARCH_DEPTH: usize = 3;
/// Directories that never hold a project of their own worth listing.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules", "_build", "deps", ".git"];

/// The fixed resources, and one per terminal session.
pub(super) fn list(app: &App) -> Vec<Resource> {
    #[allow(unused_mut)]
    let mut resources = vec![
        Resource::new(SERVER_URI, "server")
            .with_description(
                "drydock's version, allowed project roots, enabled tools and time limits",
            )
            .with_mime_type("application/json"),
        Resource::new(PROJECTS_URI, "projects")
            .with_description(
                "cargo and mix projects found under the allowed roots, usable as project_path",
            )
            .with_mime_type("application/json"),
        Resource::new(DOCS_URI, "docs")
            .with_description(
                "the docs index: libraries and versions with their chunk counts, the embedding model, the last update",
            )
            .with_mime_type("application/json"),
    ];
    resources.extend(terminal_resources::list(app.terminals()));
    resources.extend(agent_resources::list());
    resources.extend(task_resources::list());
    resources.extend(fixtures::resources());
    resources
}

/// Whether `uri` names one of the resources `read` serves (session names are checked when
/// the session is looked up).
pub(super) fn is_known(uri: &str) -> bool {
    if fixtures::read(uri).is_some() {
        return true;
    }
    [SERVER_URI, PROJECTS_URI, DOCS_URI].contains(&uri)
        || uri.starts_with(PASSAGE_PREFIX)
        || uri.starts_with(HISTORY_PREFIX)
        || terminal_resources::is_session_uri(uri)
        || agent_resources::is_agent_uri(uri)
        || task_resources::is_task_uri(uri)
}

/// Ok for a known resource, else the error `read` would give.
pub(super) fn check_known(uri: &str) -> Result<(), McpError> {
    match is_known(uri) {
        true => Ok(()),
        false => Err(unknown(uri)),
    }
}

fn unknown(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "unknown resource `{uri}`; known: {SERVER_URI}, {PROJECTS_URI}, {DOCS_URI}, {}, {}, {}",
            terminal_resources::SESSIONS_URI,
            agent_resources::AGENTS_URI,
            task_resources::TASKS_URI
        ),
        None,
    )
}

/// Reads a resource: each capability serves the URIs under its own prefix.
pub(super) async fn read(app: &App, uri: &str) -> Result<ReadResourceResult, McpError> {
    if let Some(fixture) = fixtures::read(uri) {
        return fixture;
    }
    match uri {
        SERVER_URI => Ok(json_resource(uri, &server_summary(app.config()))),
        PROJECTS_URI => Ok(json_resource(
            uri,
            &json!({ "projects": projects(app.toolchains().workspace()).await }),
        )),
        DOCS_URI => read_docs(app.docs()).await,
        _ if uri.starts_with(PASSAGE_PREFIX) => read_passage(app.docs(), uri).await,
        _ if uri.starts_with(HISTORY_PREFIX) => read_history(app, uri).await,
        _ if terminal_resources::is_session_uri(uri) => {
            terminal_resources::read(app.terminals(), uri).await
        }
        _ if agent_resources::is_agent_uri(uri) => agent_resources::read(app.agents(), uri).await,
        _ if task_resources::is_task_uri(uri) => task_resources::read(app.tasks(), uri).await,
        _ => Err(unknown(uri)),
    }
}

fn json_resource(uri: &str, value: &impl serde::Serialize) -> ReadResourceResult {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ])
}

/// The templates of the docs' resources.
pub(super) fn docs_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{PASSAGE_PREFIX}{{id}}"), "docs passage")
            .with_description(
                "a passage docs_lookup found, whole, by the id it gave (as docs_read)",
            )
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{HISTORY_PREFIX}{{project}}"), "project memory")
            .with_description(
                "a project's open problems and the recently fixed ones with their fixes (its path inside the allowed roots, percent-encoded)",
            )
            .with_mime_type("application/json"),
    ]
}

/// Whether `uri` (or a template) is one of the docs' resources: the index or a passage.
pub(super) fn is_docs_uri(uri: &str) -> bool {
    uri == DOCS_URI || is_passage_uri(uri)
}

/// One passage by its id: what docs_lookup found, and nothing that lists the index.
pub(super) fn is_passage_uri(uri: &str) -> bool {
    uri.starts_with(PASSAGE_PREFIX)
}

/// The project whose memory `uri` names (`drydock://history/{project}`), as an absolute path.
pub(super) fn history_project(uri: &str) -> Option<String> {
    let project = percent_decoded(uri.strip_prefix(HISTORY_PREFIX)?);
    Some(match project.starts_with('/') {
        true => project,
        false => format!("/{project}"),
    })
}

/// The memory of `project` as a resource of its own.
pub(super) fn history_resource(project: &Path) -> Resource {
    let path = project.display().to_string();
    let encoded: String = path
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect();
    Resource::new(
        format!("{HISTORY_PREFIX}{encoded}"),
        format!("{path} memory"),
    )
    .with_description(format!(
        "the open problems of {path} and the recently fixed ones with their fixes"
    ))
    .with_mime_type("application/json")
}

/// The problems of the project `uri` names.
async fn read_history(app: &App, uri: &str) -> Result<ReadResourceResult, McpError> {
    let request = crate::history::requests::ProjectRequest {
        project_path: history_project(uri).unwrap_or_default(),
    };
    match app.history().project(request).await {
        Ok(report) => Ok(json_resource(uri, &report)),
        Err(error) => Err(McpError::resource_not_found(error.to_string(), None)),
    }
}

/// `%2F`-style escapes decoded (a path in a URI); anything else kept as it is.
pub(super) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The passage `uri` names by its id.
async fn read_passage(docs: &Docs, uri: &str) -> Result<ReadResourceResult, McpError> {
    let id = uri.strip_prefix(PASSAGE_PREFIX).unwrap_or_default();
    let request = ReadRequest {
        id: id.to_string(),
        around: None,
    };
    match docs.read(request).await {
        Ok(report) => Ok(json_resource(uri, &report)),
        Err(DocsError::InvalidArgument(message)) => {
            Err(McpError::resource_not_found(message, None))
        }
        Err(e) => Err(McpError::internal_error(e.to_string(), None)),
    }
}

/// What the docs index holds.
async fn read_docs(docs: &Docs) -> Result<ReadResourceResult, McpError> {
    let summary = docs
        .summary()
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    Ok(json_resource(DOCS_URI, &summary))
}

fn server_summary(config: &Config) -> serde_json::Value {
    let enabled: Vec<&str> = config.enabled_tools().map(ToolName::name).collect();
    let mut summary = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "allowed_roots": config.allowed_roots,
        "tools": enabled,
        "default_timeout_ms": crate::millis::millis(config.timeouts.default),
        "max_timeout_ms": crate::millis::millis(config.timeouts.max),
        "output_cap_bytes": config.limits.output_cap,
    });
    for (toolchain, tasks) in toolchain::every_run_tasks(config) {
        summary[format!("{}_tasks", toolchain.name())] = json!(tasks);
    }
    summary
}

/// Project directories (absolute) under the allowed roots, sorted. The walk (three levels
/// of every root, maybe a home directory on a slow disk) runs on a blocking thread.
pub(super) async fn projects(workspace: &Workspace) -> Vec<String> {
    let roots = workspace.roots().to_vec();
    tokio::task::spawn_blocking(move || projects_under(&roots))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

fn projects_under(roots: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for root in roots {
        let walker = walkdir::WalkDir::new(root)
            .max_depth(PROJECT_SEARCH_DEPTH)
            .into_iter()
            .filter_entry(|e| {
                e.file_type().is_dir()
                    && !SKIPPED_DIRS.contains(&e.file_name().to_string_lossy().as_ref())
            });
        for entry in walker.filter_map(Result::ok) {
            if is_project(entry.path()) {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn is_project(dir: &Path) -> bool {
    toolchain::project_kind(dir).is_some()
}

/// Completion for `project_path` arguments.
pub(super) async fn project_paths_starting_with(
    workspace: &Workspace,
    prefix: &str,
) -> Vec<String> {
    projects(workspace)
        .await
        .into_iter()
        .filter(|p| p.starts_with(prefix))
        .collect()
}
