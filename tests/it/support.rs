//! Shared by the integration suites: a real drydock server process on a free port, real MCP
//! clients for both protocol eras, a way to see every process a test started, the waits and
//! assertions several suites make, and the turns the suites take on what they share.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ClientRequest, ProtocolVersion,
    ReadResourceRequestParams, Request, ResourceContents,
};
use rmcp::service::{Peer, RequestHandle, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
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

/// How a drydock the tests start differs from the tests' own environment: none of the
/// machine user's settings reach it (no `DRYDOCK_*` variable; config and data directories of
/// its own, empty), so a user who set a token or toolsets still gets passing tests.
pub fn without_the_users_settings() -> Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> {
    static EMPTY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(|| tempfile::tempdir().unwrap()).path();
    let mut changes: Vec<_> = std::env::vars_os()
        // HF_ENDPOINT: where a catalogue model would be fetched from.
        .filter(|(name, _)| name.to_string_lossy().starts_with("DRYDOCK_") || name == "HF_ENDPOINT")
        .map(|(name, _)| (name, None))
        .collect();
    for name in ["XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        changes.push((name.into(), Some(empty.as_os_str().to_owned())));
    }
    changes
}

/// `drydock`, to run with [`without_the_users_settings`].
pub fn drydock_command() -> Command {
    let mut command = Command::new(drydock_bin());
    isolate(&mut command);
    command
}

/// Applies [`without_the_users_settings`] to `command` (drydock, or a tmux server standing
/// for the user's, whose panes would otherwise carry the tests' own `DRYDOCK_*` variables).
pub fn isolate(command: &mut Command) -> &mut Command {
    for (name, value) in without_the_users_settings() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
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

/// `drydock call TOOL ARGUMENTS --allow-root test-projects`, to run (more flags may follow).
pub fn drydock_call(tool: &str, arguments: &str) -> Command {
    let mut command = drydock_command();
    command
        .args(["call", tool, arguments])
        .arg("--allow-root")
        .arg(test_projects_root());
    command
}

/// `drydock mcp --allow-root test-projects`, to start as an MCP server over stdio.
pub fn drydock_mcp() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(drydock_bin());
    for (name, value) in without_the_users_settings() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .arg("mcp")
        .arg("--allow-root")
        .arg(test_projects_root())
        .env("RUST_LOG", "drydock=warn");
    command
}

/// A client of `command` (a `drydock mcp`) over its stdin and stdout.
pub async fn stdio_client(command: tokio::process::Command) -> Client {
    let transport = TokioChildProcess::new(command).expect("spawn drydock mcp");
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("stdio handshake")
}

/// Every process a test's drydock starts carries this variable, with a value of that test's
/// own ([`unique_marker`]), so its processes can be found among those of the tests running
/// beside it.
pub const MARKER_VAR: &str = "DRYDOCK_TEST_MARKER";

/// A value for [`MARKER_VAR`] that no other test of any run on this machine uses.
pub fn unique_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live processes (zombies excluded) whose environment has `MARKER_VAR=marker`.
pub fn marked_processes(marker: &str) -> Vec<u32> {
    processes_with_env(&format!("{MARKER_VAR}={marker}"))
}

pub use crate::proc_env::processes_with_env;

/// True once a `sleep` carrying `marker` runs (the grandchild of `cargo-clean
/// --spawn-grandchild`, or a hung helper's).
pub fn marked_sleep_running(marker: &str) -> bool {
    marked_processes(marker).iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| cmd.starts_with(b"sleep\0"))
    })
}

/// A `drydock serve` process; killed on drop.
pub struct Server {
    child: Child,
    pub url: String,
    pub banner: String,
    marker: String,
    /// Its data directory (DRYDOCK_DATA_DIR), unless the test names one with --data-dir: a
    /// test server never takes the hook endpoint of the user's own drydock.
    pub data_dir: tempfile::TempDir,
}

impl Server {
    /// `drydock serve --bind 127.0.0.1:0 --allow-root test-projects` plus `extra` args.
    pub fn start(extra: &[&str]) -> Server {
        Self::start_with_env(extra, &[])
    }

    /// `start`, with more variables in the server's environment.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        let root = test_projects_root();
        let mut args = vec!["--allow-root", root.to_str().unwrap()];
        args.extend_from_slice(extra);
        Self::start_with(&args, env)
    }

    /// A server whose only allowed root is `root`.
    pub fn start_in(root: &Path) -> Server {
        Self::start_with(&["--allow-root", root.to_str().unwrap()], &[])
    }

    /// `start` with `config` (TOML, e.g. an `[http]` section) as the config file.
    pub fn start_with_config(config: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("drydock.toml");
        std::fs::write(&path, config).unwrap();
        let path = path.to_str().unwrap();
        Self::start(&["--config", path])
    }

    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
        let marker = unique_marker();
        let scratch = tempfile::tempdir().unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let mut command = drydock_command();
        command.arg("serve");
        if !args.contains(&"--bind") {
            command.args(["--bind", "127.0.0.1:0"]);
        }
        command
            .args(args)
            .current_dir(scratch.path())
            .env(MARKER_VAR, &marker)
            .env("DRYDOCK_DATA_DIR", data_dir.path())
            // IT_SERVER_LOG: what the servers log for a run that looks into them.
            .env(
                "RUST_LOG",
                std::env::var("IT_SERVER_LOG").unwrap_or("drydock=warn".into()),
            )
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
            data_dir,
        }
    }

    /// Processes (other than the server) started by this server that are still alive.
    pub fn descendants(&self) -> Vec<u32> {
        marked_processes(&self.marker)
            .into_iter()
            .filter(|pid| *pid != self.child.id())
            .collect()
    }

    /// True once the `sleep` that `cargo-clean --spawn-grandchild` (or a hung helper) starts
    /// is running.
    pub fn grandchild_running(&self) -> bool {
        marked_sleep_running(&self.marker)
    }

    /// Waits (up to two minutes) for that `sleep`; `what` says what has then started.
    pub async fn assert_grandchild_starts(&self, what: &str) {
        assert!(
            eventually(Duration::from_secs(120), || self.grandchild_running()).await,
            "{what}"
        );
    }

    /// Wait until the server has no live descendants, or give up after `limit`.
    pub fn wait_for_no_descendants(&self, limit: Duration) -> Vec<u32> {
        wait_until(limit, || self.descendants().is_empty());
        self.descendants()
    }

    /// Every descendant of the server is gone within `limit`; else the panic lists those left,
    /// after `what` left them.
    pub fn assert_no_descendants_within(&self, limit: Duration, what: &str) {
        let left = self.wait_for_no_descendants(limit);
        assert!(left.is_empty(), "{what}: {left:?}");
    }

    /// SIGKILL: the server ends at once, with no chance to clean up.
    pub fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's own process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn base_url(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// SIGTERM, as a user's Ctrl-C or a service manager would; true if it exited within `limit`.
    pub fn terminate(&mut self, limit: Duration) -> bool {
        signal_and_wait(&mut self.child, "TERM", limit).is_some()
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

/// Sends `signal` (`TERM`, `INT`, ...) to `child` and waits up to `limit` for it to exit.
pub fn signal_and_wait(child: &mut Child, signal: &str, limit: Duration) -> Option<ExitStatus> {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Poll `check` every 100 ms, blocking the thread, until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
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

pub type Client = RunningService<RoleClient, ClientConfig>;

pub enum Era {
    /// `initialize` handshake, session id (what the TS SDK and Inspector do).
    Legacy,
    /// 2026-07-28: `server/discover`, then stateless requests (what Claude Code does).
    Modern,
}

impl Era {
    fn lifecycle(&self) -> ClientLifecycleMode {
        match self {
            Era::Legacy => ClientLifecycleMode::Initialize,
            Era::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }
}

pub async fn client(era: &Era, url: &str) -> Client {
    connect(url, era.lifecycle(), ClientConfig::default()).await
}

pub async fn legacy_client(url: &str) -> Client {
    client(&Era::Legacy, url).await
}

pub async fn modern_client(url: &str) -> Client {
    client(&Era::Modern, url).await
}

/// A client of a server that requires the bearer `token`.
pub async fn client_with_token(era: &Era, url: &str, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    connect_with(config, era.lifecycle(), ClientConfig::default()).await
}

pub async fn connect<H: ClientHandler>(
    url: &str,
    mode: ClientLifecycleMode,
    handler: H,
) -> RunningService<RoleClient, H> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    connect_with(config, mode, handler).await
}

async fn connect_with<H: ClientHandler>(
    config: StreamableHttpClientTransportConfig,
    mode: ClientLifecycleMode,
    handler: H,
) -> RunningService<RoleClient, H> {
    handler
        .serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), mode)
        .await
        .expect("MCP client connects")
}

/// A legacy-era client that keeps every progress message it is sent, and its recorder.
pub async fn progress_client(
    url: &str,
) -> (
    RunningService<RoleClient, ProgressRecorder>,
    ProgressRecorder,
) {
    let recorder = ProgressRecorder::default();
    let client = connect(url, ClientLifecycleMode::Initialize, recorder.clone()).await;
    (client, recorder)
}

pub fn tool_call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(arguments)
}

/// The names terminal_list lists.
pub async fn session_names(client: &Peer<RoleClient>) -> Vec<String> {
    let listed = call_ok(client, "terminal_list", json!({})).await;
    listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
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

/// Starts a tool call that the test can cancel through the handle.
pub async fn start_call(
    client: &Peer<RoleClient>,
    name: &str,
    arguments: Value,
) -> RequestHandle<RoleClient> {
    let request = ClientRequest::CallToolRequest(Request::new(tool_call(name, arguments)));
    client
        .send_cancellable_request(request, Default::default())
        .await
        .expect("request sent")
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the resource at `uri`, which must be a text resource.
pub async fn read_text_resource(client: &Peer<RoleClient>, uri: &str) -> String {
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{uri}: {other:?}"),
    }
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

/// A directory outside every allowed root (`root`, in a temporary directory of its own) whose
/// files write `MARKER` there if drydock ever runs, builds or loads one of them.
pub struct Outside {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Outside {
    pub fn new(name: &str) -> Outside {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join(name);
        std::fs::create_dir_all(&root).unwrap();
        Outside { _dir: dir, root }
    }

    pub fn file(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }

    pub fn marker(&self) -> PathBuf {
        self.root.join("MARKER")
    }
}

pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The failure named `name` in a test report.
pub fn failure<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no failure named {name}: {report}"))
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
        let response = self.get_stream(&[]).await;
        assert_eq!(response.status().as_u16(), 200, "GET stream");
        response
    }

    /// The stream of a call resumed after the event `last_event_id` (GET with Last-Event-ID).
    pub async fn resume_stream(&self, last_event_id: &str) -> reqwest::Response {
        self.get_stream(&[("Last-Event-ID", last_event_id)]).await
    }

    async fn get_stream(&self, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self
            .http
            .get(&self.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", "2025-11-25");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }
}

/// POSTs `body` as JSON to `url` with the `headers` an MCP client must send and `extra` ones.
pub async fn post(
    http: &reqwest::Client,
    url: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.send().await.expect("request")
}

/// `post` on a client of its own; the status and the whole response text.
pub async fn post_raw(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let response = post(&reqwest::Client::new(), url, headers, body).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// `post` in the legacy era, in `session` if there is one.
pub async fn mcp_post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut headers = vec![("MCP-Protocol-Version", "2025-11-25")];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    post(http, url, &headers, body).await
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

/// Keeps the URIs of the resource updates it is sent.
#[derive(Clone, Default)]
pub struct UpdateRecorder(pub std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl ClientHandler for UpdateRecorder {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.uri);
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let text = params.data.as_str().unwrap_or_default().to_string();
        self.0
            .lock()
            .unwrap()
            .push(format!("log:{:?}:{text}", params.level));
    }
}

/// A client (modern lifecycle) that records the resource updates and log messages it is sent.
pub async fn client_with_updates(
    url: &str,
) -> (RunningService<RoleClient, UpdateRecorder>, UpdateRecorder) {
    let updates = UpdateRecorder::default();
    let client = connect(url, ClientLifecycleMode::Initialize, updates.clone()).await;
    (client, updates)
}

impl UpdateRecorder {
    /// The log messages that arrived so far, as `log:LEVEL:text`.
    pub fn logs(&self) -> Vec<String> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|u| u.starts_with("log:"))
            .cloned()
            .collect()
    }

    /// How many updates of `uri` arrived so far.
    pub fn count(&self, uri: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|u| *u == uri).count()
    }
}
