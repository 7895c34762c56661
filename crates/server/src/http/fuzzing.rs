//! A POST to `/mcp` as the fuzzers feed it: the `Origin` header and the body, checked as the
//! guards check them, then what gets through read as drydock's MCP face reads it.

use axum::http::HeaderValue;
use rmcp::model::ClientJsonRpcMessage;

use super::guards::{is_loopback_origin, validate_message};
use crate::mcp::fuzzing::client_message;

pub fn json_rpc(origin: &[u8], body: &[u8]) {
    if let Ok(origin) = HeaderValue::from_bytes(origin) {
        is_loopback_origin(&origin);
    }
    if validate_message(body).is_ok()
        && let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(body)
    {
        client_message(message);
    }
}
