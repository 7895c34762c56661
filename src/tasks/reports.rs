//! What the task tools return, and how each reads as text.

use schemars::JsonSchema;
use serde::Serialize;

use super::store::{QueueMode, QueueSettings, Task};
use crate::render::Render;

/// How much of a transcript `task_show` returns (its end).
pub const TRANSCRIPT_TAIL: usize = 4000;

/// A task in a listing: everything but its description and transcript.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskLine {
    pub id: String,
    pub title: String,
    pub project_path: String,
    pub agent: String,
    /// queued, running, done, deferred, wont_do, discarded, failed or cancelled.
    pub state: String,
    pub priority: i64,
    pub attempts: u32,
    /// Why it needs a person now (its agent waits at a prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub created_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<u64>,
    /// The agent's summary, or why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

impl From<&Task> for TaskLine {
    fn from(task: &Task) -> TaskLine {
        TaskLine {
            id: task.id.clone(),
            title: task.title.clone(),
            project_path: task.project_path.clone(),
            agent: task.agent_kind.clone(),
            state: task.state.name().to_string(),
            priority: task.priority,
            attempts: task.attempts,
            attention: task.attention.clone(),
            session: task.session.clone(),
            created_at_ms: task.created_at_ms,
            started_at_ms: task.started_at_ms,
            finished_at_ms: task.finished_at_ms,
            result: task.summary.clone().or_else(|| task.failure.clone()),
        }
    }
}

impl TaskLine {
    fn line(&self) -> String {
        let mut line = format!(
            "{} [{}] {} ({})",
            self.id, self.state, self.title, self.agent
        );
        if let Some(why) = &self.attention {
            line.push_str(&format!(" NEEDS ATTENTION: {why}"));
        }
        if let Some(result) = &self.result {
            line.push_str(&format!(" — {result}"));
        }
        line
    }
}

/// The queue's settings and how full it is.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueueStatus {
    pub mode: QueueMode,
    pub max_concurrent: u32,
    pub running: u32,
    pub queued: u32,
}

impl QueueStatus {
    pub fn new(settings: QueueSettings, running: u32, queued: u32) -> QueueStatus {
        QueueStatus {
            mode: settings.mode,
            max_concurrent: settings.max_concurrent,
            running,
            queued,
        }
    }

    fn line(&self) -> String {
        let mode = match self.mode {
            QueueMode::Manual => "manual",
            QueueMode::Auto => "auto",
        };
        format!(
            "queue: {mode}, {} of {} running, {} queued",
            self.running, self.max_concurrent, self.queued
        )
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddReport {
    /// The tasks queued, in the order given.
    pub added: Vec<TaskLine>,
    pub queue: QueueStatus,
}

impl Render for AddReport {
    fn render(&self) -> String {
        let mut lines = vec![format!("queued {} task(s)", self.added.len())];
        lines.extend(self.added.iter().map(TaskLine::line));
        lines.push(self.queue.line());
        lines.join("\n")
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListReport {
    pub tasks: Vec<TaskLine>,
    pub queue: QueueStatus,
}

impl Render for ListReport {
    fn render(&self) -> String {
        let mut lines: Vec<String> = self.tasks.iter().map(TaskLine::line).collect();
        if lines.is_empty() {
            lines.push("no tasks".into());
        }
        lines.push(self.queue.line());
        lines.join("\n")
    }
}

/// One task in full, its transcript cut to its end.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskReport {
    pub task: Task,
    /// How to watch its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
    /// The transcript was cut to its last characters.
    pub transcript_cut: bool,
}

impl TaskReport {
    pub fn new(mut task: Task, attach: Option<String>) -> TaskReport {
        let mut transcript_cut = false;
        if let Some(transcript) = &mut task.transcript {
            let chars = transcript.chars().count();
            if chars > TRANSCRIPT_TAIL {
                *transcript = transcript.chars().skip(chars - TRANSCRIPT_TAIL).collect();
                transcript_cut = true;
            }
        }
        TaskReport {
            task,
            attach,
            transcript_cut,
        }
    }
}

impl Render for TaskReport {
    fn render(&self) -> String {
        let task = &self.task;
        let mut lines = vec![TaskLine::from(task).line()];
        lines.push(format!("project: {}", task.project_path));
        if let Some(attach) = &self.attach {
            lines.push(format!("watch: {attach}"));
        }
        if let Some(code) = task.exit_code {
            lines.push(format!("exit code: {code}"));
        }
        lines.push(format!("description: {}", task.description));
        if let Some(transcript) = &task.transcript {
            lines.push("transcript (end):".into());
            lines.push(transcript.clone());
        }
        lines.join("\n")
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueueReport {
    pub queue: QueueStatus,
    /// Tasks started because of this change.
    pub started: Vec<String>,
    /// Tasks cancelled by it (queue_clear).
    pub cancelled: Vec<String>,
}

impl Render for QueueReport {
    fn render(&self) -> String {
        let mut lines = vec![self.queue.line()];
        if !self.started.is_empty() {
            lines.push(format!("started: {}", self.started.join(", ")));
        }
        if !self.cancelled.is_empty() {
            lines.push(format!("cancelled: {}", self.cancelled.join(", ")));
        }
        lines.join("\n")
    }
}
