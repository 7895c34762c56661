//! `[agents]`: agent supervision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::paths::{absolute, canonical_roots, user_dir};
use super::values::{SECOND, duration};
use super::{ConfigError, EnvLookup};

/// Agent supervision (`[agents]` in the file).
#[derive(Debug, Clone)]
pub struct AgentsConfig {
    /// Agent profiles that override the embedded ones (default: the user config dir's
    /// `drydock/agents`).
    pub profile_dir: Option<PathBuf>,
    /// Programs watched with the quiet-time-only profile (e.g. "aider").
    pub programs: Vec<String>,
    /// Canonical directories in which `agent_spawn` starts agents without asking a person.
    pub spawn_without_consent: Vec<PathBuf>,
    /// How long `agent_spawn` waits for a person's answer.
    pub consent_timeout: Duration,
    /// Tools whose permission prompts drydock allows by itself, for agents it spawned.
    pub auto_allow: Vec<String>,
    /// Tools whose permission prompts drydock denies by itself, for agents it spawned.
    pub auto_deny: Vec<String>,
    /// The executable that starts an agent kind, when not the profile's own on PATH.
    pub commands: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgents {
    profile_dir: Option<PathBuf>,
    programs: Option<Vec<String>>,
    spawn_without_consent: Option<Vec<PathBuf>>,
    consent_timeout_s: Option<u64>,
    auto_allow: Option<Vec<String>>,
    auto_deny: Option<Vec<String>>,
    commands: Option<BTreeMap<String, String>>,
}

pub(super) fn resolve(
    file: FileAgents,
    env: EnvLookup,
    cwd: &Path,
) -> Result<AgentsConfig, ConfigError> {
    let profile_dir = file.profile_dir.map(|dir| absolute(&dir, env, cwd));
    Ok(AgentsConfig {
        profile_dir: profile_dir.or_else(|| {
            user_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("drydock/agents"))
        }),
        programs: file.programs.unwrap_or_default(),
        spawn_without_consent: canonical_roots(
            &file.spawn_without_consent.unwrap_or_default(),
            env,
            cwd,
        )?,
        consent_timeout: duration(
            file.consent_timeout_s.unwrap_or(120),
            SECOND,
            "agents.consent_timeout_s",
        )?,
        auto_allow: file.auto_allow.unwrap_or_default(),
        auto_deny: file.auto_deny.unwrap_or_default(),
        commands: file.commands.unwrap_or_default(),
    })
}
