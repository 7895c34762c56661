//! Resources: what this server allows (`drydock://server`) and the projects it can build
//! (`drydock://projects`).

use std::path::Path;

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};
use serde_json::json;

use crate::build::BuildTools;

const SERVER_URI: &str = "drydock://server";
const PROJECTS_URI: &str = "drydock://projects";
pub const DOCS_URI: &str = "drydock://docs";

/// How deep below an allowed root projects are looked for.
const PROJECT_SEARCH_DEPTH: usize = 3;
/// Directories that never hold a project of their own worth listing.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules", "_build", "deps", ".git"];

pub fn list() -> Vec<Resource> {
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
    #[cfg(feature = "conformance-fixtures")]
    resources.extend(crate::conformance::fixture_resources());
    resources
}

pub fn check_known(tools: &BuildTools, uri: &str) -> Result<(), McpError> {
    read(tools, uri).map(|_| ())
}

pub fn read(tools: &BuildTools, uri: &str) -> Result<ReadResourceResult, McpError> {
    let value = match uri {
        SERVER_URI => server_summary(tools),
        PROJECTS_URI => json!({ "projects": projects(tools) }),
        // Read asynchronously by the server; known here for subscribe checks.
        DOCS_URI => json!({}),
        #[cfg(feature = "conformance-fixtures")]
        other if crate::conformance::is_fixture_uri(other) => {
            return crate::conformance::read_fixture_resource(other);
        }
        _ => {
            return Err(McpError::resource_not_found(
                format!(
                    "unknown resource `{uri}`; known: {SERVER_URI}, {PROJECTS_URI}, {DOCS_URI}"
                ),
                None,
            ));
        }
    };
    let text = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ]))
}

/// What the docs index holds.
pub async fn read_docs(docs: &crate::docs::service::Docs) -> Result<ReadResourceResult, McpError> {
    let summary = docs
        .summary()
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let text = serde_json::to_string_pretty(&summary).expect("JSON values serialize");
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, DOCS_URI).with_mime_type("application/json"),
    ]))
}

fn server_summary(tools: &BuildTools) -> serde_json::Value {
    let config = tools.config();
    let enabled: Vec<&str> = crate::config::TOOLS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| config.tool_enabled(name))
        .collect();
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "allowed_roots": config.allowed_roots,
        "tools": enabled,
        "default_timeout_ms": crate::build::millis(config.timeouts.default),
        "max_timeout_ms": crate::build::millis(config.timeouts.max),
        "output_cap_bytes": config.limits.output_cap,
        "cargo_tasks": config.cargo_tasks,
    })
}

/// Project directories (absolute) under the allowed roots, sorted.
pub fn projects(tools: &BuildTools) -> Vec<String> {
    let mut found = Vec::new();
    for root in tools.workspace().roots() {
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
    dir.join("Cargo.toml").is_file() || dir.join("mix.exs").is_file()
}

/// Completion for `project_path` arguments.
pub fn project_paths_starting_with(tools: &BuildTools, prefix: &str) -> Vec<String> {
    projects(tools)
        .into_iter()
        .filter(|p| p.starts_with(prefix))
        .collect()
}
