//! The pinned CLIs (installed by scripts/agent-clis.sh) and a throwaway HOME per agent,
//! prepared as agent-lab.md §2 (Claude Code) and §9 (Codex) found to reach the idle screen
//! with no dialog, plus the whole environment of the CLI process: nothing of the test's own
//! environment reaches it, and every proxy variable points at a closed loopback port so that
//! no request can leave the machine except to the fakes (NO_PROXY).

use std::path::{Path, PathBuf};

use serde_json::json;
use tempfile::TempDir;

/// One pinned CLI in the cache.
#[derive(Clone, Debug)]
pub struct Cli {
    /// `claude` or `codex`: the profile name and the fixture directory prefix.
    pub name: &'static str,
    pub version: &'static str,
    pub program: PathBuf,
}

impl Cli {
    pub fn claude() -> Cli {
        Cli::installed("claude", "2.1.330")
    }

    pub fn codex() -> Cli {
        Cli::installed("codex", "0.169.0")
    }

    /// `claude-2.1.330`: where its recorded screens go.
    pub fn label(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }

    fn installed(name: &'static str, version: &'static str) -> Cli {
        let root = std::env::var_os("DRYDOCK_AGENT_CLIS")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                dirs::home_dir()
                    .expect("a home directory")
                    .join(".cache/drydock/agent-clis")
            });
        let program = root
            .join(format!("{name}-{version}"))
            .join("node_modules/.bin")
            .join(name);
        assert!(
            program.exists(),
            "{name} {version} is not installed at {}: run scripts/agent-clis.sh \
             (it installs the pinned agent CLIs into $DRYDOCK_AGENT_CLIS or ~/.cache/drydock/agent-clis)",
            program.display()
        );
        Cli {
            name,
            version,
            program,
        }
    }
}

/// What to run in a terminal: the program, its arguments, its whole environment, its cwd.
#[derive(Clone, Debug)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl Launch {
    /// A shell command line that runs the program in its cwd with `env -i` and exactly its
    /// environment, plus the variables named in `keep` from the shell that runs the line
    /// (e.g. a terminal's TMUX). For any terminal: a tmux pane, a drydock PTY session…
    pub fn shell_command(&self, keep: &[&str]) -> String {
        let mut words = vec!["env".to_string(), "-i".to_string()];
        words.extend(keep.iter().map(|name| format!("{name}=\"${name}\"")));
        words.extend(self.env.iter().map(|(k, v)| sh_quote(&format!("{k}={v}"))));
        words.push(sh_quote(&self.program.display().to_string()));
        words.extend(self.args.iter().map(|arg| sh_quote(arg)));
        format!(
            "cd {} || exit 97\n{}",
            sh_quote(&self.cwd.display().to_string()),
            words.join(" ")
        )
    }
}

/// `text` as one word for sh.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A throwaway HOME with a project directory in it. Dropping it kills every process still
/// running with this HOME (Codex's app-server daemon outlives its TUI, agent-lab.md §9).
pub struct AgentHome {
    dir: TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    env: Vec<(String, String)>,
}

impl AgentHome {
    /// Prepares this HOME for Claude Code talking to the Anthropic fake at `base_url`.
    pub fn prepare_claude(&mut self, base_url: &str) {
        let home = self;
        write_json(
            &home.home.join(".claude.json"),
            &json!({
                "hasCompletedOnboarding": true,
                "hasSeenAutoDefaultNudge": true,
                "projects": {home.project.display().to_string(): {"hasTrustDialogAccepted": true}}
            }),
        );
        // 2.1.330 starts in auto mode, where a classifier answers instead of a prompt.
        write_json(
            &home.home.join(".claude/settings.json"),
            &json!({"permissions": {"defaultMode": "default"}}),
        );
        home.env.extend(pairs(&[
            ("ANTHROPIC_BASE_URL", base_url),
            ("ANTHROPIC_AUTH_TOKEN", "lab-token"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
        ]));
    }

    /// Prepares this HOME for Codex talking to the Responses fake at `base_url` (`…/v1`).
    pub fn prepare_codex(&mut self, base_url: &str) {
        let home = self;
        let codex_home = home.home.join(".codex");
        let config = format!(
            r#"model = "gpt-lab"
model_provider = "lab"
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[model_providers.lab]
name = "Lab"
base_url = "{base_url}"
env_key = "LAB_OPENAI_KEY"
wire_api = "responses"

[projects."{project}"]
trust_level = "trusted"
"#,
            project = home.project.display()
        );
        std::fs::create_dir_all(&codex_home).unwrap();
        std::fs::write(codex_home.join("config.toml"), config).unwrap();
        let codex_home = codex_home.display().to_string();
        home.env.extend(pairs(&[
            ("CODEX_HOME", &codex_home),
            ("LAB_OPENAI_KEY", "lab-key"),
        ]));
    }

    /// An empty HOME and project directory, and the base environment of a CLI process.
    pub fn new(prefix: &str) -> AgentHome {
        // Not under /tmp: Codex warns when its home is in a temporary directory, which a
        // user's is not.
        let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(&parent).unwrap();
        let dir = tempfile::Builder::new()
            .prefix(&format!("drydock-agent-{prefix}-"))
            .tempdir_in(parent)
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        let tmp = root.join("tmp");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let closed = format!("http://127.0.0.1:{}", closed_port());
        let env = pairs(&[
            ("HOME", &home.display().to_string()),
            (
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            ),
            ("TERM", "tmux-256color"),
            ("LANG", "C.UTF-8"),
            // Claude Code's session sockets (`cc-socks/`) and the like go with the HOME.
            ("TMPDIR", &tmp.display().to_string()),
            ("HTTPS_PROXY", &closed),
            ("HTTP_PROXY", &closed),
            ("https_proxy", &closed),
            ("http_proxy", &closed),
            ("ALL_PROXY", &closed),
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
        ]);
        AgentHome {
            dir,
            home,
            project,
            env,
        }
    }

    /// Claude Code's user settings in this HOME (where hooks go).
    pub fn claude_settings(&self) -> PathBuf {
        self.home.join(".claude/settings.json")
    }

    /// Codex's config.toml in this HOME.
    pub fn codex_config(&self) -> PathBuf {
        self.home.join(".codex/config.toml")
    }

    /// Adds (or replaces) a variable of the CLI's environment.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }

    /// The CLI with `args`, in the project directory, with this HOME's environment.
    pub fn launch(&self, cli: &Cli, args: &[&str]) -> Launch {
        Launch {
            program: cli.program.clone(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: self.env.clone(),
            cwd: self.project.clone(),
        }
    }

    /// The live processes running with this HOME: the CLI and whatever it started.
    pub fn processes(&self) -> Vec<u32> {
        crate::proc_env::processes_with_env(&format!("HOME={}", self.home.display()))
    }

    /// A scratch directory beside HOME and the project (for the terminal's files).
    pub fn scratch(&self) -> PathBuf {
        let scratch = self.dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        scratch
    }
}

impl Drop for AgentHome {
    fn drop(&mut self) {
        for pid in self.processes() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}
