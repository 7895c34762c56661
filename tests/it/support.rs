//! Shared by the integration suites: a real drydock server process on a free port, real MCP
//! clients for both protocol eras, a way to see every process the server started, and the
//! turns the suites take on what they share.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

/// Elixir 1.14 has no build lock: two servers compiling one of the mix projects in
/// test-projects/ at once would trip over each other's `_build`. Every test that builds one in
/// place (rather than a copy), in whichever suite, holds this turn while it does.
static MIX_PROJECTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn mix_projects_turn() -> tokio::sync::MutexGuard<'static, ()> {
    MIX_PROJECTS.lock().await
}

pub fn drydock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_drydock")
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `test-projects/NAME`, canonical.
pub fn test_project(name: &str) -> PathBuf {
    repo_root()
        .join("test-projects")
        .join(name)
        .canonicalize()
        .unwrap_or_else(|e| panic!("test project {name}: {e}"))
}

pub fn test_projects_root() -> PathBuf {
    repo_root().join("test-projects").canonicalize().unwrap()
}

/// Every child of a server carries this variable, so its processes can be found.
const MARKER_VAR: &str = "DRYDOCK_TEST_MARKER";

fn unique_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        Instant::now().elapsed().as_nanos()
    )
}

/// A `drydock serve` process; killed on drop.
pub struct Server {
    child: Child,
    pub url: String,
    pub banner: String,
    marker: String,
}

impl Server {
    /// `drydock serve --bind 127.0.0.1:0 --allow-root test-projects` plus `extra` args.
    pub fn start(extra: &[&str]) -> Server {
        let root = test_projects_root();
        let mut args = vec!["--allow-root", root.to_str().unwrap()];
        args.extend_from_slice(extra);
        Self::start_with(&args, &[])
    }

    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
        let marker = unique_marker();
        let scratch = tempfile::tempdir().unwrap();
        let mut command = Command::new(drydock_bin());
        command
            .arg("serve")
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .current_dir(scratch.path())
            .env(MARKER_VAR, &marker)
            .env("RUST_LOG", "drydock=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("drydock starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        stdout.read_line(&mut banner).expect("banner line");
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in banner: {banner:?}"))
            .to_string();
        let mut rest = String::new();
        while stdout.read_line(&mut rest).map(|n| n > 0).unwrap_or(false)
            && !rest.contains(".mcp.json")
        {}
        stdout.read_line(&mut rest).ok();
        banner.push_str(&rest);
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        Server {
            child,
            url,
            banner,
            marker,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Processes (other than the server) started by this server that are still alive.
    pub fn descendants(&self) -> Vec<u32> {
        processes_with_env(MARKER_VAR, &self.marker)
            .into_iter()
            .filter(|pid| *pid != self.child.id())
            .collect()
    }

    /// True once the `sleep` that `cargo-clean --spawn-grandchild` starts is running.
    pub fn grandchild_running(&self) -> bool {
        self.descendants().iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| cmd.starts_with(b"sleep\0"))
        })
    }

    /// Wait until the server has no live descendants, or give up after `limit`.
    pub fn wait_for_no_descendants(&self, limit: Duration) -> Vec<u32> {
        let deadline = Instant::now() + limit;
        loop {
            let alive = self.descendants();
            if alive.is_empty() || Instant::now() > deadline {
                return alive;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn base_url(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }
}

impl Server {
    /// SIGTERM, as a user's Ctrl-C or a service manager would; true if it exited within `limit`.
    pub fn terminate(&mut self, limit: Duration) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.terminate(Duration::from_secs(10)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Live processes whose environment has `name=value` (zombies excluded).
pub fn processes_with_env(name: &str, value: &str) -> Vec<u32> {
    let needle = format!("{name}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|stat| !is_zombie(&stat))
                .unwrap_or(false);
            alive
                && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                    env.split(|b| *b == 0)
                        .any(|entry| entry == needle.as_bytes())
                })
        })
        .collect()
}

fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        == Some("Z")
}

pub type Client = RunningService<RoleClient, ClientConfig>;

/// The legacy era: `initialize` handshake, session id (what the TS SDK and Inspector do).
pub async fn legacy_client(url: &str) -> Client {
    connect(
        url,
        ClientLifecycleMode::Initialize,
        ClientConfig::default(),
    )
    .await
}

/// The 2026-07-28 era: `server/discover`, then stateless requests (what Claude Code does).
pub async fn modern_client(url: &str) -> Client {
    connect(
        url,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        ClientConfig::default(),
    )
    .await
}

pub async fn connect<H: ClientHandler>(
    url: &str,
    mode: ClientLifecycleMode,
    handler: H,
) -> RunningService<RoleClient, H> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()),
    );
    handler
        .serve_with_lifecycle(transport, mode)
        .await
        .expect("MCP client connects")
}

pub enum Era {
    Legacy,
    Modern,
}

pub async fn client(era: &Era, url: &str) -> Client {
    match era {
        Era::Legacy => legacy_client(url).await,
        Era::Modern => modern_client(url).await,
    }
}

pub fn tool_call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(arguments)
}

/// Call a tool that must succeed; returns its structured content.
pub async fn call_ok(client: &Peer<RoleClient>, name: &str, arguments: Value) -> Value {
    let result = call(client, name, arguments).await;
    assert_eq!(
        result.is_error,
        Some(false),
        "{name} failed: {:?}",
        result.content
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{name} returned no structuredContent"))
}

/// Call a tool that must report an error (`isError: true`); returns its text.
pub async fn call_err(client: &Peer<RoleClient>, name: &str, arguments: Value) -> String {
    let result = call(client, name, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{name} should fail: {result:?}"
    );
    text_of(&result)
}

pub async fn call(client: &Peer<RoleClient>, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(tool_call(name, arguments))
        .await
        .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn path_arg(path: &Path) -> Value {
    json!(path.to_str().unwrap())
}

/// Copy a test project (without its target dir) into a fresh temporary directory.
pub fn copy_project(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = test_project(name);
    let dest = dir.path().canonicalize().unwrap().join(name);
    for entry in walkdir::WalkDir::new(&source)
        .into_iter()
        .filter_entry(|e| e.file_name() != "target" && e.file_name() != "_build")
    {
        let entry = entry.unwrap();
        let to = dest.join(entry.path().strip_prefix(&source).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    (dir, dest)
}

/// A client handler that keeps every progress message it is sent.
#[derive(Clone, Default)]
pub struct ProgressRecorder {
    pub messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        if let Some(message) = params.message {
            self.messages.lock().unwrap().push(message);
        }
    }
}

impl ProgressRecorder {
    pub fn snapshot(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

/// Call a tool asking for progress notifications (token `token`).
pub async fn call_with_progress(
    client: &Peer<RoleClient>,
    name: &str,
    arguments: Value,
    token: &str,
) -> CallToolResult {
    let mut params = tool_call(name, arguments);
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(token.into())),
    ));
    client.call_tool(params).await.expect("call with progress")
}

/// Poll `check` every 50 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

impl Server {
    /// `start` with `config` (TOML, e.g. an `[http]` section) as the config file.
    pub fn start_with_config(config: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("drydock.toml");
        std::fs::write(&path, config).unwrap();
        let root = test_projects_root();
        let (root, path) = (root.to_str().unwrap(), path.to_str().unwrap());
        Self::start_with(&["--allow-root", root, "--config", path], &[])
    }
}

/// A legacy-era session driven with plain HTTP requests: no event stream of its own.
pub struct RawSession {
    pub url: String,
    pub id: String,
    http: reqwest::Client,
}

pub const RAW_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

impl RawSession {
    pub async fn open(url: &str) -> RawSession {
        let http = reqwest::Client::new();
        let response = mcp_post(&http, url, None, RAW_INITIALIZE).await;
        assert_eq!(response.status().as_u16(), 200, "initialize");
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let session = RawSession {
            url: url.into(),
            id,
            http,
        };
        let (status, _) = session
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        assert_eq!(status, 202, "initialized");
        session
    }

    /// POSTs `body` in the session; the status and the whole response text.
    pub async fn post(&self, body: &str) -> (u16, String) {
        let response = mcp_post(&self.http, &self.url, Some(&self.id), body).await;
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    /// The session's own event stream (GET), open until dropped.
    pub async fn open_stream(&self) -> reqwest::Response {
        let response = self
            .http
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "GET stream");
        response
    }
}

pub async fn mcp_post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.send().await.expect("request")
}

/// The JSON-RPC messages in an SSE body (`data:` lines), or the body itself if it is JSON.
pub fn messages_in(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str(body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// A build report of `tool` with one error and 50 of its warnings listed, `omitted` counted.
pub fn assert_diagnostics_capped(tool: &str, report: &Value, omitted_warnings: u64) {
    assert_eq!(
        report["errors"].as_array().unwrap().len(),
        1,
        "{tool}: {report}"
    );
    assert_eq!(report["warnings"].as_array().unwrap().len(), 50, "{tool}");
    assert_eq!(
        (&report["omitted_errors"], &report["omitted_warnings"]),
        (&json!(0), &json!(omitted_warnings)),
        "{tool}"
    );
}
