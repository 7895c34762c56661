//! What model calls spend, counted apart by kind, and a bound on it: the vocabulary the
//! config's price table, an agent's usage records and a task's budget share.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tokens of model calls, as the APIs count them apart: `input` is the input read neither
/// from nor into the prompt cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// Tokens by the model that spent them.
pub type ByModel = BTreeMap<String, Tokens>;

/// The tokens of every model in `spent` together.
pub fn all_models(spent: &ByModel) -> Tokens {
    let mut total = Tokens::default();
    spent.values().for_each(|tokens| total.add(tokens));
    total
}

/// A bound on what a task spends: tokens of every kind together, US dollars by the price
/// table, or both (whichever is reached first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

/// The most tokens a budget may name (a larger one is a typo).
const MOST_TOKENS: u64 = 1_000_000_000_000;
/// The most dollars a budget may name.
const MOST_USD: f64 = 1_000_000.0;

/// Why what a person wrote is no budget; `what` names it (`budget`, `daily_budget`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    #[error("{what}.tokens is {tokens}: a budget is 1 to {MOST_TOKENS} tokens")]
    Tokens { what: String, tokens: i64 },
    #[error("{what}.usd is {usd}: a budget is more than 0 and at most {MOST_USD} US dollars")]
    Usd { what: String, usd: f64 },
    #[error("{what}: name tokens, usd, or both")]
    NoBound { what: String },
}

impl Budget {
    /// A budget from what a person wrote, or why it is none: at least one bound, each
    /// positive and not absurd. `what` names it in the error.
    pub fn checked(
        tokens: Option<i64>,
        usd: Option<f64>,
        what: &str,
    ) -> Result<Budget, BudgetError> {
        let tokens = match tokens {
            None => None,
            Some(n) if n >= 1 && n as u64 <= MOST_TOKENS => Some(n as u64),
            Some(n) => {
                return Err(BudgetError::Tokens {
                    what: what.into(),
                    tokens: n,
                });
            }
        };
        let usd = match usd {
            None => None,
            Some(d) if d.is_finite() && d > 0.0 && d <= MOST_USD => Some(d),
            Some(d) => {
                return Err(BudgetError::Usd {
                    what: what.into(),
                    usd: d,
                });
            }
        };
        if tokens.is_none() && usd.is_none() {
            return Err(BudgetError::NoBound { what: what.into() });
        }
        Ok(Budget { tokens, usd })
    }

    /// Whether each bound of `self` is within `max`'s of its kind.
    pub fn within(&self, max: &Budget) -> bool {
        let tokens = match (self.tokens, max.tokens) {
            (Some(asked), Some(most)) => asked <= most,
            _ => true,
        };
        let usd = match (self.usd, max.usd) {
            (Some(asked), Some(most)) => asked <= most,
            _ => true,
        };
        tokens && usd
    }

    /// `self` with the bounds it lacks taken from `other`.
    pub fn filled_from(self, other: Option<Budget>) -> Budget {
        Budget {
            tokens: self.tokens.or(other.and_then(|o| o.tokens)),
            usd: self.usd.or(other.and_then(|o| o.usd)),
        }
    }

    pub fn line(&self) -> String {
        let mut bounds = Vec::new();
        if let Some(tokens) = self.tokens {
            bounds.push(format!("{} tokens", thousands(tokens)));
        }
        if let Some(usd) = self.usd {
            bounds.push(format!("${usd:.2}"));
        }
        bounds.join(" or ")
    }
}

pub fn thousands(n: u64) -> String {
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
