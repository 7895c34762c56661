//! Run one tool by name with JSON arguments, without MCP (`drydock call`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::agents::AgentError;
use crate::app::App;
use crate::call::Call;
use crate::catalog::ToolName;
use crate::config::Config;
use crate::docs::DocsError;
use crate::events::{CallRecord, CallStatus};
use crate::history::{HistoryError, Reach};
use crate::render::Render;
use crate::tasks::{TaskError, TaskScope};
use crate::terminal::TerminalError;
use crate::toolchain::{BuildKind, ToolchainError};

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool `{name}`; available: {available}")]
    UnknownTool { name: String, available: String },
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: ToolName, message: String },
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

/// A tool's structured result and its text rendering.
pub struct ToolOutput {
    pub structured: Value,
    pub text: String,
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

/// Runs `tool` (see [`served_tool`]) and publishes the call on the app's event feed.
/// Terminal tools work here too; a PTY session lives only as long as the command, so
/// sessions meant to last are tmux ones.
pub async fn call_tool(
    app: &App,
    tool: ToolName,
    arguments: Value,
    call: &Call<'_>,
) -> Result<ToolOutput, CallError> {
    call_tool_as(app, tool, arguments, call, "drydock call").await
}

/// [`call_tool`] for `client` (the name the event feed shows: "drydock call", "dashboard").
pub async fn call_tool_as(
    app: &App,
    tool: ToolName,
    arguments: Value,
    call: &Call<'_>,
    client: &str,
) -> Result<ToolOutput, CallError> {
    call_tool_within(app, tool, arguments, call, client, None).await
}

/// [`call_tool_as`] under a task's token: `task_complete` completes only `scope`'s task (the
/// caller holds the other tools to what the token may do).
pub async fn call_tool_within(
    app: &App,
    tool: ToolName,
    arguments: Value,
    call: &Call<'_>,
    client: &str,
    scope: Option<&TaskScope>,
) -> Result<ToolOutput, CallError> {
    let record = CallRecord::started(app.events().clone(), tool, &arguments, Some(client.into()));
    let call = Call {
        progress: call.progress,
        cancel: call.cancel.clone(),
        client: call.client.clone(),
        for_task: call.for_task || scope.is_some(),
    };
    let result = dispatch(app, tool, arguments, &call, scope).await;
    match &result {
        Ok(outcome) => record.finish_with(
            CallStatus::Completed {
                status: outcome.structured["status"].as_str().map(str::to_string),
            },
            &outcome.structured,
        ),
        Err(error) => record.finish(CallStatus::Error {
            message: error.to_string(),
        }),
    }
    result
}

async fn dispatch(
    app: &App,
    tool: ToolName,
    arguments: Value,
    call: &Call<'_>,
    scope: Option<&TaskScope>,
) -> Result<ToolOutput, CallError> {
    let toolchains = app.toolchains();
    let terminals = app.terminals();
    let docs = app.docs();
    let agents = app.agents();
    let tasks = app.tasks();
    match tool {
        ToolName::ProjectInfo => {
            outcome(toolchains.project_info(parse(tool, arguments)?, call).await)
        }
        ToolName::Compile => outcome(
            toolchains
                .build(BuildKind::Compile, parse(tool, arguments)?, call)
                .await,
        ),
        ToolName::TypeCheck => outcome(
            toolchains
                .build(BuildKind::TypeCheck, parse(tool, arguments)?, call)
                .await,
        ),
        ToolName::Lint => outcome(
            toolchains
                .build(BuildKind::Lint, parse(tool, arguments)?, call)
                .await,
        ),
        ToolName::Test => outcome(toolchains.test(parse(tool, arguments)?, call).await),
        ToolName::Run => outcome(toolchains.run(parse(tool, arguments)?, call).await),
        ToolName::Format => outcome(toolchains.format(parse(tool, arguments)?, call).await),
        ToolName::HistorySearch => outcome(
            app.history()
                .search(parse(tool, arguments)?, history_reach(scope))
                .await,
        ),
        ToolName::TerminalCreate => outcome(terminals.create(parse(tool, arguments)?, call).await),
        ToolName::TerminalList => outcome(terminals.list(parse(tool, arguments)?).await),
        ToolName::TerminalManage => outcome(terminals.manage(parse(tool, arguments)?).await),
        ToolName::TerminalSend => outcome(terminals.send(parse(tool, arguments)?, call).await),
        ToolName::TerminalScreen => outcome(terminals.screen(parse(tool, arguments)?).await),
        ToolName::TerminalScrollback => {
            outcome(terminals.scrollback(parse(tool, arguments)?).await)
        }
        ToolName::TerminalWait => outcome(terminals.wait(parse(tool, arguments)?, call).await),
        ToolName::TerminalRun => outcome(terminals.run(parse(tool, arguments)?, call).await),
        ToolName::DocsLookup => outcome(docs.lookup(parse(tool, arguments)?).await),
        ToolName::DocsRead => outcome(docs.read(parse(tool, arguments)?).await),
        ToolName::DocsIndex => outcome(docs.index(parse(tool, arguments)?, call).await),
        ToolName::AgentList => outcome(agents.list(parse(tool, arguments)?).await),
        ToolName::AgentWait => outcome(agents.wait(parse(tool, arguments)?, call).await),
        ToolName::AgentAnswer => outcome(agents.answer(parse(tool, arguments)?, call).await),
        ToolName::AgentSend => outcome(agents.send(parse(tool, arguments)?, call).await),
        ToolName::AgentKill => outcome(agents.kill(parse(tool, arguments)?, call).await),
        ToolName::AgentSpawn => outcome(agents.spawn(parse(tool, arguments)?, None, call).await),
        ToolName::TaskAdd => outcome(tasks.add(parse(tool, arguments)?).await),
        ToolName::TaskList => outcome(tasks.list(parse(tool, arguments)?).await),
        ToolName::TaskShow => outcome(tasks.show(parse(tool, arguments)?).await),
        ToolName::TaskMerge => outcome(tasks.merge(parse(tool, arguments)?).await),
        ToolName::TaskDiscard => outcome(tasks.discard(parse(tool, arguments)?).await),
        ToolName::TaskStart => outcome(tasks.start(parse(tool, arguments)?).await),
        ToolName::TaskCancel => outcome(tasks.cancel(parse(tool, arguments)?).await),
        ToolName::TaskRetry => outcome(tasks.retry(parse(tool, arguments)?).await),
        ToolName::TaskComplete => outcome(tasks.complete(parse(tool, arguments)?, scope).await),
        ToolName::QueueConfigure => outcome(tasks.configure(parse(tool, arguments)?).await),
        ToolName::QueueClear => {
            parse::<crate::tasks::requests::ClearRequest>(tool, arguments)?;
            outcome(tasks.clear().await)
        }
    }
}

/// What `history_search` reaches for a caller: a task's agent finds its project's build
/// problems only (its other tools are held in `mcp::task_tools::confine`).
pub fn history_reach(scope: Option<&TaskScope>) -> Reach {
    match scope {
        Some(_) => Reach::BuildProblems,
        None => Reach::Everything,
    }
}

fn parse<T: DeserializeOwned>(tool: ToolName, arguments: Value) -> Result<T, CallError> {
    serde_json::from_value(arguments).map_err(|e| CallError::InvalidArguments {
        tool,
        message: e.to_string(),
    })
}

fn outcome<T: Serialize + Render, E: Into<CallError>>(
    result: Result<T, E>,
) -> Result<ToolOutput, CallError> {
    let report = result.map_err(Into::into)?;
    Ok(ToolOutput {
        structured: serde_json::to_value(&report).expect("reports serialize"),
        text: report.render(),
    })
}
