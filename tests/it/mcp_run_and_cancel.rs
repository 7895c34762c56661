//! `run` end to end, and the promise behind every tool: timeouts, cancellation and client
//! disconnects leave no process behind; concurrent calls on one project queue up.

use std::time::Duration;

use crate::support::*;
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
        server.assert_no_descendants_within(
            Duration::from_secs(10),
            &format!("{flag} left processes behind"),
        );
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn an_explicit_cancellation_stops_the_process_group() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let handle = start_call(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000}),
    )
    .await;
    server
        .assert_grandchild_starts("program and grandchild started")
        .await;
    handle
        .cancel(Some("test".into()))
        .await
        .expect("cancel sent");
    server.assert_no_descendants_within(Duration::from_secs(15), "cancel left processes behind");
    client.cancel().await.ok();
}

/// Sends a raw 2026-07-28 `tools/call` of `run --spawn-grandchild` (as Claude Code would) on
/// a socket of its own, so that dropping the socket is exactly a client going away.
async fn send_stateless_run(url: &str, progress_token: Option<&str>) -> tokio::net::TcpStream {
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
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: run\r\n";
    post_on_own_socket(url, headers, &body).await
}

/// POSTs `body` to `url` with the extra `headers` (each ending in CRLF) on a new socket.
async fn post_on_own_socket(url: &str, headers: &str, body: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(authority).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    socket
}

/// Sends `tools/call` `run` with `arguments` (id 7) in a legacy session, on a socket of its
/// own.
async fn send_session_run(
    session: &RawSession,
    arguments: serde_json::Value,
) -> tokio::net::TcpStream {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "run", "arguments": arguments}
    })
    .to_string();
    let headers = format!(
        "Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-11-25\r\n",
        session.id
    );
    post_on_own_socket(&session.url, &headers, &body).await
}

/// Reads from `socket` until `wanted` shows up in what was read; returns all of it.
async fn read_until(socket: &mut tokio::net::TcpStream, wanted: &str) -> String {
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    let mut buffer = vec![0u8; 4096];
    while !text.contains(wanted) {
        let read = tokio::time::timeout(Duration::from_secs(60), socket.read(&mut buffer))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(read > 0, "connection closed before {wanted:?}: {text}");
        text.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
    text
}

/// True while the server still holds its end of the connection from `client_port` open
/// after the client closed it (TCP state CLOSE_WAIT): it has not noticed the client left.
fn server_holds_closed_connection(client_port: u16) -> bool {
    const CLOSE_WAIT: &str = "08";
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let remote_port = fields
            .get(2)
            .and_then(|address| address.rsplit_once(':'))
            .and_then(|(_, port)| u16::from_str_radix(port, 16).ok());
        remote_port == Some(client_port) && fields.get(3) == Some(&CLOSE_WAIT)
    })
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
    server
        .assert_grandchild_starts("program and grandchild started")
        .await;
    drop(socket);
    server.assert_no_descendants_within(
        Duration::from_secs(20),
        "a dropped stream left processes behind",
    );

    // Without one nothing is sent before the result; the client gives up before any answer.
    let socket = send_stateless_run(&server.url, None).await;
    server
        .assert_grandchild_starts("program and grandchild started")
        .await;
    drop(socket);
    server.assert_no_descendants_within(
        Duration::from_secs(20),
        "an abandoned request left processes behind",
    );
}

/// A legacy-era client whose connection drops mid-call is a cancellation too (it used to
/// leave the program running until its timeout), and the session stays usable.
#[tokio::test]
async fn a_dropped_connection_in_a_legacy_session_stops_the_process_group() {
    let server = Server::start(&[]);
    let session = RawSession::open(&server.url).await;
    let mut socket = send_session_run(
        &session,
        json!({"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000}),
    )
    .await;
    let head = read_until(&mut socket, "\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    server
        .assert_grandchild_starts("program and grandchild started")
        .await;
    drop(socket);
    server.assert_no_descendants_within(
        Duration::from_secs(30),
        "a dropped connection left processes behind",
    );
    let (status, body) = session
        .post(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        messages_in(&body)
            .iter()
            .any(|m| m["id"] == 8 && m["result"].is_object()),
        "{body}"
    );
}

/// A client whose connection broke may resume the call's stream (GET with Last-Event-ID):
/// the call goes on and its result arrives on the resumed stream.
#[tokio::test]
async fn a_call_resumed_with_last_event_id_is_not_cancelled() {
    let server = Server::start(&[]);
    let session = RawSession::open(&server.url).await;
    let build = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"compile","arguments":{"project_path": clean()}}});
    let (status, body) = session.post(&build.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let mut socket = send_session_run(
        &session,
        json!({"project_path": clean(), "args": ["--sleep-forever"], "timeout_ms": 25000}),
    )
    .await;
    let priming = read_until(&mut socket, "\nretry:").await;
    let event_id = priming
        .lines()
        .find_map(|line| line.strip_prefix("id:"))
        .expect("the priming event has an id")
        .trim()
        .to_string();
    assert!(
        eventually(Duration::from_secs(60), || !server.descendants().is_empty()).await,
        "program started"
    );
    let client_port = socket.local_addr().unwrap().port();
    drop(socket);
    // Resume only once the server noticed the client left, so the call is in its grace time.
    assert!(
        eventually(Duration::from_secs(30), || !server_holds_closed_connection(
            client_port
        ))
        .await,
        "the server notices the dropped connection"
    );
    let resumed = session.resume_stream(&event_id).await;
    assert_eq!(resumed.status().as_u16(), 200);
    let body = tokio::time::timeout(Duration::from_secs(60), resumed.text())
        .await
        .expect("the resumed stream ends with the result")
        .unwrap();
    let result = messages_in(&body)
        .into_iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("no result on the resumed stream: {body}"));
    assert_eq!(
        result["result"]["structuredContent"]["status"], "timeout",
        "the call ran to its own timeout: {result}"
    );
}

/// rmcp closed a legacy session 300 s after its last message, with the silent call in it
/// (`sleep 330` got no result); drydock's own idle expiry (2 s here) never closes a session
/// with a call in flight, in either era. The read timeouts (1 s) do not cut long responses.
#[tokio::test]
async fn calls_outlive_the_session_idle_timeout_in_both_eras() {
    let server = Server::start_with_config(
        "[http]\nsession_idle_timeout_s = 2\nheader_read_timeout_s = 1\nbody_read_timeout_s = 1\n",
    );
    let modern = modern_client(&server.url).await;
    call_ok(&modern, "compile", json!({"project_path": clean()})).await;
    let silent_run =
        json!({"project_path": clean(), "args": ["--sleep-forever"], "timeout_ms": 5000});

    let session = RawSession::open(&server.url).await;
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run","arguments": silent_run}});
    let (status, body) = session.post(&call.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let result = messages_in(&body)
        .into_iter()
        .find(|m| m["id"] == 3)
        .unwrap_or_else(|| panic!("no result: {body}"));
    assert_eq!(
        result["result"]["structuredContent"]["status"], "timeout",
        "{result}"
    );
    let (status, _) = session
        .post(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(status, 200, "the session outlived the call");

    for client in [legacy_client(&server.url).await, modern] {
        let report = call_ok(&client, "run", silent_run.clone()).await;
        assert_eq!(report["status"], "timeout", "{report}");
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn calls_on_one_project_queue_and_report_their_position() {
    let server = Server::start(&[]);
    let (client, recorder) = progress_client(&server.url).await;
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
    server
        .assert_grandchild_starts("program and grandchild started")
        .await;
    assert!(
        server.terminate(Duration::from_secs(20)),
        "server exits on SIGTERM"
    );
    server.assert_no_descendants_within(
        Duration::from_secs(5),
        "stopping the server left processes behind",
    );
    running.abort();
}

/// `drydock mcp` ends when its client closes stdin; a build or program still running then
/// ends with it, grandchildren included.
#[tokio::test]
async fn closing_stdio_stops_every_child_of_drydock_mcp() {
    let marker = unique_marker();
    let mut command = drydock_mcp();
    command.env(MARKER_VAR, &marker);
    let client = stdio_client(command).await;
    let _pending = start_call(
        &client,
        "run",
        json!({"project_path": clean(), "args": ["--spawn-grandchild"], "timeout_ms": 120000}),
    )
    .await;
    assert!(
        eventually(Duration::from_secs(120), || marked_sleep_running(&marker)).await,
        "program and grandchild started"
    );
    client.cancel().await.ok();
    let gone = eventually(Duration::from_secs(15), || {
        marked_processes(&marker).is_empty()
    })
    .await;
    assert!(gone, "left behind: {:?}", marked_processes(&marker));
}
