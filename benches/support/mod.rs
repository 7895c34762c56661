//! Shared by the benchmarks: an in-process drydock HTTP server and statistics.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use drydock::app::{App, Mode};
use drydock::config::{Config, Overrides};
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A new bash in a drydock PTY (in `test-projects/`); its session name.
pub async fn new_shell(client: &Client) -> String {
    let created = call(
        client,
        "terminal_create",
        json!({"cwd": test_projects(), "backend": "pty"}),
    )
    .await;
    created["name"].as_str().unwrap().to_string()
}

pub fn test_projects() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test-projects")
        .canonicalize()
        .expect("test-projects")
}

/// This benchmark's data directory, emptied when the run first asks for it: in cargo's
/// target tmp dir, not in the checkout's `test-projects/.drydock` where a data dir resolved
/// from the projects would land.
pub fn data_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let bench = std::env::current_exe().expect("the bench binary");
        let name = bench.file_stem().expect("a file name").to_string_lossy();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("data-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the bench's data dir");
        dir
    })
}

pub fn config() -> Arc<Config> {
    let overrides = Overrides {
        allow_roots: vec![test_projects()],
        bind: Some("127.0.0.1:0".into()),
        data_dir: Some(data_dir().to_path_buf()),
        ..Default::default()
    };
    Arc::new(Config::resolve(&overrides, &|_| None, &test_projects()).expect("config"))
}

/// The app the benchmarks' servers run, as `drydock serve` starts it.
pub async fn app() -> Arc<App> {
    App::start(config(), Mode::Server).await
}

/// Serves MCP on a free loopback port until the token is cancelled; returns the URL.
pub async fn start_server(shutdown: &CancellationToken) -> String {
    serve(app().await, shutdown).await
}

/// Serves `app` over MCP on a free loopback port until the token is cancelled; returns the
/// URL.
pub async fn serve(app: Arc<App>, shutdown: &CancellationToken) -> String {
    let header_read_timeout = app.config().http.header_read_timeout;
    let login = drydock::dashboard::Login::new(false);
    let router = drydock::http::router(app, shutdown, None, login).main;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(drydock::http::serve(
        listener,
        router,
        header_read_timeout,
        shutdown.clone(),
        // As `drydock serve` without a token: each connection's owner is looked up.
        drydock::http::Peers::own_user(),
    ));
    url
}

pub type Client = RunningService<RoleClient, ClientConfig>;

pub async fn connect(url: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()),
    );
    ClientConfig::default()
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .expect("connect")
}

pub async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    call_with_text(client, tool, arguments).await.0
}

/// The structured result and the text rendering (what most clients show the model).
#[allow(dead_code)] // each bench binary compiles this module on its own
pub async fn call_with_text(client: &Client, tool: &str, arguments: Value) -> (Value, String) {
    let Value::Object(arguments) = arguments else {
        panic!("object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false), "{tool}: {:?}", result.content);
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (result.structured_content.expect("structured"), text)
}

pub fn iterations(default: usize) -> usize {
    std::env::var("DRYDOCK_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Percentile (0..=100) of durations, in milliseconds.
pub fn percentile(samples: &[Duration], pct: f64) -> f64 {
    let mut sorted: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = ((pct / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The bytes the files below `dir` take (a missing directory takes none).
pub fn dir_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Copies the tree `from` to `to`, leaving out whatever lies below a folder named in
/// `leave_out`.
#[allow(dead_code)] // each bench binary compiles this module on its own
pub fn copy_dir(from: &Path, to: &Path, leave_out: &[&str]) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let below = entry.path().strip_prefix(from).unwrap();
        if below
            .components()
            .any(|c| leave_out.iter().any(|l| c.as_os_str() == *l))
        {
            continue;
        }
        let target = to.join(below);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Queues `tasks` and starts them, `max_concurrent` at a time; their ids.
#[allow(dead_code)] // each bench binary compiles this module on its own
pub async fn run_tasks(client: &Client, tasks: Value, max_concurrent: u32) -> Vec<String> {
    let added = call(client, "task_add", json!({ "tasks": tasks })).await;
    let arguments = json!({"mode": "auto", "max_concurrent": max_concurrent});
    call(client, "queue_configure", arguments).await;
    added["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap().to_string())
        .collect()
}

/// A `drydock serve` child on a free port of 127.0.0.1, logging warnings only, with what
/// `configure` adds (roots, config, environment); the child and its URL. The rest of its
/// output is read and dropped on a thread of its own so that it never blocks on a full pipe.
pub fn drydock_serve(
    configure: impl FnOnce(&mut std::process::Command),
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_drydock"));
    command
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "drydock=warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
    configure(&mut command);
    let mut child = command.spawn().expect("drydock serve starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL in the banner")
        .to_string();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while stdout.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    (child, url)
}
