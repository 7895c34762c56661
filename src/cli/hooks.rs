//! `drydock hooks install|uninstall`: drydock's hook entries in a Claude Code settings file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{ConfigArgs, Exit, Failure};
use crate::agents::hook_settings::{self, Changes};
use crate::config::Config;

#[derive(Args, Clone)]
pub(super) struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

#[derive(Subcommand, Clone)]
pub(super) enum HooksAction {
    /// Add drydock's hooks (SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest,
    /// PostToolUse, Notification, Stop, SessionEnd) to a Claude Code settings file, keeping
    /// everything already there. Running it again changes nothing.
    Install(Target),
    /// Remove exactly the entries `install` added.
    Uninstall(Target),
}

impl HooksAction {
    pub(super) fn config(&self) -> &ConfigArgs {
        match self {
            HooksAction::Install(target) | HooksAction::Uninstall(target) => &target.config,
        }
    }
}

#[derive(Args, Clone)]
pub(super) struct Target {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// A project's settings: DIR/.claude/settings.local.json (not checked in: the hook names
    /// this machine's drydock).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    project: Option<PathBuf>,
    /// The user's settings: ~/.claude/settings.json (the default).
    #[arg(long)]
    user: bool,
}

impl Target {
    fn settings_file(&self) -> Result<PathBuf, Failure> {
        match &self.project {
            Some(dir) if !dir.is_dir() => Err(Failure::Usage(format!(
                "--project {}: not a directory",
                dir.display()
            ))),
            Some(dir) => Ok(dir.join(".claude").join("settings.local.json")),
            None => dirs::home_dir()
                .map(|home| home.join(".claude").join("settings.json"))
                .ok_or_else(|| Failure::Usage("no home directory: name --project DIR".into())),
        }
    }
}

pub(super) fn run(config: &Config, args: HooksArgs) -> Exit {
    let (target, installing) = match &args.action {
        HooksAction::Install(target) => (target, true),
        HooksAction::Uninstall(target) => (target, false),
    };
    let path = target.settings_file()?;
    let failed = |e: hook_settings::SettingsError| Failure::Runtime(e.to_string());
    let mut settings = hook_settings::read(&path).map_err(failed)?;
    let changes = match installing {
        true => {
            let command = hook_command(config)?;
            hook_settings::install(&mut settings, &path, &command).map_err(failed)?
        }
        false => hook_settings::uninstall(&mut settings, &path).map_err(failed)?,
    };
    if changes.changed() {
        hook_settings::write(&path, &settings).map_err(failed)?;
    }
    println!("{}", summary(&path, &changes, installing));
    Ok(ExitCode::SUCCESS)
}

/// This drydock's hook command, naming the data directory unless it is the default one.
fn hook_command(config: &Config) -> Result<String, Failure> {
    let drydock = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot tell where drydock is: {e}")))?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let default = crate::config::resolve_data_dir(None, None, &|_| None, &cwd);
    let data_dir = (config.data_dir != default).then_some(config.data_dir.as_path());
    Ok(hook_settings::hook_command(&drydock, data_dir))
}

fn summary(path: &Path, changes: &Changes, installing: bool) -> String {
    let list = |events: &[String]| events.join(", ");
    let mut lines = Vec::new();
    if !changes.added.is_empty() {
        lines.push(format!("added: {}", list(&changes.added)));
    }
    if !changes.replaced.is_empty() {
        lines.push(format!("replaced: {}", list(&changes.replaced)));
    }
    if !changes.removed.is_empty() {
        lines.push(format!("removed: {}", list(&changes.removed)));
    }
    let what = match (changes.changed(), installing) {
        (false, true) => "drydock's hooks are already installed in",
        (false, false) => "no drydock hooks in",
        (true, true) => "installed drydock's hooks in",
        (true, false) => "removed drydock's hooks from",
    };
    let mut text = format!("{what} {}", path.display());
    for line in lines {
        text.push_str("\n  ");
        text.push_str(&line);
    }
    text
}
