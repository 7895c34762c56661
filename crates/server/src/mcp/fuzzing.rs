//! What a client sends as the fuzzers feed it: a parsed JSON-RPC message's tool call,
//! resource read or prompt, read as drydock reads it before acting (the name looked up,
//! the arguments deserialized into the tool's request, a URI recognised).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonObject, JsonRpcMessage};
use serde::de::DeserializeOwned;

use super::prompts::{FailingTestArgs, ProjectArgs, SuperviseArgs, TerminalArgs};
use super::resources::{is_known, percent_decoded};
use crate::catalog::ToolName;
use crate::{agents, docs, history, tasks, terminal, toolchain};

fn arguments<T: DeserializeOwned>(arguments: &JsonObject) {
    let _ = serde_json::from_value::<T>(serde_json::Value::Object(arguments.clone()));
}

/// A message the HTTP face let through.
pub fn client_message(message: ClientJsonRpcMessage) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    match request.request {
        ClientRequest::CallToolRequest(call) => {
            let empty = JsonObject::new();
            tool_arguments(
                &call.params.name,
                call.params.arguments.as_ref().unwrap_or(&empty),
            );
        }
        ClientRequest::ReadResourceRequest(read) => {
            is_known(&read.params.uri);
            percent_decoded(&read.params.uri);
        }
        ClientRequest::GetPromptRequest(get) => {
            let given = get.params.arguments.unwrap_or_default();
            match get.params.name.as_str() {
                "fix_build" => arguments::<ProjectArgs>(&given),
                "fix_failing_test" => arguments::<FailingTestArgs>(&given),
                "drive_terminal" => arguments::<TerminalArgs>(&given),
                _ => arguments::<SuperviseArgs>(&given),
            }
        }
        _ => {}
    }
}

/// A tool call's arguments, read into the request of the tool it names.
fn tool_arguments(name: &str, given: &JsonObject) {
    let Some(tool) = ToolName::parse(name) else {
        return;
    };
    use ToolName::*;
    match tool {
        ProjectInfo => arguments::<toolchain::requests::ProjectInfoRequest>(given),
        Compile | TypeCheck | Lint => arguments::<toolchain::requests::CompileRequest>(given),
        Test => arguments::<toolchain::requests::TestRequest>(given),
        Run => arguments::<toolchain::requests::RunRequest>(given),
        Format => arguments::<toolchain::requests::FormatRequest>(given),
        HistorySearch => arguments::<history::requests::SearchRequest>(given),
        DocsLookup => arguments::<docs::requests::LookupRequest>(given),
        DocsRead => arguments::<docs::requests::ReadRequest>(given),
        DocsIndex => arguments::<docs::requests::IndexRequest>(given),
        TerminalCreate => arguments::<terminal::requests::CreateRequest>(given),
        TerminalList => arguments::<terminal::requests::ListRequest>(given),
        TerminalManage => arguments::<terminal::requests::ManageRequest>(given),
        TerminalSend => arguments::<terminal::requests::SendRequest>(given),
        TerminalScreen => arguments::<terminal::requests::ScreenRequest>(given),
        TerminalScrollback => arguments::<terminal::requests::ScrollbackRequest>(given),
        TerminalWait => arguments::<terminal::requests::WaitRequest>(given),
        TerminalRun => arguments::<terminal::requests::CommandRequest>(given),
        AgentList => arguments::<agents::requests::ListRequest>(given),
        AgentWait => arguments::<agents::requests::WaitRequest>(given),
        AgentAnswer => arguments::<agents::requests::AnswerRequest>(given),
        AgentSend => arguments::<agents::requests::SendRequest>(given),
        AgentKill => arguments::<agents::requests::KillRequest>(given),
        AgentSpawn => arguments::<agents::requests::SpawnRequest>(given),
        TaskAdd => arguments::<tasks::requests::AddRequest>(given),
        TaskList => arguments::<tasks::requests::ListRequest>(given),
        TaskComplete => arguments::<tasks::requests::CompleteRequest>(given),
        TaskMerge => arguments::<tasks::requests::MergeRequest>(given),
        QueueConfigure => arguments::<tasks::requests::ConfigureRequest>(given),
        QueueClear => arguments::<tasks::requests::ClearRequest>(given),
        TaskShow | TaskStart | TaskCancel | TaskRetry | TaskDiscard => {
            arguments::<tasks::requests::TaskRequest>(given)
        }
    }
}
