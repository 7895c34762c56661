//! agent_spawn with a person's consent, on the real Claude Code: asked through a real MCP
//! client that supports elicitation (accept and decline), or, with a client that cannot ask,
//! as a pending approval answered with `drydock approve` / `drydock decline`; and a spawned
//! agent's permission prompt decided through its PermissionRequest hook, with no keystroke.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ErrorData as McpError};
use serde_json::{Value, json};

use crate::agent_kit::fake_anthropic::FakeAnthropic;
use crate::agent_kit::fake_openai::FakeOpenAi;
use crate::agent_kit::home::{AgentHome, Cli};
use crate::support::*;

const STEP: Duration = Duration::from_secs(60);

/// A client whose user answers every elicitation with `action`, and remembers the questions.
#[derive(Clone)]
struct Person {
    action: ElicitationAction,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.capabilities.elicitation = Some(ElicitationCapability::new());
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        Ok(match self.action {
            ElicitationAction::Accept => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"start": true}))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

async fn person(
    url: &str,
    action: ElicitationAction,
) -> (RunningService<RoleClient, Person>, Person) {
    let person = Person {
        action,
        asked: Arc::default(),
    };
    let client = connect(url, ClientLifecycleMode::Initialize, person.clone()).await;
    (client, person)
}

/// A server whose spawned agents run the pinned Claude Code against the fake, in `home`,
/// with `config` as its config file.
pub fn spawning_server(home: &AgentHome, cli: &Cli, tmux_dir: &Path, config: &str) -> Server {
    spawning_server_with(home, cli, tmux_dir, config, &[])
}

/// [`spawning_server`] with more arguments for `drydock serve`.
pub fn spawning_server_with(
    home: &AgentHome,
    cli: &Cli,
    tmux_dir: &Path,
    config: &str,
    more: &[&str],
) -> Server {
    let bin = cli.program.parent().unwrap().display().to_string();
    // The toolchain's own bin directory (cargo sets CARGO for its tests), for drydock's build
    // tools: the agent's HOME has no rustup.
    let cargo = std::env::var("CARGO").expect("run by cargo");
    let toolchain = Path::new(&cargo).parent().unwrap().display().to_string();
    server_on(home, cli, tmux_dir, config, more, |path| {
        format!("{bin}:{path}:{toolchain}")
    })
}

/// [`spawning_server_with`] whose PATH is `bin` alone.
pub fn spawning_server_on_path(
    home: &AgentHome,
    cli: &Cli,
    tmux_dir: &Path,
    config: &str,
    bin: &Path,
) -> Server {
    server_on(home, cli, tmux_dir, config, &[], |_| {
        bin.display().to_string()
    })
}

fn server_on(
    home: &AgentHome,
    cli: &Cli,
    tmux_dir: &Path,
    config: &str,
    more: &[&str],
    path: impl Fn(&str) -> String,
) -> Server {
    let launch = home.launch(cli, &[]);
    let mut env: Vec<(String, String)> = launch
        .env
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "PATH" => (k, path(&v)),
            _ => (k, v),
        })
        .collect();
    env.push(("TMUX_TMPDIR".into(), tmux_dir.display().to_string()));
    env.push(("TMUX".into(), String::new()));
    // The lab project's own target, as cargo names it without the variable: not the test
    // run's CARGO_TARGET_DIR, whose gigabytes a task's warm start would otherwise copy.
    env.push((
        "CARGO_TARGET_DIR".into(),
        home.project.join("target").display().to_string(),
    ));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let config_file = home.scratch().join("drydock.toml");
    std::fs::write(&config_file, agents_at_full_priority(config)).unwrap();
    let mut args = vec![
        "--allow-root",
        home.project.to_str().unwrap(),
        "--config",
        config_file.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    Server::start_with(&args, &env)
}

/// `config` with `[tasks] nice = 0` unless it sets a niceness. drydock holds a task's agent at
/// `[tasks] nice` against every other session (docs/tasks.md), and the tests run many at
/// once in the one session of the test run, their Chromiums and builds too: at the default
/// 10, an agent then gets a tenth of what a test waits for. The tests of the niceness itself
/// (`sandbox`, the chaos soak) set it.
fn agents_at_full_priority(config: &str) -> String {
    if config
        .lines()
        .any(|line| line.trim_start().starts_with("nice"))
    {
        return config.to_string();
    }
    match config.lines().position(|line| line.trim() == "[tasks]") {
        Some(header) => {
            let mut lines: Vec<&str> = config.lines().collect();
            lines.insert(header + 1, "nice = 0");
            lines.join("\n") + "\n"
        }
        None => format!("{config}\n[tasks]\nnice = 0\n"),
    }
}

pub fn kill_tmux(tmux_dir: &Path) {
    let _ = Command::new("tmux")
        .args(["-L", "drydock", "kill-server"])
        .env("TMUX_TMPDIR", tmux_dir)
        .output();
}

fn drydock(server: &Server, args: &[&str]) -> std::process::Output {
    drydock_command()
        .args(args)
        .arg("--data-dir")
        .arg(server.data_dir.path())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_asks_the_client_and_the_spawned_agents_permission_is_decided_through_its_hook() {
    let cli = Cli::claude();
    let mut home = AgentHome::new("claude-spawn");
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let tmux_dir = tempfile::tempdir().unwrap();
    let server = spawning_server(&home, &cli, tmux_dir.path(), "");
    let (client, accepting) = person(&server.url, ElicitationAction::Accept).await;
    let project = path_arg(&home.project);

    let bad_name = call_err(
        &client,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "x", "cwd": project, "name": "a.b"}),
    )
    .await;
    assert!(bad_name.contains("no `.` or `:`"), "{bad_name}");
    let outside = call_err(
        &client,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "x", "cwd": "/"}),
    )
    .await;
    assert!(outside.contains("cwd"), "{outside}");
    let unknown = call_err(
        &client,
        "agent_spawn",
        json!({"kind": "vim", "prompt": "x", "cwd": project}),
    )
    .await;
    assert!(unknown.contains("it can start: claude, codex"), "{unknown}");
    assert!(
        accepting.asked.lock().unwrap().is_empty(),
        "nobody asked for bad input"
    );

    let spawned = call_ok(
        &client,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "Run the lab command lab:bash", "cwd": project,
               "name": "fixer", "backend": "pty"}),
    )
    .await;
    assert_eq!(spawned["started"], true, "{spawned:#}");
    assert_eq!(spawned["consent"], "accepted");
    assert_eq!(spawned["session"], "agent-fixer");
    assert_eq!(spawned["hooks"], true);
    assert_eq!(spawned["mcp"], true);
    assert_eq!(spawned["agent"]["spawned"], true);
    let question = accepting.asked.lock().unwrap()[0].clone();
    assert!(
        question.contains("Start claude in") && question.contains("Run the lab command lab:bash"),
        "{question}"
    );
    let taken = call_err(
        &client,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "x", "cwd": project, "name": "fixer"}),
    )
    .await;
    assert!(taken.contains("agent-fixer is taken"), "{taken}");

    // Its PermissionRequest hook waits for drydock: approve answers it without keys.
    let waiting = call_ok(
        &client,
        "agent_wait",
        json!({"agents": ["agent-fixer"], "states": ["waiting"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(
        waiting["matched"],
        true,
        "{waiting:#}\n{}",
        screen_of(&client, "agent-fixer").await
    );
    let shown = wait_for_prompt(&client, "agent-fixer").await;
    assert!(home.processes().len() > 1);
    let answered = call_ok(
        &client,
        "agent_answer",
        json!({"agent": "agent-fixer", "action": "approve", "seen": shown["waiting"]["prompt_id"]}),
    )
    .await;
    assert_eq!(answered["sent"], "hook:allow", "{answered:#}");
    assert_eq!(answered["answered"], true, "{answered:#}");
    let ran = home.project.join("lab-bash.txt");
    assert!(
        eventually(STEP, || ran.exists()).await,
        "the approved command ran"
    );

    let (decliner, declining) = person(&server.url, ElicitationAction::Decline).await;
    let declined = call_ok(
        &decliner,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "Say hi", "cwd": project, "name": "nope"}),
    )
    .await;
    assert_eq!(declined["started"], false, "{declined:#}");
    assert_eq!(declined["consent"], "declined");
    assert!(declined.get("session").is_none());
    assert_eq!(declining.asked.lock().unwrap().len(), 1);
    let sessions = call_ok(&client, "terminal_list", json!({}))
        .await
        .to_string();
    assert!(!sessions.contains("agent-nope"), "{sessions}");

    let killed = call_ok(&client, "agent_kill", json!({"agent": "agent-fixer"})).await;
    assert_eq!(killed["agent"]["state"], "exited", "{killed:#}");
    assert_eq!(claude_processes(&home), Vec::<String>::new());
    kill_tmux(tmux_dir.path());
}

/// The processes of Claude Code (and what it started) with this HOME, as command lines: the
/// server and its shells share the HOME and are left out.
pub fn claude_processes(home: &AgentHome) -> Vec<String> {
    home.processes()
        .iter()
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            // An empty command line: the process is exiting (its memory already released).
            if cmdline.is_empty() {
                return None;
            }
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let ours = cmdline.contains("drydock serve")
                || cmdline.contains("drydock.bashrc")
                || cmdline.starts_with("tmux ");
            (!ours).then(|| format!("{pid}: {cmdline}"))
        })
        .collect()
}

/// agent_spawn with `arguments` from a client of its own, while the test goes on.
pub fn spawn_meanwhile(server: &Server, arguments: Value) -> tokio::task::JoinHandle<Value> {
    let url = server.url.clone();
    tokio::spawn(async move {
        let client = modern_client(&url).await;
        call_ok(&client, "agent_spawn", arguments).await
    })
}

/// The screen of session `name`, for a failure's message.
pub async fn screen_of(client: &rmcp::service::Peer<RoleClient>, name: &str) -> String {
    let screen = call(client, "terminal_screen", json!({"session": name})).await;
    text_of(&screen)
}

/// agent_list until `agent` waits at a drawn prompt; that entry.
async fn wait_for_prompt(client: &rmcp::service::Peer<RoleClient>, agent: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        let listing = call_ok(client, "agent_list", json!({"agent": agent})).await;
        last = listing["agents"][0].clone();
        if last["state"] == "waiting" && last["waiting"]["prompt_id"].is_string() {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{agent} never showed its prompt: {last:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_without_a_client_that_can_ask_waits_for_drydock_approve() {
    let cli = Cli::claude();
    let mut home = AgentHome::new("claude-approve");
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let tmux_dir = tempfile::tempdir().unwrap();
    // Writes are denied by the config, without asking anyone.
    let server = spawning_server(
        &home,
        &cli,
        tmux_dir.path(),
        "[agents]\nauto_deny = [\"Write\"]\n",
    );
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);

    let spawning = spawn_meanwhile(
        &server,
        json!({"kind": "claude", "prompt": "Say hello", "cwd": project}),
    );
    let mut pending = Value::Null;
    for _ in 0..300 {
        let read = read_text_resource(&client, "drydock://approvals").await;
        pending = serde_json::from_str::<Value>(&read).unwrap()["pending"][0].clone();
        if pending.is_object() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pending["action"], "agent_spawn", "{pending:#}");
    assert_eq!(pending["name"], "agent-claude-1");
    assert_eq!(pending["prompt"], "Say hello");
    let id = pending["id"].as_str().unwrap().to_string();
    let listed = drydock(&server, &["approvals"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(&format!("{id}: start claude in")),
        "{listed:?}"
    );
    let wrong = drydock(&server, &["approve", "000000"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("no pending approval \"000000\""),
        "{wrong:?}"
    );
    let approved = drydock(&server, &["approve", &id]);
    assert!(approved.status.success(), "{approved:?}");

    let spawned = spawning.await.unwrap();
    assert_eq!(spawned["consent"], "approved", "{spawned:#}");
    assert_eq!(spawned["approval_id"], json!(id));
    assert_eq!(spawned["started"], true, "{spawned:#}");
    assert!(
        spawned["attach"]
            .as_str()
            .unwrap()
            .contains("agent-claude-1"),
        "{spawned:#}"
    );
    let sent = eventually(STEP, || fake.prompts().iter().any(|p| p == "Say hello")).await;
    assert!(
        sent,
        "the agent never sent its task: {:?}\n{}",
        fake.prompts(),
        screen_of(&client, "agent-claude-1").await
    );
    let done = call_ok(
        &client,
        "agent_wait",
        json!({"agents": ["agent-claude-1"], "states": ["idle"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(done["matched"], true, "{done:#}");
    call_ok(
        &client,
        "agent_send",
        json!({"agent": "agent-claude-1", "text": "Write the file lab:write"}),
    )
    .await;
    let denied = eventually(STEP, || {
        fake.turns()
            .iter()
            .any(|turn| turn.body.to_string().contains("denied through drydock"))
    })
    .await;
    assert!(denied, "the Write was denied by the config's policy");
    let idle = call_ok(
        &client,
        "agent_wait",
        json!({"agents": ["agent-claude-1"], "states": ["idle"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(idle["matched"], true, "{idle:#}");
    assert!(!home.project.join("lab-hello.txt").exists());

    let declining = spawn_meanwhile(
        &server,
        json!({"kind": "claude", "prompt": "Say no", "cwd": project, "name": "second"}),
    );
    let mut id = String::new();
    for _ in 0..300 {
        let listed = drydock(&server, &["approvals"]);
        let text = String::from_utf8_lossy(&listed.stdout).into_owned();
        if let Some((found, _)) = text.split_once(": start claude") {
            id = found.to_string();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let declined = drydock(&server, &["decline", &id]);
    assert!(declined.status.success(), "{declined:?}");
    let result = declining.await.unwrap();
    assert_eq!(result["consent"], "declined", "{result:#}");
    assert_eq!(result["started"], false);

    let timed_out = call_ok(
        &client,
        "agent_spawn",
        json!({"kind": "claude", "prompt": "Too late", "cwd": project, "consent_timeout_ms": 300}),
    )
    .await;
    assert_eq!(timed_out["consent"], "timed_out", "{timed_out:#}");
    let after = read_text_resource(&client, "drydock://approvals").await;
    assert!(after.contains("\"pending\": []"), "{after}");

    call_ok(&client, "agent_kill", json!({"agent": "agent-claude-1"})).await;
    assert_eq!(claude_processes(&home), Vec::<String>::new());
    kill_tmux(tmux_dir.path());
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_spawned_where_config_waives_consent_reports_its_turns_through_notify() {
    let cli = Cli::codex();
    let mut home = AgentHome::new("codex-spawn");
    let fake = FakeOpenAi::start();
    home.prepare_codex(&fake.base_url());
    let tmux_dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[agents]\nspawn_without_consent = [{:?}]\n",
        home.project.display().to_string()
    );
    let server = spawning_server(&home, &cli, tmux_dir.path(), &config);
    let client = modern_client(&server.url).await;

    let spawned = call_ok(
        &client,
        "agent_spawn",
        json!({"kind": "codex", "prompt": "Say hello", "cwd": path_arg(&home.project),
               "name": "cx", "backend": "pty"}),
    )
    .await;
    assert_eq!(spawned["consent"], "waived", "{spawned:#}");
    assert_eq!(spawned["started"], true, "{spawned:#}");
    assert_eq!(spawned["agent"]["kind"], "codex");
    fake.wait_for_prompt("Say hello", STEP);
    let mut last = Value::Null;
    for _ in 0..600 {
        let listing = call_ok(&client, "agent_list", json!({"agent": "agent-cx"})).await;
        last = listing["agents"][0].clone();
        // The notify can arrive a moment before Codex's last OSC 7501 and title
        // update of the turn, so wait for both.
        if last["last_hook"] == "agent-turn-complete" && last["state"] == "idle" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        last["last_hook"],
        "agent-turn-complete",
        "Codex's notify reached drydock: {last:#}\n{}",
        screen_of(&client, "agent-cx").await
    );
    assert_eq!(last["state"], "idle", "{last:#}");

    call_ok(&client, "agent_kill", json!({"agent": "agent-cx"})).await;
    kill_tmux(tmux_dir.path());
}
