//! `[cargo]`, `[mix]`, ...: a toolchain's section, the tasks `run` may start in its projects.
//!
//! The toolchains are a capability's, not the config's: every table of the file that is not
//! one of the config's own sections is kept as a toolchain's section, and
//! `toolchain::check_config` refuses one that names no toolchain before anything starts.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;

/// The toolchains' sections, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolchainConfig {
    sections: BTreeMap<String, FileTasks>,
}

/// `[NAME]`: the tasks `run` may start (the toolchain's defaults without `tasks`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTasks {
    tasks: Option<Vec<String>>,
}

impl ToolchainConfig {
    /// The file's other keys: each must be a table, a toolchain's section.
    pub(super) fn resolve(other: BTreeMap<String, toml::Value>) -> Result<Self, ConfigError> {
        let mut sections = BTreeMap::new();
        for (name, value) in other {
            if !value.is_table() {
                return Err(ConfigError::UnknownKey(name));
            }
            let section = FileTasks::deserialize(value).map_err(|e| ConfigError::Section {
                section: name.clone(),
                message: e.message().to_string(),
            })?;
            sections.insert(name, section);
        }
        Ok(Self { sections })
    }

    /// The tasks `run` may start for the toolchain `name`, when its section lists them.
    pub fn tasks(&self, name: &str) -> Option<&[String]> {
        self.sections.get(name)?.tasks.as_deref()
    }

    /// The names of the sections the file has.
    pub fn sections(&self) -> impl Iterator<Item = &str> {
        self.sections.keys().map(String::as_str)
    }
}
