//! Agent supervision through the real server and a real MCP client, on the real Claude Code
//! 2.1.330 (installed by scripts/agent-clis.sh) talking to the Anthropic fake of
//! `agent_kit`: in a drydock PTY session, where drydock answers its OSC 7501 probe, and in a
//! pane of the user's own tmux server that drydock did not start.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};

use crate::agent_kit::fake_anthropic::{ASK_QUESTION, FakeAnthropic};
use crate::agent_kit::home::{AgentHome, Cli};
use crate::support::*;

const STEP: Duration = Duration::from_secs(60);

/// Calls agent_list until `agent` satisfies `done`, and returns that entry; panics with the
/// last listing after `limit`.
async fn agent_until(
    client: &Peer<RoleClient>,
    agent: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let entry_of = |listing: &Value| {
        listing["agents"]
            .as_array()
            .and_then(|agents| agents.iter().find(|a| a["name"] == agent))
            .cloned()
    };
    match until_read(
        limit,
        || call_ok(client, "agent_list", json!({})),
        |listing| entry_of(listing).is_some_and(|entry| done(&entry)),
    )
    .await
    {
        Ok(listing) => entry_of(&listing).unwrap(),
        Err(listing) => {
            let screen = call_ok(client, "terminal_screen", json!({"session": agent})).await;
            panic!(
                "agent {agent} never got there: {listing:#}\nscreen:\n{}",
                screen["text"].as_str().unwrap_or_default()
            );
        }
    }
}

fn state(entry: &Value) -> &str {
    entry["state"].as_str().unwrap_or_default()
}

fn labels(entry: &Value) -> Vec<String> {
    entry["waiting"]["options"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .map(|o| o["label"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Claude Code against the Anthropic fake in a drydock PTY session of a server of its own.
pub struct ClaudeInPty {
    pub home: AgentHome,
    pub fake: FakeAnthropic,
    pub server: Server,
    pub client: Client,
    pub session: String,
}

impl ClaudeInPty {
    pub async fn start(prefix: &str) -> ClaudeInPty {
        let cli = Cli::claude();
        let mut home = AgentHome::new(prefix);
        let fake = FakeAnthropic::start(&home.project);
        home.prepare_claude(fake.url());
        let server = Server::start_in(&home.project);
        let client = modern_client(&server.url).await;
        let command = home.launch(&cli, &[]).shell_command(&["TERM"]);
        let created = call_ok(
            &client,
            "terminal_create",
            json!({"cwd": path_arg(&home.project), "command": command, "backend": "pty"}),
        )
        .await;
        let session = created["name"].as_str().unwrap().to_string();
        ClaudeInPty {
            home,
            fake,
            server,
            client,
            session,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_in_a_drydock_pty_is_listed_with_its_osc_7501_states_and_its_prompt() {
    let ClaudeInPty {
        home,
        fake,
        server: _server,
        client,
        session,
    } = ClaudeInPty::start("claude-pty").await;

    // Once drydock answered its probe, Claude Code reports over OSC 7501 and drops the glyph
    // from its title (agent-lab §6.3). The deciding signal is whichever channel said idle
    // first: the screen or the report.
    // Claude Code 2.1.330 steps into `~/.claude/plugins/marketplaces` for a moment while it
    // syncs its plugin marketplace: its cwd is the project once it is back.
    let project = json!(home.project.display().to_string());
    let idle = agent_until(&client, &session, STEP, |a| {
        state(a) == "idle" && a["title"] == "Claude Code" && a["cwd"] == project
    })
    .await;
    assert_eq!(idle["kind"], "claude");
    assert_eq!(
        idle["title"], "Claude Code",
        "no busy glyph once it reports over OSC 7501"
    );
    assert_eq!(idle["users_pane"], false);
    assert_eq!(idle["cwd"], json!(home.project.display().to_string()));

    let already = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [session], "states": ["idle"]}),
    )
    .await;
    assert_eq!(already["matched"], true);
    assert_eq!(already["agent"]["name"], json!(session));
    let timed_out = call_ok(
        &client,
        "agent_wait",
        json!({"states": ["exited"], "timeout_ms": 300}),
    )
    .await;
    assert_eq!(timed_out["matched"], false, "{timed_out:#}");
    assert!(timed_out["waited_ms"].as_u64() >= Some(300));
    let no_states = call_err(&client, "agent_wait", json!({"states": []})).await;
    assert!(
        no_states.contains("states: name at least one of"),
        "{no_states}"
    );

    let nothing_to_answer = call_err(
        &client,
        "agent_answer",
        json!({"agent": session, "action": "approve"}),
    )
    .await;
    assert!(
        nothing_to_answer.contains("is idle, not waiting"),
        "{nothing_to_answer}"
    );
    let sent = call_ok(
        &client,
        "agent_send",
        json!({"agent": session, "text": "Run the lab command lab:bash"}),
    )
    .await;
    assert_eq!(sent["submitted"], true, "{sent:#}");
    assert_eq!(sent["method"], "typed");
    fake.wait_for_prompt("Run the lab command lab:bash", STEP);
    let blocked = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [session], "states": ["waiting"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(blocked["matched"], true, "{blocked:#}");
    assert_eq!(blocked["agent"]["waiting"]["kind"], "permission");
    // OSC 7501 says `blocked` ~90 ms before the prompt is drawn (agent-lab §6.3): waiting,
    // with no question yet; then the prompt on screen gives the question and options.
    let waiting = agent_until(&client, &session, STEP, |a| {
        state(a) == "waiting" && a["waiting"]["question"].is_string()
    })
    .await;
    assert_eq!(waiting["waiting"]["kind"], "permission", "{waiting:#}");
    assert_eq!(waiting["waiting"]["question"], "Do you want to proceed?");
    assert_eq!(labels(&waiting)[0], "Yes");
    assert_eq!(labels(&waiting).last().unwrap(), "No");
    assert!(
        waiting["waiting"]["prompt_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert!(
        waiting["message"]
            .as_str()
            .is_some_and(|m| m.contains("echo hi")),
        "Claude Code says what it asks over OSC 7501: {waiting:#}"
    );
    assert!(!home.project.join("lab-bash.txt").exists());

    let busy = call_err(
        &client,
        "agent_send",
        json!({"agent": session, "text": "more"}),
    )
    .await;
    assert!(busy.contains("waits at a prompt"), "{busy}");
    let stale = call_err(
        &client,
        "agent_answer",
        json!({"agent": session, "action": "approve", "seen": "0000"}),
    )
    .await;
    assert!(
        stale.contains("the prompt changed since you saw it"),
        "{stale}"
    );
    let answered = call_ok(
        &client,
        "agent_answer",
        json!({"agent": session, "action": "approve", "seen": waiting["waiting"]["prompt_id"]}),
    )
    .await;
    assert_eq!(answered["answered"], true, "{answered:#}");
    assert_eq!(answered["sent"], "\r");
    let ran = home.project.join("lab-bash.txt");
    assert!(
        eventually(STEP, || ran.exists()).await,
        "the approved command ran"
    );
    agent_until(&client, &session, STEP, |a| state(a) == "idle").await;
    let written = std::fs::read_to_string(home.project.join("lab-bash.txt")).unwrap();
    assert_eq!(written, "hi\n");

    let ctrl_c = json!({"session": session, "keys": ["C-c"]});
    call_ok(&client, "terminal_send", ctrl_c.clone()).await;
    until_screen_shows(&client, &session, "Press Ctrl-C again to exit", STEP).await;
    call_ok(&client, "terminal_send", ctrl_c).await;
    let exited = agent_until(&client, &session, STEP, |a| state(a) == "exited").await;
    assert_eq!(exited["signal"], "process");
    // Exited as drydock sees it (a zombie counts); gone from /proc once its shell reaps it.
    let pid = exited["pid"].as_u64().unwrap();
    assert!(
        eventually(STEP, || !Path::new(&format!("/proc/{pid}")).exists()).await,
        "claude is gone"
    );

    let unknown = call_err(&client, "agent_list", json!({"agent": "nobody"})).await;
    assert!(unknown.contains("no agent named \"nobody\""), "{unknown}");
    client.cancel().await.ok();
}

/// `drydock hooks install --project` for a server with `data_dir`.
fn install_hooks(project: &Path, data_dir: &str) {
    let installed = drydock_command()
        .args(["hooks", "install", "--project"])
        .arg(project)
        .args(["--data-dir", data_dir])
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
}

/// The user's tmux server of a test: the default socket below a directory of its own.
pub struct UsersTmux(pub tempfile::TempDir);

impl UsersTmux {
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        isolate(&mut Command::new("tmux"))
            .args(args)
            .env("TMUX_TMPDIR", self.0.path())
            .env_remove("TMUX")
            .output()
            .expect("tmux runs")
    }
}

impl Drop for UsersTmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
        self.run(&["-L", "drydock", "kill-server"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_in_the_users_own_tmux_pane_is_found_and_its_menu_read_off_the_screen() {
    let cli = Cli::claude();
    let mut home = AgentHome::new("claude-user-pane");
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let tmux = UsersTmux(tempfile::tempdir().unwrap());
    // The pane's shell outlives Claude Code, as a user's shell would.
    let command = home
        .launch(&cli, &[])
        .shell_command(&["TERM", "TMUX", "TMUX_PANE"])
        + "\necho the agent ended; exec sleep 3600";
    let tmux_dir = tmux.0.path().to_str().unwrap();
    let data_dir = home.scratch().join("data");
    let data_dir = data_dir.to_str().unwrap();
    // The user installed drydock's hooks in the project: they reach the server.
    install_hooks(&home.project, data_dir);
    let started = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
        "-c",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    let server = Server::start_with_env(
        &[
            "--allow-root",
            home.project.to_str().unwrap(),
            "--data-dir",
            data_dir,
        ],
        &[("TMUX_TMPDIR", tmux_dir), ("TMUX", "")],
    );
    let (client, updates) = client_with_updates(&server.url).await;
    let pane = "tmux:work:0.0";
    let uri = format!("drydock://agents/{pane}");

    let idle = agent_until(&client, pane, STEP, |a| {
        state(a) == "idle" && a["last_hook"] == "SessionStart"
    })
    .await;
    assert_eq!(idle["kind"], "claude");
    assert_eq!(idle["users_pane"], true);
    let signal = idle["signal"].as_str().unwrap();
    assert!(
        signal.starts_with("screen:") || signal == "hook:SessionStart",
        "tmux does not answer OSC 7501: the screen or a hook decides: {idle:#}"
    );

    let read = read_text_resource(&client, &uri).await;
    assert!(read.contains("\"state\": \"idle\""), "{read}");
    #[allow(deprecated)]
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri.clone()))
        .await
        .expect("subscribed");
    let before = updates.count(&uri);
    let sent = call_ok(
        &client,
        "agent_send",
        json!({"agent": pane, "text": "Ask me about the lab:ask"}),
    )
    .await;
    assert_eq!(sent["submitted"], true, "{sent:#}");
    let asked = agent_until(&client, pane, STEP, |a| {
        state(a) == "waiting" && a["waiting"]["question"].is_string()
    })
    .await;
    assert_eq!(asked["waiting"]["kind"], "choice", "{asked:#}");
    assert_eq!(asked["waiting"]["question"], ASK_QUESTION);
    assert_eq!(labels(&asked)[..2], ["Red", "Blue"]);
    let hooked = agent_until(&client, pane, STEP, |a| {
        a["last_hook"] == "PermissionRequest AskUserQuestion"
    })
    .await;
    assert_eq!(state(&hooked), "waiting", "{hooked:#}");
    assert_eq!(asked["waiting"]["options"][0]["selected"], true);
    let notified = eventually(Duration::from_secs(10), || updates.count(&uri) > before).await;
    assert!(
        notified,
        "no resources/updated for {uri} when it started waiting"
    );
    let warned = eventually(Duration::from_secs(10), || {
        updates.logs().iter().any(|log| {
            log.starts_with(
                "log:Warning:agent tmux:work:0.0 (claude) is waiting for choice: Which colour",
            )
        })
    })
    .await;
    assert!(
        warned,
        "a warning when it started waiting: {:?}",
        updates.logs()
    );
    let all = read_text_resource(&client, "drydock://agents").await;
    assert!(all.contains(ASK_QUESTION), "{all}");

    let no_option = call_err(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "choose"}),
    )
    .await;
    assert!(
        no_option.contains("choose needs the option's number"),
        "{no_option}"
    );
    let not_offered = call_err(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "choose", "option": 9}),
    )
    .await;
    assert!(
        not_offered.contains("option 9 is not offered; the prompt offers: 1. Red, 2. Blue"),
        "{not_offered}"
    );
    let chosen = call_ok(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "choose", "option": 2, "seen": asked["waiting"]["prompt_id"]}),
    )
    .await;
    assert_eq!(chosen["answered"], true, "{chosen:#}");
    agent_until(&client, pane, STEP, |a| {
        state(a) == "idle" && a["last_hook"] == "Stop"
    })
    .await;
    // The Stop hook can arrive before Claude Code redraws its answer: wait for the screen.
    until_read(
        STEP,
        || call_ok(&client, "terminal_screen", json!({"session": pane})),
        |screen| screen["text"].as_str().unwrap().contains("→ Blue"),
    )
    .await
    .unwrap_or_else(|screen| panic!("{screen:#}"));

    // An option that asks to type: chosen, then the text typed into it.
    call_ok(
        &client,
        "agent_send",
        json!({"agent": pane, "text": "Ask me once more lab:ask"}),
    )
    .await;
    let asked = agent_until(&client, pane, STEP, |a| {
        state(a) == "waiting" && a["waiting"]["question"] == ASK_QUESTION
    })
    .await;
    assert_eq!(labels(&asked)[2], "Type something.", "{asked:#}");
    let wrong = call_err(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "approve", "text": "Green"}),
    )
    .await;
    assert!(wrong.contains("only choose takes a text"), "{wrong}");
    let typed = call_ok(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "choose", "option": 3, "text": "Green"}),
    )
    .await;
    assert_eq!(typed["answered"], true, "{typed:#}");
    let answered_green = eventually(STEP, || {
        fake.turns().iter().any(|turn| {
            let body = turn.body.to_string();
            body.contains("tool_result") && body.contains("Green")
        })
    })
    .await;
    assert!(answered_green, "the typed answer reached the model");
    agent_until(&client, pane, STEP, |a| state(a) == "idle").await;

    // Killed only when named with force, and then with the command it was running.
    let refused = call_err(&client, "agent_kill", json!({"agent": pane})).await;
    assert!(
        refused.contains("is a pane of your own tmux server: pass force: true"),
        "{refused}"
    );
    call_ok(
        &client,
        "agent_send",
        json!({"agent": pane, "text": "Wait for it lab:sleep=300"}),
    )
    .await;
    let asked = agent_until(&client, pane, STEP, |a| {
        state(a) == "waiting" && a["waiting"]["prompt_id"].is_string()
    })
    .await;
    call_ok(
        &client,
        "agent_answer",
        json!({"agent": pane, "action": "approve", "seen": asked["waiting"]["prompt_id"]}),
    )
    .await;
    let tail_runs = || {
        home.processes().iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| cmd.starts_with(b"tail\0-f\0"))
        })
    };
    assert!(
        eventually(STEP, tail_runs).await,
        "the approved command runs"
    );
    let killed = call_ok(&client, "agent_kill", json!({"agent": pane, "force": true})).await;
    assert!(killed["ended_by"].is_string(), "{killed:#}");
    assert!(killed["processes"].as_u64() >= Some(2), "{killed:#}");
    assert_eq!(killed["agent"]["state"], "exited", "{killed:#}");
    assert!(killed.get("remaining").is_none(), "{killed:#}");
    assert_eq!(
        home.processes(),
        Vec::<u32>::new(),
        "nothing of Claude Code remains"
    );
    let pane_runs = |command: &str| {
        let panes = tmux.run(&["list-panes", "-t", "work", "-F", "#{pane_current_command}"]);
        String::from_utf8_lossy(&panes.stdout).trim() == command
    };
    assert!(
        eventually(Duration::from_secs(10), || pane_runs("sleep")).await,
        "the pane stays, its shell goes on"
    );
    let again = call_err(&client, "agent_kill", json!({"agent": pane, "force": true})).await;
    assert!(again.contains("its process is gone already"), "{again}");
    client.cancel().await.ok();
}

/// agent-lab §8 saw 3 of 120 prompts merged with the next, and approvals lost on the prompt's
/// first frame, with the naive method: a hundred send-then-approve cycles on one agent lose
/// and merge nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_send_then_approve_cycles_lose_and_merge_no_keystroke() {
    const CYCLES: usize = 100;
    let ClaudeInPty {
        home: _home,
        fake,
        server: _server,
        client,
        session: agent,
    } = ClaudeInPty::start("claude-cycles").await;
    agent_until(&client, &agent, STEP, |a| state(a) == "idle").await;

    let mut retries = Vec::new();
    for cycle in 1..=CYCLES {
        let text = format!("Cycle {cycle}: run the lab command lab:bash");
        let sent = call_ok(&client, "agent_send", json!({"agent": agent, "text": text})).await;
        assert_eq!(sent["submitted"], true, "cycle {cycle}: {sent:#}");
        let waiting = call_ok(
            &client,
            "agent_wait",
            json!({"agents": [agent], "states": ["waiting"], "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(waiting["matched"], true, "cycle {cycle}: {waiting:#}");
        let answered = call_ok(
            &client,
            "agent_answer",
            json!({"agent": agent, "action": "approve"}),
        )
        .await;
        assert_eq!(answered["answered"], true, "cycle {cycle}: {answered:#}");
        let idle = call_ok(
            &client,
            "agent_wait",
            json!({"agents": [agent], "states": ["idle"], "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(idle["matched"], true, "cycle {cycle}: {idle:#}");
        for (what, report) in [("send", &sent), ("answer", &answered)] {
            if report["attempts"] != 1 {
                retries.push(format!("cycle {cycle} {what}: {}", report["attempts"]));
            }
        }
    }

    let expected: Vec<String> = (1..=CYCLES)
        .map(|cycle| format!("Cycle {cycle}: run the lab command lab:bash"))
        .collect();
    let mut prompts = fake.prompts();
    prompts.dedup();
    assert_eq!(
        prompts, expected,
        "every prompt arrived once, whole, in order"
    );
    let ran = fake
        .turns()
        .iter()
        .filter(|turn| turn.body.to_string().contains("tool_result"))
        .count();
    assert!(
        ran >= CYCLES,
        "every approval let the command run: {ran} tool results"
    );
    assert_eq!(
        retries,
        Vec::<String>::new(),
        "no keys needed sending twice"
    );
    client.cancel().await.ok();
}
