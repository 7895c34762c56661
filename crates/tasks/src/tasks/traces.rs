//! What a task's trace holds (see `telemetry`), each recorded when it ends: each attempt
//! with what it spent, the checks of its result, each landing pass, and the task's own span.
//! The task's own span is sent again after each of its runs and each landing pass, with the
//! same ids: from the task's creation to then, with what it spent so far, so a backend that
//! keeps one span per id keeps the latest, and a task that never settles is still seen.

use std::time::{Duration, SystemTime};

use super::isolation::Checks;
use super::landing::LandingState;
use super::spending::Spending;
use super::state::TaskState;
use super::store::Task;
use crate::telemetry::{KeyValue, TaskPart, TaskSpan, record_task_span};

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

fn span(task: &Task, part: TaskPart, name: String, start: SystemTime) -> TaskSpan {
    TaskSpan {
        task_id: task.id.clone(),
        part,
        name,
        start,
        end: SystemTime::now(),
        failure: None,
        attributes: vec![
            KeyValue::new("drydock.task.title", task.title.clone()),
            KeyValue::new("drydock.task.project", task.project_path.clone()),
        ],
    }
}

/// The task's own span, from its creation to now, with what all its attempts spent.
pub(super) fn task_so_far(task: &Task) {
    let mut ended = span(
        task,
        TaskPart::Task,
        task.title.clone(),
        at(task.created_at_ms),
    );
    ended.attributes.extend([
        KeyValue::new("drydock.task.state", task.state.name()),
        KeyValue::new("drydock.task.attempts", i64::from(task.attempts)),
        KeyValue::new("drydock.task.agent", task.agent_kind.clone()),
    ]);
    if matches!(task.state, TaskState::Failed | TaskState::Lost) {
        ended.failure = Some(
            task.failure
                .clone()
                .unwrap_or_else(|| task.state.to_string()),
        );
    }
    let spending = task.usage.clone().unwrap_or_default();
    record_task_span(ended.with_usage(spending.tokens(), spending.cost_usd()));
}

/// The attempt `run` ran, from its start to now, with what it spent.
pub(super) fn attempt_ended(run: &Task, spending: &Spending) {
    let start = at(run.started_at_ms.unwrap_or(run.created_at_ms));
    let name = format!("attempt {} of {}", run.attempts, run.title);
    let mut ended = span(run, TaskPart::Attempt, name, start);
    ended.attributes.extend([
        KeyValue::new("drydock.attempt", i64::from(run.attempts)),
        KeyValue::new("drydock.task.state", run.state.name()),
    ]);
    if let Some(host) = &run.host {
        ended
            .attributes
            .push(KeyValue::new("drydock.host", host.clone()));
    }
    ended.failure = run.failure.clone();
    let attempt = spending.attempts.iter().find(|a| a.attempt == run.attempts);
    let by_model = attempt.and_then(|a| a.tokens.as_ref());
    if let Some(by_model) = by_model {
        let models: Vec<&str> = by_model.keys().map(String::as_str).collect();
        ended
            .attributes
            .push(KeyValue::new("gen_ai.request.model", models.join(",")));
    }
    let tokens = by_model.map(crate::spend::all_models);
    record_task_span(ended.with_usage(tokens, attempt.and_then(|a| a.cost_usd)));
}

/// The checks of `task`'s result, from `start` to now.
pub(super) fn checks_ended(task: &Task, start: SystemTime, checks: &Checks) {
    let mut ended = span(
        task,
        TaskPart::Checks,
        format!("checks of {}", task.title),
        start,
    );
    match checks {
        Checks::Done { results } => {
            for result in results {
                let key = format!("drydock.check.{}", result.tool);
                ended
                    .attributes
                    .push(KeyValue::new(key, result.status.clone()));
            }
            ended.failure = checks
                .first_failed()
                .map(|failed| format!("{}: {}", failed.tool, failed.summary));
        }
        Checks::Skipped { why } => {
            ended
                .attributes
                .push(KeyValue::new("drydock.checks.skipped", why.clone()));
        }
        Checks::Running => {}
    }
    record_task_span(ended);
}

/// One landing pass of `task`, from `start` to now, as its landing says it ended.
pub(super) fn landing_ended(task: &Task, start: SystemTime) {
    let Some(landing) = &task.landing else {
        return;
    };
    let mut ended = span(
        task,
        TaskPart::Landing,
        format!("landing of {}", task.title),
        start,
    );
    let state = match &landing.state {
        LandingState::Waiting { .. } => "waiting",
        LandingState::Testing { .. } => "testing",
        LandingState::Held { .. } => "held",
        LandingState::Landed { .. } => "landed",
        LandingState::SentBack { .. } => "sent_back",
        LandingState::WaitsForPerson { .. } => "waits_for_person",
    };
    ended.attributes.extend([
        KeyValue::new("drydock.landing.state", state),
        KeyValue::new("drydock.landing.sent_back", landing.sent_back.len() as i64),
    ]);
    if let LandingState::Landed { commit, how, .. } = &landing.state {
        ended.attributes.extend([
            KeyValue::new("drydock.landing.commit", commit.clone()),
            KeyValue::new("drydock.landing.how", how.clone()),
        ]);
    }
    if matches!(
        landing.state,
        LandingState::SentBack { .. } | LandingState::WaitsForPerson { .. }
    ) {
        ended.failure = Some(landing.line());
    }
    record_task_span(ended);
}
