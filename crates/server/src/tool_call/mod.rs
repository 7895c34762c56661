//! The one router of drydock's tools: a tool by name with JSON arguments, without MCP.
//! `drydock call`, the dashboard, the local commands' `/tasks` and MCP's `tools/call` run a
//! tool here; MCP's `tools/list` reads each tool's description and schemas here. A tool is one
//! [`Entry`] in the file of its toolset (`build_tools.rs`, `terminal_tools.rs`, ...); what a
//! task's token may do is in `scope.rs`.

mod agent_tools;
mod build_tools;
mod docs_tools;
mod entry;
mod scope;
mod task_tools;
mod terminal_tools;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::agents::{AgentError, AskClient};
use crate::app::App;
use crate::call::Call;
use crate::catalog::ToolName;
use crate::config::Config;
use crate::docs::DocsError;
use crate::events::{CallRecord, CallStatus};
use crate::history::HistoryError;
use crate::long_calls::CallWatch;
use crate::tasks::{TaskError, TaskScope};
use crate::terminal::TerminalError;
use crate::toolchain::ToolchainError;

pub use entry::{Entry, ToolOutput, entry};
pub use scope::{Refusal, history_reach};

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool `{name}`; available: {available}")]
    UnknownTool { name: String, available: String },
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: ToolName, message: String },
    /// A task's token does not reach what the call asks.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Tool(#[from] ToolchainError),
    #[error(transparent)]
    Terminal(#[from] TerminalError),
    #[error(transparent)]
    Docs(#[from] DocsError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    History(#[from] HistoryError),
}

/// Who makes a call, beyond the call's progress and cancellation.
#[derive(Default)]
pub struct Caller<'a> {
    /// The name the event feed shows: "drydock call", "dashboard", an MCP client's name.
    pub client: Option<String>,
    /// The task a task's agent's token limits it to: the call is held to what the token may
    /// do (see [`Refusal`]).
    pub scope: Option<&'a TaskScope>,
    /// How `agent_spawn` asks the person for consent, when the caller can ask.
    pub ask: Option<AskClient>,
    /// A call that may become an MCP task: told the call's id on the event feed.
    pub watch: Option<&'a CallWatch>,
}

impl Caller<'_> {
    pub fn named(client: &str) -> Self {
        Caller {
            client: Some(client.to_string()),
            ..Caller::default()
        }
    }
}

/// The served tool called `name`, or the error listing those that are.
pub fn served_tool(config: &Config, name: &str) -> Result<ToolName, CallError> {
    ToolName::parse(name)
        .filter(|tool| config.tool_enabled(*tool))
        .ok_or_else(|| CallError::UnknownTool {
            name: name.to_string(),
            available: config
                .enabled_tools()
                .map(ToolName::name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Runs `tool` (see [`served_tool`]) for `drydock call`. Terminal tools work here too; a PTY
/// session lives only as long as the command, so sessions meant to last are tmux ones.
pub fn call_tool<'a>(
    app: &'a App,
    tool: ToolName,
    arguments: Value,
    call: &'a Call<'_>,
) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
    call_tool_as(app, tool, arguments, call, "drydock call")
}

/// [`call_tool`] for `client` (the name the event feed shows: "drydock call", "dashboard").
pub fn call_tool_as<'a>(
    app: &'a App,
    tool: ToolName,
    arguments: Value,
    call: &'a Call<'a>,
    client: &'a str,
) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
    call_tool_by(app, tool, arguments, call, Caller::named(client))
}

/// Runs `tool` for `caller`: held to its task's token, then published on the app's event feed
/// when it starts and when it ends (a refused call never starts).
pub fn call_tool_by<'a>(
    app: &'a App,
    tool: ToolName,
    mut arguments: Value,
    call: &'a Call<'a>,
    caller: Caller<'a>,
) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
    async move {
        if let Some(scope) = caller.scope {
            scope::confine(scope, tool, &mut arguments)?;
        }
        let record = CallRecord::started(app.events().clone(), tool, &arguments, caller.client);
        if let (Some(watch), Some(id)) = (caller.watch, record.call_id()) {
            watch.set_call_id(id);
        }
        // What a task's agent asks for runs its task's code, confined.
        let call = Call {
            progress: call.progress,
            cancel: call.cancel.clone(),
            client: call.client.clone(),
            for_task: call.for_task || caller.scope.is_some(),
        };
        let context = entry::Context {
            call: &call,
            scope: caller.scope,
            ask: caller.ask,
        };
        let result = (entry(tool).run)(app, arguments, context).await;
        match &result {
            Ok(output) => record.finish_with(
                CallStatus::Completed {
                    status: output.structured["status"].as_str().map(str::to_string),
                },
                &output.structured,
            ),
            Err(_) if call.is_cancelled() => record.finish(CallStatus::Cancelled),
            Err(error) => record.finish(CallStatus::Error {
                message: error.to_string(),
            }),
        }
        result
    }
    .boxed()
}
