//! What the history tools take.

use schemars::JsonSchema;
use serde::Deserialize;

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
    pub since_ms: Option<u64>,
    /// Only problems first seen at or before this time.
    #[serde(default)]
    pub until_ms: Option<u64>,
    /// How many problems (default 5, at most 20).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRequest {
    /// The project (a directory inside the allowed roots).
    pub project_path: String,
}
