//! A real `drydock serve` on a free port, with a data directory of its own.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use super::command::drydock_command;
use super::processes::{
    MARKER_VAR, marked_processes, marked_sleep_running, signal_and_wait, unique_marker,
};
use super::projects::test_projects_root;
use super::waiting::{eventually, wait_until};

/// A `drydock serve` process; killed on drop.
pub struct Server {
    child: Child,
    pub url: String,
    pub banner: String,
    marker: String,
    /// Its data directory (DRYDOCK_DATA_DIR), unless the test names one with --data-dir: a
    /// test server never takes the hook endpoint of the user's own drydock.
    pub data_dir: tempfile::TempDir,
}

impl Server {
    /// `drydock serve --bind 127.0.0.1:0 --allow-root test-projects` plus `extra` args.
    pub fn start(extra: &[&str]) -> Server {
        Self::start_with_env(extra, &[])
    }

    /// `start`, with more variables in the server's environment.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        let root = test_projects_root();
        let mut args = vec!["--allow-root", root.to_str().unwrap()];
        args.extend_from_slice(extra);
        Self::start_with(&args, env)
    }

    /// A server whose only allowed root is `root`.
    pub fn start_in(root: &Path) -> Server {
        Self::start_with(&["--allow-root", root.to_str().unwrap()], &[])
    }

    /// `start` with `config` (TOML, e.g. an `[http]` section) as the config file.
    pub fn start_with_config(config: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("drydock.toml");
        std::fs::write(&path, config).unwrap();
        let path = path.to_str().unwrap();
        Self::start(&["--config", path])
    }

    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
        Self::start_with_stderr(args, env, Stdio::inherit())
    }

    /// `start_with`, its log (stderr) going to `stderr`.
    pub fn start_with_stderr(args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
        let marker = unique_marker();
        let scratch = tempfile::tempdir().unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let mut command = drydock_command();
        command.arg("serve");
        if !args.contains(&"--bind") {
            command.args(["--bind", "127.0.0.1:0"]);
        }
        command
            .args(args)
            .current_dir(scratch.path())
            .env(MARKER_VAR, &marker)
            .env("DRYDOCK_DATA_DIR", data_dir.path())
            // IT_SERVER_LOG: what the servers log for a run that looks into them.
            .env(
                "RUST_LOG",
                std::env::var("IT_SERVER_LOG").unwrap_or("drydock=warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("drydock starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        stdout.read_line(&mut banner).expect("banner line");
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in banner: {banner:?}"))
            .to_string();
        let mut rest = String::new();
        while stdout.read_line(&mut rest).map(|n| n > 0).unwrap_or(false)
            && !rest.contains(".mcp.json")
        {}
        stdout.read_line(&mut rest).ok();
        banner.push_str(&rest);
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        Server {
            child,
            url,
            banner,
            marker,
            data_dir,
        }
    }

    /// Processes (other than the server) started by this server that are still alive.
    pub fn descendants(&self) -> Vec<u32> {
        marked_processes(&self.marker)
            .into_iter()
            .filter(|pid| *pid != self.child.id())
            .collect()
    }

    /// True once the `sleep` that `cargo-clean --spawn-grandchild` (or a hung helper) starts
    /// is running.
    pub fn grandchild_running(&self) -> bool {
        marked_sleep_running(&self.marker)
    }

    /// Waits (up to two minutes) for that `sleep`; `what` says what has then started.
    pub async fn assert_grandchild_starts(&self, what: &str) {
        assert!(
            eventually(Duration::from_secs(120), || self.grandchild_running()).await,
            "{what}"
        );
    }

    /// Wait until the server has no live descendants, or give up after `limit`.
    pub fn wait_for_no_descendants(&self, limit: Duration) -> Vec<u32> {
        wait_until(limit, || self.descendants().is_empty());
        self.descendants()
    }

    /// Every descendant of the server is gone within `limit`; else the panic lists those left,
    /// after `what` left them.
    pub fn assert_no_descendants_within(&self, limit: Duration, what: &str) {
        let left = self.wait_for_no_descendants(limit);
        let shown: Vec<String> = left
            .iter()
            .map(|pid| {
                let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
                format!("{pid} {}", argv.trim_end())
            })
            .collect();
        assert!(left.is_empty(), "{what}: {shown:?}");
    }

    /// SIGKILL: the server ends at once, with no chance to clean up.
    pub fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's own process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn base_url(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// SIGTERM, as a user's Ctrl-C or a service manager would; true if it exited within `limit`.
    pub fn terminate(&mut self, limit: Duration) -> bool {
        signal_and_wait(&mut self.child, "TERM", limit).is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.terminate(Duration::from_secs(10)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
