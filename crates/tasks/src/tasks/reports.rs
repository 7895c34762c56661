//! What the task tools return, and how each reads as text.

use schemars::JsonSchema;
use serde::Serialize;

use super::forecast::Collision;
use super::isolation::{Checks, Disposition, Isolation, Review};
use super::landing::Landing;
pub use super::review::{Overlap, TargetCheck};
use super::spending::{DailyBudgets, Spending};
use super::store::{HostStatus, QueueMode, QueueSettings, Task};
use crate::render::Render;

/// How much of a transcript `task_show` returns (its end).
pub const TRANSCRIPT_TAIL: usize = 4000;

/// A task in a listing: everything but its description and transcript.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskLine {
    pub id: String,
    pub title: String,
    pub project_path: String,
    /// The git remote a host without the project clones it from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    pub agent: String,
    /// queued, running, done, deferred, wont_do, discarded, failed, cancelled or lost.
    pub state: String,
    /// The host it runs (or ran) on, on a team's shared queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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
    /// Its branch's change, when it worked in a worktree and ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeLine>,
    /// Other tasks whose open result changed some of the same files (task_show says
    /// whether they conflict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps_with: Vec<String>,
    /// While it runs: its likely conflicts with other tasks' changes and with its branch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collisions: Vec<String>,
    /// Where its result is on its way to its branch (the landing queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<String>,
    /// How its agent was confined, once it started: its sandbox, or why it had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// What its agent spent, once an attempt ended: tokens and dollars, or why unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    /// Its attempts' tokens together, when its agent's records say them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Its attempts' dollars together, when every model it used has a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// A task's change in a listing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeLine {
    pub branch: String,
    pub files: usize,
    pub insertions: u64,
    pub deletions: u64,
    /// running, passed (every check ok), failed, or skipped.
    pub checks: String,
    /// open, merged or discarded.
    pub disposition: String,
}

impl ChangeLine {
    fn of(isolation: &Isolation, review: &Review) -> Option<ChangeLine> {
        let worktree = isolation.worktree()?;
        let checks = match &review.checks {
            Checks::Running => "running",
            Checks::Skipped { .. } => "skipped",
            checks @ Checks::Done { .. } if checks.are_green() => "passed",
            Checks::Done { .. } => "failed",
        };
        let disposition = match review.disposition {
            Disposition::Open => "open",
            Disposition::Merged { .. } => "merged",
            Disposition::Discarded { .. } => "discarded",
        };
        Some(ChangeLine {
            branch: worktree.branch.clone(),
            files: review.files.len(),
            insertions: review.insertions,
            deletions: review.deletions,
            checks: checks.into(),
            disposition: disposition.into(),
        })
    }

    fn text(&self) -> String {
        format!(
            "{}: {} file(s) +{} -{}, checks {}, {}",
            self.branch, self.files, self.insertions, self.deletions, self.checks, self.disposition
        )
    }
}

impl From<&Task> for TaskLine {
    fn from(task: &Task) -> TaskLine {
        TaskLine {
            id: task.id.clone(),
            title: task.title.clone(),
            project_path: task.project_path.clone(),
            repository: task.repository.clone(),
            agent: task.agent_kind.clone(),
            state: task.state.name().to_string(),
            host: task.host.clone(),
            priority: task.priority,
            attempts: task.attempts,
            attention: task.attention.clone(),
            session: task.session.clone(),
            created_at_ms: task.created_at_ms,
            started_at_ms: task.started_at_ms,
            finished_at_ms: task.finished_at_ms,
            result: task.summary.clone().or_else(|| task.failure.clone()),
            change: match (&task.isolation, &task.review) {
                (Some(isolation), Some(review)) => ChangeLine::of(isolation, review),
                _ => None,
            },
            overlaps_with: Vec::new(),
            collisions: Vec::new(),
            landing: task.landing.as_ref().map(Landing::line),
            confinement: task
                .isolation
                .as_ref()
                .and_then(Isolation::confinement)
                .map(str::to_string),
            usage: task.usage.as_ref().map(Spending::line),
            tokens: task
                .usage
                .as_ref()
                .and_then(Spending::tokens)
                .map(|t| t.total()),
            cost_usd: task.usage.as_ref().and_then(Spending::cost_usd),
        }
    }
}

impl TaskLine {
    fn line(&self) -> String {
        let mut line = format!(
            "{} [{}] {} ({})",
            self.id, self.state, self.title, self.agent
        );
        if let Some(host) = &self.host {
            line.push_str(&format!(" on {host}"));
        }
        if let Some(why) = &self.attention {
            line.push_str(&format!(" NEEDS ATTENTION: {why}"));
        }
        if let Some(result) = &self.result {
            line.push_str(&format!(" — {result}"));
        }
        if let Some(change) = &self.change {
            line.push_str(&format!(" [{}]", change.text()));
        }
        if let Some(landing) = &self.landing {
            line.push_str(&format!(" [{landing}]"));
        }
        if let Some(usage) = &self.usage {
            line.push_str(&format!(" [{usage}]"));
        }
        for collision in &self.collisions {
            line.push_str(&format!(" FORECAST: {collision}"));
        }
        if !self.overlaps_with.is_empty() {
            line.push_str(&format!(
                " CHANGED THE SAME FILES AS {}",
                self.overlaps_with.join(", ")
            ));
        }
        line
    }
}

/// The queue's settings and how full it is.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueueStatus {
    pub mode: QueueMode,
    /// How many tasks run at once, over every host.
    pub max_concurrent: u32,
    pub running: u32,
    pub queued: u32,
    /// The hosts sharing the queue (a team's PostgreSQL queue; none on a machine's own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostStatus>,
    /// What the tasks starting in one day may spend, the queue's and each project's.
    #[serde(skip_serializing_if = "DailyBudgets::is_empty")]
    pub daily_budgets: DailyBudgets,
    /// Why new starts wait: a daily budget spent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
}

impl QueueStatus {
    pub fn new(
        settings: QueueSettings,
        running: u32,
        queued: u32,
        hosts: Vec<HostStatus>,
    ) -> QueueStatus {
        QueueStatus {
            mode: settings.mode,
            max_concurrent: settings.max_concurrent,
            running,
            queued,
            hosts,
            daily_budgets: DailyBudgets::default(),
            held: Vec::new(),
        }
    }

    fn line(&self) -> String {
        let mut line = format!(
            "queue: {}, {} of {} running, {} queued",
            self.mode.name(),
            self.running,
            self.max_concurrent,
            self.queued
        );
        for host in &self.hosts {
            line.push_str(&format!(
                "\nhost {}: {}, {} running{}, {}",
                host.entry.name,
                match host.up {
                    true => "up".to_string(),
                    false => format!("down (last seen {} s ago)", host.last_seen_ms_ago / 1000),
                },
                host.running.len(),
                host.entry
                    .cap
                    .map(|cap| format!(" of {cap}"))
                    .unwrap_or_default(),
                host.entry.url
            ));
        }
        for held in &self.held {
            line.push_str(&format!("\nHELD: {held}"));
        }
        line
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AddReport {
    /// The tasks given, in order, as the queue holds them now: each queued by this call, or
    /// one of `known`.
    pub added: Vec<TaskLine>,
    /// The tasks the queue held already under the keys given (an earlier call's, retried):
    /// not queued again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<String>,
    pub queue: QueueStatus,
}

impl Render for AddReport {
    fn render(&self) -> String {
        let queued = self.added.len() - self.known.len();
        let mut head = format!("queued {queued} task(s)");
        if !self.known.is_empty() {
            head.push_str(&format!(
                "; {} queued before under the same key, not again: {}",
                self.known.len(),
                self.known.join(", ")
            ));
        }
        let mut lines = vec![head];
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
    /// Merging its open result into the project's branch now: the files that would conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetCheck>,
    /// Other tasks' open results that changed the same files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<Overlap>,
    /// While it runs: where its change meets other tasks' changes or its branch's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forecast: Vec<Collision>,
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
            target: None,
            overlaps: Vec::new(),
            forecast: Vec::new(),
        }
    }
}

impl Render for TaskReport {
    fn render(&self) -> String {
        let task = &self.task;
        let mut lines = vec![TaskLine::from(task).line()];
        lines.push(format!("project: {}", task.project_path));
        if let Some(repository) = &task.repository {
            lines.push(format!("repository: {repository}"));
        }
        if let Some(attach) = &self.attach {
            lines.push(format!("watch: {attach}"));
        }
        if let Some(code) = task.exit_code {
            lines.push(format!("exit code: {code}"));
        }
        lines.push(format!("description: {}", task.description));
        match &task.isolation {
            Some(Isolation::InPlace { why, .. }) => lines.push(format!("worked in place: {why}")),
            Some(Isolation::Worktree(worktree)) => {
                lines.push(format!(
                    "worktree: {} on {} from {} {}",
                    worktree.dir,
                    worktree.branch,
                    worktree.base_ref.as_deref().unwrap_or("commit"),
                    &worktree.base_sha[..worktree.base_sha.len().min(12)]
                ));
                if !worktree.copied.is_empty() {
                    lines.push(format!("copied in: {}", worktree.copied.join(", ")));
                }
                lines.extend(worktree.notes.iter().map(|n| format!("note: {n}")));
            }
            None => {}
        }
        if let Some(confinement) = task.isolation.as_ref().and_then(Isolation::confinement) {
            lines.push(format!("sandbox: {confinement}"));
        }
        if let Some(review) = &task.review {
            lines.extend(review_lines(review));
        }
        if let Some(landing) = &task.landing {
            lines.push(format!("landing: {}", landing.line()));
            for sent in &landing.sent_back {
                lines.push(format!(
                    "attempt {} did not land: {}",
                    sent.attempt,
                    sent.failure.for_prompt(&sent.into)
                ));
            }
        }
        if let Some(target) = &self.target {
            lines.push(match target.files.is_empty() {
                true => format!("merges cleanly into {}", target.into),
                false => format!(
                    "CONFLICTS with {} in: {}",
                    target.into,
                    target.files.join(", ")
                ),
            });
        }
        for overlap in &self.overlaps {
            let how = match overlap.conflicts.is_empty() {
                true => "no conflict".to_string(),
                false => format!("CONFLICTS in {}", overlap.conflicts.join(", ")),
            };
            lines.push(format!(
                "task {} changed the same files ({}): {how}",
                overlap.task_id,
                overlap.files.join(", ")
            ));
        }
        for collision in &self.forecast {
            lines.push(format!("forecast: {}", collision.line()));
        }
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

fn review_lines(review: &Review) -> Vec<String> {
    let mut lines = vec![format!(
        "change: {} file(s) +{} -{} in {} commit(s){}",
        review.files.len(),
        review.insertions,
        review.deletions,
        review.commits,
        match review.committed_for_agent {
            true => " (drydock committed what the agent left)",
            false => "",
        }
    )];
    for file in review.files.iter().take(20) {
        let counts = match (file.insertions, file.deletions) {
            (Some(i), Some(d)) => format!("+{i} -{d}"),
            _ => "binary".into(),
        };
        lines.push(format!("  {} {} {counts}", file.status, file.path));
    }
    match &review.checks {
        Checks::Running => lines.push("checks: running".into()),
        Checks::Skipped { why } => lines.push(format!("checks: skipped ({why})")),
        Checks::Done { results } => lines.extend(
            results
                .iter()
                .map(|r| format!("check {}: {} — {}", r.tool, r.status, r.summary)),
        ),
    }
    lines.push(match &review.disposition {
        Disposition::Open => "result: open (task_merge or task_discard)".into(),
        Disposition::Merged {
            into, commit, how, ..
        } => {
            format!(
                "result: merged into {into} ({how}, {})",
                &commit[..commit.len().min(12)]
            )
        }
        Disposition::Discarded { commit, .. } => {
            format!("result: discarded (its last commit was {commit})")
        }
    });
    lines.extend(review.notes.iter().map(|n| format!("note: {n}")));
    lines
}
