//! The MCP surface over real transports: both protocol eras over HTTP, stdio, the HTTP guards,
//! and bad input that must get a clear error and change nothing.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

const BUILD_TOOLS: [&str; 7] = [
    "compile",
    "format",
    "lint",
    "project_info",
    "run",
    "test",
    "type_check",
];

/// Each tool other than the build tools (which require project_path) and what it requires.
const OTHER_TOOLS: [(&str, &[&str]); 29] = [
    ("history_search", &["query"]),
    ("agent_answer", &["action", "agent"]),
    ("agent_kill", &["agent"]),
    ("agent_list", &[]),
    ("agent_send", &["agent", "text"]),
    ("agent_spawn", &["cwd", "kind", "prompt"]),
    ("agent_wait", &["states"]),
    ("docs_index", &[]),
    ("queue_clear", &[]),
    ("queue_configure", &[]),
    ("task_add", &["tasks"]),
    ("task_cancel", &["task_id"]),
    ("task_complete", &["outcome", "summary", "task_id"]),
    ("task_discard", &["task_id"]),
    ("task_list", &[]),
    ("task_merge", &["task_id"]),
    ("task_retry", &["task_id"]),
    ("task_show", &["task_id"]),
    ("task_start", &["task_id"]),
    ("docs_lookup", &["query"]),
    ("docs_read", &["id"]),
    ("terminal_create", &["cwd"]),
    ("terminal_list", &[]),
    ("terminal_manage", &["action", "session"]),
    ("terminal_run", &["command", "session"]),
    ("terminal_screen", &["session"]),
    ("terminal_scrollback", &["session"]),
    ("terminal_send", &["session"]),
    ("terminal_wait", &["session"]),
];

async fn assert_tool_listing(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = BUILD_TOOLS.to_vec();
    expected.extend(OTHER_TOOLS.iter().map(|(name, _)| *name));
    expected.sort_unstable();
    assert_eq!(names, expected);
    for tool in &tools {
        assert!(
            tool.description.as_ref().is_some_and(|d| d.len() > 40),
            "{}",
            tool.name
        );
        let output = tool.output_schema.as_ref().expect("output schema");
        assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
        let input = serde_json::to_value(tool.input_schema.as_ref()).unwrap();
        let required = match OTHER_TOOLS.iter().find(|(name, _)| *name == tool.name) {
            Some((_, required)) => required.to_vec(),
            None => vec!["project_path"],
        };
        let mut listed: Vec<&str> = input["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        listed.sort_unstable();
        assert_eq!(listed, required, "{}", tool.name);
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert!(annotations.read_only_hint.is_some(), "{}", tool.name);
        assert!(annotations.destructive_hint.is_some(), "{}", tool.name);
    }
    let info = tools.iter().find(|t| t.name == "project_info").unwrap();
    assert_eq!(
        info.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
}

#[tokio::test]
async fn both_protocol_eras_list_and_call_tools() {
    let server = Server::start(&[]);
    for era in [Era::Legacy, Era::Modern] {
        let client = client(&era, &server.url).await;
        let info = client.peer_info().expect("server info");
        let negotiated = info.protocol_version.to_string();
        match era {
            Era::Legacy => assert_eq!(negotiated, "2025-11-25"),
            Era::Modern => assert_eq!(negotiated, "2026-07-28"),
        }
        let server_name = info.server_info.as_ref().map(|i| i.name.as_str());
        assert_eq!(server_name, Some("drydock"));
        let instructions = info.instructions.as_deref().unwrap_or_default();
        for tool in [
            "compile",
            "docs_lookup",
            "terminal_run",
            "agent_wait",
            "task_add",
        ] {
            assert!(instructions.contains(tool), "{tool}: {instructions}");
        }
        assert_tool_listing(&client).await;
        let project = test_project("cargo-clean");
        let result = call_ok(
            &client,
            "project_info",
            json!({"project_path": project.to_str().unwrap()}),
        )
        .await;
        assert_eq!(result["name"], "cargo-clean");
        assert_eq!(result["toolchain"], "cargo");
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn stdio_transport_serves_the_same_tools() {
    let client = stdio_client(drydock_mcp()).await;
    assert_tool_listing(&client).await;
    let result = call_ok(
        &client,
        "project_info",
        json!({"project_path": "cargo-clean"}),
    )
    .await;
    assert_eq!(result["name"], "cargo-clean");
    client.cancel().await.ok();
}

#[tokio::test]
async fn bad_project_paths_get_clear_errors_naming_the_roots() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let root = test_projects_root();
    let root_text = root.to_str().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("Cargo.toml"),
        "[package]\nname = \"x\"\n",
    )
    .unwrap();
    let escape = tempfile::tempdir().unwrap();
    let link = escape.path().join("link");
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();

    let cases: Vec<(Value, &str)> = vec![
        (
            json!(outside.path().to_str().unwrap()),
            "outside the allowed roots",
        ),
        (json!(format!("{root_text}/../..")), "`..`"),
        (json!("cargo-clean/../cargo-errors"), "`..`"),
        (json!("no-such-project"), "does not exist"),
        (
            json!("cargo-clean/Cargo.toml"),
            "is a file, not a directory",
        ),
        (json!("cargo-clean/src"), "not a cargo or mix project"),
        (json!("cargo\u{0}clean"), "NUL"),
        (json!(""), "empty"),
    ];
    for (path, expected) in cases {
        let message = call_err(&client, "compile", json!({"project_path": path})).await;
        assert!(message.contains(expected), "{path}: {message}");
        if expected == "outside the allowed roots" {
            assert!(message.contains(root_text), "names the roots: {message}");
        }
    }
    // A symlink inside no root that points anywhere is refused as well.
    let message = call_err(
        &client,
        "compile",
        json!({"project_path": link.to_str().unwrap()}),
    )
    .await;
    assert!(message.contains("outside the allowed roots"), "{message}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn malformed_arguments_are_reported_in_band_and_unknown_tools_as_protocol_errors() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let missing = call_err(&client, "compile", json!({})).await;
    assert!(missing.contains("project_path"), "{missing}");
    let wrong_type = call_err(&client, "test", json!({"project_path": 5})).await;
    assert!(wrong_type.contains("invalid type"), "{wrong_type}");
    let unknown_field = call_err(
        &client,
        "compile",
        json!({"project_path": "cargo-clean", "pakage": "x"}),
    )
    .await;
    assert!(unknown_field.contains("pakage"), "{unknown_field}");
    let task = call_err(
        &client,
        "run",
        json!({"project_path": "cargo-clean", "task": "install"}),
    )
    .await;
    assert!(
        task.contains("not allowed") && task.contains("bench"),
        "{task}"
    );
    // A number out of its range is refused before anything is done with it, naming the
    // range, which the tool's schema shows too.
    let forever = call_err(
        &client,
        "task_add",
        json!({"tasks": [{"title": "x", "project_path": "cargo-clean", "timeout_s": u64::MAX}]}),
    )
    .await;
    assert!(
        forever.contains("18446744073709551615 is out of range")
            && forever.contains("from 1 to 604800"),
        "{forever}"
    );
    let queued = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(queued["tasks"], json!([]), "{queued:#}");
    let tools = client.list_all_tools().await.expect("tools/list");
    let wait = tools.iter().find(|t| t.name == "terminal_wait").unwrap();
    let max_wait = &wait.input_schema["properties"]["max_wait_ms"];
    assert_eq!(
        (&max_wait["minimum"], &max_wait["maximum"]),
        (&json!(0), &json!(3_600_000)),
        "{max_wait}"
    );
    let unknown = client
        .call_tool(tool_call("rm_rf", json!({})))
        .await
        .expect_err("unknown tool is a protocol error");
    assert!(
        unknown.to_string().contains("-32602") || unknown.to_string().contains("not found"),
        "{unknown}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn resources_prompts_and_completion_work() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "drydock://server",
            "drydock://projects",
            "drydock://docs",
            "drydock://sessions",
            "drydock://agents",
            "drydock://approvals",
            "drydock://tasks"
        ]
    );
    let text = read_text_resource(&client, "drydock://projects").await;
    let listed: Value = serde_json::from_str(&text).unwrap();
    let clean = test_project("cargo-clean");
    assert!(
        listed["projects"]
            .as_array()
            .unwrap()
            .contains(&json!(clean.to_str().unwrap())),
        "{listed}"
    );
    let missing = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "drydock://nope",
        ))
        .await
        .expect_err("unknown resource");
    assert!(
        missing.to_string().contains("unknown resource"),
        "{missing}"
    );

    let prompts = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for name in [
        "fix_build",
        "fix_failing_test",
        "drive_terminal",
        "supervise_agents",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let terminal = client
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("drive_terminal").with_arguments(
                json!({"goal": "starting the dev server"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    let body = serde_json::to_string(&terminal.messages).unwrap();
    assert!(
        body.contains("starting the dev server") && body.contains("terminal_run"),
        "{body}"
    );
    let supervise = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("supervise_agents"))
        .await
        .unwrap();
    let body = serde_json::to_string(&supervise.messages).unwrap();
    assert!(
        body.contains("agent_wait") && body.contains("`seen`"),
        "{body}"
    );
    let prompt = client
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("fix_build").with_arguments(
                json!({"project_path": "cargo-errors"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    let body = serde_json::to_string(&prompt.messages).unwrap();
    assert!(
        body.contains("type_check") && body.contains("cargo-errors"),
        "{body}"
    );

    let prefix = format!("{}/cargo-c", test_projects_root().display());
    let completion = client
        .complete(rmcp::model::CompleteRequestParams::new(
            rmcp::model::Reference::for_prompt("fix_build"),
            rmcp::model::ArgumentInfo::new("project_path", prefix.clone()),
        ))
        .await
        .unwrap();
    assert_eq!(
        completion.completion.values,
        vec![clean.display().to_string()],
        "completion for {prefix}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn http_guards_reject_foreign_origins_bad_json_and_huge_bodies() {
    let server = Server::start(&[]);
    let (status, body) = post_raw(
        &server.url,
        &[("Origin", "http://evil.example")],
        RAW_INITIALIZE,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = post_raw(
        &server.url,
        &[("Origin", "http://localhost:3000")],
        RAW_INITIALIZE,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post_raw(&server.url, &[("Host", "evil.example")], RAW_INITIALIZE).await;
    assert_eq!(status, 403);

    let (status, body) = post_raw(&server.url, &[], "{not json").await;
    assert_eq!(status, 400);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], -32700, "{body}");
    let (status, body) = post_raw(&server.url, &[], "[]").await;
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32600
    );

    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let (status, _) = post_raw(&server.url, &[], &huge).await;
    assert_eq!(status, 413);

    let health = reqwest::get(format!("{}/health", server.base_url()))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "ok");
    // Still serving after all that.
    let client = legacy_client(&server.url).await;
    client.list_all_tools().await.unwrap();
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_token_is_required_when_configured() {
    let server = Server::start(&["--token", "s3cret-token"]);
    assert!(
        server.banner.contains("Authorization: Bearer s3cret-token"),
        "{}",
        server.banner
    );
    let (status, _) = post_raw(&server.url, &[], RAW_INITIALIZE).await;
    assert_eq!(status, 401);
    let (status, _) = post_raw(
        &server.url,
        &[("Authorization", "Bearer wrong")],
        RAW_INITIALIZE,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = post_raw(
        &server.url,
        &[("Authorization", "Bearer s3cret-token")],
        RAW_INITIALIZE,
    )
    .await;
    assert_eq!(status, 200);
}

/// Without a server token a request without a bearer is served, but a bearer that is no
/// token of this server (made up, or a task's once withdrawn) is refused: it never falls back
/// to the unscoped "no token".
#[tokio::test]
async fn an_unknown_bearer_is_refused_even_without_a_server_token() {
    let server = Server::start(&[]);
    let response = post(
        &reqwest::Client::new(),
        &server.url,
        &[("Authorization", "Bearer made-up-or-withdrawn")],
        RAW_INITIALIZE,
    )
    .await;
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(
        response.headers().get("www-authenticate").unwrap(),
        "Bearer"
    );
    let (status, _) = post_raw(&server.url, &[], RAW_INITIALIZE).await;
    assert_eq!(status, 200);
}

#[test]
fn a_non_loopback_bind_without_a_token_is_refused() {
    let output = drydock_command()
        .args(["serve", "--bind", "0.0.0.0:0"])
        .env_remove("DRYDOCK_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("without a token"), "{stderr}");
}

#[test]
fn the_banner_prints_the_claude_command_and_mcp_json() {
    let server = Server::start(&[]);
    let url = &server.url;
    assert!(
        server
            .banner
            .contains(&format!("claude mcp add --transport http drydock {url}")),
        "{}",
        server.banner
    );
    assert!(
        server.banner.contains(&format!(
            r#"{{"mcpServers": {{"drydock": {{"type": "http", "url": "{url}"}}}}}}"#
        )),
        "{}",
        server.banner
    );
    assert!(
        server
            .banner
            .contains(test_projects_root().to_str().unwrap())
    );
}

#[tokio::test]
async fn a_config_file_can_switch_tools_off() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("drydock.toml");
    std::fs::write(
        &config,
        format!(
            "allowed_roots = [{:?}]\ntoolsets = [\"build\"]\ndisabled_tools = [\"run\"]\n",
            test_projects_root()
        ),
    )
    .unwrap();
    let server = Server::start_with(&["--config", config.to_str().unwrap()], &[]);
    let client = legacy_client(&server.url).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "run"));
    assert!(!tools.iter().any(|t| t.name.starts_with("terminal_")));
    assert_eq!(tools.len(), 7);
    let info = client.peer_info().expect("server info");
    let instructions = info.instructions.as_deref().unwrap_or_default();
    assert!(instructions.contains("compile"), "{instructions}");
    for other in ["docs_lookup", "terminal_run", "agent_wait", "task_add"] {
        assert!(!instructions.contains(other), "{other}: {instructions}");
    }
    client.cancel().await.ok();
}

const PING: &str = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;

/// A session without a call in flight or an open stream expires after the idle timeout;
/// one holding its event stream open does not.
#[tokio::test]
async fn idle_legacy_sessions_expire_and_sessions_in_use_do_not() {
    let server = Server::start_with_config("[http]\nsession_idle_timeout_s = 2\n");
    let idle = RawSession::open(&server.url).await;
    let in_use = RawSession::open(&server.url).await;
    let _stream = in_use.open_stream().await;
    let client = legacy_client(&server.url).await;

    // What is tested is time itself: a request to the idle session would be its activity.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (status, body) = idle.post(PING).await;
    assert_eq!(status, 404, "the idle session expired: {body}");
    assert!(body.contains("Session not found"), "{body}");
    let (status, body) = in_use.post(PING).await;
    assert_eq!(status, 200, "{body}");
    client
        .list_all_tools()
        .await
        .expect("a real client is served throughout");
    client.cancel().await.ok();
}

/// With `max_sessions` reached, a new session replaces the one idle the longest; when every
/// session is in use, `initialize` gets 503 and a JSON-RPC error.
#[tokio::test]
async fn the_session_cap_replaces_the_longest_idle_session_and_refuses_when_all_are_in_use() {
    let server = Server::start_with_config("[http]\nmax_sessions = 2\n");
    let oldest = RawSession::open(&server.url).await;
    let second = RawSession::open(&server.url).await;
    let third = RawSession::open(&server.url).await;
    assert_eq!(
        oldest.post(PING).await.0,
        404,
        "the longest-idle session was replaced"
    );
    assert_eq!(second.post(PING).await.0, 200);
    assert_eq!(third.post(PING).await.0, 200);

    let second_stream = second.open_stream().await;
    let _third_stream = third.open_stream().await;
    let (status, body) = post_raw(&server.url, &[], RAW_INITIALIZE).await;
    assert_eq!(status, 503, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["id"], 1, "{body}");
    assert_eq!(error["error"]["code"], -32000, "{body}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("all 2 MCP sessions") && message.contains("max_sessions"),
        "{message}"
    );

    // Once a client goes away its session is idle again, and can be replaced.
    drop(second_stream);
    let replaced = until_true(Duration::from_secs(20), || async {
        post_raw(&server.url, &[], RAW_INITIALIZE).await.0 == 200
    })
    .await;
    assert!(replaced, "a session whose client left is replaced");
    assert_eq!(second.post(PING).await.0, 404);
    assert_eq!(third.post(PING).await.0, 200);
}

/// The error a body gets: HTTP status, JSON-RPC code, message.
async fn error_for(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let (status, text) = post_raw(url, headers, body).await;
    let message = messages_in(&text)
        .into_iter()
        .find(|m| m.get("error").is_some())
        .unwrap_or_else(|| panic!("{body}: no JSON-RPC error in {status} {text}"));
    (status, message)
}

/// Bodies rmcp could not read got 415 and a text body; known methods with unusable params
/// got -32601 "method not found". Each now gets the JSON-RPC error that says what is wrong,
/// with the request's id when it has a usable one.
#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors_saying_what_is_wrong() {
    let server = Server::start(&[]);
    let session = RawSession::open(&server.url).await;
    let in_session = [("Mcp-Session-Id", session.id.as_str())];
    let envelope_cases = [
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
            "`id` must be a string or an integer, not an object",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
            "not a boolean",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2.5,"method":"tools/list"}"#,
            "not a fractional number",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"all"}"#,
            "`params` must be an object, not a string",
            json!(3),
        ),
    ];
    let no_session: [(&str, &str); 0] = [];
    for headers in [&in_session[..], &no_session[..]] {
        for (body, expected, id) in &envelope_cases {
            let (status, error) = error_for(&server.url, headers, body).await;
            assert_eq!(status, 400, "{body}");
            assert_eq!(error["error"]["code"], -32600, "{body}: {error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains(expected), "{body}: {message}");
            assert_eq!(&error["id"], id, "{body}");
        }
    }
    let params_cases = [
        ("null", "tools/call needs `params` to be an object"),
        (
            r#"{"name":"compile","arguments":["cargo-clean"]}"#,
            "`params.arguments` must be an object",
        ),
        (
            r#"{"name":42,"arguments":{}}"#,
            "`params.name` must be a string",
        ),
        (r#"{"arguments":{}}"#, "tools/call needs `params.name`"),
    ];
    for (params, expected) in params_cases {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{params}}}"#);
        let (_, error) = error_for(&server.url, &in_session, &body).await;
        assert_eq!(error["error"]["code"], -32602, "{params}: {error}");
        assert_eq!(error["id"], "call-1", "{params}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{params}: {message}");
    }
    // A first message can be wrong too: an initialize without (some of) its params.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    ] {
        let (status, error) = error_for(&server.url, &no_session, body).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(error["error"]["code"], -32602, "{body}: {error}");
        assert_eq!(error["id"], 1, "{body}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("initialize needs params with") && message.contains("`clientInfo`"),
            "{body}: {message}"
        );
    }
    // Nothing changed: the session still serves calls.
    assert_eq!(session.post(PING).await.0, 200);
}

/// Over stdio rmcp reads a `tools/call` with unusable params as an unknown method; drydock
/// answers -32602 there too.
#[tokio::test]
async fn stdio_answers_unusable_tool_call_params_with_invalid_params() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut child = drydock_mcp()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for line in [
        RAW_INITIALIZE,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":42}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"compile","arguments":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
    ] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut errors = std::collections::BTreeMap::new();
    while errors.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("drydock answers")
            .unwrap()
            .expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_i64().filter(|id| *id > 1) {
            errors.insert(id, message["error"].clone());
        }
    }
    assert_eq!(errors[&2]["code"], -32602, "{:?}", errors[&2]);
    assert!(
        errors[&2]["message"]
            .as_str()
            .unwrap()
            .contains("`params.name` must be a string")
    );
    assert_eq!(errors[&3]["code"], -32602, "{:?}", errors[&3]);
    assert!(
        errors[&3]["message"]
            .as_str()
            .unwrap()
            .contains("`params.arguments` must be an object")
    );
    assert_eq!(errors[&4]["code"], -32601, "{:?}", errors[&4]);
}

/// Slow-loris: connections that never finish their headers, or stall half-way through a
/// body, are closed within the read timeouts (the defaults: 10 s and 30 s) while other
/// clients are served. They used to stay open for good.
#[tokio::test]
async fn stalled_connections_are_closed_while_other_clients_are_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start(&[]);
    let authority = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut stalled = Vec::new();
    for i in 0..32 {
        let mut socket = tokio::net::TcpStream::connect(&authority).await.unwrap();
        if i % 4 != 0 {
            socket
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0")
                .await
                .unwrap();
        }
        stalled.push(socket);
    }
    let mut half_body = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n{{\"jsonrpc\":\"2.0\","
    );
    half_body.write_all(head.as_bytes()).await.unwrap();

    let client = legacy_client(&server.url).await;
    client.list_all_tools().await.expect("served meanwhile");

    let mut answer = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(45), half_body.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(closed.is_ok(), "a half-sent body is cut: {answer}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    for (i, mut socket) in stalled.into_iter().enumerate() {
        let mut rest = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "stalled connection {i} was not closed");
    }
    client.list_all_tools().await.expect("still serving");
    client.cancel().await.ok();
}
