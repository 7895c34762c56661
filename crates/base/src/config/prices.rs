//! `[prices]`: what a model's tokens cost, in US dollars per million, for a task's cost. The
//! defaults are the prices Claude Code 2.1.330 itself reports for the Claude models it runs
//! (`total_cost_usd` of `claude -p --output-format json`, measured 2026-11-29 on one million
//! tokens of each kind); Codex reports none, so its models cost "price unknown" until the
//! config names them. A `[prices.MODEL]` replaces the default of that model whole.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use crate::spend::{ByModel, Tokens};

/// When the defaults were measured.
pub const DEFAULTS_AS_OF: &str = "2026-11-29";

/// The most a million tokens of one kind may cost: a larger price is a typo.
const MOST_PER_MILLION: f64 = 10_000.0;

/// US dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

const DEFAULTS: &[(&str, Price)] = &[
    (
        "claude-opus-5-5",
        Price {
            input: 4.0,
            output: 20.0,
            cache_read: 0.2,
            cache_write: 5.0,
        },
    ),
    (
        "claude-sonnet-5-5",
        Price {
            input: 2.0,
            output: 10.0,
            cache_read: 0.1,
            cache_write: 2.5,
        },
    ),
    (
        "claude-haiku-5-5",
        Price {
            input: 0.5,
            output: 0.5,
            cache_read: 0.05,
            cache_write: 0.625,
        },
    ),
];

/// The price table: the defaults, with the config's models over them.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    by_model: BTreeMap<String, Price>,
}

impl Default for Prices {
    fn default() -> Prices {
        Prices {
            by_model: DEFAULTS
                .iter()
                .map(|(model, price)| (model.to_string(), *price))
                .collect(),
        }
    }
}

/// What spending cost: the dollars of the models with a price, and the models without one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    pub unpriced: Vec<String>,
}

impl Prices {
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.by_model.get(model)
    }

    pub fn cost(&self, spent: &ByModel) -> Cost {
        let mut cost = Cost::default();
        for (model, tokens) in spent {
            match self.price(model) {
                Some(price) => cost.usd += price.of(tokens),
                None => cost.unpriced.push(model.clone()),
            }
        }
        cost
    }
}

impl Price {
    pub fn of(&self, tokens: &Tokens) -> f64 {
        (tokens.input as f64 * self.input
            + tokens.output as f64 * self.output
            + tokens.cache_read as f64 * self.cache_read
            + tokens.cache_write as f64 * self.cache_write)
            / 1_000_000.0
    }
}

pub(super) fn resolve(file: BTreeMap<String, Price>) -> Result<Prices, ConfigError> {
    let mut prices = Prices::default();
    for (model, price) in file {
        let kinds = [
            ("input", price.input),
            ("output", price.output),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (kind, value) in kinds {
            if !(0.0..=MOST_PER_MILLION).contains(&value) {
                return Err(ConfigError::Invalid(format!(
                    "prices.{model}.{kind} is {value}: a price is US dollars per million tokens, from 0 to {MOST_PER_MILLION}"
                )));
            }
        }
        if model.trim().is_empty() {
            return Err(ConfigError::Invalid(
                "prices: a model's name is empty".into(),
            ));
        }
        prices.by_model.insert(model, price);
    }
    Ok(prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_cost_what_claude_code_reports() {
        // `claude -p` of 2.1.330 on input 123, output 45, cache read 7, cache write 11
        // reported total_cost_usd 0.0014484 for claude-opus-5-5.
        let spent = ByModel::from([(
            "claude-opus-5-5".to_string(),
            Tokens {
                input: 123,
                output: 45,
                cache_read: 7,
                cache_write: 11,
            },
        )]);
        let cost = Prices::default().cost(&spent);
        assert!((cost.usd - 0.0014484).abs() < 1e-12, "{cost:?}");
        assert!(cost.unpriced.is_empty());
    }

    #[test]
    fn a_model_without_a_price_is_named_not_counted_as_free() {
        let spent = ByModel::from([("gpt-lab".to_string(), Tokens::default())]);
        assert_eq!(Prices::default().cost(&spent).unpriced, ["gpt-lab"]);
    }
}
