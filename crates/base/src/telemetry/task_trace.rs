//! A task's trace. Its trace id and the id of the task's own span come from the task's id,
//! so what is recorded of it at different times, even by other hosts (an attempt when it
//! ends, the checks, the landing, the task's own span each time it ends), joins one tree.

use std::cell::Cell;
use std::time::SystemTime;

use opentelemetry::trace::{Span as _, SpanBuilder};
use opentelemetry::trace::{
    SpanContext, SpanKind, Status, TraceContextExt, TraceFlags, TraceState, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use sha2::Digest;

use crate::spend::Tokens;

thread_local! {
    /// The ids the next span built on this thread takes, when [`record_task_span`] chose
    /// them.
    static CHOSEN: Cell<Option<(TraceId, SpanId)>> = const { Cell::new(None) };
}

/// Random ids, but those [`record_task_span`] chose for the span it builds.
#[derive(Debug, Default)]
pub(super) struct TaskIds(RandomIdGenerator);

impl IdGenerator for TaskIds {
    fn new_trace_id(&self) -> TraceId {
        CHOSEN
            .get()
            .map_or_else(|| self.0.new_trace_id(), |(trace, _)| trace)
    }

    fn new_span_id(&self) -> SpanId {
        CHOSEN
            .get()
            .map_or_else(|| self.0.new_span_id(), |(_, span)| span)
    }
}

/// The trace id of task `task_id`, and the span id of the task's own span.
fn task_ids(task_id: &str) -> (TraceId, SpanId) {
    let hash = sha2::Sha256::digest(format!("drydock task {task_id}").as_bytes());
    let trace: [u8; 16] = hash[..16].try_into().expect("16 bytes of 32");
    let span: [u8; 8] = hash[16..24].try_into().expect("8 bytes of 32");
    (TraceId::from_bytes(trace), SpanId::from_bytes(span))
}

/// What part of a task a span covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskPart {
    /// The task itself, from its creation to its end: the trace's root.
    Task,
    /// One run of its agent.
    Attempt,
    /// The project's checks on its result.
    Checks,
    /// Its result's way to its branch.
    Landing,
}

impl TaskPart {
    fn name(self) -> &'static str {
        match self {
            TaskPart::Task => "task",
            TaskPart::Attempt => "attempt",
            TaskPart::Checks => "checks",
            TaskPart::Landing => "landing",
        }
    }
}

/// One span of a task's trace, recorded after the fact.
#[derive(Debug, Clone)]
pub struct TaskSpan {
    pub task_id: String,
    pub part: TaskPart,
    /// What a person reads in a trace's list: `attempt 2 of fix the parser`.
    pub name: String,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    pub attributes: Vec<KeyValue>,
}

impl TaskSpan {
    /// `tokens` (and their cost, when known) as the span's attributes.
    pub fn with_usage(mut self, tokens: Option<Tokens>, cost_usd: Option<f64>) -> TaskSpan {
        match tokens {
            Some(tokens) => self.attributes.extend([
                KeyValue::new("drydock.tokens", tokens.total() as i64),
                KeyValue::new("gen_ai.usage.input_tokens", tokens.input as i64),
                KeyValue::new("gen_ai.usage.output_tokens", tokens.output as i64),
                KeyValue::new(
                    "gen_ai.usage.cache_read_input_tokens",
                    tokens.cache_read as i64,
                ),
                KeyValue::new(
                    "gen_ai.usage.cache_creation_input_tokens",
                    tokens.cache_write as i64,
                ),
            ]),
            // Not a count of another type under the same key: a backend sums `drydock.tokens`.
            None => self
                .attributes
                .push(KeyValue::new("drydock.usage", "unknown")),
        }
        if let Some(usd) = cost_usd {
            self.attributes.push(KeyValue::new("drydock.cost_usd", usd));
        }
        self
    }
}

/// Records `span` in its task's trace: the task's own span at the trace's root, any other
/// beneath it. Nothing when traces are off.
pub fn record_task_span(span: TaskSpan) {
    if !super::on() {
        return;
    }
    let (trace, own) = task_ids(&span.task_id);
    let tracer = opentelemetry::global::tracer_provider().tracer("drydock");
    let mut attributes = vec![
        KeyValue::new("drydock.task.id", span.task_id.clone()),
        KeyValue::new("drydock.task.part", span.part.name()),
    ];
    attributes.extend(span.attributes);
    let builder = SpanBuilder::from_name(span.name)
        .with_kind(SpanKind::Internal)
        .with_start_time(span.start)
        .with_attributes(attributes);
    let mut built = match span.part {
        TaskPart::Task => {
            CHOSEN.set(Some((trace, own)));
            let built = tracer.build_with_context(builder, &Context::new());
            CHOSEN.set(None);
            built
        }
        TaskPart::Attempt | TaskPart::Checks | TaskPart::Landing => {
            let task = SpanContext::new(trace, own, TraceFlags::SAMPLED, true, TraceState::NONE);
            let parent = Context::new().with_remote_span_context(task);
            tracer.build_with_context(builder, &parent)
        }
    };
    if let Some(failure) = span.failure {
        built.set_status(Status::error(failure));
    }
    built.end_with_timestamp(span.end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_ids_are_its_own_and_always_the_same() {
        let (trace, span) = task_ids("d3969a69");
        assert_eq!(task_ids("d3969a69"), (trace, span));
        assert_ne!(task_ids("d3969a6a").0, trace);
        assert_ne!(trace, TraceId::INVALID);
        assert_ne!(span, SpanId::INVALID);
    }

    #[test]
    fn chosen_ids_are_taken_only_while_chosen() {
        let ids = TaskIds::default();
        let chosen = task_ids("t");
        CHOSEN.set(Some(chosen));
        assert_eq!((ids.new_trace_id(), ids.new_span_id()), chosen);
        CHOSEN.set(None);
        assert_ne!(ids.new_trace_id(), chosen.0);
        assert_ne!(ids.new_span_id(), chosen.1);
    }
}
