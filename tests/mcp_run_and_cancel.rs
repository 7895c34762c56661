//! `run` end to end, and the promise behind every tool: timeouts, cancellation and client
//! disconnects leave no process behind; concurrent calls on one project queue up.

mod common;

use std::time::Duration;

use common::*;
use rmcp::ClientLifecycleMode;
use rmcp::model::ClientRequest;
use serde_json::json;

fn clean() -> String {
    test_project("cargo-clean").display().to_string()
}

#[tokio::test]
async fn run_returns_exit_code_stdout_stderr_and_uses_stdin() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let report = call_ok(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--echo-stdin", "two words", "ünï"], "stdin": "hello\n"}),
    )
    .await;
    assert_eq!(report["status"], "ok", "{report}");
    assert_eq!(report["exit_code"], 0);
    let stdout = report["stdout"].as_str().unwrap();
    assert!(
        stdout.starts_with("cargo-clean: hello on stdout\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"args: ["--echo-stdin", "two words", "ünï"]"#),
        "{stdout}"
    );
    assert!(stdout.contains("stdin: hello\n"), "{stdout}");
    assert_eq!(report["stderr"], "cargo-clean: hello on stderr\n");

    let failed = call_ok(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--exit", "3"]}),
    )
    .await;
    assert_eq!(failed["status"], "error");
    assert_eq!(failed["exit_code"], 3);

    // Without stdin the program sees an empty, closed stdin instead of hanging.
    let empty = call_ok(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--echo-stdin"]}),
    )
    .await;
    assert_eq!(empty["status"], "ok");
    assert!(
        empty["stdout"].as_str().unwrap().contains("stdin: \n")
            || empty["stdout"].as_str().unwrap().ends_with("stdin: "),
        "{empty}"
    );

    let task = call_ok(
        &client,
        "run",
        json!({"project_path": clean(), "task": "version"}),
    )
    .await;
    assert_eq!(task["status"], "ok");
    assert!(
        task["stdout"].as_str().unwrap().starts_with("cargo "),
        "{task}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn flooding_output_is_capped_with_head_and_tail() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let report = call_ok(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--flood", "8"]}),
    )
    .await;
    assert_eq!(report["status"], "ok");
    let stdout = report["stdout"].as_str().unwrap();
    assert!(
        stdout.len() < 1024 * 1024 + 200,
        "capped: {} bytes",
        stdout.len()
    );
    assert!(stdout.starts_with("cargo-clean: hello on stdout"));
    assert!(stdout.contains(" bytes elided ...]"), "marker present");
    assert!(stdout.ends_with("x\n"), "tail kept");
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_timeout_kills_the_program_and_its_grandchildren() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    // Built first, so that the 2 s below are the program's own even on a busy machine.
    call_ok(&client, "compile", json!({"project_path": clean()})).await;
    for flag in ["--sleep-forever", "--spawn-grandchild"] {
        let report = call_ok(
            &client,
            "run",
            json!({"project_path": clean(), "args": [flag], "timeout_ms": 2000}),
        )
        .await;
        assert_eq!(report["status"], "timeout", "{flag}: {report}");
        assert!(
            report["stdout"]
                .as_str()
                .unwrap()
                .contains("hello on stdout"),
            "output so far is kept"
        );
        let left = server.wait_for_no_descendants(Duration::from_secs(10));
        assert!(left.is_empty(), "{flag} left processes behind: {left:?}");
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn an_explicit_cancellation_stops_the_process_group() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(tool_call(
        "run",
        json!({"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000}),
    )));
    let handle = client
        .send_cancellable_request(request, Default::default())
        .await
        .expect("request sent");
    assert!(
        eventually(Duration::from_secs(120), || server.grandchild_running()).await,
        "program and grandchild started"
    );
    handle
        .cancel(Some("test".into()))
        .await
        .expect("cancel sent");
    let left = server.wait_for_no_descendants(Duration::from_secs(15));
    assert!(left.is_empty(), "cancel left processes behind: {left:?}");
    client.cancel().await.ok();
}

/// Sends a raw 2026-07-28 `tools/call` of `run --spawn-grandchild` (as Claude Code would) on
/// a socket of its own, so that dropping the socket is exactly a client going away.
async fn send_stateless_run(url: &str, progress_token: Option<&str>) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    if let Some(token) = progress_token {
        meta["progressToken"] = json!(token);
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "run",
            "arguments": {"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000},
            "_meta": meta
        }
    })
    .to_string();
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: run\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(authority).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    socket
}

/// In the 2026-07-28 era a client cancels by dropping the request: that must stop the
/// children, whether the response stream had started (progress was sent) or not.
#[tokio::test]
async fn a_dropped_stateless_request_stops_the_process_group() {
    use tokio::io::AsyncReadExt;
    let server = Server::start(&[]);

    // With a progress token the SSE response starts at once; the client then walks away.
    let mut socket = send_stateless_run(&server.url, Some("p1")).await;
    let mut head = vec![0u8; 4096];
    let read = socket.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..read]).starts_with("HTTP/1.1 200"));
    assert!(
        eventually(Duration::from_secs(120), || server.grandchild_running()).await,
        "program and grandchild started"
    );
    drop(socket);
    let left = server.wait_for_no_descendants(Duration::from_secs(20));
    assert!(
        left.is_empty(),
        "a dropped stream left processes behind: {left:?}"
    );

    // Without one nothing is sent before the result; the client gives up before any answer.
    let socket = send_stateless_run(&server.url, None).await;
    assert!(
        eventually(Duration::from_secs(120), || server.grandchild_running()).await,
        "program and grandchild started"
    );
    drop(socket);
    let left = server.wait_for_no_descendants(Duration::from_secs(20));
    assert!(
        left.is_empty(),
        "an abandoned request left processes behind: {left:?}"
    );
}

#[tokio::test]
async fn calls_on_one_project_queue_and_report_their_position() {
    let server = Server::start(&[]);
    let recorder = ProgressRecorder::default();
    let client = connect(
        &server.url,
        ClientLifecycleMode::Initialize,
        recorder.clone(),
    )
    .await;
    let blocker = client.clone();
    let project = clean();
    let first = tokio::spawn(async move {
        call(
            &blocker,
            "run",
            json!({"project_path": project, "args": ["--sleep-forever"], "timeout_ms": 4000}),
        )
        .await
    });
    assert!(
        eventually(Duration::from_secs(120), || !server
            .descendants()
            .is_empty())
        .await,
        "first call running"
    );
    let second = call_with_progress(
        &client,
        "compile",
        json!({"project_path": clean()}),
        "queued",
    )
    .await;
    let first = first.await.unwrap();
    assert_eq!(first.structured_content.unwrap()["status"], "timeout");
    assert_eq!(second.structured_content.unwrap()["status"], "ok");
    let messages = recorder.snapshot();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("queued: 1 call(s) ahead")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("done")),
        "{messages:?}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn different_projects_do_not_wait_for_each_other() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let blocker = client.clone();
    let first = tokio::spawn(async move {
        call(
            &blocker,
            "run",
            json!({"project_path": clean(), "args": ["--sleep-forever"], "timeout_ms": 60000}),
        )
        .await
    });
    assert!(
        eventually(Duration::from_secs(120), || !server
            .descendants()
            .is_empty())
        .await
    );
    // Finishes while the other project's call is still running.
    let info = call_ok(
        &client,
        "project_info",
        json!({"project_path": "cargo-errors"}),
    )
    .await;
    assert_eq!(info["name"], "cargo-errors");
    assert!(!first.is_finished());
    first.abort();
    client.cancel().await.ok();
}

#[tokio::test]
async fn stopping_the_server_stops_the_programs_it_runs() {
    let mut server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let running = tokio::spawn(async move {
        client
            .call_tool(tool_call(
                "run",
                json!({"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000}),
            ))
            .await
    });
    assert!(eventually(Duration::from_secs(120), || server.grandchild_running()).await);
    assert!(
        server.terminate(Duration::from_secs(20)),
        "server exits on SIGTERM"
    );
    let left = server.wait_for_no_descendants(Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "stopping the server left processes behind: {left:?}"
    );
    running.abort();
}
