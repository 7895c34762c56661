//! A fake of the Anthropic Messages API, as much as Claude Code 2.1.330 needs
//! (agent-lab.md §3): `POST /v1/messages` streamed as SSE, with text and `tool_use` blocks.
//!
//! Each turn is scripted by `lab:` tokens in the user's latest prompt:
//! * `lab:bash`: a Bash call `echo hi > lab-bash.txt` (in the project directory);
//! * `lab:sleep=N`: the same after N seconds of waiting, a tool that keeps Claude Code working;
//! * `lab:write`: a Write of `<project>/lab-hello.txt`;
//! * `lab:edit`: a Read, then an Edit of `<project>/lab-edit.txt` (`alpha` → `ALPHA-EDITED`);
//! * `lab:ask`: an AskUserQuestion "Which colour should the lab use?" (Red, Blue);
//! * `lab:slow=N`: the text reply streamed over N seconds;
//! * `lab:think=N`: N seconds of `ping` events before the reply (or the first tool call);
//! * `lab:files=A,B`: a Bash call that lists the working directory into `seen-TASK.txt`, then
//!   appends `task TASK` to each of A and B there (relative paths: the agent's own directory,
//!   a task's worktree); after `lab:sleep=N` seconds when the prompt has that too;
//! * `lab:run=B64`: a Bash call of the command B64 encodes (base64, URL-safe alphabet, no
//!   padding);
//! * `lab:fix=B64`: instead of `lab:run`'s, this command when the prompt says an earlier
//!   attempt `did not land` (an agent that reads why: the failure is in its prompt);
//! * `lab:repeat=N`: the calls above, N times over (an agent that keeps working);
//! * `lab:subagent=B64`: then a subagent (Claude Code's `Agent` tool) whose prompt B64 encodes
//!   (its own turns are scripted by that prompt's `lab:` tokens);
//! * `lab:build`: then calls of drydock's `compile` and `test` on the project;
//! * `lab:complete=OUTCOME`: then a call of drydock's `task_complete` for the task whose id
//!   the prompt names (`task_id "…"`), with that outcome and the summary `LAB-SUMMARY OUTCOME`;
//! * anything else: `LAB-REPLY to: <prompt>`.
//!
//! After the scripted tools have their results, the turn ends with `LAB-DONE: <tool> finished`.
//! The step is read from the conversation (the tool calls since the prompt), so the fake keeps
//! no state and follows whatever the user approved, denied or interrupted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::fake_http::{
    FakeServer, LoggedRequest, SseWriter, json_response, lab_seconds, lab_tokens, pace,
    sse_response, wait_until_seen,
};

pub const BASH_COMMAND: &str = "echo hi > lab-bash.txt";
pub const BASH_DESCRIPTION: &str = "Writing hi to a file";
pub const FILES_DESCRIPTION: &str = "Listing the folder and appending to files";
pub const WRITE_FILE: &str = "lab-hello.txt";
pub const WRITE_CONTENT: &str = "hello from the lab\n";
pub const EDIT_FILE: &str = "lab-edit.txt";
pub const ASK_QUESTION: &str = "Which colour should the lab use?";

pub struct FakeAnthropic {
    server: FakeServer,
}

impl FakeAnthropic {
    /// Starts the fake; Write and Edit calls name files in `project` (they need absolute paths).
    pub fn start(project: &Path) -> FakeAnthropic {
        let project = project.to_path_buf();
        let ids = Arc::new(AtomicU64::new(0));
        let server = FakeServer::start(Arc::new(move |request: &LoggedRequest| {
            respond(request, &project, ids.fetch_add(1, Ordering::Relaxed))
        }));
        FakeAnthropic { server }
    }

    /// The base URL for `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.server.requests()
    }

    /// The `POST /v1/messages` requests, oldest first.
    pub fn turns(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path_only() == "/v1/messages")
            .collect()
    }

    /// Waits until a turn request carries `prompt` as its latest prompt.
    pub fn wait_for_prompt(&self, prompt: &str, timeout: Duration) {
        wait_until_seen("the Anthropic fake", timeout, || self.prompts(), prompt);
    }

    /// The typed prompt of the latest user message of each turn request.
    pub fn prompts(&self) -> Vec<String> {
        self.turns()
            .iter()
            .filter_map(|r| latest_prompt(&r.body).map(|(_, prompt)| prompt))
            .collect()
    }
}

fn respond(request: &LoggedRequest, project: &Path, id: u64) -> Response {
    match (request.method.as_str(), request.path_only()) {
        ("POST", "/v1/messages") => messages(&request.body, project, id),
        ("POST", "/v1/messages/count_tokens") => {
            json_response(StatusCode::OK, json!({"input_tokens": 1000}))
        }
        ("GET", "/v1/models") => json_response(
            StatusCode::OK,
            json!({"data": [{"type": "model", "id": "claude-opus-5-5", "display_name": "Opus 5.5"}],
                   "has_more": false}),
        ),
        ("HEAD" | "GET", "/api/hello") => json_response(StatusCode::OK, json!({})),
        _ => json_response(
            StatusCode::NOT_FOUND,
            json!({"type": "error", "error": {"type": "not_found_error", "message": "not faked"}}),
        ),
    }
}

/// What one turn answers.
enum Reply {
    Text {
        text: String,
        think: Option<Duration>,
        slow: Option<Duration>,
    },
    Tool {
        name: &'static str,
        input: Value,
        think: Option<Duration>,
    },
}

fn messages(body: &Value, project: &Path, id: u64) -> Response {
    let reply = plan(body, project);
    if body["stream"].as_bool() != Some(true) {
        return json_response(StatusCode::OK, whole_message(&reply, id));
    }
    sse_response(move |sse| stream(sse, reply, id))
}

fn plan(body: &Value, project: &Path) -> Reply {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let Some((at, prompt)) = latest_prompt(body) else {
        return text(format!("LAB-REPLY to: {}", "(no prompt)"));
    };
    let tokens = lab_tokens(&prompt);
    let has = |name: &str| tokens.iter().any(|(token, _)| token == name);
    let mut steps: Vec<(&'static str, Value)> = if let Some(files) = lab_value(&tokens, "files") {
        let task = task_id_in(&prompt);
        let wait = lab_seconds(&tokens, "sleep")
            .map(|s| format!("timeout {} tail -f /dev/null; ", s.as_secs()))
            .unwrap_or_default();
        let command = format!(
            "{wait}ls -A > seen-{task}.txt && for f in {}; do echo 'task {task}' >> \"$f\"; done",
            files.replace(',', " ")
        );
        vec![(
            "Bash",
            json!({"command": command, "description": FILES_DESCRIPTION}),
        )]
    } else if let Some(encoded) = lab_value(&tokens, "fix")
        .filter(|_| prompt.contains("did not land"))
        .or_else(|| lab_value(&tokens, "run"))
    {
        use base64::Engine;
        let command = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&encoded)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|e| format!("echo 'lab:run is not base64: {e}'"));
        vec![(
            "Bash",
            json!({"command": command, "description": "Running the lab's command"}),
        )]
    } else if has("bash") {
        vec![(
            "Bash",
            json!({"command": BASH_COMMAND, "description": BASH_DESCRIPTION}),
        )]
    } else if let Some(seconds) = lab_seconds(&tokens, "sleep") {
        // Not `sleep N`: Claude Code fails a command that starts with a long sleep unasked.
        let command = format!(
            "timeout {} tail -f /dev/null; {BASH_COMMAND}",
            seconds.as_secs()
        );
        vec![(
            "Bash",
            json!({"command": command, "description": BASH_DESCRIPTION}),
        )]
    } else if has("write") {
        vec![(
            "Write",
            json!({"file_path": in_project(project, WRITE_FILE), "content": WRITE_CONTENT}),
        )]
    } else if has("edit") {
        let file = in_project(project, EDIT_FILE);
        vec![
            ("Read", json!({"file_path": file})),
            (
                "Edit",
                json!({"file_path": file, "old_string": "alpha", "new_string": "ALPHA-EDITED"}),
            ),
        ]
    } else if has("ask") {
        vec![("AskUserQuestion", ask_input())]
    } else {
        Vec::new()
    };
    if let Some(times) = lab_value(&tokens, "repeat").and_then(|n| n.parse::<usize>().ok()) {
        let once = steps.len();
        steps = steps.into_iter().cycle().take(once * times).collect();
    }
    if let Some(encoded) = lab_value(&tokens, "subagent") {
        use base64::Engine;
        let prompt = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&encoded)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|e| format!("lab:subagent is not base64: {e}"));
        steps.push((
            SUBAGENT_TOOL,
            json!({"description": "The lab's subagent", "prompt": prompt,
                   "subagent_type": "general-purpose", "run_in_background": false}),
        ));
    }
    if has("build") {
        let project = json!({"project_path": project.display().to_string()});
        steps.push(("mcp__drydock__compile", project.clone()));
        steps.push(("mcp__drydock__test", project));
    }
    if let Some(outcome) = lab_value(&tokens, "complete") {
        let input = json!({"task_id": task_id_in(&prompt), "outcome": outcome,
                           "summary": format!("LAB-SUMMARY {outcome}")});
        steps.push((COMPLETE_TOOL, input));
    }
    let done = tool_calls_after(&messages, at);
    match steps.get(done) {
        Some((name, input)) => Reply::Tool {
            name,
            input: input.clone(),
            think: lab_seconds(&tokens, "think").filter(|_| done == 0),
        },
        None if !steps.is_empty() => text(format!("LAB-DONE: {} finished", steps[done - 1].0)),
        None => Reply::Text {
            text: reply_text(&prompt, lab_seconds(&tokens, "slow")),
            think: lab_seconds(&tokens, "think"),
            slow: lab_seconds(&tokens, "slow"),
        },
    }
}

pub const COMPLETE_TOOL: &str = "mcp__drydock__task_complete";
/// Claude Code's tool that starts a subagent.
pub const SUBAGENT_TOOL: &str = "Agent";

fn lab_value(tokens: &[(String, Option<String>)], name: &str) -> Option<String> {
    tokens
        .iter()
        .find(|(token, _)| token == name)
        .and_then(|(_, value)| value.clone())
}

/// The task id drydock's prompt names: `task_id "0a1b2c3d"`.
fn task_id_in(prompt: &str) -> String {
    prompt
        .split("task_id \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("unknown")
        .to_string()
}

fn text(text: String) -> Reply {
    Reply::Text {
        text,
        think: None,
        slow: None,
    }
}

fn in_project(project: &Path, name: &str) -> String {
    PathBuf::from(project).join(name).display().to_string()
}

fn ask_input() -> Value {
    json!({"questions": [{
        "question": ASK_QUESTION,
        "header": "Colour",
        "multiSelect": false,
        "options": [
            {"label": "Red", "description": "The colour of the lab's warning lights"},
            {"label": "Blue", "description": "The colour of the lab's coats"}
        ]
    }]})
}

/// A slow reply has enough words to stream one every 200 ms.
fn reply_text(prompt: &str, slow: Option<Duration>) -> String {
    let mut text = format!("LAB-REPLY to: {prompt}");
    if let Some(slow) = slow {
        for word in 0..(slow.as_millis() / 200).max(1) {
            text.push_str(&format!(" word{word}"));
        }
    }
    text
}

/// The latest user message that holds typed text, as (index, text). Messages of only
/// tool results, system reminders or interruption markers are skipped; after an Escape-deny
/// the new prompt shares its message with the rejected tool's result (agent-lab.md §3).
pub fn latest_prompt(body: &Value) -> Option<(usize, String)> {
    let messages = body["messages"].as_array()?;
    messages.iter().enumerate().rev().find_map(|(at, message)| {
        if message["role"] != "user" {
            return None;
        }
        let typed: Vec<&str> = match &message["content"] {
            Value::String(text) => vec![text.as_str()],
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect(),
            _ => Vec::new(),
        };
        let typed: Vec<&str> = typed
            .into_iter()
            .filter(|t| !t.trim_start().starts_with('<') && !t.starts_with("[Request interrupted"))
            .collect();
        (!typed.is_empty()).then(|| (at, typed.join("\n")))
    })
}

fn tool_calls_after(messages: &[Value], at: usize) -> usize {
    messages[at + 1..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_use")
        .count()
}

fn message_start(id: u64) -> Value {
    json!({"type": "message_start", "message": {
        "id": format!("msg_lab_{id}"), "type": "message", "role": "assistant",
        "model": "claude-opus-5-5", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 1,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    }})
}

async fn stream(sse: SseWriter, reply: Reply, id: u64) {
    sse.event("message_start", &message_start(id));
    let stop_reason = match reply {
        Reply::Text { text, think, slow } => {
            if !think_for(&sse, think).await || !stream_text(&sse, &text, slow).await {
                return;
            }
            "end_turn"
        }
        Reply::Tool { name, input, think } => {
            if !think_for(&sse, think).await {
                return;
            }
            stream_tool(&sse, name, &input, id);
            "tool_use"
        }
    };
    sse.event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": 20}}),
    );
    sse.event("message_stop", &json!({"type": "message_stop"}));
}

/// `ping` events for `think`; false when the client left.
async fn think_for(sse: &SseWriter, think: Option<Duration>) -> bool {
    let Some(think) = think else { return true };
    let ping = json!({"type": "ping"});
    pace(think, Duration::from_millis(500), || {
        sse.event("ping", &ping)
    })
    .await
}

/// Streams `text` in one delta, or word by word over `slow`; false when the client left.
async fn stream_text(sse: &SseWriter, text: &str, slow: Option<Duration>) -> bool {
    sse.event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
    );
    let delta = |chunk: &str| {
        sse.event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": chunk}}),
        )
    };
    match slow {
        None => {
            delta(text);
        }
        Some(_) => {
            for word in text.split_inclusive(' ') {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if !delta(word) {
                    return false;
                }
            }
        }
    }
    sse.event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ) && !sse.is_closed()
}

fn stream_tool(sse: &SseWriter, name: &str, input: &Value, id: u64) {
    sse.event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": format!("toolu_lab_{id}"), "name": name, "input": {}}}),
    );
    let json = input.to_string();
    let middle = (0..=json.len() / 2)
        .rev()
        .find(|&at| json.is_char_boundary(at))
        .unwrap_or(0);
    let (head, tail) = json.split_at(middle);
    for part in [head, tail] {
        sse.event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
        );
    }
    sse.event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
}

fn whole_message(reply: &Reply, id: u64) -> Value {
    let (content, stop_reason) = match reply {
        Reply::Text { text, .. } => (json!([{"type": "text", "text": text}]), "end_turn"),
        Reply::Tool { name, input, .. } => (
            json!([{"type": "tool_use", "id": format!("toolu_lab_{id}"), "name": name, "input": input}]),
            "tool_use",
        ),
    };
    json!({"id": format!("msg_lab_{id}"), "type": "message", "role": "assistant",
           "model": "claude-opus-5-5", "content": content, "stop_reason": stop_reason,
           "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 20}})
}
