//! What the agent tools are asked.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Only this agent (its terminal's name, e.g. `t1` or `tmux:work:0.1`).
    #[serde(default)]
    pub agent: Option<String>,
}
