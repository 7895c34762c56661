//! What the MCP tasks extension costs (issue 50): a no-change `compile` through the task
//! path (a client that declares the extension, answered within the window) beside the plain
//! path (a client that does not), paired in one run; and the round trip of `tasks/get` on a
//! task that is working and on one that completed.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::ClientServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, ProtocolVersion, TaskStatus,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

/// A 2026-07-28 client; declaring the tasks extension when `tasks`.
async fn modern(url: &str, tasks: bool) -> Client {
    let capabilities = match tasks {
        true => ClientCapabilities::builder().enable_tasks().build(),
        false => ClientCapabilities::default(),
    };
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()),
    );
    ClientConfig::new(capabilities, Implementation::new("bench", "1"))
        .serve_with_lifecycle(
            transport,
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connect")
}

fn compile(project: &Path) -> CallToolRequestParams {
    let arguments = json!({"project_path": project.to_str().unwrap()});
    CallToolRequestParams::new("compile").with_arguments(arguments.as_object().unwrap().clone())
}

async fn timed_compile(client: &Client, project: &Path) -> Duration {
    let started = Instant::now();
    match client
        .call_tool_once(compile(project))
        .await
        .expect("compile")
    {
        CallToolResponse::Complete(result) => assert_eq!(result.is_error, Some(false)),
        other => panic!("a no-change build answers directly: {other:?}"),
    }
    started.elapsed()
}

fn report(what: &str, samples: &[Duration]) -> f64 {
    let p50 = percentile(samples, 50.0);
    println!(
        "  {what:<15} p50 {p50:7.2} ms  p90 {:7.2} ms",
        percentile(samples, 90.0)
    );
    p50
}

/// A crate whose build script waits until `go` exists in it.
fn slow_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"slow\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub fn slow() {}\n").unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    \
         while !std::path::Path::new(&dir).join(\"go\").exists() {\n        \
         std::thread::sleep(std::time::Duration::from_millis(50));\n    }\n}\n",
    )
    .unwrap();
}

async fn get_round_trips(client: &Client, id: &str, n: usize, status: TaskStatus) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let task = client
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get");
        samples.push(started.elapsed());
        assert_eq!(task.task.status(), status);
    }
    samples
}

/// `tasks/get` of `id` as raw HTTP, the body read whole and not parsed: the server's round
/// trip without the typed client's decoding (rmcp tries each result shape in turn).
async fn raw_round_trips(url: &str, id: &str, n: usize) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tasks/get",
        "params": {"taskId": id, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        }}
    })
    .to_string();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tasks/get")
            .header("mcp-name", id)
            .body(body.clone())
            .send()
            .await
            .expect("tasks/get");
        let text = response.text().await.expect("its body");
        samples.push(started.elapsed());
        assert!(text.contains("\"taskId\""), "{text}");
    }
    samples
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let url = start_server(&shutdown).await;
        let (plain, tasks) = (modern(&url, false).await, modern(&url, true).await);
        let project = test_projects().join("cargo-clean");

        let n = iterations(40);
        for client in [&plain, &tasks] {
            for _ in 0..3 {
                timed_compile(client, &project).await;
            }
        }
        let (mut without, mut with) = (Vec::new(), Vec::new());
        for i in 0..n {
            if i % 2 == 0 {
                without.push(timed_compile(&plain, &project).await);
                with.push(timed_compile(&tasks, &project).await);
            } else {
                with.push(timed_compile(&tasks, &project).await);
                without.push(timed_compile(&plain, &project).await);
            }
        }
        println!("no-change compile, {n} paired calls:");
        let (plain_p50, task_p50) = (report("plain path", &without), report("task path", &with));
        println!(
            "  ratio (p50 task path / p50 plain): {:.3}",
            task_p50 / plain_p50
        );

        let scratch = tempfile::tempdir_in(test_projects()).unwrap();
        slow_crate(scratch.path());
        let id = match tasks.call_tool_once(compile(scratch.path())).await.unwrap() {
            CallToolResponse::Task(created) => created.task.task_id,
            other => panic!("a waiting build becomes a task: {other:?}"),
        };
        let gets = iterations(1000);
        println!("tasks/get, {gets} round trips:");
        report(
            "working",
            &get_round_trips(&tasks, &id, gets, TaskStatus::Working).await,
        );
        report("working, raw", &raw_round_trips(&url, &id, gets).await);
        std::fs::write(scratch.path().join("go"), "").unwrap();
        while tasks
            .get_task(GetTaskParams::new(&id))
            .await
            .unwrap()
            .task
            .status()
            == TaskStatus::Working
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        report(
            "completed",
            &get_round_trips(&tasks, &id, gets, TaskStatus::Completed).await,
        );
        report("completed, raw", &raw_round_trips(&url, &id, gets).await);
        shutdown.cancel();
    });
}
