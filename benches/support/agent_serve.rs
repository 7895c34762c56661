//! A `drydock serve` for the benchmarks that run real agent CLIs on tasks: its agents run
//! the pinned CLI against a fake model API (`tests/it/agent_kit`). Included by path by the
//! benches that also include the kit.

use std::path::Path;
use std::process::Child;

use crate::agent_kit::home::{AgentHome, Cli};

/// A `drydock serve` on `home`'s project with `config` and `data_dir`, whose agents run the
/// pinned CLI against the fake; its URL. `data_dir` is short: the sandboxes' sockets live
/// below it (a socket's path has at most 108 bytes).
pub fn serve(
    home: &AgentHome,
    cli: &Cli,
    tmux_dir: &Path,
    data_dir: &Path,
    config: &str,
) -> (Child, String) {
    let bin = cli.program.parent().unwrap().display().to_string();
    let config_file = home.scratch().join("drydock.toml");
    std::fs::write(&config_file, config).unwrap();
    let cargo = std::env::var("CARGO").expect("run by cargo");
    let toolchain = Path::new(&cargo).parent().unwrap().display().to_string();
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap()));
    crate::support::drydock_serve(|command| {
        command
            .arg("--allow-root")
            .arg(&home.project)
            .arg("--config")
            .arg(&config_file)
            .arg("--data-dir")
            .arg(data_dir)
            .env("TMUX_TMPDIR", tmux_dir)
            .env("TMUX", "")
            .env("CARGO_HOME", cargo_home)
            .env("CARGO_NET_OFFLINE", "true")
            .current_dir(home.scratch());
        for (key, value) in home.launch(cli, &[]).env {
            match key.as_str() {
                "PATH" => command.env(key, format!("{bin}:{value}:{toolchain}")),
                _ => command.env(key, value),
            };
        }
    })
}
