//! The event feed: what drydock is doing, as typed events numbered in the order they were
//! published. Tool calls, terminal sessions and docs ingests publish here; the dashboard and
//! anything else that watches subscribes. Publishing never waits: a subscriber that falls
//! more than [`CAPACITY`] events behind loses the oldest and is told how many it missed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::catalog::ToolName;
use crate::millis::{millis, unix_millis};

mod results;
pub use results::KeptResult;
use results::KeptResults;

/// Events kept for subscribers that have not read them yet.
pub const CAPACITY: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// 1 for the first event of this drydock process, then one more per event.
    pub seq: u64,
    /// When it was published, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    ToolCallStarted(ToolCall),
    ToolCallFinished {
        #[serde(flatten)]
        call: ToolCall,
        status: CallStatus,
        duration_ms: u64,
    },
    /// A call in flight became an MCP task (`message` None), or its task made progress.
    ToolCallTask {
        call_id: u64,
        task_id: String,
        message: Option<String>,
    },
    TerminalSessionCreated {
        session: String,
        /// "pty", "tmux" or "user_tmux".
        backend: &'static str,
    },
    TerminalSessionRenamed {
        from: String,
        to: String,
    },
    TerminalSessionExited {
        session: String,
        /// None when the program was killed by a signal or its status is unknown.
        exit_code: Option<i32>,
    },
    /// A shell with integration finished a command in a session.
    TerminalCommandFinished {
        session: String,
        /// The directory the session was started in.
        cwd: Option<String>,
        command: String,
        exit_code: Option<i32>,
        /// What it printed (its start and end when long).
        output: String,
        duration_ms: u64,
    },
    /// An agent appeared, changed state, or its prompt changed.
    AgentState(AgentChange),
    /// A task was queued, changed state, or started or stopped needing a person.
    TaskChanged(TaskChange),
    /// Another host of a team's shared queue changed it (a task queued, started or ended
    /// there, a setting).
    QueueChanged,
    /// The task queue's database stopped answering (`answering: false`, with why), or
    /// answers again.
    QueueHealth {
        answering: bool,
        why: Option<String>,
    },
    /// The task queue's mode or cap changed.
    QueueConfigured {
        mode: &'static str,
        max_concurrent: u32,
    },
    /// A person answered a pending approval (`drydock approve`, the dashboard).
    ApprovalDecided {
        approval: String,
        /// What was asked: agent_spawn.
        action: String,
        /// The agent kind and the session it would run in.
        kind: String,
        name: String,
        approved: bool,
        /// Who answered: "drydock approve" (the CLI) or "dashboard".
        by: String,
    },
    DocsIngest {
        phase: IngestPhase,
        files_done: u64,
        files_total: u64,
        chunks_embedded: u64,
        chunks_reused: u64,
    },
}

/// An agent's new state, as the agent tools report it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentChange {
    /// Its terminal's name.
    pub agent: String,
    /// Its profile: claude, codex…
    pub kind: String,
    pub state: String,
    /// The state before; None for an agent seen for the first time.
    pub from: Option<String>,
    /// What it waits for (permission, choice, question, dialog), when waiting.
    pub waiting: Option<String>,
    /// The question on screen, when waiting.
    pub question: Option<String>,
    /// The signal that decided the state.
    pub signal: String,
}

/// A task's new state, as the task tools report it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskChange {
    pub task_id: String,
    pub title: String,
    pub project_path: String,
    pub state: String,
    /// The state before; None for a task just queued.
    pub from: Option<String>,
    /// Why it needs a person, while it does.
    pub attention: Option<String>,
    /// The terminal session it runs in.
    pub session: Option<String>,
}

/// One tool call, as its started and finished events name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// Shared by a call's started and finished events.
    pub call_id: u64,
    pub tool: ToolName,
    /// The arguments as compact JSON, cut to [`ARGUMENTS_SUMMARY_CHARS`] characters.
    pub arguments: String,
    /// The `project_path` (or `cwd`) the call names, if any.
    pub project: Option<String>,
    /// The client's name from its MCP handshake ("claude-code"), or "drydock call".
    pub client: Option<String>,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CallStatus {
    /// It returned a result; `status` is the result's own (`passed`, `failed`, ...) if it has one.
    Completed { status: Option<String> },
    /// It could not run (an error result): the error's first line.
    Error { message: String },
    /// The client cancelled it or went away before it finished.
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IngestPhase {
    Started,
    Progress,
    Finished,
}

pub const ARGUMENTS_SUMMARY_CHARS: usize = 200;

/// `arguments` as compact JSON, at most [`ARGUMENTS_SUMMARY_CHARS`] characters (then "…").
pub fn summarize_arguments(arguments: &serde_json::Value) -> String {
    let json = arguments.to_string();
    match json.char_indices().nth(ARGUMENTS_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &json[..cut]),
        None => json,
    }
}

/// One tool call on the feed: `started` publishes its start; `finish` (or dropping it
/// unfinished, as happens when the client goes away) publishes how it ended.
pub struct CallRecord {
    events: Arc<Events>,
    call: Option<ToolCall>,
    started: Instant,
}

impl CallRecord {
    pub fn started(
        events: Arc<Events>,
        tool: ToolName,
        arguments: &serde_json::Value,
        client: Option<String>,
    ) -> CallRecord {
        static NEXT_CALL: AtomicU64 = AtomicU64::new(1);
        let call = ToolCall {
            call_id: NEXT_CALL.fetch_add(1, Ordering::Relaxed),
            tool,
            arguments: summarize_arguments(arguments),
            project: ["project_path", "cwd"]
                .iter()
                .find_map(|key| arguments.get(key)?.as_str())
                .map(str::to_string),
            client,
        };
        events.publish(EventKind::ToolCallStarted(call.clone()));
        CallRecord {
            events,
            call: Some(call),
            started: Instant::now(),
        }
    }

    /// The id the feed shows this call under.
    pub fn call_id(&self) -> Option<u64> {
        self.call.as_ref().map(|call| call.call_id)
    }

    pub fn finish(mut self, status: CallStatus) {
        self.publish_finished(status);
    }

    /// [`CallRecord::finish`], keeping what the call returned for later viewers (published
    /// after it is kept, so a viewer that sees the call end finds its result).
    pub fn finish_with(mut self, status: CallStatus, result: &serde_json::Value) {
        if let Some(call) = &self.call {
            self.events.keep_result(call.call_id, result);
        }
        self.publish_finished(status);
    }

    fn publish_finished(&mut self, status: CallStatus) {
        if let Some(call) = self.call.take() {
            let duration_ms = millis(self.started.elapsed());
            self.events.publish(EventKind::ToolCallFinished {
                call,
                status,
                duration_ms,
            });
        }
    }
}

impl Drop for CallRecord {
    fn drop(&mut self) {
        self.publish_finished(CallStatus::Cancelled);
    }
}

/// What a subscriber reads next.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    Event(Event),
    /// This many events were published but dropped before this subscriber read them.
    Missed(u64),
}

pub struct Events {
    sender: broadcast::Sender<Event>,
    /// The last sequence number given; held while sending so numbers reach subscribers in order.
    last_seq: Mutex<u64>,
    /// The latest tool call events, for a viewer that comes later (the dashboard's feed).
    recent_calls: Mutex<VecDeque<Event>>,
    /// What the latest calls returned.
    results: Mutex<KeptResults>,
}

/// Tool call events kept for later viewers.
pub const RECENT_CALLS: usize = 200;

impl Default for Events {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Events {
    pub fn with_capacity(capacity: usize) -> Events {
        Events {
            sender: broadcast::Sender::new(capacity),
            last_seq: Mutex::new(0),
            recent_calls: Mutex::default(),
            results: Mutex::default(),
        }
    }

    /// Publishes `kind` and returns its sequence number. Never waits for a subscriber.
    pub fn publish(&self, kind: EventKind) -> u64 {
        let mut last_seq = self
            .last_seq
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *last_seq += 1;
        let event = Event {
            seq: *last_seq,
            at_ms: unix_millis(SystemTime::now()),
            kind,
        };
        if matches!(
            event.kind,
            EventKind::ToolCallStarted(_)
                | EventKind::ToolCallFinished { .. }
                | EventKind::ToolCallTask { message: None, .. }
        ) {
            let mut recent = self
                .recent_calls
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if recent.len() == RECENT_CALLS {
                recent.pop_front();
            }
            recent.push_back(event.clone());
        }
        // No subscriber is not an error: the event is simply not kept.
        let _ = self.sender.send(event);
        *last_seq
    }

    /// The latest tool call events (at most [`RECENT_CALLS`]), oldest first.
    pub fn recent_calls(&self) -> Vec<Event> {
        let recent = self
            .recent_calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recent.iter().cloned().collect()
    }

    fn keep_result(&self, call_id: u64, result: &serde_json::Value) {
        self.results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keep(call_id, result, RECENT_CALLS);
    }

    /// What call `call_id` returned, while it is among the latest calls (and the results
    /// kept in bytes).
    pub fn call_result(&self, call_id: u64) -> Option<KeptResult> {
        self.results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(call_id)
    }

    /// Whether anything listens to the feed now.
    pub fn has_subscribers(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// Events published from now on.
    pub fn subscribe(&self) -> Subscription {
        Subscription {
            receiver: self.sender.subscribe(),
        }
    }
}

pub struct Subscription {
    receiver: broadcast::Receiver<Event>,
}

impl Subscription {
    /// The next event, or how many were missed; None once the feed is gone.
    pub fn recv(&mut self) -> BoxFuture<'_, Option<Received>> {
        async move {
            match self.receiver.recv().await {
                Ok(event) => Some(Received::Event(event)),
                Err(broadcast::error::RecvError::Lagged(missed)) => Some(Received::Missed(missed)),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        }
        .boxed()
    }

    /// Like [`Subscription::recv`], without waiting: None when nothing is waiting.
    pub fn try_recv(&mut self) -> Option<Received> {
        match self.receiver.try_recv() {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(missed)) => Some(Received::Missed(missed)),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(n: usize) -> EventKind {
        EventKind::TerminalSessionCreated {
            session: format!("t{n}"),
            backend: "pty",
        }
    }

    fn seq(received: Option<Received>) -> u64 {
        match received {
            Some(Received::Event(event)) => event.seq,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn subscribers_read_every_event_in_order_with_rising_numbers() {
        let events = Events::default();
        let mut first = events.subscribe();
        let mut second = events.subscribe();
        for n in 0..10 {
            assert_eq!(events.publish(created(n)), n as u64 + 1);
        }
        for expected in 1..=10 {
            assert_eq!(seq(first.recv().await), expected);
            assert_eq!(seq(second.recv().await), expected);
        }
        assert_eq!(first.try_recv(), None);
    }

    #[tokio::test]
    async fn a_slow_subscriber_loses_the_oldest_and_learns_how_many() {
        let events = Events::with_capacity(8);
        let mut slow = events.subscribe();
        for n in 0..20 {
            // Publishing does not wait for the subscriber that reads nothing.
            events.publish(created(n));
        }
        assert_eq!(slow.recv().await, Some(Received::Missed(12)));
        assert_eq!(seq(slow.recv().await), 13);
        for expected in 14..=20 {
            assert_eq!(seq(slow.recv().await), expected);
        }
    }

    #[tokio::test]
    async fn publishing_from_many_threads_keeps_numbers_in_order() {
        let events = Arc::new(Events::with_capacity(10_000));
        let mut subscriber = events.subscribe();
        let publishers: Vec<_> = (0..4)
            .map(|_| {
                let events = events.clone();
                std::thread::spawn(move || {
                    for n in 0..1000 {
                        events.publish(created(n));
                    }
                })
            })
            .collect();
        for publisher in publishers {
            publisher.join().unwrap();
        }
        for expected in 1..=4000 {
            assert_eq!(seq(subscriber.try_recv()), expected);
        }
    }

    #[test]
    fn a_subscriber_sees_only_what_comes_after_it() {
        let events = Events::default();
        events.publish(created(0));
        let mut late = events.subscribe();
        assert_eq!(late.try_recv(), None);
        events.publish(created(1));
        assert_eq!(seq(late.try_recv()), 2);
    }

    #[test]
    fn events_serialize_flat_with_their_type() {
        let event = Event {
            seq: 7,
            at_ms: 1_000,
            kind: EventKind::ToolCallFinished {
                call: ToolCall {
                    call_id: 3,
                    tool: ToolName::Test,
                    arguments: "{}".into(),
                    project: Some("/p".into()),
                    client: None,
                },
                status: CallStatus::Completed {
                    status: Some("passed".into()),
                },
                duration_ms: 12,
            },
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            serde_json::json!({
                "seq": 7, "at_ms": 1000, "type": "tool_call_finished",
                "call_id": 3, "tool": "test", "arguments": "{}", "project": "/p", "client": null,
                "status": {"outcome": "completed", "status": "passed"}, "duration_ms": 12
            })
        );
    }

    fn finished(received: Option<Received>) -> (ToolCall, CallStatus) {
        match received {
            Some(Received::Event(Event {
                kind: EventKind::ToolCallFinished { call, status, .. },
                ..
            })) => (call, status),
            other => panic!("expected a finished call, got {other:?}"),
        }
    }

    #[test]
    fn a_call_is_published_when_it_starts_and_when_it_ends_however_it_ends() {
        let events = Arc::new(Events::default());
        let mut feed = events.subscribe();
        let arguments = serde_json::json!({ "project_path": "/p", "filter": "x" });
        let record = CallRecord::started(events.clone(), ToolName::Test, &arguments, None);
        let Some(Received::Event(Event {
            kind: EventKind::ToolCallStarted(started),
            ..
        })) = feed.try_recv()
        else {
            panic!("no started event");
        };
        assert_eq!(started.project.as_deref(), Some("/p"));
        record.finish(CallStatus::Completed {
            status: Some("passed".into()),
        });
        let (call, status) = finished(feed.try_recv());
        assert_eq!(call, started);
        assert_eq!(
            status,
            CallStatus::Completed {
                status: Some("passed".into())
            }
        );

        let abandoned = CallRecord::started(events.clone(), ToolName::Run, &arguments, None);
        let _ = feed.try_recv();
        drop(abandoned);
        assert_eq!(finished(feed.try_recv()).1, CallStatus::Cancelled);
        assert_eq!(feed.try_recv(), None, "one finished event per call");
    }

    #[test]
    fn the_latest_tool_calls_are_kept_for_later_viewers() {
        let events = Events::default();
        events.publish(created(0));
        for _ in 0..RECENT_CALLS + 5 {
            events.publish(EventKind::ToolCallStarted(ToolCall {
                call_id: 1,
                tool: ToolName::TerminalList,
                arguments: "{}".into(),
                project: None,
                client: None,
            }));
        }
        let recent = events.recent_calls();
        assert_eq!(recent.len(), RECENT_CALLS, "bounded");
        assert_eq!(
            recent.last().unwrap().seq,
            RECENT_CALLS as u64 + 6,
            "the latest kept"
        );
        assert!(
            recent
                .iter()
                .all(|e| matches!(e.kind, EventKind::ToolCallStarted(_))),
            "only tool calls"
        );
    }

    #[test]
    fn long_arguments_are_cut_on_a_character_boundary() {
        let long = serde_json::json!({ "text": "é".repeat(500) });
        let summary = summarize_arguments(&long);
        assert_eq!(summary.chars().count(), ARGUMENTS_SUMMARY_CHARS + 1);
        assert!(summary.ends_with('…'));
        assert_eq!(summarize_arguments(&serde_json::json!({})), "{}");
    }
}
