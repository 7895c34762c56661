//! Real MCP clients of a drydock (both protocol eras, over HTTP or stdio), tool calls through
//! them, and clients that record what the server sends them unasked.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ClientRequest, ProtocolVersion,
    ReadResourceRequestParams, Request, ResourceContents,
};
use rmcp::service::{Peer, RequestHandle, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

/// A client of `command` (a `drydock mcp`) over its stdin and stdout.
pub async fn stdio_client(command: tokio::process::Command) -> Client {
    let transport = TokioChildProcess::new(command).expect("spawn drydock mcp");
    ClientConfig::default()
        .serve(transport)
        .await
        .expect("stdio handshake")
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
