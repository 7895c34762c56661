//! MCP over plain HTTP requests, for what a client library would not send: sessions driven
//! by hand, raw bodies, the messages of an SSE body.

use serde_json::Value;

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
