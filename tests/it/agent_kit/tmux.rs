//! A tmux driver for one agent: a private server (`-L drydock-agents-<unique>`, no config
//! file, killed on drop) with one 120x40 session running a launcher script. The launcher
//! waits until the raw output tap (`pipe-pane`) is in place, so the tap sees the CLI's first
//! bytes (its terminal probes, OSC titles and OSC 7501), then runs the CLI with exactly the
//! environment it was given, and prints `EXIT:<code>` when it ends. The pane stays after
//! that (remain-on-exit), so the last screen and the exit status can still be read.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::home::{Launch, sh_quote};

const TARGET: &str = "agent";
const POLL: Duration = Duration::from_millis(75);

pub struct Tmux {
    socket: String,
    /// The socket file, removed on drop (kill-server leaves it behind).
    socket_path: PathBuf,
    tap: PathBuf,
}

impl Tmux {
    /// Starts `launch` in a new 120x40 session; its files (launcher, tap) go in `scratch`.
    pub fn start(launch: &Launch, scratch: &Path) -> Tmux {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let socket = format!(
            "drydock-agents-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut tmux = Tmux {
            socket,
            socket_path: PathBuf::new(),
            tap: scratch.join("pane.raw"),
        };
        let go = scratch.join("go");
        let launcher = scratch.join("launch.sh");
        std::fs::write(&launcher, launcher_script(launch, &go)).unwrap();
        let cwd = launch.cwd.display().to_string();
        let command = format!("sh {}", sh_quote(&launcher.display().to_string()));
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            TARGET,
            "-x",
            "120",
            "-y",
            "40",
            "-c",
            &cwd,
            &command,
        ]);
        tmux.socket_path = PathBuf::from(tmux.display("#{socket_path}"));
        tmux.run(&["set-option", "-w", "-t", TARGET, "remain-on-exit", "on"]);
        let tap = format!("cat >> {}", sh_quote(&tmux.tap.display().to_string()));
        tmux.run(&["pipe-pane", "-o", "-t", TARGET, &tap]);
        std::fs::write(&go, "").unwrap();
        tmux
    }

    /// Types `text`, waits `gap`, then presses Enter: two writes, because a burst of text
    /// with its Enter is taken as a paste and the Enter is lost (agent-lab.md §8.1, §9).
    pub fn send_text(&self, text: &str, gap: Duration) {
        self.run(&["send-keys", "-t", TARGET, "-l", text]);
        std::thread::sleep(gap);
        self.send_keys(&["Enter"]);
    }

    /// tmux key names: `Enter`, `Escape`, `C-c`, `Down`, `2`…
    pub fn send_keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", TARGET];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// The visible screen as plain text.
    pub fn capture(&self) -> String {
        self.output(&["capture-pane", "-p", "-t", TARGET])
    }

    /// The visible screen with its colours and attributes as escape sequences.
    pub fn capture_escapes(&self) -> String {
        self.output(&["capture-pane", "-p", "-e", "-t", TARGET])
    }

    /// The `-L` name of this private tmux server.
    pub fn socket_name(&self) -> &str {
        &self.socket
    }

    /// The tmux target of the agent's pane (`agent`, the session's only pane).
    pub fn target(&self) -> &'static str {
        TARGET
    }

    /// The pid of the pane's process (the launcher's `sh`; the CLI is its child).
    pub fn pane_pid(&self) -> u32 {
        self.display("#{pane_pid}").parse().expect("a pane pid")
    }

    pub fn title(&self) -> String {
        self.display("#{pane_title}")
    }

    /// The exit status once the pane's program has ended.
    pub fn exit_status(&self) -> Option<i32> {
        match self
            .display("#{pane_dead} #{pane_dead_status}")
            .split_once(' ')
        {
            Some(("1", status)) => status.parse().ok(),
            _ => None,
        }
    }

    /// Waits for the launcher's `EXIT:<code>` line: (the CLI's exit code, that screen).
    /// The pane itself can outlive the CLI for seconds while something it started still
    /// holds the terminal, so this does not wait for `exit_status`.
    pub fn wait_exit(&self, timeout: Duration) -> (i32, String) {
        let line = regex::Regex::new(r"(?m)^EXIT:(\d+)\s*$").unwrap();
        let screen = self.wait_for("the CLI to exit", timeout, |s| line.is_match(s));
        let code = line.captures(&screen).unwrap()[1].parse().unwrap();
        (code, screen)
    }

    /// Every byte the pane's program wrote so far.
    pub fn raw(&self) -> Vec<u8> {
        std::fs::read(&self.tap).unwrap_or_default()
    }

    /// Polls the screen until `ready` holds and returns that screen; on timeout, panics with
    /// `what` and the last screen.
    pub fn wait_for(&self, what: &str, timeout: Duration, ready: impl Fn(&str) -> bool) -> String {
        self.poll_until(timeout, ready).unwrap_or_else(|screen| {
            panic!("timed out after {timeout:?} waiting for {what}; last screen:\n{screen}")
        })
    }

    /// Polls the screen until `ready` holds: Ok(that screen), or Err(the last screen).
    pub fn poll_until(
        &self,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return Ok(screen);
            }
            if Instant::now() >= deadline {
                return Err(screen);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the screen contains `text`.
    pub fn wait_for_text(&self, text: &str, timeout: Duration) -> String {
        self.wait_for(&format!("{text:?} on screen"), timeout, |s| {
            s.contains(text)
        })
    }

    fn display(&self, format: &str) -> String {
        self.output(&["display-message", "-p", "-t", TARGET, format])
            .trim_end_matches('\n')
            .to_string()
    }

    fn output(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.run(args).stdout).into_owned()
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = self
            .command()
            .args(args)
            .output()
            .expect("tmux runs (scripts/ensure-deps.sh installs it)");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command
            .args(["-L", &self.socket, "-f", "/dev/null", "-u"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        command
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

/// Waits for `go`, runs the program with exactly its environment (plus the pane's TMUX and
/// TMUX_PANE, as a CLI started in tmux has them), then prints its exit code.
fn launcher_script(launch: &Launch, go: &Path) -> String {
    format!(
        "while [ ! -e {go} ]; do sleep 0.02; done\n{run}\necho \"EXIT:$?\"\n",
        go = sh_quote(&go.display().to_string()),
        run = launch.shell_command(&["TMUX", "TMUX_PANE"]),
    )
}
