//! `drydock` as the tests start it: the binary, its subcommands, and an environment that
//! never carries the machine user's settings.

use std::process::Command;

use super::projects::test_projects_root;

/// The drydock the tests start: the test build's, or the one `CHAOS_SOAK_BINARY` names
/// (`scripts/chaos-soak.sh` runs the long soak on a release build, as performance is judged).
pub fn drydock_bin() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var("CHAOS_SOAK_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_drydock").to_owned())
    })
}

/// How a drydock the tests start differs from the tests' own environment: none of the
/// machine user's settings reach it (no `DRYDOCK_*` variable; config and data directories of
/// its own, empty), so a user who set a token or toolsets still gets passing tests.
pub fn without_the_users_settings() -> Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> {
    static EMPTY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(|| tempfile::tempdir().unwrap()).path();
    let mut changes: Vec<_> = std::env::vars_os()
        // HF_ENDPOINT: where a catalogue model would be fetched from.
        .filter(|(name, _)| name.to_string_lossy().starts_with("DRYDOCK_") || name == "HF_ENDPOINT")
        .map(|(name, _)| (name, None))
        .collect();
    for name in ["XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        changes.push((name.into(), Some(empty.as_os_str().to_owned())));
    }
    changes
}

/// `drydock`, to run with [`without_the_users_settings`].
pub fn drydock_command() -> Command {
    let mut command = Command::new(drydock_bin());
    isolate(&mut command);
    command
}

/// Applies [`without_the_users_settings`] to `command` (drydock, or a tmux server standing
/// for the user's, whose panes would otherwise carry the tests' own `DRYDOCK_*` variables).
pub fn isolate(command: &mut Command) -> &mut Command {
    for (name, value) in without_the_users_settings() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
}

/// `drydock call TOOL ARGUMENTS --allow-root test-projects`, to run (more flags may follow).
pub fn drydock_call(tool: &str, arguments: &str) -> Command {
    let mut command = drydock_command();
    command
        .args(["call", tool, arguments])
        .arg("--allow-root")
        .arg(test_projects_root());
    command
}

/// `drydock mcp --allow-root test-projects`, to start as an MCP server over stdio.
pub fn drydock_mcp() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(drydock_bin());
    for (name, value) in without_the_users_settings() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .arg("mcp")
        .arg("--allow-root")
        .arg(test_projects_root())
        .env("RUST_LOG", "drydock=warn");
    command
}
