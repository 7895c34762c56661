//! `[tasks] land…`: how a done task's result reaches its branch.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::values::positive;

/// Results of one branch tested together by default: `benches/landing.rs` measured it.
pub const DEFAULT_LAND_BATCH: usize = 4;

/// How a done task's result reaches the branch it started from (`[tasks] land`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandingConfig {
    pub mode: LandMode,
    /// The checks run on the merged tree, in order.
    pub checks: Vec<LandCheck>,
    /// How many attempts a task's agent gets before its result waits for a person.
    pub attempts: u32,
    /// How long one check may run (a hung test is a failure sent back to its agent).
    pub check_timeout: Duration,
    /// How many waiting results of one branch are merged and tested together (1: one at a
    /// time). A red batch is split in halves until the result that broke it is found.
    pub batch: usize,
    /// How a result goes onto its branch.
    pub with: LandWith,
}

/// merge: onto the tip under a merge commit (a fast-forward for one commit on the tip);
/// rebase: its commits replayed onto the tip, one at a time, no merge commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandWith {
    Merge,
    Rebase,
}

/// manual: a person lands a result with task_merge; when_green: it lands by itself once the
/// merged tree passes the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandMode {
    Manual,
    WhenGreen,
}

/// A check on the merged tree: one of drydock's build tools, or a command of the project's
/// named in `[tasks.land_commands]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandCheck {
    Compile,
    Test,
    Lint,
    TypeCheck,
    /// `argv` run in the merged tree, in the builds' sandbox: green when it exits 0.
    Command {
        name: String,
        argv: Vec<String>,
    },
}

impl LandCheck {
    pub fn name(&self) -> &str {
        match self {
            LandCheck::Compile => "compile",
            LandCheck::Test => "test",
            LandCheck::Lint => "lint",
            LandCheck::TypeCheck => "type_check",
            LandCheck::Command { name, .. } => name,
        }
    }

    /// The check `name` names: a build tool's, else one of `commands`.
    fn named(
        name: &str,
        commands: &BTreeMap<String, Vec<String>>,
    ) -> Result<LandCheck, ConfigError> {
        match name {
            "compile" => Ok(LandCheck::Compile),
            "test" => Ok(LandCheck::Test),
            "lint" => Ok(LandCheck::Lint),
            "type_check" => Ok(LandCheck::TypeCheck),
            other => match commands.get(other) {
                Some(argv) => Ok(LandCheck::Command {
                    name: other.to_string(),
                    argv: argv.clone(),
                }),
                None => Err(ConfigError::UnknownLandCheck {
                    name: other.to_string(),
                    commands: commands.keys().cloned().collect(),
                }),
            },
        }
    }
}

/// The checks `[tasks] land_checks` names, in order, with the commands they may name.
fn land_checks(
    names: Option<Vec<String>>,
    commands: BTreeMap<String, Vec<String>>,
) -> Result<Vec<LandCheck>, ConfigError> {
    if let Some((name, _)) = commands.iter().find(|(_, argv)| argv.is_empty()) {
        return Err(ConfigError::Invalid(format!(
            "tasks.land_commands.{name}: give the command as a list: its program, then its arguments"
        )));
    }
    let names = match names {
        Some(names) if names.is_empty() => {
            return Err(ConfigError::Invalid(
                "tasks.land_checks: name at least one check (compile, test, lint, type_check or a command of [tasks.land_commands]): only a tested tree lands".into(),
            ));
        }
        Some(names) => names,
        None => vec!["compile".into(), "test".into()],
    };
    names
        .iter()
        .map(|name| LandCheck::named(name, &commands))
        .collect()
}

/// The `land…` keys of `[tasks]`.
pub(super) struct FileLanding {
    pub land: Option<LandMode>,
    pub land_checks: Option<Vec<String>>,
    pub land_commands: Option<BTreeMap<String, Vec<String>>>,
    pub land_attempts: Option<u32>,
    pub land_check_timeout_s: Option<u64>,
    pub land_batch: Option<usize>,
    pub land_with: Option<LandWith>,
}

pub(super) fn resolve(file: FileLanding) -> Result<LandingConfig, ConfigError> {
    Ok(LandingConfig {
        mode: file.land.unwrap_or(LandMode::Manual),
        checks: land_checks(file.land_checks, file.land_commands.unwrap_or_default())?,
        attempts: match positive(file.land_attempts.unwrap_or(3), "tasks.land_attempts")? {
            more if more > 100 => {
                return Err(ConfigError::Invalid(format!(
                    "tasks.land_attempts: {more} is more than 100 attempts"
                )));
            }
            attempts => attempts,
        },
        check_timeout: match file.land_check_timeout_s.unwrap_or(1200) {
            seconds @ 1..=86_400 => Duration::from_secs(seconds),
            other => {
                return Err(ConfigError::Invalid(format!(
                    "tasks.land_check_timeout_s: {other} is not between 1 and 86400 seconds (a day)"
                )));
            }
        },
        batch: match file.land_batch.unwrap_or(DEFAULT_LAND_BATCH) {
            batch @ 1..=32 => batch,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "tasks.land_batch: {other} is not between 1 (one result at a time) and 32"
                )));
            }
        },
        with: file.land_with.unwrap_or(LandWith::Merge),
    })
}
