//! A fake of the OpenAI Responses API, as much as Codex CLI 0.169.0 needs (agent-lab.md §9):
//! `POST /v1/responses` streamed as SSE, with message and `function_call` items.
//!
//! Scripted by `lab:` tokens in the latest user prompt, like the Anthropic fake:
//! * `lab:shell`: an `exec_command` of `echo hi > lab-codex.txt` that asks for escalation,
//!   so Codex (approval_policy on-request) asks the user first;
//! * `lab:ask`: a `request_user_input` "Which colour should the lab use?" (Red, Blue);
//! * `lab:slow=N`: the text reply streamed over N seconds;
//! * `lab:think=N`: N seconds before anything of the reply;
//! * anything else: `LAB-REPLY to: <prompt>`.
//!
//! The session title side request (a `json_schema` text format) gets `{"title":"Lab session"}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::fake_http::{
    FakeServer, LoggedRequest, SseWriter, json_response, lab_seconds, lab_tokens, sse_response,
    wait_until_seen,
};

pub const SHELL_COMMAND: &str = "echo hi > lab-codex.txt";
pub const SHELL_JUSTIFICATION: &str = "The lab needs to write a file";
pub const SESSION_TITLE: &str = "Lab session";
pub const ASK_QUESTION: &str = "Which colour should the lab use?";

pub struct FakeOpenAi {
    server: FakeServer,
}

impl FakeOpenAi {
    pub fn start() -> FakeOpenAi {
        let ids = Arc::new(AtomicU64::new(0));
        let server = FakeServer::start(Arc::new(move |request: &LoggedRequest| {
            respond(request, ids.fetch_add(1, Ordering::Relaxed))
        }));
        FakeOpenAi { server }
    }

    /// The base URL for a Codex model provider: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.server.requests()
    }

    /// The `POST /v1/responses` requests of model turns (not the title side requests).
    pub fn turns(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path_only() == "/v1/responses")
            .filter(|r| !is_title_request(&r.body))
            .collect()
    }

    /// Waits until a turn request carries `prompt` as its latest prompt.
    pub fn wait_for_prompt(&self, prompt: &str, timeout: Duration) {
        wait_until_seen("the OpenAI fake", timeout, || self.prompts(), prompt);
    }

    pub fn prompts(&self) -> Vec<String> {
        self.turns()
            .iter()
            .filter_map(|r| latest_prompt(&r.body).map(|(_, prompt)| prompt))
            .collect()
    }
}

fn respond(request: &LoggedRequest, id: u64) -> Response {
    match (request.method.as_str(), request.path_only()) {
        ("POST", "/v1/responses") => {
            let reply = plan(&request.body);
            sse_response(move |sse| stream(sse, reply, id))
        }
        _ => json_response(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": "not faked", "type": "invalid_request_error"}}),
        ),
    }
}

enum Reply {
    Text {
        text: String,
        think: Option<Duration>,
        slow: Option<Duration>,
    },
    Call {
        name: &'static str,
        arguments: Value,
    },
}

fn is_title_request(body: &Value) -> bool {
    body["text"]["format"]["type"] == "json_schema"
}

fn plan(body: &Value) -> Reply {
    if is_title_request(body) {
        return Reply::Text {
            text: json!({"title": SESSION_TITLE}).to_string(),
            think: None,
            slow: None,
        };
    }
    let items = body["input"].as_array().cloned().unwrap_or_default();
    let Some((at, prompt)) = latest_prompt(body) else {
        return Reply::Text {
            text: "LAB-REPLY to: (no prompt)".into(),
            think: None,
            slow: None,
        };
    };
    let tokens = lab_tokens(&prompt);
    let calls = items[at + 1..]
        .iter()
        .filter(|item| item["type"] == "function_call")
        .count();
    let has = |name: &str| tokens.iter().any(|(token, _)| token == name);
    let call = if has("shell") {
        Some(("exec_command", shell_arguments()))
    } else if has("ask") {
        Some(("request_user_input", ask_arguments()))
    } else {
        None
    };
    match (call, calls) {
        (Some((name, arguments)), 0) => Reply::Call { name, arguments },
        (Some((name, _)), _) => Reply::Text {
            text: format!("LAB-DONE: {name} finished"),
            think: None,
            slow: None,
        },
        (None, _) => {
            let slow = lab_seconds(&tokens, "slow");
            let mut text = format!("LAB-REPLY to: {prompt}");
            for word in 0..slow.map_or(0, |s| (s.as_millis() / 200).max(1)) {
                text.push_str(&format!(" word{word}"));
            }
            Reply::Text {
                text,
                think: lab_seconds(&tokens, "think"),
                slow,
            }
        }
    }
}

/// The latest user message with typed text, as (index in `input`, text). Codex also sends
/// user messages of its own (`<environment_context>`, `# AGENTS.md instructions`): skipped.
pub fn latest_prompt(body: &Value) -> Option<(usize, String)> {
    let items = body["input"].as_array()?;
    items.iter().enumerate().rev().find_map(|(at, item)| {
        if item["role"] != "user" {
            return None;
        }
        let typed: Vec<&str> = item["content"]
            .as_array()?
            .iter()
            .filter_map(|part| part["text"].as_str())
            .filter(|text| !text.trim_start().starts_with(['<', '#']))
            .collect();
        (!typed.is_empty()).then(|| (at, typed.join("\n")))
    })
}

async fn stream(sse: SseWriter, reply: Reply, id: u64) {
    let response_id = format!("resp_lab_{id}");
    sse.event(
        "response.created",
        &json!({"type": "response.created", "response": {
            "id": response_id, "object": "response", "status": "in_progress", "output": []}}),
    );
    let item = match reply {
        Reply::Call { name, arguments } => function_call(id, name, &arguments),
        Reply::Text { text, think, slow } => {
            if let Some(think) = think {
                tokio::time::sleep(think).await;
            }
            match stream_message(&sse, &text, slow, id).await {
                Some(item) => item,
                None => return,
            }
        }
    };
    sse.event(
        "response.output_item.done",
        &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    sse.event(
        "response.completed",
        &json!({"type": "response.completed", "response": {
            "id": response_id, "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 120}}}),
    );
}

fn shell_arguments() -> Value {
    json!({
        "cmd": SHELL_COMMAND,
        "sandbox_permissions": "require_escalated",
        "justification": SHELL_JUSTIFICATION,
    })
}

fn ask_arguments() -> Value {
    json!({"questions": [{
        "id": "lab_colour",
        "header": "Colour",
        "question": ASK_QUESTION,
        "options": [
            {"label": "Red", "description": "The colour of the lab's warning lights"},
            {"label": "Blue", "description": "The colour of the lab's coats"}
        ]
    }]})
}

fn function_call(id: u64, name: &str, arguments: &Value) -> Value {
    json!({"type": "function_call", "id": format!("fc_lab_{id}"), "call_id": format!("call_lab_{id}"),
           "name": name, "arguments": arguments.to_string(), "status": "completed"})
}

/// Streams a message item; returns the finished item, or None when the client left.
async fn stream_message(
    sse: &SseWriter,
    text: &str,
    slow: Option<Duration>,
    id: u64,
) -> Option<Value> {
    let item_id = format!("msg_lab_{id}");
    sse.event(
        "response.output_item.added",
        &json!({"type": "response.output_item.added", "output_index": 0, "item": {
            "type": "message", "id": item_id, "role": "assistant", "status": "in_progress",
            "content": []}}),
    );
    let chunks: Vec<&str> = match slow {
        Some(_) => text.split_inclusive(' ').collect(),
        None => vec![text],
    };
    for chunk in chunks {
        if slow.is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let sent = sse.event(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta", "item_id": item_id,
                    "output_index": 0, "content_index": 0, "delta": chunk}),
        );
        if !sent {
            return None;
        }
    }
    Some(
        json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    )
}
