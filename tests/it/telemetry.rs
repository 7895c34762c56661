//! drydock's traces (`[telemetry] otlp_endpoint`), received by an OTLP/HTTP collector in the
//! test that decodes the real protobuf: a span per tool call, joined to the trace its caller
//! names in `_meta`; a task's tree (its own span, its attempts with what they spent, the
//! checks of its results and its landing passes) on the real Claude Code against the
//! scripted fake; and a collector that does not answer: drydock goes on and says so once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use rmcp::model::{MetaObject, RequestMetaObject};
use serde_json::{Value, json};

use crate::landing::task;
use crate::mcp_spawn::spawning_server;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::lab_crate;

/// One span as the collector decoded it.
#[derive(Debug, Clone)]
pub struct Received {
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root.
    pub parent: String,
    pub name: String,
    pub attributes: BTreeMap<String, String>,
    /// The status message of a span that failed.
    pub error: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    fn number(&self, key: &str) -> i64 {
        self.attribute(key)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key} is not a number in {self:#?}"))
    }
}

/// An OTLP/HTTP collector on 127.0.0.1, in a thread and runtime of its own.
pub struct Collector {
    pub url: String,
    spans: Arc<Mutex<Vec<Received>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Collector {
    pub fn start() -> Collector {
        let spans: Arc<Mutex<Vec<Received>>> = Arc::default();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let kept = spans.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = axum::Router::new()
                    .route("/v1/traces", axum::routing::post(take))
                    .with_state(kept);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        Collector {
            url: format!("http://{addr}"),
            spans,
            stop: Some(stop),
        }
    }

    pub fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans once `enough` holds of them; panics after `limit`.
    pub async fn until(
        &self,
        what: &str,
        limit: Duration,
        enough: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        until_read(limit, || async { self.spans() }, |spans| enough(spans))
            .await
            .unwrap_or_else(|spans| panic!("{what}: never; the collector received {spans:#?}"))
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn take(State(spans): State<Arc<Mutex<Vec<Received>>>>, body: Bytes) -> impl IntoResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let text = |value: &Option<Any>| match value {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(n)) => n.to_string(),
        Some(Any::DoubleValue(x)) => x.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    };
    let mut received = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(&kv.value.as_ref().and_then(|v| v.value.clone())))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                let attributes = span
                    .attributes
                    .iter()
                    .map(|kv| {
                        let value = kv.value.as_ref().and_then(|v| v.value.clone());
                        (kv.key.clone(), text(&value))
                    })
                    .collect();
                let error = span
                    .status
                    .as_ref()
                    .filter(|status| status.code == 2)
                    .map(|status| status.message.clone());
                received.push(Received {
                    service: service.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    attributes,
                    error,
                    start_ns: span.start_time_unix_nano,
                    end_ns: span.end_time_unix_nano,
                });
            }
        }
    }
    spans.lock().unwrap().extend(received);
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    ([(header::CONTENT_TYPE, "application/x-protobuf")], answer).into_response()
}

fn telemetry_config(url: &str) -> String {
    format!("[telemetry]\notlp_endpoint = \"{url}\"\n")
}

/// `name` called with the caller's trace in `_meta`.
async fn call_in_trace(client: &Client, name: &str, arguments: Value, traceparent: &str) -> Value {
    let mut meta = MetaObject::new();
    meta.set_traceparent(traceparent);
    meta.set_tracestate("lab=1");
    let mut params = tool_call(name, arguments);
    params.meta = Some(RequestMetaObject(meta));
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{name}: {result:?}");
    result.structured_content.unwrap()
}

fn tool_spans<'s>(spans: &'s [Received], tool: &str) -> Vec<&'s Received> {
    spans
        .iter()
        .filter(|s| s.attribute("mcp.tool") == Some(tool))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tool_call_is_a_span_joined_to_the_callers_trace() {
    let collector = Collector::start();
    let server = Server::start_with_config(&telemetry_config(&collector.url));
    let client = modern_client(&server.url).await;
    let project = path_arg(&test_projects_root().join("cargo-clean"));

    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{caller_trace}-{caller_span}-01");
    call_in_trace(
        &client,
        "project_info",
        json!({"project_path": project}),
        &traceparent,
    )
    .await;
    call_ok(&client, "terminal_list", json!({})).await;
    let refused = call_err(&client, "project_info", json!({"project_path": "/"})).await;
    assert!(refused.contains("allowed"), "{refused}");
    // A malformed traceparent is no parent: the call starts a trace of its own.
    call_in_trace(&client, "terminal_list", json!({}), "00-not-a-trace-01").await;

    let spans = collector
        .until("four tool calls", Duration::from_secs(60), |spans| {
            tool_spans(spans, "project_info").len() == 2
                && tool_spans(spans, "terminal_list").len() == 2
        })
        .await;
    let project_info = tool_spans(&spans, "project_info");
    let joined = project_info
        .iter()
        .find(|s| s.trace_id == caller_trace)
        .unwrap_or_else(|| panic!("no call joined the caller's trace: {spans:#?}"));
    assert_eq!(joined.parent, caller_span, "{joined:#?}");
    assert_eq!(joined.name, "tools/call project_info");
    assert_eq!(joined.service, "drydock");
    assert_eq!(joined.attribute("mcp.status"), Some("ok"), "{joined:#?}");
    assert_eq!(joined.error, None);
    assert!(joined.end_ns > joined.start_ns, "{joined:#?}");
    let failed = project_info
        .iter()
        .find(|s| s.trace_id != caller_trace)
        .unwrap();
    assert_eq!(failed.parent, "", "its own trace: {failed:#?}");
    assert_eq!(failed.attribute("mcp.status"), Some("error"));
    assert_eq!(failed.error.as_deref(), Some("error"), "{failed:#?}");
    for listed in tool_spans(&spans, "terminal_list") {
        assert_eq!(listed.parent, "", "{listed:#?}");
        assert_ne!(listed.trace_id, caller_trace);
        assert_eq!(listed.attribute("mcp.status"), Some("ok"));
    }
    // Nothing but drydock's own spans is exported: no log line, no dependency's span.
    assert!(
        spans.iter().all(|s| s.name.starts_with("tools/call ")),
        "{spans:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_does_not_answer_is_said_once_and_drydock_goes_on() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("drydock.toml");
    std::fs::write(&config, telemetry_config(&url)).unwrap();
    let log = dir.path().join("drydock.log");
    let root = test_projects_root();
    let server = Server::start_with_stderr(
        &[
            "--allow-root",
            root.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let client = modern_client(&server.url).await;
    // Calls over several of the exporter's rounds (one every 2 s): each round fails.
    let until = Instant::now() + Duration::from_secs(9);
    let mut calls = 0;
    while Instant::now() < until {
        call_ok(&client, "terminal_list", json!({})).await;
        calls += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(calls > 10, "drydock answered {calls} calls");
    let said = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|line| line.contains("traces are dropped"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(Duration::from_secs(30), || !said().is_empty()).await,
        "no warning: {}",
        std::fs::read_to_string(&log).unwrap()
    );
    let warnings = said();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].contains(&url), "{warnings:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_trace_holds_its_attempts_with_their_usage_its_checks_and_its_landing() {
    let collector = Collector::start();
    let (cli, home, _fake, tmux_dir) = claude_home("claude-traced");
    lab_crate(&home.project, "pub fn one() -> u32 {\n    1\n}\n", &[]);
    let config = format!(
        "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_batch = 1\n\
         [tasks.policies]\ntrusted = [\"Bash\"]\n{}",
        telemetry_config(&collector.url)
    );
    let server = spawning_server(&home, &cli, tmux_dir.path(), &config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    // Its first result fails its own test and goes back; the second lands.
    let add = "mkdir -p tests && printf '#[test]\\nfn two() {\\n    assert_eq!(1 + 1, 3);\\n}\\n' > tests/two.rs";
    let fix = "sed -i 's/1 + 1, 3/1 + 1, 2/' tests/two.rs";
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [task("adds a test", &project, add, Some(fix))]}),
    )
    .await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;

    let shown = until_read(
        Duration::from_secs(600),
        || call_ok(&client, "task_show", json!({"task_id": id})),
        |shown| shown["task"]["landing"]["state"]["state"] == "landed",
    )
    .await
    .unwrap_or_else(|shown| panic!("never landed: {shown:#}"));
    let landed = shown["task"].clone();
    assert_eq!(landed["attempts"], 2, "{landed:#}");
    let usage = landed["usage"]["attempts"].as_array().unwrap().clone();

    let of_task = |spans: &[Received], part: &str| -> Vec<Received> {
        let mut found: Vec<Received> = spans
            .iter()
            .filter(|s| {
                s.attribute("drydock.task.id") == Some(id.as_str())
                    && s.attribute("drydock.task.part") == Some(part)
            })
            .cloned()
            .collect();
        found.sort_by_key(|s| s.start_ns);
        found
    };
    let spans = collector
        .until("the task's tree", Duration::from_secs(120), |spans| {
            of_task(spans, "attempt").len() == 2
                && of_task(spans, "checks").len() == 2
                && of_task(spans, "landing")
                    .iter()
                    .any(|s| s.attribute("drydock.landing.state") == Some("landed"))
                && of_task(spans, "task")
                    .iter()
                    .any(|s| s.attribute("drydock.task.attempts") == Some("2"))
        })
        .await;

    // One trace: the task's own span at its root, every part beneath it.
    let roots = of_task(&spans, "task");
    let root = roots
        .iter()
        .rfind(|s| s.attribute("drydock.task.attempts") == Some("2"))
        .unwrap();
    assert_eq!(root.parent, "", "{root:#?}");
    assert!(
        roots
            .iter()
            .all(|r| (r.trace_id.as_str(), r.span_id.as_str())
                == (root.trace_id.as_str(), root.span_id.as_str()))
    );
    assert_eq!(root.name, "adds a test");
    for part in ["attempt", "checks", "landing"] {
        for span in of_task(&spans, part) {
            assert_eq!(
                (span.trace_id.as_str(), span.parent.as_str()),
                (root.trace_id.as_str(), root.span_id.as_str()),
                "{span:#?}"
            );
        }
    }

    // Each attempt's usage is what task_show says it spent, and the task's is their sum.
    let attempts = of_task(&spans, "attempt");
    let mut total = 0;
    for (span, counted) in attempts.iter().zip(&usage) {
        let tokens: i64 = counted["tokens"]
            .as_object()
            .unwrap()
            .values()
            .map(|t| {
                ["input", "output", "cache_read", "cache_write"]
                    .iter()
                    .map(|k| t[*k].as_i64().unwrap())
                    .sum::<i64>()
            })
            .sum();
        assert!(tokens > 0, "{counted:#}");
        assert_eq!(
            span.number("drydock.tokens"),
            tokens,
            "{span:#?}\n{counted:#}"
        );
        assert_eq!(
            span.number("drydock.attempt"),
            counted["attempt"].as_i64().unwrap()
        );
        assert!(
            span.attribute("gen_ai.request.model").is_some(),
            "{span:#?}"
        );
        total += tokens;
    }
    assert_eq!(root.number("drydock.tokens"), total, "{root:#?}");
    assert!(root.attribute("drydock.cost_usd").is_some(), "{root:#?}");

    // The first result's checks failed on its test; the second's passed.
    let checks = of_task(&spans, "checks");
    assert_eq!(
        checks[0].attribute("drydock.check.test"),
        Some("failed"),
        "{checks:#?}"
    );
    assert!(
        checks[0]
            .error
            .as_deref()
            .unwrap_or_default()
            .starts_with("test"),
        "{checks:#?}"
    );
    assert_eq!(
        checks[1].attribute("drydock.check.test"),
        Some("passed"),
        "{checks:#?}"
    );
    assert_eq!(checks[1].error, None);
    let landings = of_task(&spans, "landing");
    assert_eq!(
        landings[0].attribute("drydock.landing.state"),
        Some("sent_back"),
        "{landings:#?}"
    );
    assert!(landings[0].error.is_some());
    let last = landings.last().unwrap();
    assert_eq!(
        last.attribute("drydock.landing.state"),
        Some("landed"),
        "{landings:#?}"
    );
    assert_eq!(last.attribute("drydock.landing.sent_back"), Some("1"));

    // The agent's own task_complete calls are tool calls like any other.
    let completes = tool_spans(&spans, "task_complete");
    assert_eq!(completes.len(), 2, "{completes:#?}");
    drop(client);
    no_agent_left(&home, tmux_dir.path(), "the task landed").await;
}
