//! The task queue on the real Claude Code against the scripted fake model API: tasks run in
//! pairs under a cap of two, each agent signals its outcome through `task_complete` over MCP
//! with a token limited to its task; agents that exit, hang or are cancelled; and a running
//! task that outlives a SIGKILL of drydock.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::ClientLifecycleMode;
use rmcp::model::SubscribeRequestParams;
use serde_json::{Value, json};

use crate::agent_kit::fake_anthropic::FakeAnthropic;
use crate::agent_kit::home::{AgentHome, Cli};
use crate::mcp_spawn::{
    claude_processes, kill_tmux, screen_of, spawning_server, spawning_server_with,
};
use crate::support::*;
use crate::task_worktrees::repository;

const STEP: Duration = Duration::from_secs(90);

fn add(project: &Value, title: &str, description: &str) -> Value {
    json!({"title": title, "description": description, "project_path": project})
}

async fn task(client: &rmcp::service::Peer<rmcp::RoleClient>, id: &str) -> Value {
    call_ok(client, "task_show", json!({"task_id": id})).await["task"].clone()
}

/// task_show until `done(task)`; the task then (a panic with it and its screen after STEP).
async fn until_task(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    match until_read(STEP, || task(client, id), done).await {
        Ok(now) => now,
        Err(now) => {
            let screen = screen_of(client, &format!("task-{id}")).await;
            panic!("task {id} never got there: {now:#}\n{screen}");
        }
    }
}

/// A throwaway HOME for the pinned Claude Code, the Anthropic fake it talks to, and a tmux
/// directory for drydock's tmux server.
pub fn claude_home(name: &str) -> (Cli, AgentHome, FakeAnthropic, tempfile::TempDir) {
    let mut home = AgentHome::new(name);
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    (Cli::claude(), home, fake, tempfile::tempdir().unwrap())
}

/// No process of Claude Code is left (`what` says why there should be none); then drydock's
/// tmux server goes.
pub async fn no_agent_left(home: &AgentHome, tmux_dir: &Path, what: &str) {
    assert!(
        eventually(Duration::from_secs(30), || claude_processes(home)
            .is_empty())
        .await,
        "{what}: {:?}",
        claude_processes(home)
    );
    kill_tmux(tmux_dir);
}

fn finished(task: &Value) -> bool {
    !matches!(task["state"].as_str(), Some("queued" | "running"))
}

fn drydock(data_dir: &Path, args: &[&str]) -> std::process::Output {
    drydock_command()
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn five_tasks_run_two_at_a_time_and_each_agent_signals_its_outcome() {
    let (cli, home, fake, tmux_dir) = claude_home("claude-tasks");
    // A git project: its tasks work in worktrees of their own, two at a time.
    repository(&home.project);
    let config = "[tasks]\ngrace_s = 1\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let updates = UpdateRecorder::default();
    let client = connect(
        &server.url,
        ClientLifecycleMode::Initialize,
        updates.clone(),
    )
    .await;
    #[allow(deprecated)]
    client
        .subscribe(SubscribeRequestParams::new("drydock://tasks"))
        .await
        .unwrap();
    let project = path_arg(&home.project);

    // Bad input changes nothing.
    let outside = call_err(
        &client,
        "task_add",
        json!({"tasks": [add(&json!("/"), "x", "x")]}),
    )
    .await;
    assert!(outside.contains("project_path"), "{outside}");
    let unknown = call_err(
        &client,
        "task_add",
        json!({"tasks": [add(&project, "ok", "ok"), {"title": "x", "project_path": project, "agent": "vim"}]}),
    )
    .await;
    assert!(
        unknown.contains("tasks[1]") && unknown.contains("it can start"),
        "{unknown}"
    );
    let missing = call_err(
        &client,
        "task_add",
        json!({"tasks": [{"title": "x", "project_path": project, "agent": "codex"}]}),
    )
    .await;
    assert!(
        missing.contains("`codex` was not found") && missing.contains("agents.commands.codex"),
        "{missing}"
    );
    let zero = call_err(&client, "queue_configure", json!({"max_concurrent": 0})).await;
    assert!(zero.contains("from 1 to 1000"), "{zero}");
    let nothing = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(nothing["tasks"], json!([]), "{nothing:#}");

    // Five tasks wait in manual mode, then run two at a time in auto mode.
    let outcomes = ["done", "deferred", "wont_do", "discard", "done"];
    let tasks: Vec<Value> = outcomes
        .iter()
        .enumerate()
        .map(|(n, outcome)| {
            add(
                &project,
                &format!("task {n}"),
                &format!("Work a little lab:think=3 lab:complete={outcome}"),
            )
        })
        .collect();
    let added = call_ok(&client, "task_add", json!({"tasks": tasks})).await;
    let ids: Vec<String> = added["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(added["queue"]["queued"], 5, "{added:#}");
    assert_eq!(added["queue"]["running"], 0, "manual mode starts nothing");

    // Keyed tasks: a retried call queues nothing twice; a key of other work, or a bad one,
    // is refused with nothing queued.
    let keyed = |n: usize| {
        let mut task = add(&project, &format!("keyed {n}"), "lab:complete=done");
        task["key"] = json!(format!("keyed-{n}"));
        task
    };
    let first = call_ok(&client, "task_add", json!({"tasks": [keyed(0)]})).await;
    let keyed_id = first["added"][0]["id"].clone();
    let retried = call_ok(&client, "task_add", json!({"tasks": [keyed(0), keyed(1)]})).await;
    assert_eq!(retried["known"], json!([keyed_id]), "{retried:#}");
    assert_eq!(retried["added"][0]["id"], keyed_id);
    assert_eq!(retried["queue"]["queued"], 7, "{retried:#}");
    let mut other_work = keyed(2);
    other_work["key"] = json!("keyed-0");
    let taken = call_err(
        &client,
        "task_add",
        json!({"tasks": [keyed(3), other_work]}),
    )
    .await;
    assert!(
        taken.contains("key \"keyed-0\"") && taken.contains("nothing was queued"),
        "{taken}"
    );
    let mut empty = keyed(4);
    empty["key"] = json!("");
    let bad = call_err(&client, "task_add", json!({"tasks": [empty]})).await;
    assert!(bad.contains("key: 1 to 128 characters"), "{bad}");
    let listed = call_ok(&client, "task_list", json!({"state": "queued"})).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 7, "{listed:#}");
    let keyed_ids: Vec<Value> = listed["tasks"].as_array().unwrap()[5..]
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    for id in keyed_ids {
        call_ok(&client, "task_cancel", json!({"task_id": id})).await;
    }
    let configured = call_ok(
        &client,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 2}),
    )
    .await;
    assert_eq!(
        configured["started"].as_array().unwrap().len(),
        2,
        "{configured:#}"
    );

    let mut most_running = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let listing = call_ok(&client, "task_list", json!({})).await;
        let running = listing["queue"]["running"].as_u64().unwrap();
        most_running = most_running.max(running);
        assert!(running <= 2, "the cap holds: {listing:#}");
        let states: Vec<&str> = listing["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["state"].as_str().unwrap())
            .collect();
        if states.iter().all(|s| !matches!(*s, "queued" | "running")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the queue never emptied: {listing:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(most_running, 2, "tasks ran in pairs");
    let expected = ["done", "deferred", "wont_do", "discarded", "done"];
    for ((id, outcome), state) in ids.iter().zip(outcomes).zip(expected) {
        let done = until_task(&client, id, |t| t["transcript"].is_string()).await;
        assert_eq!(done["state"], state, "{done:#}");
        assert_eq!(
            done["summary"],
            format!("LAB-SUMMARY {outcome}"),
            "{done:#}"
        );
        assert_eq!(done["session"], format!("task-{id}"));
        assert_eq!(done["attempts"], 1);
        assert!(done["started_at_ms"].as_u64() <= done["finished_at_ms"].as_u64());
        // What it spent is what the fake model returned to its conversation (the turns
        // that name its worktree): 100 input and 20 output tokens each, at Opus's price.
        let counted = until_task(&client, id, |t| t["usage"].is_object()).await;
        let dir = counted["isolation"]["dir"].as_str().unwrap().to_string();
        let turns = fake
            .turns()
            .iter()
            .filter(|turn| turn.body["stream"] == true && turn.body.to_string().contains(&dir))
            .count() as u64;
        assert!(turns > 0, "{counted:#}");
        let attempt = &counted["usage"]["attempts"][0];
        assert_eq!(attempt["attempt"], 1, "{counted:#}");
        assert_eq!(
            attempt["tokens"],
            json!({"claude-opus-5-5": {"input": 100 * turns, "output": 20 * turns, "cache_read": 0, "cache_write": 0}}),
            "{counted:#}"
        );
        let usd = attempt["cost_usd"].as_f64().unwrap();
        assert!((usd - turns as f64 * 0.0008).abs() < 1e-9, "{counted:#}");
    }
    let listed = call_ok(&client, "task_list", json!({})).await;
    let line = listed["tasks"][0]["usage"].as_str().unwrap_or_default();
    assert!(
        line.contains(" tokens (") && line.contains(", $0.00"),
        "{listed:#}"
    );

    // Each task's end is in the project memory, with its summary and transcript.
    let mut remembered = Value::Null;
    for _ in 0..120 {
        let found = call_ok(
            &client,
            "history_search",
            json!({"query": "task 0 Work a little", "kind": "task", "limit": 10}),
        )
        .await;
        remembered = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|hit| hit["message"].as_str().unwrap().starts_with("task 0:"))
            .cloned()
            .unwrap_or(Value::Null);
        if !remembered.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(remembered["code"], "done", "{remembered:#}");
    assert_eq!(remembered["state"], "recorded", "{remembered:#}");
    assert!(
        remembered["text"]
            .as_str()
            .unwrap()
            .contains("LAB-SUMMARY done"),
        "{remembered:#}"
    );
    assert_eq!(remembered["by"], format!("task {} (claude)", ids[0]));

    // A finished task cannot be completed twice, nor retried when it does not wait for a person.
    let twice = call_err(
        &client,
        "task_complete",
        json!({"task_id": ids[0], "outcome": "done", "summary": "again"}),
    )
    .await;
    assert!(twice.contains("a done task cannot be completed"), "{twice}");
    let retry = call_err(&client, "task_retry", json!({"task_id": ids[0]})).await;
    assert!(
        retry.contains("only a result that did not land and waits for a person"),
        "{retry}"
    );
    let unknown = call_err(&client, "task_show", json!({"task_id": "nope"})).await;
    assert!(unknown.contains("no task \"nope\""), "{unknown}");

    // A permission prompt waits for a person, and the task says so; a task queued with a
    // policy from the config that allows the tool runs it alone.
    let mut trusted = add(&project, "trusted", "Run it lab:bash lab:complete=done");
    trusted["auto_approve"] = json!("trusted");
    let unknown_policy = call_err(
        &client,
        "task_add",
        json!({"tasks": [{"title": "x", "project_path": project, "auto_approve": "yolo"}]}),
    )
    .await;
    assert!(
        unknown_policy.contains("no policy \"yolo\"") && unknown_policy.contains("trusted"),
        "{unknown_policy}"
    );
    let asking = add(&project, "asking", "Run it lab:bash lab:complete=done");
    let added = call_ok(&client, "task_add", json!({"tasks": [trusted, asking]})).await;
    let trusted = added["added"][0]["id"].as_str().unwrap().to_string();
    let asking = added["added"][1]["id"].as_str().unwrap().to_string();
    let done = until_task(&client, &trusted, finished).await;
    assert_eq!(done["state"], "done", "{done:#}");
    let worktree = Path::new(done["isolation"]["dir"].as_str().unwrap());
    assert!(worktree.join("lab-bash.txt").exists(), "{done:#}");
    assert!(
        !home.project.join("lab-bash.txt").exists(),
        "it ran in its worktree"
    );
    let waits = until_task(&client, &asking, |t| t["attention"].is_string()).await;
    let attention = waits["attention"].as_str().unwrap();
    assert!(attention.contains("waits for permission"), "{attention}");
    // The attention gains the prompt's question once the screen shows it, so the list may
    // read a later, longer sentence than the first one seen.
    let listed = call_ok(&client, "task_list", json!({"state": "running"})).await;
    let listed_attention = listed["tasks"][0]["attention"].as_str().unwrap_or_default();
    assert!(
        listed_attention.starts_with("its agent waits for permission"),
        "{listed:#}"
    );
    let shown = call_ok(
        &client,
        "agent_list",
        json!({"agent": format!("task-{asking}")}),
    )
    .await;
    assert_eq!(shown["agents"][0]["state"], "waiting", "{shown:#}");
    let asking_worktree = Path::new(waits["isolation"]["dir"].as_str().unwrap());
    assert!(
        !asking_worktree.join("lab-bash.txt").exists(),
        "nothing ran before a person approved it"
    );
    let answered = call_ok(
        &client,
        "agent_answer",
        json!({"agent": format!("task-{asking}"), "action": "approve",
               "seen": shown["agents"][0]["waiting"]["prompt_id"]}),
    )
    .await;
    assert_eq!(answered["answered"], true, "{answered:#}");
    let done = until_task(&client, &asking, finished).await;
    assert_eq!(done["state"], "done", "{done:#}");
    assert_eq!(done["attention"], Value::Null);
    assert!(
        asking_worktree.join("lab-bash.txt").exists(),
        "approved, it ran"
    );

    let heard = updates.0.lock().unwrap().clone();
    assert!(
        heard.iter().filter(|u| *u == "drydock://tasks").count() >= 10,
        "queued, started and finished tasks were announced: {heard:?}"
    );
    no_agent_left(
        &home,
        tmux_dir.path(),
        "finished tasks' sessions are closed",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_whose_agent_exits_hangs_or_is_cancelled_end_so_and_leave_no_process() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-task-ends");
    repository(&home.project);
    let server = spawning_server(&home, &cli, tmux_dir.path(), "[tasks]\ngrace_s = 0\n");
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);

    let mut hang = add(&project, "hang", "Think forever lab:think=600");
    hang["timeout_s"] = json!(8);
    let tasks = json!({"tasks": [
        add(&project, "say hello", "Say hello and stop"),
        hang,
        add(&project, "think long", "Think for a while lab:think=600"),
    ]});
    let added = call_ok(&client, "task_add", tasks).await;
    let id = |n: usize| added["added"][n]["id"].as_str().unwrap().to_string();
    let (exits, hangs, cancelled) = (id(0), id(1), id(2));
    call_ok(&client, "queue_configure", json!({"max_concurrent": 3})).await;
    for task in [&exits, &hangs, &cancelled] {
        let started = call_ok(&client, "task_start", json!({"task_id": task})).await;
        assert_eq!(started["task"]["state"], "running", "{started:#}");
        let attach = started["attach"].as_str().unwrap();
        assert!(
            attach.ends_with(&format!("-t drydock-task-{task}")),
            "{attach}"
        );
    }
    let again = call_err(&client, "task_start", json!({"task_id": exits})).await;
    assert!(
        again.contains("a running task cannot be started"),
        "{again}"
    );

    // The agent's token may complete its own task, not another's, and run no terminal.
    let token = std::fs::read_to_string(
        server
            .data_dir
            .path()
            .join(format!("tasks/{cancelled}/token")),
    )
    .unwrap();
    let agent = client_with_token(&Era::Modern, &server.url, token.trim()).await;
    let own = call_ok(&agent, "task_show", json!({"task_id": cancelled})).await;
    assert_eq!(own["task"]["state"], "running", "{own:#}");
    let other = call_err(
        &agent,
        "task_complete",
        json!({"task_id": exits, "outcome": "done", "summary": "not mine"}),
    )
    .await;
    assert!(
        other.contains(&format!("works on task {cancelled}, not {exits}")),
        "{other}"
    );
    let terminal = call_err(&agent, "terminal_create", json!({"cwd": project})).await;
    assert!(
        terminal.contains("is not for the agent of task"),
        "{terminal}"
    );

    // An agent that exits without a signal fails its task with its exit code.
    let idle = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [format!("task-{exits}")], "states": ["idle"], "timeout_ms": 90000}),
    )
    .await;
    assert_eq!(idle["matched"], true, "{idle:#}");
    let session = format!("task-{exits}");
    call_ok(
        &client,
        "terminal_send",
        json!({"session": session, "text": "/exit"}),
    )
    .await;
    until_screen_shows(&client, &session, "/exit", STEP).await;
    call_ok(
        &client,
        "terminal_send",
        json!({"session": session, "keys": ["Enter"]}),
    )
    .await;
    let failed = until_task(&client, &exits, finished).await;
    assert_eq!(failed["state"], "failed", "{failed:#}");
    assert_eq!(failed["exit_code"], 0, "{failed:#}");
    let failure = failed["failure"].as_str().unwrap();
    assert!(
        failure.contains("exited with code 0 without signalling"),
        "{failure}"
    );

    // A task past its timeout is stopped and fails.
    let timed_out = until_task(&client, &hangs, finished).await;
    assert_eq!(timed_out["state"], "failed", "{timed_out:#}");
    assert_eq!(timed_out["failure"], "timed out after 8 s");

    // A running task is cancelled: its agent interrupted, then killed. Its transcript keeps
    // the screen its agent showed (Claude Code's, on the alternate screen, leaves nothing
    // behind), so the agent is first seen at work on its prompt.
    let working = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [format!("task-{cancelled}")], "states": ["working"], "timeout_ms": 90000}),
    )
    .await;
    assert_eq!(working["matched"], true, "{working:#}");
    let stopped = call_ok(&client, "task_cancel", json!({"task_id": cancelled})).await;
    assert_eq!(stopped["task"]["state"], "cancelled", "{stopped:#}");
    let kept = until_task(&client, &cancelled, |t| t["transcript"].is_string()).await;
    let transcript = kept["transcript"].as_str().unwrap();
    let prompt = format!("❯ Task {cancelled} from drydock's queue: think long. Think for a while");
    assert!(
        transcript.contains(&prompt),
        "the transcript lacks the agent's screen: {transcript}"
    );
    let retried = call_ok(&client, "task_retry", json!({"task_id": cancelled})).await;
    assert_eq!(retried["task"]["state"], "queued");
    assert_eq!(retried["task"]["attempts"], 2);
    let cleared = call_ok(&client, "queue_clear", json!({})).await;
    assert_eq!(cleared["cancelled"], json!([cancelled]), "{cleared:#}");

    no_agent_left(&home, tmux_dir.path(), "no agent is left").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_task_outlives_a_sigkill_of_drydock_and_still_completes() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-task-restart");
    repository(&home.project);
    let data_dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let args = [
        "--bind",
        bind.as_str(),
        "--data-dir",
        data_dir.path().to_str().unwrap(),
    ];
    let mut first = spawning_server_with(&home, &cli, tmux_dir.path(), "", &args);
    let project = path_arg(&home.project);
    let client = modern_client(&first.url).await;
    let tasks = json!({"tasks": [
        add(&project, "outlive a restart", "Think, then finish lab:think=25 lab:complete=done"),
        add(&project, "lose its session", "Think forever lab:think=600"),
    ]});
    let added = call_ok(&client, "task_add", tasks).await;
    let survivor = added["added"][0]["id"].as_str().unwrap().to_string();
    let lost = added["added"][1]["id"].as_str().unwrap().to_string();
    for task in [&survivor, &lost] {
        call_ok(&client, "task_start", json!({"task_id": task})).await;
    }
    let working = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [format!("task-{survivor}")], "states": ["working"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(working["matched"], true, "{working:#}");

    first.kill_now();
    drop(client);
    let killed = Command::new("tmux")
        .args([
            "-L",
            "drydock",
            "kill-session",
            "-t",
            &format!("drydock-task-{lost}"),
        ])
        .env("TMUX_TMPDIR", tmux_dir.path())
        .output()
        .unwrap();
    assert!(killed.status.success(), "{killed:?}");

    let second = spawning_server_with(&home, &cli, tmux_dir.path(), "", &args);
    let client = modern_client(&second.url).await;
    let gone = until_task(&client, &lost, finished).await;
    assert_eq!(gone["state"], "failed", "{gone:#}");
    assert_eq!(gone["failure"], "session lost while drydock was down");
    let done = until_task(&client, &survivor, finished).await;
    assert_eq!(done["state"], "done", "{done:#}");
    assert_eq!(done["summary"], "LAB-SUMMARY done");

    // The same through the CLI, as a person (or an agent without MCP) would.
    let listed = drydock(data_dir.path(), &["task", "list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains(&format!("{survivor} [done] outlive a restart")),
        "{listed:?}"
    );
    let add_from_shell = || {
        drydock(
            data_dir.path(),
            &[
                "task",
                "add",
                "from the shell",
                "--project",
                home.project.to_str().unwrap(),
                "--key",
                "shell-1",
            ],
        )
    };
    let added = add_from_shell();
    assert!(added.status.success(), "{added:?}");
    let queued = call_ok(&client, "task_list", json!({"state": "queued"})).await;
    let id = queued["tasks"][0]["id"].as_str().unwrap().to_string();
    let again = add_from_shell();
    assert!(
        String::from_utf8_lossy(&again.stdout).contains(&format!(
            "queued 0 task(s); 1 queued before under the same key, not again: {id}"
        )),
        "{again:?}"
    );
    let wrong = drydock(
        data_dir.path(),
        &[
            "task",
            "complete",
            &id,
            "--outcome",
            "done",
            "--summary",
            "x",
        ],
    );
    assert_eq!(wrong.status.code(), Some(1), "{wrong:?}");
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("a queued task cannot be completed"),
        "{wrong:?}"
    );
    let cleared = drydock(data_dir.path(), &["queue", "--clear"]);
    assert!(
        String::from_utf8_lossy(&cleared.stdout).contains(&format!("cancelled: {id}")),
        "{cleared:?}"
    );
    no_agent_left(&home, tmux_dir.path(), "no agent is left").await;
}

/// Issue 48: a task queued while its project's root was allowed does not start once drydock
/// serves other roots: it fails with the reason, and nothing runs in the project.
#[tokio::test]
async fn a_task_whose_root_is_no_longer_allowed_does_not_start() {
    let (cli, home, _fake, _tmux_dir) = claude_home("claude-root-gone");
    repository(&home.project);
    let data_dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        cli.program.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let data = data_dir.path().to_str().unwrap();
    let serve = |root: &Path| {
        Server::start_with(
            &["--allow-root", root.to_str().unwrap(), "--data-dir", data],
            &[("PATH", path.as_str())],
        )
    };
    let first = serve(&home.project);
    let client = modern_client(&first.url).await;
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [add(&path_arg(&home.project), "queued", "lab:complete=done")]}),
    )
    .await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    drop(client);
    drop(first);

    let second = serve(elsewhere.path());
    let client = modern_client(&second.url).await;
    let started = call_ok(&client, "task_start", json!({"task_id": id})).await;
    let task = &started["task"];
    assert_eq!(task["state"], "failed", "{started:#}");
    let failure = task["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("not inside this drydock's allowed roots"),
        "{started:#}"
    );
    assert_eq!(
        git_status(&home.project),
        "",
        "nothing was made or changed in the project"
    );
}

fn git_status(dir: &Path) -> String {
    let out = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
