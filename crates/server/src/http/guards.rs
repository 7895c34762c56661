//! Checks every request passes before it reaches MCP: Origin (DNS rebinding), bearer token,
//! body size and JSON-RPC shape.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::sandbox::SandboxCaller;
use super::sessions::Sessions;
use crate::mcp::request_params::{ParamsProblem, check_tool_call};
use crate::tasks::TaskTokens;

pub(super) struct GuardConfig {
    pub token: Option<String>,
    /// Tokens of tasks' agents: each passes, limited to its task ([`TaskScope`]).
    pub task_tokens: TaskTokens,
    pub max_request_bytes: usize,
    pub body_read_timeout: Duration,
    pub sessions: Arc<Sessions>,
}

/// A browser page from another site must not reach a local server through a rebound DNS name.
/// Requests without Origin (every non-browser client) pass.
pub(super) async fn reject_foreign_origin(request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN);
    match origin {
        Some(value) if !is_loopback_origin(value) => (
            StatusCode::FORBIDDEN,
            "Forbidden: Origin is not a loopback origin",
        )
            .into_response(),
        _ => next.run(request).await,
    }
}

/// On a loopback bind, every route answers to loopback names alone: a page whose site's name
/// was rebound to 127.0.0.1 sends that name as `Host`. Requests without `Host` (HTTP/1.0
/// clients) pass; no browser sends one.
pub(super) async fn reject_foreign_host(request: Request, next: Next) -> Response {
    match request.headers().get(header::HOST) {
        Some(value) if !is_loopback_host(value) => (
            StatusCode::FORBIDDEN,
            "Forbidden: Host is not a loopback name (localhost, 127.0.0.1, [::1])",
        )
            .into_response(),
        _ => next.run(request).await,
    }
}

pub(super) fn is_loopback_host(value: &HeaderValue) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    let host = match text.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, rest)) if rest.is_empty() || rest.starts_with(':') => host,
            _ => return false,
        },
        None => text.split(':').next().unwrap_or_default(),
    };
    matches!(
        host.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

pub(super) fn is_loopback_origin(value: &HeaderValue) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    if scheme != "http" && scheme != "https" {
        return false;
    }
    let host = if let Some(bracketed) = rest.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        rest.split([':', '/']).next().unwrap_or_default()
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// A task's sandbox is its task, whatever it sends. A task's token passes, limited to its
/// task ([`TaskScope`](crate::tasks::TaskScope)); the server's token passes; without a server
/// token so does a request without `Authorization`.
/// Anything else presented (a made-up token, a task's withdrawn one) is refused: it never
/// falls back to the unscoped access of no token.
pub(super) async fn require_token(
    State(config): State<Arc<GuardConfig>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(caller) = request.extensions().get::<SandboxCaller>() {
        return match config.task_tokens.scope_of(&caller.token) {
            Some(scope) => {
                request.extensions_mut().insert(scope);
                next.run(request).await
            }
            None => task_ended(),
        };
    }
    let headers = request.headers();
    if let Some(scope) = bearer(headers).and_then(|t| config.task_tokens.scope_of(t)) {
        request.extensions_mut().insert(scope);
        return next.run(request).await;
    }
    let passes = match &config.token {
        Some(expected) => bearer_matches(headers, expected),
        None => !headers.contains_key(header::AUTHORIZATION),
    };
    match passes {
        true => next.run(request).await,
        false => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send Authorization: Bearer <token> with this server's token or a running task's",
        )
            .into_response(),
    }
}

/// A sandbox whose task's token was withdrawn reaches nothing.
pub(super) fn task_ended() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        "Unauthorized: the task of this sandbox is no longer running",
    )
        .into_response()
}

/// Whether the request carries `Authorization: Bearer <expected>`.
pub(super) fn bearer_matches(headers: &http::HeaderMap, expected: &str) -> bool {
    bearer(headers).is_some_and(|token| constant_time_eq(token.as_bytes(), expected.as_bytes()))
}

pub(super) fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A POST body must arrive in time and be one JSON-RPC message; anything else gets a
/// JSON-RPC error, not rmcp's 415. A new session is only started when there is room.
pub(super) async fn check_json_rpc(
    State(config): State<Arc<GuardConfig>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, &config).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let message = match validate_message(&bytes) {
        Ok(message) => message,
        Err(invalid) => return invalid.into_response(),
    };
    let opens_session = message.method.as_deref() == Some("initialize")
        && !parts.headers.contains_key(SESSION_ID_HEADER);
    if opens_session && !config.sessions.has_room() {
        return sessions_full(&config.sessions, message.id);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

const SESSION_ID_HEADER: &str = "mcp-session-id";

async fn read_body(body: Body, config: &GuardConfig) -> Result<axum::body::Bytes, Response> {
    let limit = config.max_request_bytes;
    match tokio::time::timeout(config.body_read_timeout, to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: request bodies are limited to {limit} bytes"),
        )
            .into_response()),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONNECTION, "close")],
            format!(
                "Request Timeout: the request body did not arrive within {} s",
                config.body_read_timeout.as_secs()
            ),
        )
            .into_response()),
    }
}

/// The parts of a valid message the guards need.
#[derive(Debug)]
pub(super) struct Message {
    method: Option<String>,
    id: Value,
}

/// Why a body is not a usable JSON-RPC message, with the id to answer to.
#[derive(Debug)]
pub(super) struct Invalid {
    code: i64,
    message: String,
    id: Value,
}

impl Invalid {
    fn new(code: i64, message: impl Into<String>, id: &Value) -> Self {
        Self {
            code,
            message: message.into(),
            id: id.clone(),
        }
    }
}

impl IntoResponse for Invalid {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        });
        (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
    }
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's range for server errors: the server cannot take another session now.
const SERVER_BUSY: i64 = -32000;

pub(super) fn validate_message(bytes: &[u8]) -> Result<Message, Invalid> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Invalid::new(PARSE_ERROR, format!("Parse error: {e}"), &Value::Null))?;
    let Value::Object(object) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the body must be a JSON-RPC message object"
        };
        return Err(Invalid::new(
            INVALID_REQUEST,
            format!("Invalid Request: {what}"),
            &Value::Null,
        ));
    };
    let id = usable_id(object.get("id"));
    let invalid =
        |message: &str| Invalid::new(INVALID_REQUEST, format!("Invalid Request: {message}"), &id);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    match object.get("method") {
        Some(Value::String(method)) => {
            check_call(method, &object, &id)?;
            Ok(Message {
                method: Some(method.clone()),
                id,
            })
        }
        Some(_) => Err(invalid("`method` must be a string")),
        None if object.contains_key("result") || object.contains_key("error") => {
            check_reply_id(&object, &id)?;
            Ok(Message { method: None, id })
        }
        None => Err(invalid(
            "a message needs a string `method`, or `result`/`error`",
        )),
    }
}

/// A request or notification: its id (requests only) and params.
fn check_call(method: &str, object: &Map<String, Value>, id: &Value) -> Result<(), Invalid> {
    if let Some(given) = object.get("id")
        && !is_usable_id(given)
    {
        let message = format!(
            "Invalid Request: `id` must be a string or an integer, not {}",
            kind_of(given)
        );
        return Err(Invalid::new(INVALID_REQUEST, message, id));
    }
    let params = object.get("params");
    match params {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(Value::Array(_)) => {
            let message = "Invalid params: MCP `params` are an object, not an array";
            return Err(Invalid::new(INVALID_PARAMS, message, id));
        }
        Some(other) => {
            let message = format!(
                "Invalid Request: `params` must be an object, not {}",
                kind_of(other)
            );
            return Err(Invalid::new(INVALID_REQUEST, message, id));
        }
    }
    let invalid_params = |problem: ParamsProblem| {
        Invalid::new(INVALID_PARAMS, format!("Invalid params: {problem}"), id)
    };
    if method == "tools/call" && object.contains_key("id") {
        check_tool_call(params).map_err(invalid_params)?;
    }
    if method == "initialize" && object.contains_key("id") {
        check_initialize(params).map_err(invalid_params)?;
    }
    Ok(())
}

/// An `initialize` request names the protocol version, the client's capabilities and the
/// client. (Without them the MCP layer takes it for a request outside any session and
/// answers a plain-text 400 that says nothing of what is missing.)
fn check_initialize(params: Option<&Value>) -> Result<(), ParamsProblem> {
    let params = params.and_then(Value::as_object);
    let has = |key: &str, string: bool| match params.and_then(|p| p.get(key)) {
        Some(Value::String(_)) => string,
        Some(Value::Object(_)) => !string,
        _ => false,
    };
    let missing: Vec<&str> = [
        ("`protocolVersion` (a string)", has("protocolVersion", true)),
        ("`capabilities` (an object)", has("capabilities", false)),
        ("`clientInfo` (an object)", has("clientInfo", false)),
    ]
    .into_iter()
    .filter(|(_, present)| !present)
    .map(|(what, _)| what)
    .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(ParamsProblem::new(format!(
            "initialize needs params with {}",
            missing.join(", ")
        ))),
    }
}

/// A response's id names the request it answers; an error may have a null id.
fn check_reply_id(object: &Map<String, Value>, id: &Value) -> Result<(), Invalid> {
    let problem = match object.get("id") {
        Some(given) if is_usable_id(given) => return Ok(()),
        Some(Value::Null) if object.contains_key("error") => return Ok(()),
        Some(other) => format!(
            "`id` must be a string or an integer, not {}",
            kind_of(other)
        ),
        None => "a response needs the `id` of the request it answers".into(),
    };
    Err(Invalid::new(
        INVALID_REQUEST,
        format!("Invalid Request: {problem}"),
        id,
    ))
}

/// JSON-RPC ids MCP accepts: strings and integers (no fractions, booleans or objects).
fn is_usable_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

fn usable_id(id: Option<&Value>) -> Value {
    id.filter(|id| is_usable_id(id))
        .cloned()
        .unwrap_or(Value::Null)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(_) => "an integer out of range",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn sessions_full(sessions: &Sessions, id: Value) -> Response {
    let message = format!(
        "Server busy: all {} MCP sessions (http.max_sessions) have a call in flight or an open stream; retry later, or end unused sessions with DELETE",
        sessions.max_sessions()
    );
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": SERVER_BUSY, "message": message },
    });
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "5")],
        axum::Json(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        for ok in [
            "localhost",
            "LOCALHOST:7878",
            "127.0.0.1:7878",
            "[::1]",
            "[::1]:7878",
        ] {
            assert!(is_loopback_host(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7878",
            "127.0.0.1.evil.example",
            "localhost.evil.example:80",
            "[::1].evil",
            "[::2]:7878",
            "",
        ] {
            assert!(!is_loopback_host(&HeaderValue::from_static(bad)), "{bad}");
        }
    }

    #[test]
    fn loopback_origins_pass_and_others_do_not() {
        for ok in [
            "http://localhost:7878",
            "http://127.0.0.1",
            "https://[::1]:9000",
            "http://localhost",
        ] {
            assert!(is_loopback_origin(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in [
            "http://evil.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.nip.io",
            "null",
            "file://",
            "http://[::2]:80",
        ] {
            assert!(!is_loopback_origin(&HeaderValue::from_static(bad)), "{bad}");
        }
    }

    fn code_of(body: &str) -> i64 {
        validate_message(body.as_bytes()).unwrap_err().code
    }

    #[test]
    fn json_rpc_shape_is_checked() {
        assert!(validate_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
        assert!(validate_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_ok());
        assert!(validate_message(br#"{"jsonrpc":"2.0","id":null,"error":{}}"#).is_ok());
        assert!(
            validate_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_ok()
        );
        assert_eq!(code_of("{nope"), PARSE_ERROR);
        assert_eq!(code_of("[]"), INVALID_REQUEST);
        assert_eq!(code_of("42"), INVALID_REQUEST);
        assert_eq!(
            code_of(r#"{"jsonrpc":"1.0","method":"x"}"#),
            INVALID_REQUEST
        );
        assert_eq!(code_of(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            INVALID_REQUEST
        );
    }

    #[test]
    fn ids_must_be_strings_or_integers_and_are_echoed_when_usable() {
        for (id, kind) in [
            (r#"{"a":1}"#, "an object"),
            ("true", "a boolean"),
            ("1.5", "a fractional number"),
            ("null", "null"),
            ("18446744073709551615", "an integer out of range"),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let invalid = validate_message(body.as_bytes()).unwrap_err();
            assert_eq!(invalid.code, INVALID_REQUEST, "{id}");
            assert!(invalid.message.contains(kind), "{id}: {}", invalid.message);
            assert_eq!(invalid.id, Value::Null);
        }
        let bad_reply = validate_message(br#"{"jsonrpc":"2.0","id":true,"result":{}}"#);
        assert_eq!(bad_reply.unwrap_err().code, INVALID_REQUEST);
        let invalid =
            validate_message(br#"{"jsonrpc":"2.0","id":"a-1","method":"ping","params":"x"}"#)
                .unwrap_err();
        assert_eq!(invalid.code, INVALID_REQUEST);
        assert!(
            invalid
                .message
                .contains("`params` must be an object, not a string"),
            "{}",
            invalid.message
        );
        assert_eq!(invalid.id, json!("a-1"));
    }

    #[test]
    fn tool_calls_need_a_name_and_object_arguments() {
        let call = |params: &str| {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{params}}}"#);
            validate_message(body.as_bytes())
        };
        assert!(call(r#"{"name":"compile","arguments":{}}"#).is_ok());
        for params in [
            "null",
            r#"{"name":5}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":"run","arguments":[]}"#,
            "[]",
        ] {
            let invalid = call(params).unwrap_err();
            assert_eq!(invalid.code, INVALID_PARAMS, "{params}");
            assert_eq!(invalid.id, json!(9), "{params}");
        }
    }

    #[test]
    fn token_comparison_needs_equal_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
