//! The MCP surface over real transports: both protocol eras over HTTP, stdio, the HTTP guards,
//! and bad input that must get a clear error and change nothing.

mod common;

use std::time::Duration;

use common::*;
use rmcp::ServiceExt;
use rmcp::model::ClientConfig;
use rmcp::transport::TokioChildProcess;
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

/// Each terminal and docs tool and the arguments it requires.
const OTHER_TOOLS: [(&str, &[&str]); 10] = [
    ("docs_index", &[]),
    ("docs_lookup", &["query"]),
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
    let root = test_projects_root();
    let mut command = tokio::process::Command::new(drydock_bin());
    command
        .arg("mcp")
        .args(["--allow-root", root.to_str().unwrap()])
        .env("RUST_LOG", "drydock=warn");
    let transport = TokioChildProcess::new(command).expect("spawn drydock mcp");
    let client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("stdio handshake");
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
            "drydock://sessions"
        ]
    );
    let projects = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "drydock://projects",
        ))
        .await
        .unwrap();
    let text = match &projects.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
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
    assert_eq!(names.len(), 3, "{names:?}");
    for name in ["fix_build", "fix_failing_test", "drive_terminal"] {
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

async fn post_raw(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

#[tokio::test]
async fn http_guards_reject_foreign_origins_bad_json_and_huge_bodies() {
    let server = Server::start(&[]);
    let (status, body) = post_raw(
        &server.url,
        &[("Origin", "http://evil.example")],
        INITIALIZE,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = post_raw(
        &server.url,
        &[("Origin", "http://localhost:3000")],
        INITIALIZE,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post_raw(&server.url, &[("Host", "evil.example")], INITIALIZE).await;
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
    let (status, _) = post_raw(&server.url, &[], INITIALIZE).await;
    assert_eq!(status, 401);
    let (status, _) = post_raw(
        &server.url,
        &[("Authorization", "Bearer wrong")],
        INITIALIZE,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = post_raw(
        &server.url,
        &[("Authorization", "Bearer s3cret-token")],
        INITIALIZE,
    )
    .await;
    assert_eq!(status, 200);
}

#[test]
fn a_non_loopback_bind_without_a_token_is_refused() {
    let output = std::process::Command::new(drydock_bin())
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
    assert_eq!(tools.len(), 6);
    client.cancel().await.ok();
    tokio::time::sleep(Duration::from_millis(10)).await;
}
