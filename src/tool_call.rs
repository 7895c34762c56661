//! Run one tool by name with JSON arguments, without MCP (`drydock call`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::build::reports::Render;
use crate::build::{BuildKind, BuildTools, Call, ToolError};
use crate::docs::ingest::IngestProgress;
use crate::docs::service::{Docs, DocsError};
use crate::terminal::registry::{Terminals, TerminalsError};

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool `{name}`; available: {available}")]
    UnknownTool { name: String, available: String },
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Terminal(#[from] TerminalsError),
    #[error(transparent)]
    Docs(#[from] DocsError),
}

/// A tool's structured result and its text rendering.
pub struct Outcome {
    pub structured: Value,
    pub text: String,
}

/// Terminal tools work here too; a PTY session lives only as long as the command, so
/// sessions meant to last are tmux ones.
pub async fn call_tool(
    tools: &BuildTools,
    terminals: &Terminals,
    docs: &Docs,
    name: &str,
    arguments: Value,
    call: &Call<'_>,
) -> Result<Outcome, CallError> {
    if !tools.config().tool_enabled(name) {
        return Err(unknown(tools, name));
    }
    match name {
        "project_info" => outcome(tools.project_info(parse(name, arguments)?, call).await),
        "compile" => outcome(
            tools
                .build(BuildKind::Compile, parse(name, arguments)?, call)
                .await,
        ),
        "type_check" => outcome(
            tools
                .build(BuildKind::TypeCheck, parse(name, arguments)?, call)
                .await,
        ),
        "lint" => outcome(
            tools
                .build(BuildKind::Lint, parse(name, arguments)?, call)
                .await,
        ),
        "test" => outcome(tools.test(parse(name, arguments)?, call).await),
        "run" => outcome(tools.run(parse(name, arguments)?, call).await),
        "format" => outcome(tools.format(parse(name, arguments)?, call).await),
        "terminal_create" => outcome(terminals.create(parse(name, arguments)?).await),
        "terminal_list" => outcome(terminals.list(parse(name, arguments)?).await),
        "terminal_manage" => outcome(terminals.manage(parse(name, arguments)?).await),
        "terminal_send" => outcome(terminals.send(parse(name, arguments)?).await),
        "terminal_screen" => outcome(terminals.screen(parse(name, arguments)?).await),
        "terminal_scrollback" => outcome(terminals.scrollback(parse(name, arguments)?).await),
        "terminal_wait" => outcome(terminals.wait(parse(name, arguments)?).await),
        "terminal_run" => outcome(terminals.run(parse(name, arguments)?).await),
        "docs_lookup" => outcome(docs.lookup(parse(name, arguments)?).await),
        "docs_index" => {
            let progress = std::sync::Arc::new(IngestProgress::default());
            outcome(
                docs.index(parse(name, arguments)?, progress, &call.cancel)
                    .await,
            )
        }
        _ => Err(unknown(tools, name)),
    }
}

fn unknown(tools: &BuildTools, name: &str) -> CallError {
    let available: Vec<&str> = crate::config::TOOLS
        .iter()
        .map(|(tool, _)| *tool)
        .filter(|tool| tools.config().tool_enabled(tool))
        .collect();
    CallError::UnknownTool {
        name: name.to_string(),
        available: available.join(", "),
    }
}

fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, CallError> {
    serde_json::from_value(arguments).map_err(|e| CallError::InvalidArguments {
        tool: tool.to_string(),
        message: e.to_string(),
    })
}

fn outcome<T: Serialize + Render, E: Into<CallError>>(
    result: Result<T, E>,
) -> Result<Outcome, CallError> {
    let report = result.map_err(Into::into)?;
    Ok(Outcome {
        structured: serde_json::to_value(&report).expect("reports serialize"),
        text: report.render(),
    })
}
