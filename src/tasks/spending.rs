//! What a task's agent spent, attempt by attempt, as its agent's own records say (see
//! [`crate::agents::usage`]), and what that cost by the price table when it was counted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use super::Tasks;
use super::isolation::Isolation;
use super::store::Task;
use crate::agents::usage::{self, ByModel, Run, Tokens};
use crate::config::prices::Prices;

/// A task's spending, one entry per attempt counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spending {
    pub attempts: Vec<AttemptSpent>,
}

/// What one attempt spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptSpent {
    pub attempt: u32,
    /// Tokens by model; None when its agent's records do not say (then `unknown` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<ByModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// US dollars, by the price table then; None when a model had no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The models it used that have no price.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

// A cost is never NaN: it is a sum of counts times prices the config checked.
impl Eq for AttemptSpent {}
impl Eq for Spending {}

impl AttemptSpent {
    pub fn counted(attempt: u32, spent: Result<ByModel, String>, prices: &Prices) -> AttemptSpent {
        match spent {
            Ok(tokens) => {
                let cost = prices.cost(&tokens);
                AttemptSpent {
                    attempt,
                    cost_usd: cost.unpriced.is_empty().then_some(cost.usd),
                    unpriced: cost.unpriced,
                    tokens: Some(tokens),
                    unknown: None,
                }
            }
            Err(why) => AttemptSpent {
                attempt,
                tokens: None,
                unknown: Some(why),
                cost_usd: None,
                unpriced: Vec::new(),
            },
        }
    }
}

impl Spending {
    /// Keeps `spent` as its attempt's (replacing an earlier count of that attempt).
    pub fn record(&mut self, spent: AttemptSpent) {
        self.attempts.retain(|a| a.attempt != spent.attempt);
        self.attempts.push(spent);
        self.attempts.sort_by_key(|a| a.attempt);
    }

    /// The tokens of every attempt together; None when one of them is unknown.
    pub fn tokens(&self) -> Option<Tokens> {
        let mut total = Tokens::default();
        for attempt in &self.attempts {
            for tokens in attempt.tokens.as_ref()?.values() {
                total.add(tokens);
            }
        }
        Some(total)
    }

    /// The dollars of every attempt together; None when one is unknown or unpriced.
    pub fn cost_usd(&self) -> Option<f64> {
        self.attempts.iter().map(|a| a.cost_usd).sum()
    }

    /// How it reads in a listing: `12,345 tokens, $0.12`.
    pub fn line(&self) -> String {
        let Some(tokens) = self.tokens() else {
            let why = self.attempts.iter().find_map(|a| a.unknown.as_deref());
            return format!("usage unknown: {}", why.unwrap_or("not counted"));
        };
        let cost = match self.cost_usd() {
            Some(usd) => format!("${usd:.2}"),
            None => {
                let mut unpriced: Vec<&str> = self
                    .attempts
                    .iter()
                    .flat_map(|a| a.unpriced.iter().map(String::as_str))
                    .collect();
                unpriced.sort_unstable();
                unpriced.dedup();
                format!("price unknown ({})", unpriced.join(", "))
            }
        };
        format!(
            "{} tokens ({} in, {} out, {} cache read, {} cache write), {cost}",
            thousands(tokens.total()),
            thousands(tokens.input),
            thousands(tokens.output),
            thousands(tokens.cache_read),
            thousands(tokens.cache_write),
        )
    }
}

impl Tasks {
    /// Counts what `task`'s latest attempt spent, by its agent's records, and keeps it.
    pub(super) async fn count_spending(&self, task: &Task) {
        let counted = self.spent_by(task).await;
        let mut spending = task.usage.clone().unwrap_or_default();
        spending.record(AttemptSpent::counted(
            task.attempts,
            counted,
            &self.config.prices,
        ));
        let kept = match self.store().await {
            Ok(store) => store
                .set_usage(&task.id, &spending)
                .await
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(error) = kept {
            tracing::warn!("task {}: keeping what it spent: {error}", task.id);
        }
    }

    async fn spent_by(&self, task: &Task) -> Result<ByModel, String> {
        let source = self
            .agents
            .profile(&task.agent_kind)
            .and_then(|profile| profile.usage.clone())
            .ok_or_else(|| format!("the {} profile names no records of usage", task.agent_kind))?;
        let person = dirs::home_dir().ok_or("no home folder")?;
        let sandboxed = task
            .isolation
            .as_ref()
            .and_then(Isolation::confinement)
            .is_some_and(|how| how.starts_with("bubblewrap"));
        let home = match sandboxed {
            true => self.task_dir(&task.id).join("home"),
            false => person.clone(),
        };
        let cwd = match &task.isolation {
            Some(Isolation::Worktree(worktree)) => worktree.path().to_path_buf(),
            _ => PathBuf::from(&task.project_path),
        };
        let since_ms = task.started_at_ms.unwrap_or(0);
        tokio::task::spawn_blocking(move || {
            let run = Run {
                home: &home,
                home_inside: &person,
                cwd: &cwd,
                since_ms,
            };
            usage::spent(&source, &run, &|name| std::env::var(name).ok())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opus(input: u64, output: u64) -> ByModel {
        ByModel::from([(
            "claude-opus-5-5".to_string(),
            Tokens {
                input,
                output,
                ..Tokens::default()
            },
        )])
    }

    #[test]
    fn attempts_add_up_and_a_recount_replaces_its_attempt() {
        let prices = Prices::default();
        let mut spending = Spending::default();
        spending.record(AttemptSpent::counted(1, Ok(opus(1_000_000, 0)), &prices));
        spending.record(AttemptSpent::counted(2, Ok(opus(0, 1000)), &prices));
        spending.record(AttemptSpent::counted(2, Ok(opus(0, 100_000)), &prices));
        assert_eq!(spending.attempts.len(), 2);
        assert_eq!(spending.tokens().unwrap().total(), 1_100_000);
        assert!((spending.cost_usd().unwrap() - 6.0).abs() < 1e-9);
        assert_eq!(
            spending.line(),
            "1,100,000 tokens (1,000,000 in, 100,000 out, 0 cache read, 0 cache write), $6.00"
        );
    }

    #[test]
    fn unknown_usage_and_unknown_prices_are_said_never_zero() {
        let prices = Prices::default();
        let mut unknown = Spending::default();
        unknown.record(AttemptSpent::counted(
            1,
            Err("its profile names no usage records".into()),
            &prices,
        ));
        assert_eq!(
            unknown.line(),
            "usage unknown: its profile names no usage records"
        );
        let mut unpriced = Spending::default();
        let lab = ByModel::from([(
            "gpt-lab".to_string(),
            Tokens {
                input: 5,
                ..Tokens::default()
            },
        )]);
        unpriced.record(AttemptSpent::counted(1, Ok(lab), &prices));
        assert!(
            unpriced.line().ends_with("price unknown (gpt-lab)"),
            "{}",
            unpriced.line()
        );
        assert_eq!(unpriced.cost_usd(), None);
    }
}
