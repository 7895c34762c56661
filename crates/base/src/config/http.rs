//! `[http]`: the HTTP server's limits on connections and MCP sessions, and when a long call
//! becomes an MCP task.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::values::{MILLISECOND, SECOND, duration, positive};

/// The HTTP server's limits on connections and MCP sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// An MCP session (initialize handshake) without a call in flight or an open stream is
    /// closed after this long without a request.
    pub session_idle_timeout: Duration,
    /// MCP sessions at most; when full, a new one replaces the longest-idle session, or is
    /// refused (503) when every session is in use.
    pub max_sessions: usize,
    /// A connection must deliver each request's headers within this time (so an idle
    /// keep-alive connection is closed after it too).
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this time.
    pub body_read_timeout: Duration,
    /// A build tool's call not done within this time becomes an MCP task, for a client that
    /// declares the tasks extension (over stdio too).
    pub task_after: Duration,
    /// How long a task's result stays readable after the task starts.
    pub task_ttl: Duration,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileHttp {
    session_idle_timeout_s: Option<u64>,
    max_sessions: Option<usize>,
    header_read_timeout_s: Option<u64>,
    body_read_timeout_s: Option<u64>,
    task_after_ms: Option<u64>,
    task_ttl_s: Option<u64>,
}

pub(super) fn resolve(file: FileHttp) -> Result<HttpConfig, ConfigError> {
    let seconds = |value: Option<u64>, default: u64, key: &'static str| {
        duration(value.unwrap_or(default), SECOND, key)
    };
    Ok(HttpConfig {
        session_idle_timeout: seconds(
            file.session_idle_timeout_s,
            30 * 60,
            "http.session_idle_timeout_s",
        )?,
        max_sessions: positive(file.max_sessions.unwrap_or(256), "http.max_sessions")?,
        header_read_timeout: seconds(file.header_read_timeout_s, 10, "http.header_read_timeout_s")?,
        body_read_timeout: seconds(file.body_read_timeout_s, 30, "http.body_read_timeout_s")?,
        task_after: duration(
            file.task_after_ms.unwrap_or(2000),
            MILLISECOND,
            "http.task_after_ms",
        )?,
        task_ttl: seconds(file.task_ttl_s, 24 * 3600, "http.task_ttl_s")?,
    })
}
