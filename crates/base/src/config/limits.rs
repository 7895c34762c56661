//! `[limits]` and `[timeouts]`: what one call may take (output, time) and how it is stopped.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::values::{MILLISECOND, duration, duration_from_zero, positive};
use super::{ConfigError, ToolName};

#[derive(Debug, Clone)]
pub struct Limits {
    /// How large the kept text of each output stream may be as JSON (head and tail).
    pub output_cap: usize,
    /// SIGTERM to SIGKILL.
    pub kill_grace: Duration,
    /// Largest accepted HTTP request body.
    pub max_request_bytes: usize,
}

/// Per-tool default timeouts and the ceiling a caller's `timeout_ms` is clamped to.
#[derive(Debug, Clone)]
pub struct Timeouts {
    pub default: Duration,
    pub per_tool: BTreeMap<ToolName, Duration>,
    pub max: Duration,
}

impl Timeouts {
    /// The timeout of one call: the caller's wish, else the tool's default, never above `max`.
    pub fn for_call(&self, tool: ToolName, requested_ms: Option<u64>) -> Duration {
        let chosen = requested_ms
            .map(Duration::from_millis)
            .or_else(|| self.per_tool.get(&tool).copied())
            .unwrap_or(self.default);
        chosen.min(self.max)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    output_cap_bytes: Option<usize>,
    kill_grace_ms: Option<u64>,
    max_request_bytes: Option<usize>,
}

/// Unknown keys are caught by hand: `deny_unknown_fields` does not work with `flatten`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileTimeouts {
    default_ms: Option<u64>,
    max_ms: Option<u64>,
    #[serde(flatten)]
    per_tool_ms: BTreeMap<String, u64>,
}

pub(super) fn resolve_limits(file: FileLimits) -> Result<Limits, ConfigError> {
    Ok(Limits {
        output_cap: output_cap(file.output_cap_bytes)?,
        kill_grace: duration_from_zero(
            file.kill_grace_ms.unwrap_or(2000),
            MILLISECOND,
            "limits.kill_grace_ms",
        )?,
        max_request_bytes: positive(
            file.max_request_bytes.unwrap_or(4 * 1024 * 1024),
            "limits.max_request_bytes",
        )?,
    })
}

pub(super) fn resolve_timeouts(file: FileTimeouts) -> Result<Timeouts, ConfigError> {
    let default = duration(
        file.default_ms.unwrap_or(10 * 60 * 1000),
        MILLISECOND,
        "timeouts.default_ms",
    )?;
    let max = duration(
        file.max_ms.unwrap_or(60 * 60 * 1000),
        MILLISECOND,
        "timeouts.max_ms",
    )?;
    let mut per_tool = BTreeMap::new();
    for (key, ms) in file.per_tool_ms {
        let tool = key
            .strip_suffix("_ms")
            .and_then(ToolName::parse)
            .ok_or_else(|| ConfigError::UnknownTool(format!("timeouts.{key}")))?;
        per_tool.insert(tool, duration(ms, MILLISECOND, "timeouts.<tool>_ms")?);
    }
    Ok(Timeouts {
        default,
        per_tool,
        max,
    })
}

/// Both streams of a `run`, plus the text rendering, stay under 1 MiB of JSON.
pub const MAX_OUTPUT_CAP: usize = 384 * 1024;

fn output_cap(configured: Option<usize>) -> Result<usize, ConfigError> {
    let cap = positive(configured.unwrap_or(256 * 1024), "limits.output_cap_bytes")?;
    match cap <= MAX_OUTPUT_CAP {
        true => Ok(cap),
        false => Err(ConfigError::OutputCapTooLarge(cap)),
    }
}
