//! What a task's agent spent, attempt by attempt, as its agent's own records say (see
//! [`crate::agents::usage`]), and what that cost by the price table when it was counted.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::prices::Prices;
pub use crate::spend::Budget;
use crate::spend::{ByModel, Tokens, thousands};
use crate::workspace::ProjectPlace;

/// A task's spending, one entry per attempt counted, and the budget it runs under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spending {
    pub attempts: Vec<AttemptSpent>,
    /// What all its attempts together may spend; None: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// What the tasks that start in one day (UTC) may spend together: the whole queue's (a
/// team's, on a shared queue), and each project's (by its place: the root's name and the
/// path below it, as every host names it). Kept in the task store: every host holds to them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DailyBudgets {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<Budget>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub projects: BTreeMap<String, Budget>,
}

impl Eq for DailyBudgets {}

impl DailyBudgets {
    pub fn is_empty(&self) -> bool {
        self.team.is_none() && self.projects.is_empty()
    }
}

/// The share of a budget at which a task is marked as near it.
pub const SOFT_SHARE: f64 = 0.8;
/// What one attempt spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptSpent {
    pub attempt: u32,
    /// When the attempt started: the day its spending counts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
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
    /// What attempt `attempt` spent, as its agent's records say, priced now.
    pub fn counted(attempt: u32, tokens: ByModel, prices: &Prices) -> AttemptSpent {
        let cost = prices.cost(&tokens);
        AttemptSpent {
            attempt,
            started_at_ms: None,
            cost_usd: cost.unpriced.is_empty().then_some(cost.usd),
            unpriced: cost.unpriced,
            tokens: Some(tokens),
            unknown: None,
        }
    }

    /// Attempt `attempt`, whose agent's records do not say what it spent, and why.
    pub fn unknown(attempt: u32, why: impl std::fmt::Display) -> AttemptSpent {
        AttemptSpent {
            attempt,
            started_at_ms: None,
            tokens: None,
            unknown: Some(why.to_string()),
            cost_usd: None,
            unpriced: Vec::new(),
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
            total.add(&crate::spend::all_models(attempt.tokens.as_ref()?));
        }
        Some(total)
    }

    /// The dollars of every attempt together; None when one is unknown or unpriced.
    pub fn cost_usd(&self) -> Option<f64> {
        self.attempts.iter().map(|a| a.cost_usd).sum()
    }

    /// The largest share of its budget spent (tokens or dollars), when it has one; an
    /// unknown spending or price counts as none of a bound in it.
    pub fn share_of_budget(&self) -> Option<f64> {
        let budget = self.budget?;
        let tokens = budget
            .tokens
            .zip(self.tokens())
            .map(|(most, spent)| spent.total() as f64 / most as f64);
        let usd = budget
            .usd
            .zip(self.cost_usd())
            .map(|(most, spent)| spent / most);
        tokens.into_iter().chain(usd).reduce(f64::max)
    }

    /// Why it may spend no more: its budget reached.
    pub fn exhausted(&self) -> Option<String> {
        let budget = self.budget?;
        (self.share_of_budget()? >= 1.0).then(|| {
            format!(
                "budget: it spent {} of its budget of {}; task_retry with a larger budget goes on from its worktree",
                self.spent_line(),
                budget.line()
            )
        })
    }

    pub(super) fn spent_line(&self) -> String {
        let tokens = self
            .tokens()
            .map(|t| thousands(t.total()))
            .unwrap_or_default();
        match self.cost_usd() {
            Some(usd) => format!("{tokens} tokens (${usd:.2})"),
            None => format!("{tokens} tokens"),
        }
    }

    /// How it reads in a listing: `12,345 tokens, $0.12`, and how near its budget it is.
    pub fn line(&self) -> String {
        let spent = self.spent_text();
        match (self.budget, self.share_of_budget()) {
            (Some(budget), Some(share)) if share >= SOFT_SHARE => format!(
                "{spent}; NEAR ITS BUDGET: {:.0}% of {}",
                share * 100.0,
                budget.line()
            ),
            (Some(budget), _) => format!("{spent}; budget {}", budget.line()),
            (None, _) => spent,
        }
    }

    fn spent_text(&self) -> String {
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

/// A place as daily budgets name it: `root` or `root/path`.
pub(super) fn place_key(place: &ProjectPlace) -> String {
    match place.path.is_empty() {
        true => place.root.clone(),
        false => format!("{}/{}", place.root, place.path),
    }
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
        spending.record(AttemptSpent::counted(1, opus(1_000_000, 0), &prices));
        spending.record(AttemptSpent::counted(2, opus(0, 1000), &prices));
        spending.record(AttemptSpent::counted(2, opus(0, 100_000), &prices));
        assert_eq!(spending.attempts.len(), 2);
        assert_eq!(spending.tokens().unwrap().total(), 1_100_000);
        assert!((spending.cost_usd().unwrap() - 6.0).abs() < 1e-9);
        assert_eq!(
            spending.line(),
            "1,100,000 tokens (1,000,000 in, 100,000 out, 0 cache read, 0 cache write), $6.00"
        );
    }

    #[test]
    fn a_budget_is_reached_by_tokens_or_dollars_and_marked_near_it() {
        let prices = Prices::default();
        let mut spending = Spending {
            budget: Some(Budget::checked(Some(1000), Some(1.0), "budget").unwrap()),
            ..Spending::default()
        };
        spending.record(AttemptSpent::counted(1, opus(700, 100), &prices));
        assert!(spending.exhausted().is_none());
        assert!(
            spending
                .line()
                .contains("NEAR ITS BUDGET: 80% of 1,000 tokens or $1.00"),
            "{}",
            spending.line()
        );
        spending.record(AttemptSpent::counted(2, opus(150, 50), &prices));
        let why = spending.exhausted().unwrap();
        assert!(
            why.starts_with(
                "budget: it spent 1,000 tokens ($0.01) of its budget of 1,000 tokens or $1.00"
            ),
            "{why}"
        );
        let dollars = Spending {
            budget: Some(Budget::checked(None, Some(4.0), "budget").unwrap()),
            attempts: vec![AttemptSpent::counted(1, opus(1_000_000, 0), &prices)],
        };
        assert!(dollars.exhausted().is_some());
    }

    #[test]
    fn a_budget_is_positive_bounded_and_names_a_bound() {
        assert!(
            Budget::checked(None, None, "b")
                .unwrap_err()
                .to_string()
                .contains("name tokens, usd, or both")
        );
        assert!(
            Budget::checked(Some(0), None, "b")
                .unwrap_err()
                .to_string()
                .contains("b.tokens is 0")
        );
        assert!(Budget::checked(Some(-1), None, "b").is_err());
        assert!(Budget::checked(Some(i64::MAX), None, "b").is_err());
        assert!(
            Budget::checked(None, Some(f64::NAN), "b")
                .unwrap_err()
                .to_string()
                .contains("b.usd is NaN")
        );
        assert!(Budget::checked(None, Some(-2.0), "b").is_err());
        let most = Budget::checked(Some(100), None, "b").unwrap();
        assert!(Budget::checked(Some(50), None, "b").unwrap().within(&most));
        assert!(!Budget::checked(Some(150), None, "b").unwrap().within(&most));
        let dollars = Budget::checked(None, Some(1.0), "b").unwrap();
        assert!(dollars.within(&most));
        assert_eq!(dollars.filled_from(Some(most)).tokens, Some(100));
    }

    #[test]
    fn unknown_usage_and_unknown_prices_are_said_never_zero() {
        let prices = Prices::default();
        let mut unknown = Spending::default();
        unknown.record(AttemptSpent::unknown(
            1,
            "its profile names no usage records",
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
        unpriced.record(AttemptSpent::counted(1, lab, &prices));
        assert!(
            unpriced.line().ends_with("price unknown (gpt-lab)"),
            "{}",
            unpriced.line()
        );
        assert_eq!(unpriced.cost_usd(), None);
    }
}
