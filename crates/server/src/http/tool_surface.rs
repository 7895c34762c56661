//! What an MCP client over HTTP sees of the tools: `tools/list`, with and without a task's
//! token, and how failing calls answer (a protocol error's code, or a result with `isError`).
//! `DRYDOCK_TOOL_SURFACE=FILE` writes all of it to FILE, for comparing two builds.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::app::{App, Mode};
use crate::config::{Config, Overrides};
use crate::tasks::TaskScope;

type Client = RunningService<RoleClient, ClientConfig>;

/// A served drydock with every toolset, on a free port: its app and its MCP URL.
async fn served(home: &Path) -> (Arc<App>, String, CancellationToken) {
    let toml = "toolsets = [\"build\", \"terminal\", \"docs\", \"agents\", \"tasks\"]\n";
    std::fs::write(home.join("drydock.toml"), toml).unwrap();
    let overrides = Overrides {
        allow_roots: vec![home.to_path_buf()],
        ..Default::default()
    };
    let config = Config::resolve(&overrides, &|_| None, home).unwrap();
    let app = App::start(Arc::new(config), Mode::Stdio).await;
    let stop = CancellationToken::new();
    let routers = super::router(
        app.clone(),
        &stop,
        None,
        crate::dashboard::Login::new(false),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let serving = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, routers.main)
            .with_graceful_shutdown(serving.cancelled_owned())
            .await
    });
    (app, url, stop)
}

async fn client(url: &str, token: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Initialize,
        )
        .await
        .unwrap()
}

/// A call's answer as the client reads it: the result, or the protocol error's code and
/// message.
async fn answer(client: &Client, name: &str, arguments: Value) -> Value {
    let request = CallToolRequestParams::new(name.to_string())
        .with_arguments(arguments.as_object().unwrap().clone());
    match client.call_tool(request).await {
        Ok(result) => json!({ "result": result }),
        Err(rmcp::ServiceError::McpError(error)) => {
            json!({ "error": { "code": error.code.0, "message": error.message } })
        }
        Err(other) => panic!("{name}: {other}"),
    }
}

/// `tools/list` as JSON.
async fn listed(client: &Client) -> Value {
    serde_json::to_value(client.list_all_tools().await.unwrap()).unwrap()
}

/// Whether an answer is a result with `isError`, a protocol error of `code`, or neither.
fn shape(answer: &Value) -> String {
    match (&answer["result"], &answer["error"]["code"]) {
        (result, Value::Null) if result["isError"] == true => "tool error".into(),
        (_, Value::Null) => "result".into(),
        (_, code) => format!("protocol error {code}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_listed_and_refused_as_before() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    let (app, url, stop) = served(&home_path).await;
    let project = home_path.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let token = app.tasks().tokens().issue(TaskScope {
        task_id: "t1".into(),
        claim: 1,
        project: project.clone(),
        dir: project.clone(),
    });
    let person = client(&url, None).await;
    let agent = client(&url, Some(&token)).await;

    let calls: Vec<(&str, &Client, &str, Value)> = vec![
        ("unknown tool", &person, "no_such_tool", json!({})),
        (
            "argument of the wrong type",
            &person,
            "compile",
            json!({"project_path": 5}),
        ),
        ("argument missing", &person, "docs_read", json!({})),
        (
            "path outside the allowed roots",
            &person,
            "project_info",
            json!({"project_path": "/"}),
        ),
        (
            "task token: a tool not for it",
            &agent,
            "terminal_list",
            json!({}),
        ),
        (
            "task token: another task",
            &agent,
            "task_show",
            json!({"task_id": "t2"}),
        ),
        (
            "task token: memory of commands",
            &agent,
            "history_search",
            json!({"query": "x", "kind": "command"}),
        ),
        (
            "task token: a path outside its directory",
            &agent,
            "compile",
            json!({"project_path": "/"}),
        ),
    ];
    let mut answers = serde_json::Map::new();
    for (what, client, name, arguments) in calls {
        answers.insert(what.into(), answer(client, name, arguments).await);
    }
    let surface = json!({
        "tools/list": listed(&person).await,
        "tools/list under a task's token": listed(&agent).await,
        "calls": answers,
    });
    if let Ok(file) = std::env::var("DRYDOCK_TOOL_SURFACE") {
        let text = serde_json::to_string_pretty(&surface).unwrap();
        let text = text.replace(&home_path.display().to_string(), "<home>");
        std::fs::write(file, text).unwrap();
    }

    let shapes: Vec<(String, String)> = answers
        .iter()
        .map(|(what, answer)| (what.clone(), shape(answer)))
        .collect();
    let expected = [
        ("unknown tool", "protocol error -32602"),
        ("argument of the wrong type", "tool error"),
        ("argument missing", "tool error"),
        ("path outside the allowed roots", "tool error"),
        ("task token: a tool not for it", "tool error"),
        ("task token: another task", "tool error"),
        ("task token: memory of commands", "tool error"),
        ("task token: a path outside its directory", "tool error"),
    ];
    for (what, shape) in expected {
        let found = shapes
            .iter()
            .find(|(w, _)| w == what)
            .map(|(_, s)| s.as_str());
        assert_eq!(found, Some(shape), "{what}: {:#}", answers[what]);
    }
    stop.cancel();
    app.shutdown().await;
}
