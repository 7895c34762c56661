//! `[cargo]` and `[mix]`: the tasks `run` may start.

use serde::Deserialize;

use crate::workspace::Toolchain;

/// Cargo subcommands `run` may start through its `task` argument unless the config replaces the list.
const DEFAULT_CARGO_TASKS: &[&str] = &["bench", "doc", "tree", "metadata", "version"];
/// Read-only or project-local tasks; `run` is how a mix project's code is executed.
const DEFAULT_MIX_TASKS: &[&str] = &["run", "deps.tree", "xref", "help", "app.tree", "docs"];

/// The toolchains' settings (`[cargo]` and `[mix]` in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolchainConfig {
    /// The cargo subcommands `run` may start through its `task` argument.
    pub cargo_tasks: Vec<String>,
    /// The mix tasks `run` may start.
    pub mix_tasks: Vec<String>,
}

/// `[cargo]` and `[mix]`: the tasks `run` may start.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTasks {
    tasks: Option<Vec<String>>,
}

impl FileTasks {
    fn or(self, defaults: &[&str]) -> Vec<String> {
        self.tasks
            .unwrap_or_else(|| defaults.iter().map(|s| s.to_string()).collect())
    }
}

impl ToolchainConfig {
    pub(super) fn resolve(cargo: FileTasks, mix: FileTasks) -> Self {
        Self {
            cargo_tasks: cargo.or(DEFAULT_CARGO_TASKS),
            mix_tasks: mix.or(DEFAULT_MIX_TASKS),
        }
    }

    /// The tasks `run` may start for `toolchain`, and the config key that lists them.
    pub fn tasks(&self, toolchain: Toolchain) -> (&[String], &'static str) {
        match toolchain {
            Toolchain::Cargo => (&self.cargo_tasks, "cargo.tasks"),
            Toolchain::Mix => (&self.mix_tasks, "mix.tasks"),
        }
    }
}
