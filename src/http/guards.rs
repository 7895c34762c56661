//! Checks every request passes before it reaches MCP: Origin (DNS rebinding), bearer token,
//! body size and JSON-RPC shape.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub struct GuardConfig {
    pub token: Option<String>,
    pub max_request_bytes: usize,
}

/// A browser page from another site must not reach a local server through a rebound DNS name.
/// Requests without Origin (every non-browser client) pass.
pub async fn reject_foreign_origin(request: Request, next: Next) -> Response {
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

fn is_loopback_origin(value: &HeaderValue) -> bool {
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

pub async fn require_token(
    State(config): State<Arc<GuardConfig>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &config.token else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(token) if constant_time_eq(token.as_bytes(), expected.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send Authorization: Bearer <token>",
        )
            .into_response(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A POST body must be one JSON-RPC message; anything else gets a JSON-RPC error, not a 415.
pub async fn check_json_rpc(
    State(config): State<Arc<GuardConfig>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, config.max_request_bytes).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Payload Too Large: request bodies are limited to {} bytes",
                config.max_request_bytes
            ),
        )
            .into_response();
    };
    if let Err((code, message)) = validate_message(&bytes) {
        return json_rpc_error(code, &message);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn validate_message(bytes: &[u8]) -> Result<(), (i64, String)> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| (-32700, format!("Parse error: {e}")))?;
    let Value::Object(object) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the body must be a JSON-RPC message object"
        };
        return Err((-32600, format!("Invalid Request: {what}")));
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((-32600, "Invalid Request: `jsonrpc` must be \"2.0\"".into()));
    }
    let is_call = object.get("method").is_some_and(Value::is_string);
    let is_reply = object.contains_key("result") || object.contains_key("error");
    if !is_call && !is_reply {
        return Err((
            -32600,
            "Invalid Request: a message needs a string `method`, or `result`/`error`".into(),
        ));
    }
    Ok(())
}

fn json_rpc_error(code: i64, message: &str) -> Response {
    let body =
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn json_rpc_shape_is_checked() {
        assert!(validate_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_ok());
        assert!(validate_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_ok());
        assert_eq!(validate_message(b"{nope").unwrap_err().0, -32700);
        assert_eq!(validate_message(b"[]").unwrap_err().0, -32600);
        assert_eq!(validate_message(b"42").unwrap_err().0, -32600);
        assert_eq!(
            validate_message(br#"{"jsonrpc":"1.0","method":"x"}"#)
                .unwrap_err()
                .0,
            -32600
        );
        assert_eq!(
            validate_message(br#"{"jsonrpc":"2.0","id":1}"#)
                .unwrap_err()
                .0,
            -32600
        );
    }

    #[test]
    fn token_comparison_needs_equal_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
