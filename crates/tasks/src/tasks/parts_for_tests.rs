//! What the parts' own unit tests build them from: a config of their own in a temporary
//! directory (never the machine user's), read the way `drydock serve` reads one.

use std::path::PathBuf;
use std::sync::Arc;

use super::adoption::Adoption;
use super::budgets::Budgets;
use super::checks::Checker;
use super::clones::Clones;
use super::ending::Ending;
use super::forecast::Forecaster;
use super::lander::Lander;
use super::launcher::Launcher;
use super::ledger::Ledger;
use super::monitor::Monitor;
use super::placement::Placement;
use super::review::Reviewer;
use super::sandboxing::Sandboxes;
use super::store::{NewTask, Queue, SqliteStore, StoreLocation, Task};
use super::team::TeamHost;
use super::tokens::TaskTokens;
use super::worktree::Worktrees;
use crate::agents::Agents;
use crate::config::{Config, Overrides};
use crate::events::Events;
use crate::terminal::Terminals;
use crate::toolchain::Toolchains;
use crate::workspace::Workspace;

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

    /// The setting's own queue, on its SQLite file, as the parts read and write it.
    pub(super) fn ledger(&self) -> Arc<Ledger> {
        let location = StoreLocation::Sqlite(self.config.data_dir.join("tasks.sqlite3"));
        let events = Arc::new(Events::default());
        Arc::new(Ledger::new(location, &self.config.tasks, events))
    }

    pub(super) fn terminals(&self) -> Arc<Terminals> {
        Terminals::new(self.config.clone(), Arc::new(Events::default()))
    }

    pub(super) fn agents(&self) -> Arc<Agents> {
        Agents::new(self.terminals(), self.config.clone())
    }

    pub(super) fn worktrees(&self) -> Arc<Worktrees> {
        Arc::new(Worktrees::new(self.config.task_dirs()))
    }

    pub(super) fn clones(&self) -> Arc<Clones> {
        let repositories = self.config.tasks.repositories.clone();
        Arc::new(Clones::new(self.config.task_dirs().clones(), repositories))
    }

    pub(super) fn checker(&self, ledger: &Arc<Ledger>) -> Arc<Checker> {
        let toolchains = Toolchains::new(self.config.clone());
        Arc::new(Checker::new(
            ledger.clone(),
            self.config.clone(),
            toolchains,
        ))
    }

    pub(super) fn placement(&self, ledger: &Arc<Ledger>) -> Arc<Placement> {
        let (config, agents) = (self.config.clone(), self.agents());
        let (worktrees, clones) = (self.worktrees(), self.clones());
        Arc::new(Placement::new(
            ledger.clone(),
            config,
            agents,
            worktrees,
            clones,
        ))
    }

    pub(super) fn lander(&self, ledger: &Arc<Ledger>) -> Arc<Lander> {
        let (config, agents, worktrees) = (self.config.clone(), self.agents(), self.worktrees());
        let checker = self.checker(ledger);
        Arc::new(Lander::new(
            ledger.clone(),
            config,
            agents,
            worktrees,
            checker,
        ))
    }

    pub(super) fn reviewer(&self, ledger: &Arc<Ledger>) -> Arc<Reviewer> {
        let (config, worktrees, clones) = (self.config.clone(), self.worktrees(), self.clones());
        let (checker, lander) = (self.checker(ledger), self.lander(ledger));
        Arc::new(Reviewer::new(
            ledger.clone(),
            config,
            worktrees,
            clones,
            checker,
            lander,
        ))
    }

    pub(super) fn ending(&self, ledger: &Arc<Ledger>, tokens: &TaskTokens) -> Arc<Ending> {
        let config = self.config.clone();
        Arc::new(Ending {
            ledger: ledger.clone(),
            agents: self.agents(),
            terminals: self.terminals(),
            tokens: tokens.clone(),
            sandboxes: Arc::new(Sandboxes::new(config.clone(), self.agents())),
            budgets: Arc::new(Budgets::new(ledger.clone(), config.clone(), self.agents())),
            reviewer: self.reviewer(ledger),
            config,
        })
    }

    pub(super) fn launcher(&self, ledger: &Arc<Ledger>) -> Arc<Launcher> {
        let (config, tokens) = (self.config.clone(), TaskTokens::default());
        Arc::new(Launcher {
            ledger: ledger.clone(),
            agents: self.agents(),
            tokens: tokens.clone(),
            workspace: Workspace::new(config.allowed_roots.clone()),
            placement: self.placement(ledger),
            sandboxes: Arc::new(Sandboxes::new(config.clone(), self.agents())),
            budgets: Arc::new(Budgets::new(ledger.clone(), config.clone(), self.agents())),
            forecaster: Arc::new(Forecaster::new(ledger.clone(), config.clone())),
            ending: self.ending(ledger, &tokens),
            starting: tokio::sync::Mutex::new(()),
            started: tokio::sync::Notify::new(),
            config,
        })
    }

    pub(super) fn adoption(&self, launcher: &Arc<Launcher>) -> Arc<Adoption> {
        Arc::new(Adoption {
            ledger: launcher.ledger.clone(),
            config: self.config.clone(),
            agents: self.agents(),
            terminals: self.terminals(),
            tokens: launcher.tokens.clone(),
            sandboxes: launcher.sandboxes.clone(),
            ending: launcher.ending.clone(),
            launcher: launcher.clone(),
            taken_up: Default::default(),
        })
    }

    /// The monitor over every part, those the launcher holds shared with it.
    pub(super) fn monitor(&self, ledger: &Arc<Ledger>) -> Arc<Monitor> {
        let (config, events) = (self.config.clone(), Arc::new(Events::default()));
        let launcher = self.launcher(ledger);
        let team = TeamHost::new(
            ledger.clone(),
            config.clone(),
            self.agents(),
            events.clone(),
        );
        Arc::new(Monitor {
            ledger: ledger.clone(),
            agents: self.agents(),
            terminals: self.terminals(),
            events,
            tokens: launcher.tokens.clone(),
            budgets: launcher.budgets.clone(),
            forecaster: launcher.forecaster.clone(),
            team: Arc::new(team),
            lander: self.lander(ledger),
            reviewer: launcher.ending.reviewer.clone(),
            ending: launcher.ending.clone(),
            adoption: self.adoption(&launcher),
            launcher,
            config,
        })
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
