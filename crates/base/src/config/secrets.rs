//! `[env]`: the variables taken out of every child's environment, and what they held.

use serde::Deserialize;

use super::EnvLookup;

/// Removed from children's environment unless the config replaces the list.
const DEFAULT_SECRET_ENV: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "HEX_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileEnv {
    remove: Option<Vec<String>>,
}

/// Secret values, never shown (`Debug` tells only how many there are).
#[derive(Clone, Default)]
pub struct SecretValues(Vec<String>);

impl SecretValues {
    /// The values the variables `names` hold in `env` (names with a `*` are skipped).
    pub(super) fn of(names: &[String], env: EnvLookup) -> SecretValues {
        let values = names
            .iter()
            .filter(|name| !name.contains('*'))
            .filter_map(|name| env(name))
            .filter(|value| !value.is_empty());
        SecretValues(values.collect())
    }

    pub fn values(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretValues({} hidden)", self.0.len())
    }
}

/// The configured secrets (or the default list), plus what is always removed.
pub(super) fn resolve_env_remove(file: FileEnv) -> Vec<String> {
    let mut remove: Vec<String> = file
        .remove
        .unwrap_or_else(|| DEFAULT_SECRET_ENV.iter().map(|s| s.to_string()).collect());
    remove.extend(
        crate::process::env_policy::ALWAYS_REMOVED
            .iter()
            .map(|s| s.to_string()),
    );
    remove
}
