//! What the history tools take.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::bounded::Bounded;

/// A time as milliseconds since the Unix epoch, up to the end of the year 9999.
pub type UnixMs = Bounded<0, 253_402_300_799_999>;
/// How many problems history_search returns.
pub type Limit = Bounded<1, 20>;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// What to look for: an error's text, a code (E0502), a test's name, or a sentence saying
    /// what goes wrong.
    pub query: String,
    /// Only problems of this project (a directory inside the allowed roots).
    #[serde(default)]
    pub project_path: Option<String>,
    /// Only records of this kind: error, warning, test (a failing test), command (a
    /// terminal's) or task (a task's end and transcript).
    #[serde(default)]
    pub kind: Option<String>,
    /// Only problems last seen at or after this time (milliseconds since the Unix epoch).
    #[serde(default)]
    pub since_ms: Option<UnixMs>,
    /// Only problems first seen at or before this time.
    #[serde(default)]
    pub until_ms: Option<UnixMs>,
    /// How many problems (default 5, at most 20).
    #[serde(default)]
    pub limit: Option<Limit>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRequest {
    /// The project (a directory inside the allowed roots).
    pub project_path: String,
}
