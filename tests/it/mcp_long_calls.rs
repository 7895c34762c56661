//! Long builds as MCP tasks (the 2026-07-28 tasks extension), with a real client over HTTP:
//! a client that declares the extension gets a task for a build that is not done within the
//! window and a plain result for one that is; it reads the task again after reconnecting,
//! cancels it (no process is left), and after a restart learns why it ended. A client that
//! does not declare the extension sees no change. And the real Claude Code gets a long
//! compile back as a task.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

use crate::agent_kit::fake_anthropic::FakeAnthropic;
use crate::agent_kit::lab_crate::lab_crate;
use crate::mcp_spawn::{screen_of, spawning_server};
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;

type TasksClient = RunningService<RoleClient, ClientConfig>;

/// A 2026-07-28 client named `name` that declares the tasks extension.
async fn tasks_client(url: &str, name: &str) -> TasksClient {
    let config = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new(name, "1.0"),
    );
    connect(
        url,
        rmcp::ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        },
        config,
    )
    .await
}

/// A server whose only allowed root is `root`, whose builds go to `root/target`: each test's
/// slow build waits on its own, not on the cargo lock of a target every test shares (the
/// tests' `CARGO_TARGET_DIR`).
fn server_in(root: &Path, more: &[&str]) -> Server {
    let target = root.join("target").display().to_string();
    let mut args = vec!["--allow-root", root.to_str().unwrap()];
    args.extend_from_slice(more);
    Server::start_with(&args, &[("CARGO_TARGET_DIR", &target)])
}

/// A crate whose build script waits until `go` exists in it (and writes its pid first), a
/// few minutes at most.
fn slow_crate(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"slow\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub fn slow() -> u32 {\n    1\n}\n").unwrap();
    std::fs::write(
        dir.join("build.rs"),
        r#"use std::path::Path;
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let dir = Path::new(&dir);
    std::fs::write(dir.join("build.pid"), std::process::id().to_string()).unwrap();
    let started = std::time::Instant::now();
    while !dir.join("go").exists() && started.elapsed().as_secs() < 300 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
"#,
    )
    .unwrap();
    dir.display().to_string()
}

fn compile(project: &str) -> CallToolRequestParams {
    let arguments = json!({"project_path": project});
    CallToolRequestParams::new("compile").with_arguments(arguments.as_object().unwrap().clone())
}

/// The id of the task `compile` of `project` became.
async fn compile_as_task(client: &TasksClient, project: &str) -> String {
    match client.call_tool_once(compile(project)).await.unwrap() {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");
            assert!(
                created.task.ttl_ms.is_some_and(|ttl| ttl > 0),
                "{created:?}"
            );
            created.task.task_id
        }
        other => panic!("a build waiting on its script should become a task: {other:?}"),
    }
}

async fn get(client: &TasksClient, id: &str) -> Result<GetTaskResult, String> {
    client
        .get_task(GetTaskParams::new(id))
        .await
        .map_err(|e| e.to_string())
}

/// The task once it is no longer working.
async fn until_ended(client: &TasksClient, id: &str) -> GetTaskResult {
    until_read(
        Duration::from_secs(180),
        || async { get(client, id).await.unwrap() },
        |task| task.task.status() != TaskStatus::Working,
    )
    .await
    .unwrap_or_else(|task| panic!("task {id} never ended: {task:?}"))
}

fn completed_report(task: &GetTaskResult) -> Value {
    let TaskPayload::Completed { result } = &task.task.payload else {
        panic!("not completed: {task:?}");
    };
    result["structuredContent"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_build_becomes_a_task_that_is_read_again_after_reconnecting() {
    let root = tempfile::tempdir().unwrap();
    let project = slow_crate(&root.path().join("slow"));
    let server = server_in(root.path(), &[]);

    let client = tasks_client(&server.url, "tasks-test").await;
    let id = compile_as_task(&client, &project).await;
    let working = get(&client, &id).await.unwrap();
    assert_eq!(working.task.status(), TaskStatus::Working, "{working:?}");
    assert!(working.task.task.poll_interval_ms.is_some(), "{working:?}");
    // Its progress shows: the build script compiled, the build waiting on it.
    until_read(
        Duration::from_secs(60),
        || async { get(&client, &id).await.unwrap() },
        |task| {
            task.task
                .task
                .status_message
                .as_deref()
                .unwrap_or_default()
                .contains("build-script-build")
        },
    )
    .await
    .unwrap_or_else(|task| panic!("no progress shown: {task:?}"));

    // Nobody else reads it: another client, an unknown id; the extension undeclared.
    let other = tasks_client(&server.url, "another-client").await;
    let refused = get(&other, &id).await.unwrap_err();
    assert!(refused.contains("is not this client's"), "{refused}");
    let unknown = get(&client, "0123456789abcdef").await.unwrap_err();
    assert!(unknown.contains("no task `0123456789abcdef`"), "{unknown}");
    let plain = modern_client(&server.url).await;
    let undeclared = plain
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        undeclared.contains("-32021") || undeclared.contains("capabilit"),
        "{undeclared}"
    );
    other
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    // tasks/update: nothing is asked, the answer is acknowledged and changes nothing.
    client
        .update_task(UpdateTaskParams::new(id.clone(), Default::default()))
        .await
        .unwrap();
    assert_eq!(
        get(&client, &id).await.unwrap().task.status(),
        TaskStatus::Working
    );

    // The client goes away while the build runs; the same client, back, finds the result.
    client.cancel().await.unwrap();
    std::fs::write(Path::new(&project).join("go"), "").unwrap();
    let back = tasks_client(&server.url, "tasks-test").await;
    let ended = until_ended(&back, &id).await;
    assert_eq!(ended.task.status(), TaskStatus::Completed, "{ended:?}");
    let report = completed_report(&ended);
    assert_eq!(report["status"], "ok", "{report:#}");

    // A build with nothing to do answers within the window: a plain result.
    match back.call_tool_once(compile(&project)).await.unwrap() {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.structured_content.unwrap()["status"], "ok");
        }
        other => panic!("a no-change build answers directly: {other:?}"),
    }

    // A client without the extension waits for its result, exactly as before.
    std::fs::remove_file(Path::new(&project).join("go")).unwrap();
    let source = Path::new(&project).join("build.rs");
    let script = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, format!("{script}// again\n")).unwrap();
    let go = Path::new(&project).join("go");
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(4)).await;
        std::fs::write(go, "").unwrap();
    });
    let waited = call_ok(&plain, "compile", json!({"project_path": project})).await;
    assert_eq!(waited["status"], "ok", "{waited:#}");
    release.await.unwrap();
    for client in [back, other] {
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_task_stops_its_build_and_leaves_no_process() {
    let root = tempfile::tempdir().unwrap();
    let project = slow_crate(&root.path().join("slow"));
    let server = server_in(root.path(), &[]);
    let client = tasks_client(&server.url, "tasks-test").await;
    let id = compile_as_task(&client, &project).await;
    assert!(
        eventually(Duration::from_secs(120), || Path::new(&project)
            .join("build.pid")
            .exists())
        .await,
        "the build script started"
    );
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let ended = get(&client, &id).await.unwrap();
    assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{ended:?}");
    server.assert_no_descendants_within(
        Duration::from_secs(15),
        "a cancelled task left processes behind",
    );
    // Cancelling again changes nothing.
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    let still = get(&client, &id).await.unwrap();
    assert_eq!(still.task.status(), TaskStatus::Cancelled);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_restart_a_task_that_was_running_says_why_it_ended() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let project = slow_crate(&root.path().join("slow"));
    let data_dir = data.path().to_str().unwrap();
    let args = ["--data-dir", data_dir];
    let first = server_in(root.path(), &args);
    let client = tasks_client(&first.url, "tasks-test").await;
    let id = compile_as_task(&client, &project).await;
    client.cancel().await.ok();
    drop(first);

    let second = server_in(root.path(), &args);
    let client = tasks_client(&second.url, "tasks-test").await;
    let ended = get(&client, &id).await.unwrap();
    assert_eq!(ended.task.status(), TaskStatus::Failed, "{ended:?}");
    let TaskPayload::Failed { error } = &ended.task.payload else {
        panic!("{ended:?}");
    };
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("drydock stopped while this call ran"),
        "{message}"
    );
    client.cancel().await.ok();
}

/// Every tool_result Claude Code sent the fake model for a call of `tool`, in any turn (the
/// main conversation's or a subagent's), once each.
fn tool_results(fake: &FakeAnthropic, tool: &str) -> Vec<String> {
    let (mut ids, mut seen, mut results) = (Vec::new(), Vec::new(), Vec::new());
    for turn in fake.turns() {
        let messages = turn.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for block in messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
        {
            if block["type"] == "tool_use" && block["name"] == tool {
                ids.push(block["id"].clone());
            }
            let id = &block["tool_use_id"];
            if block["type"] == "tool_result" && ids.contains(id) && !seen.contains(id) {
                seen.push(id.clone());
                results.push(match &block["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
            }
        }
    }
    results
}

/// A finished run of the real Claude Code 2.1.330 in its TUI, as a task's agent, on a crate
/// whose build script takes 6 s.
struct ClaudeRun {
    fake: FakeAnthropic,
    server: Server,
    task: Value,
    /// The long calls drydock kept: (tool, client, scope, status).
    long_calls: Vec<(String, String, String, String)>,
}

async fn claude_task(name: &str, description: &str, env: &[(&str, &str)]) -> ClaudeRun {
    let (cli, mut home, fake, tmux_dir) = claude_home(name);
    for (key, value) in env {
        home.set_env(key, value);
    }
    // A task's result inline, as the tool's result (by default Claude Code moves a task to the
    // background at once and tells the model later).
    home.set_env("CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS", "0");
    let build = "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n    \
                 std::thread::sleep(std::time::Duration::from_secs(6));\n}\n";
    lab_crate(
        &home.project,
        "pub fn one() -> u32 {\n    1\n}\n",
        &[("build.rs", build)],
    );
    let config = "[tasks]\ngrace_s = 1\n[tasks.policies]\n\
                  trusted = [\"mcp__drydock__compile\", \"mcp__drydock__test\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [{"title": "build", "project_path": path_arg(&home.project),
                          "auto_approve": "trusted", "description": description}]}),
    )
    .await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    call_ok(&client, "task_start", json!({"task_id": id})).await;
    let ended = until_read(
        Duration::from_secs(180),
        || async { call_ok(&client, "task_show", json!({"task_id": id})).await["task"].clone() },
        |task| !matches!(task["state"].as_str(), Some("queued" | "running")),
    )
    .await;
    let task = match ended {
        Ok(task) => task,
        Err(task) => {
            let screen = screen_of(&client, &format!("task-{id}")).await;
            panic!(
                "the task never ended: {task:#}\n{screen}\nthe fake heard: {:#?}",
                fake.prompts()
            );
        }
    };
    let store =
        rusqlite::Connection::open(server.data_dir.path().join("long-calls.sqlite3")).unwrap();
    let long_calls = store
        .prepare("SELECT tool, client, scope, status FROM long_calls ORDER BY created_ms")
        .unwrap()
        .query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    client.cancel().await.ok();
    no_agent_left(&home, tmux_dir.path(), "the task ended").await;
    ClaudeRun {
        fake,
        server,
        task,
        long_calls,
    }
}

/// The one report the model got for `compile`, checked to be the whole 6 s build's (Claude
/// Code gives the model the structured content).
fn compile_report(run: &ClaudeRun) -> Value {
    let results = tool_results(&run.fake, "mcp__drydock__compile");
    if results.len() != 1 {
        let ends: Vec<String> = run
            .fake
            .turns()
            .iter()
            .map(|turn| {
                let messages = turn.body["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let end: String = Value::Array(messages.iter().rev().take(2).cloned().collect())
                    .to_string()
                    .chars()
                    .take(1500)
                    .collect();
                end
            })
            .collect();
        panic!(
            "{} results for compile: {results:?}; each turn ended with {ends:#?}",
            results.len()
        );
    }
    let report: Value = serde_json::from_str(&results[0])
        .unwrap_or_else(|_| panic!("not a build's report: {}", results[0]));
    assert_eq!(report["status"], "ok", "{report}");
    assert!(report["duration_ms"].as_u64().unwrap() >= 6000, "{report}");
    report
}

/// In its main conversation, Claude Code declares the tasks extension: drydock answers the
/// long compile with a task, Claude Code polls it and gives the model the build's report.
#[tokio::test(flavor = "multi_thread")]
async fn claude_codes_long_compile_comes_back_as_a_task() {
    let run = claude_task(
        "claude-long-calls",
        "Build the crate lab:build lab:complete=done",
        &[],
    )
    .await;
    assert_eq!(run.task["state"], "done", "{:#}", run.task);
    let id = run.task["id"].as_str().unwrap();
    let compiled: Vec<_> = run
        .long_calls
        .iter()
        .filter(|call| call.0 == "compile")
        .collect();
    assert_eq!(
        compiled,
        [&(
            "compile".to_string(),
            "claude-code".to_string(),
            format!("task {id}"),
            "completed".to_string()
        )],
        "{:?}",
        run.long_calls
    );
    compile_report(&run);
    drop(run.server);
}

/// A subagent's calls never declare the extension (Claude Code withholds it there and has
/// no background for them): drydock answers the same long compile with its plain result,
/// which reaches the subagent's model; the main conversation then ends the task.
#[tokio::test(flavor = "multi_thread")]
async fn claude_codes_subagent_gets_its_long_compile_as_a_plain_result() {
    use base64::Engine;
    let subagent =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("Build the crate lab:build");
    let run = claude_task(
        "claude-long-calls-subagent",
        &format!("Have a subagent build lab:subagent={subagent} lab:complete=done"),
        // The subagent in the foreground, so that the task ends after it.
        &[("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "1")],
    )
    .await;
    assert_eq!(run.task["state"], "done", "{:#}", run.task);
    assert!(
        run.fake
            .prompts()
            .iter()
            .any(|p| p == "Build the crate lab:build"),
        "the subagent worked: {:#?}",
        run.fake.prompts()
    );
    assert!(
        !run.long_calls.iter().any(|call| call.0 == "compile"),
        "no task was made for the subagent's compile: {:?}",
        run.long_calls
    );
    compile_report(&run);
    drop(run.server);
}
