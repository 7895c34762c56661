//! What the parts' own unit tests build them from: a config of their own in a temporary
//! directory (never the machine user's), read the way `drydock serve` reads one.

use std::path::PathBuf;
use std::sync::Arc;

use super::store::{NewTask, Queue, SqliteStore, Task};
use crate::config::{Config, Overrides};

pub(super) struct Setting {
    /// Removed with the setting.
    _dir: tempfile::TempDir,
    pub(super) config: Arc<Config>,
}

impl Setting {
    /// A config from `toml`, its allowed root `projects/` and its data in `data/`.
    pub(super) fn new(toml: &str) -> Setting {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (projects, file) = (root.join("projects"), root.join("drydock.toml"));
        std::fs::create_dir_all(&projects).unwrap();
        std::fs::write(&file, toml).unwrap();
        let overrides = Overrides {
            config_file: Some(file),
            allow_roots: vec![projects],
            data_dir: Some(root.join("data")),
            ..Overrides::default()
        };
        let config = Config::resolve(&overrides, &|_| None, &root).expect("the config reads");
        Setting {
            _dir: dir,
            config: Arc::new(config),
        }
    }

    pub(super) fn project(&self) -> PathBuf {
        self.config.allowed_roots[0].clone()
    }

    /// A task queued in this setting's own queue, for the project.
    pub(super) fn queued_task(&self, title: &str) -> Task {
        let store = SqliteStore::open(&self.config.data_dir.join("tasks.sqlite3")).unwrap();
        store.add(new_task(title, &self.project())).unwrap()
    }
}

/// A queued task of the project at `project`.
pub(super) fn new_task(title: &str, project: &std::path::Path) -> NewTask {
    NewTask {
        title: title.into(),
        description: format!("{title}, please"),
        project_path: project.display().to_string(),
        place: None,
        repository: None,
        agent_kind: "claude".into(),
        priority: 0,
        timeout_s: None,
        policy: None,
        base: None,
        in_place: false,
        touches: Vec::new(),
        key: None,
        budget: None,
    }
}
