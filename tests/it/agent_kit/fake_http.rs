//! What both fake model APIs share: an HTTP server on 127.0.0.1 (port 0) in a thread and
//! runtime of its own, so it keeps answering while a test blocks on tmux; a log of every
//! request it saw; and Server-Sent Events written by a task, which ends when the client goes
//! away (an interrupted turn).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::channel::mpsc;
use serde_json::Value;

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON, `Value::Null` when it was empty or not JSON.
    pub body: Value,
}

impl LoggedRequest {
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Polls `seen` (e.g. a fake's prompts) until `wanted` is among them; panics after `timeout`.
pub fn wait_until_seen(
    what: &str,
    timeout: Duration,
    seen: impl Fn() -> Vec<String>,
    wanted: &str,
) {
    let deadline = std::time::Instant::now() + timeout;
    while !seen().iter().any(|s| s == wanted) {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never received {wanted:?}; it saw {:?}",
            seen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Turns one logged request into a response; runs inside the fake's runtime, so it may spawn.
pub type Responder = Arc<dyn Fn(&LoggedRequest) -> Response + Send + Sync>;

#[derive(Clone)]
struct Shared {
    log: Arc<Mutex<Vec<LoggedRequest>>>,
    respond: Responder,
}

/// A running fake; stops (dropping every open connection) when dropped.
pub struct FakeServer {
    url: String,
    log: Arc<Mutex<Vec<LoggedRequest>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(respond: Responder) -> FakeServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            log: log.clone(),
            respond,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = Router::new().fallback(handle).with_state(shared);
                tokio::select! {
                    served = axum::serve(listener, app) => served.unwrap(),
                    _ = stopped => {}
                }
            });
            // Open streams would keep a graceful shutdown waiting: drop them.
            runtime.shutdown_background();
        });
        FakeServer {
            url: format!("http://{addr}"),
            log,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn handle(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = LoggedRequest {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_string(), |pq| pq.to_string()),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    shared.log.lock().unwrap().push(request.clone());
    (shared.respond)(&request)
}

pub fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// Writes SSE events into a streaming response body.
pub struct SseWriter {
    tx: mpsc::UnboundedSender<Result<Bytes, Infallible>>,
}

impl SseWriter {
    /// Sends one event; false once the client has gone away.
    pub fn event(&self, name: &str, data: &Value) -> bool {
        let frame = format!("event: {name}\ndata: {data}\n\n");
        self.tx.unbounded_send(Ok(Bytes::from(frame))).is_ok()
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A `text/event-stream` response whose events `write` produces from a spawned task.
pub fn sse_response<F, Fut>(write: F) -> Response
where
    F: FnOnce(SseWriter) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded();
    tokio::spawn(write(SseWriter { tx }));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(rx))
        .unwrap()
}

/// Sleeps `total`, in steps, calling `tick` between them; stops early (false) when it fails.
pub async fn pace(total: Duration, step: Duration, mut tick: impl FnMut() -> bool) -> bool {
    let mut waited = Duration::ZERO;
    while waited < total {
        tokio::time::sleep(step).await;
        waited += step;
        if !tick() {
            return false;
        }
    }
    true
}

/// The `lab:` tokens of a prompt: `lab:bash` → ("bash", None),
/// `lab:slow=12` → ("slow", Some("12")).
pub fn lab_tokens(prompt: &str) -> Vec<(String, Option<String>)> {
    prompt
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("lab:"))
        .map(|token| match token.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (token.to_string(), None),
        })
        .collect()
}

/// Seconds of a `lab:NAME=N` token, if the prompt has one.
pub fn lab_seconds(tokens: &[(String, Option<String>)], name: &str) -> Option<Duration> {
    tokens
        .iter()
        .find(|(token, _)| token == name)
        .and_then(|(_, value)| value.as_deref()?.parse::<f64>().ok())
        .map(Duration::from_secs_f64)
}
