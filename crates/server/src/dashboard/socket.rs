//! The dashboard's one WebSocket per page.
//!
//! From the page (JSON text frames):
//! - `{"type": "call", "id": N, "tool": NAME, "arguments": {…}}`: a tool of the catalog, run
//!   like `drydock call` and published on the event feed with client "dashboard"; answered
//!   with `{"type": "result", "id": N, "result": …}` or `{"type": "error", "id": N, "message"}`;
//! - `{"type": "watch", "session": NAME}` / `{"type": "unwatch", "session": NAME}`: a
//!   terminal's screen, then its live output;
//! - `{"type": "input", "session": NAME, "data": TEXT}`: keys typed into a panel, through the
//!   same path as terminal_send;
//! - `{"type": "call_result", "id": N, "call_id": C}`: what call C of the feed returned, while
//!   it is kept ([`crate::events::KeptResult`]), answered like a call;
//! - `{"type": "problems", "id": N, "project": PATH}`: a project's open and recently fixed
//!   problems, answered like a call;
//! - `{"type": "decide", "id": N, "approval": ID, "approve": BOOL}`: a person's answer to a
//!   pending approval (published on the feed as the dashboard's), answered like a call.
//!
//! To the page: the pending approvals (`{"type": "approvals", "pending": […]}`, again at
//! every change), the latest tool calls (`{"type": "history", "events": […]}`), then
//! `{"type": "event", "event": …}` for every event of the feed (`{"type": "missed", "count":
//! N}` when the page fell behind), and per watched terminal `{"type":
//! "screen", "channel": C, "session", "rows", "cols"}` followed by binary frames: the channel
//! as 4 bytes (big-endian), then raw terminal bytes, the first of them a redraw of the screen
//! (sent again, after a new header, when the terminal changes size).
//!
//! Everything the page is sent goes through one queue bounded in messages and in bytes: a
//! page that stops reading makes its terminals' viewers drop output, and once it caught up
//! they send a fresh redraw instead of what it missed, so a slow browser never grows
//! drydock's memory or slows a terminal.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::app::App;
use crate::call::Call;
use crate::events::Received;
use crate::terminal::core::{Live, Redraw};
use crate::terminal::requests::SendRequest;
use crate::tool_call;

/// Messages waiting to be written to one page.
const OUTBOX: usize = 256;
/// Terminal bytes waiting to be written to one page, at most (about): past it, a viewer
/// drops output and sends a fresh screen once the page has caught up.
const PAGE_BUDGET: usize = 8 * 1024 * 1024;
/// Messages written to the socket before one flush, at most.
const WRITE_BATCH: usize = 32;
/// Lines of history a page gets before a terminal's first screen, to scroll back through.
const HISTORY_LINES: usize = 1000;
/// How often a viewer that dropped output looks whether the page caught up.
const CATCH_UP: std::time::Duration = std::time::Duration::from_millis(50);

/// What is queued for one page, and how many bytes of it.
#[derive(Clone)]
struct Outbox {
    sender: mpsc::Sender<Message>,
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    /// Queues `message`, waiting for room; false once the page is gone.
    async fn send(&self, message: Message) -> bool {
        self.queued.fetch_add(size(&message), Ordering::Relaxed);
        self.sender.send(message).await.is_ok()
    }

    fn try_send(&self, message: Message) {
        let bytes = size(&message);
        if self.sender.try_send(message).is_ok() {
            self.queued.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    fn has_room(&self) -> bool {
        self.queued.load(Ordering::Relaxed) < PAGE_BUDGET
    }
}

fn size(message: &Message) -> usize {
    match message {
        Message::Text(text) => text.len(),
        Message::Binary(bytes) => bytes.len(),
        _ => 0,
    }
}
/// The client name dashboard actions are published under.
const CLIENT: &str = "dashboard";

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum FromPage {
    Call {
        id: u64,
        tool: String,
        #[serde(default)]
        arguments: Value,
    },
    Watch {
        session: String,
    },
    Unwatch {
        session: String,
    },
    Input {
        session: String,
        data: String,
    },
    /// What tool call `call_id` of the feed returned; answered like a call.
    CallResult {
        id: u64,
        call_id: u64,
    },
    /// The person's answer to pending approval `approval`; answered like a call.
    Decide {
        id: u64,
        approval: String,
        approve: bool,
    },
    /// A project's open and recently fixed problems (the project memory); answered like a
    /// call.
    Problems {
        id: u64,
        project: String,
    },
}

/// Opens the page's socket; only for the dashboard's own origin (a page of another site, or
/// of another port on this machine, gets 403).
pub(super) async fn upgrade(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    socket: WebSocketUpgrade,
) -> Response {
    if !same_origin(&headers) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: not the dashboard's origin",
        )
            .into_response();
    }
    socket.on_upgrade(move |socket| serve(app, socket))
}

/// The Origin (which browsers always send with a WebSocket) names the host the request was
/// sent to. A request without Origin is not a browser's.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin.to_str().ok().and_then(|o| {
        o.strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
    });
    matches!((origin_host, host), (Some(o), Some(h)) if o == h)
}

async fn serve(app: Arc<App>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (sender, mut queue) = mpsc::channel::<Message>(OUTBOX);
    let outbox = Outbox {
        sender,
        queued: Arc::default(),
    };
    let written = outbox.queued.clone();
    // Writes what is queued in batches, flushed once per batch.
    let writer = tokio::spawn(async move {
        let mut batch = Vec::new();
        while queue.recv_many(&mut batch, WRITE_BATCH).await > 0 {
            let bytes: usize = batch.iter().map(size).sum();
            for message in batch.drain(..) {
                if sink.feed(message).await.is_err() {
                    return;
                }
            }
            if sink.flush().await.is_err() {
                return;
            }
            written.fetch_sub(bytes, Ordering::Relaxed);
        }
    });
    let events = tokio::spawn(forward_events(app.clone(), outbox.clone()));
    let approvals = tokio::spawn(forward_approvals(app.clone(), outbox.clone()));
    let mut page = Page {
        app,
        outbox,
        viewers: HashMap::new(),
        next_channel: 1,
    };
    while let Some(Ok(message)) = stream.next().await {
        match message {
            Message::Text(text) => match serde_json::from_str::<FromPage>(&text) {
                Ok(request) => page.handle(request).await,
                Err(error) => page.say(json!({"type": "error", "message": error.to_string()})),
            },
            Message::Close(_) => break,
            _ => {}
        }
    }
    events.abort();
    approvals.abort();
    for (_, viewer) in page.viewers.drain() {
        viewer.abort();
    }
    writer.abort();
}

/// One connected page: what it watches.
struct Page {
    app: Arc<App>,
    outbox: Outbox,
    viewers: HashMap<String, AbortHandle>,
    next_channel: u32,
}

impl Page {
    async fn handle(&mut self, request: FromPage) {
        match request {
            FromPage::Call {
                id,
                tool,
                arguments,
            } => {
                let app = self.app.clone();
                let outbox = self.outbox.clone();
                tokio::spawn(async move {
                    let answer = call(&app, id, &tool, arguments).await;
                    outbox.send(text(&answer)).await;
                });
            }
            FromPage::CallResult { id, call_id } => {
                let answer = match self.app.events().call_result(call_id) {
                    Some(kept) => json!({"type": "result", "id": id, "result": kept}),
                    None => json!({"type": "error", "id": id, "message": format!(
                        "the result of call {call_id} is no longer kept (only the latest calls' are)"
                    )}),
                };
                self.say(answer);
            }
            FromPage::Decide {
                id,
                approval,
                approve,
            } => {
                let answer = match self.app.decide_approval(&approval, approve, CLIENT) {
                    Ok(decided) => json!({"type": "result", "id": id, "result": decided}),
                    Err(error) => json!({"type": "error", "id": id, "message": error.to_string()}),
                };
                self.say(answer);
            }
            FromPage::Problems { id, project } => {
                let app = self.app.clone();
                let outbox = self.outbox.clone();
                tokio::spawn(async move {
                    let request = crate::history::requests::ProjectRequest {
                        project_path: project,
                    };
                    let answer = match app.history().project(request).await {
                        Ok(report) => json!({"type": "result", "id": id, "result": report}),
                        Err(error) => {
                            json!({"type": "error", "id": id, "message": error.to_string()})
                        }
                    };
                    outbox.send(text(&answer)).await;
                });
            }
            FromPage::Watch { session } => self.watch(session).await,
            FromPage::Unwatch { session } => {
                if let Some(viewer) = self.viewers.remove(&session) {
                    viewer.abort();
                }
            }
            FromPage::Input { session, data } => {
                let send = SendRequest {
                    session: session.clone(),
                    text: Some(data),
                    ..SendRequest::default()
                };
                let call = Call::silent(self.app.shutdown_token().child_token());
                if let Err(error) = self.app.terminals().send(send, &call).await {
                    self.say(
                        json!({"type": "error", "session": session, "message": error.to_string()}),
                    );
                }
            }
        }
    }

    async fn watch(&mut self, session: String) {
        let core = match self.app.terminals().core_of(&session).await {
            Ok(core) => core,
            Err(error) => {
                let message = error.to_string();
                return self.say(json!({"type": "error", "session": session, "message": message}));
            }
        };
        let channel = self.next_channel;
        self.next_channel += 1;
        let outbox = self.outbox.clone();
        let name = session.clone();
        let viewer = tokio::spawn(async move {
            let (redraw, mut output) = core.view(HISTORY_LINES);
            if !send_screen(&outbox, channel, &name, redraw).await {
                return;
            }
            // Output this page missed (it fell behind): replaced by the screen as it is once
            // the page caught up.
            let mut missed = false;
            loop {
                if missed {
                    if !outbox.has_room() {
                        tokio::time::sleep(CATCH_UP).await;
                        continue;
                    }
                    let (redraw, fresh) = core.view(0);
                    output = fresh;
                    if !send_screen(&outbox, channel, &name, redraw).await {
                        return;
                    }
                    missed = false;
                }
                let bytes = match output.recv().await {
                    Ok(Live::Output(bytes)) => bytes,
                    // A new size (or output this page missed) starts again from a redraw.
                    Ok(Live::Resized) | Err(RecvError::Lagged(_)) => {
                        missed = true;
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                };
                if !outbox.has_room() {
                    missed = true;
                    continue;
                }
                if !outbox.send(frame(channel, &bytes)).await {
                    return;
                }
            }
        });
        if let Some(earlier) = self.viewers.insert(session, viewer.abort_handle()) {
            earlier.abort();
        }
    }

    /// Queues `value` for the page, unless its queue is full (a page that does not read
    /// misses notices, never terminal bytes' order).
    fn say(&self, value: Value) {
        self.outbox.try_send(text(&value));
    }
}

/// Runs a catalog tool for the page, published on the event feed as the dashboard's.
async fn call(app: &App, id: u64, tool: &str, arguments: Value) -> Value {
    let tool = match tool_call::served_tool(app.config(), tool) {
        Ok(tool) => tool,
        Err(error) => return json!({"type": "error", "id": id, "message": error.to_string()}),
    };
    let call = Call::silent(app.shutdown_token().child_token());
    match tool_call::call_tool_as(app, tool, arguments, &call, CLIENT).await {
        Ok(outcome) => json!({"type": "result", "id": id, "result": outcome.structured}),
        Err(error) => json!({"type": "error", "id": id, "message": error.to_string()}),
    }
}

/// The latest tool calls first (`{"type": "history", "events": […]}`), then every event as
/// it is published; an event in both has the same `seq`.
async fn forward_events(app: Arc<App>, outbox: Outbox) {
    let mut feed = app.events().subscribe();
    let history = json!({"type": "history", "events": app.events().recent_calls()});
    if !outbox.send(text(&history)).await {
        return;
    }
    while let Some(received) = feed.recv().await {
        let message = match received {
            Received::Event(event) => json!({"type": "event", "event": event}),
            Received::Missed(count) => json!({"type": "missed", "count": count}),
        };
        if !outbox.send(text(&message)).await {
            return;
        }
    }
}

/// The pending approvals (`{"type": "approvals", "pending": […]}`), again at every change.
async fn forward_approvals(app: Arc<App>, outbox: Outbox) {
    let mut changes = app.agents().approvals().changes();
    loop {
        let pending = json!({"type": "approvals", "pending": app.agents().approvals().list()});
        if !outbox.send(text(&pending)).await || changes.changed().await.is_err() {
            return;
        }
    }
}

async fn send_screen(outbox: &Outbox, channel: u32, session: &str, redraw: Redraw) -> bool {
    let header = json!({"type": "screen", "channel": channel, "session": session,
                        "rows": redraw.rows, "cols": redraw.cols});
    outbox.send(text(&header)).await && outbox.send(frame(channel, &redraw.bytes)).await
}

fn text(value: &Value) -> Message {
    Message::Text(value.to_string().into())
}

/// A binary frame: the channel, then the bytes.
fn frame(channel: u32, bytes: &[u8]) -> Message {
    let mut framed = Vec::with_capacity(4 + bytes.len());
    framed.extend_from_slice(&channel.to_be_bytes());
    framed.extend_from_slice(bytes);
    Message::Binary(framed.into())
}
