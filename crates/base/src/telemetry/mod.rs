//! drydock's traces over OTLP (`[telemetry]`, off by default): a span for each tool call,
//! joined to the caller's trace when its request carries `traceparent` in `_meta`, and one
//! trace per task, its attempts, checks and landing beneath the task's own span with what
//! they spent.
//!
//! Only spans of [`TARGET`] are exported: drydock's log lines and its dependencies' spans
//! never are.

mod export;
mod task_trace;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use export::{ExportError, Exporting};
pub use opentelemetry::KeyValue;
pub use task_trace::{TaskPart, TaskSpan, record_task_span};

/// The target of the spans that are exported.
pub const TARGET: &str = "drydock::trace";

/// Whether traces are exported: nothing is spent on them otherwise.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether traces are exported; what is read only for them is left unread when not.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The caller's trace, as W3C Trace Context writes it (the request's `_meta`).
#[derive(Debug, Default, Clone, Copy)]
pub struct CallerTrace<'a> {
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}

/// The span of one tool call, joined to the trace its caller named; a disabled span when
/// traces are off.
pub fn tool_call_span(tool: &str, client: Option<&str>, caller: CallerTrace) -> tracing::Span {
    if !on() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: TARGET,
        "tool_call",
        otel.name = format!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        mcp.tool = tool,
        mcp.client = client.unwrap_or("unknown"),
        mcp.status = tracing::field::Empty,
    );
    if let Some(traceparent) = caller.traceparent {
        let mut carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
        if let Some(tracestate) = caller.tracestate {
            carrier.insert("tracestate".to_string(), tracestate.to_string());
        }
        // A malformed traceparent extracts as no parent: the call starts a trace of its own.
        let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
    }
    span
}

/// Says on `span` how its tool call ended: `ok`, `error` or `cancelled`.
pub fn end_tool_call(span: &tracing::Span, status: &str) {
    if span.is_none() {
        return;
    }
    span.record("mcp.status", status);
    if status != "ok" {
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", status);
    }
}
