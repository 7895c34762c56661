//! Where drydock keeps a task's own files, outside anything its agent can write.

use std::path::PathBuf;

use crate::config::Config;

/// The directory of task `id`'s own files: its briefing, hooks and MCP config, the git
/// of its sandbox.
pub(super) fn task_dir(config: &Config, id: &str) -> PathBuf {
    config.data_dir.join("tasks").join(id)
}
