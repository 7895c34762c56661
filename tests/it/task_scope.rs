//! A task's token is a boundary on every MCP method, not only on `tools/call`: on the real
//! Claude Code against the scripted fake, an agent under an `["Read", "Edit"]` policy reads
//! its own task, the docs and its project's memory, and no other terminal, task or project,
//! whichever method it asks through; `drydock task complete` inside a task is its own token.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, PromptReference,
    ReadResourceRequestParams, Reference, SubscribeRequestParams,
};
use serde_json::{Value, json};

use crate::mcp_spawn::spawning_server_with;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::repository;

const WITHIN: Duration = Duration::from_secs(90);

/// `query` found in the project memory by `client`.
async fn until_recorded(client: &Client, query: &str) {
    until_read(
        WITHIN,
        || call_ok(client, "history_search", json!({"query": query})),
        |found| {
            found["hits"]
                .as_array()
                .is_some_and(|hits| !hits.is_empty())
        },
    )
    .await
    .unwrap_or_else(|found| panic!("{query} was never recorded: {found:#}"));
}

fn drydock_in_task(data_dir: &Path, task_id: &str, args: &[&str]) -> std::process::Output {
    drydock_command()
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("DRYDOCK_TASK_ID", task_id)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_token_reaches_its_own_task_and_no_other_terminal_task_or_project() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-task-scope");
    repository(&home.project);
    let elsewhere = tempfile::tempdir().unwrap();
    let elsewhere = elsewhere.path().canonicalize().unwrap();
    let manifest = "[package]\nname = \"elsewhere\"\nversion = \"0.1.0\"\n\n[workspace]\n";
    std::fs::write(elsewhere.join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(elsewhere.join("src")).unwrap();
    let broken = "pub fn elsewhere_secret() -> u32 {\n    \"text\"\n}\n";
    std::fs::write(elsewhere.join("src/lib.rs"), broken).unwrap();
    let config = "[terminal]\nshell = \"bash\"\n[tasks]\ngrace_s = 0\n\
                  [tasks.policies]\nread_edit = [\"Read\", \"Edit\"]\n";
    let more = ["--allow-root", elsewhere.to_str().unwrap()];
    let server = spawning_server_with(&home, &cli, tmux_dir.path(), config, &more);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);

    // Another project's error, in the project memory; and a terminal of the person's.
    let compiled = call_ok(
        &client,
        "compile",
        json!({"project_path": path_arg(&elsewhere)}),
    )
    .await;
    assert_eq!(compiled["status"], "failed", "{compiled:#}");
    until_recorded(&client, "elsewhere_secret mismatched types").await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "person", "cwd": project}),
    )
    .await;

    let think = |title: &str| {
        json!({"title": title, "project_path": project, "auto_approve": "read_edit",
               "description": "Think for a while lab:think=600"})
    };
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [think("mine"), think("other")]}),
    )
    .await;
    let id = |n: usize| added["added"][n]["id"].as_str().unwrap().to_string();
    let (mine, other) = (id(0), id(1));
    call_ok(&client, "queue_configure", json!({"max_concurrent": 2})).await;
    for task in [&mine, &other] {
        let started = call_ok(&client, "task_start", json!({"task_id": task})).await;
        assert_eq!(started["task"]["state"], "running", "{started:#}");
    }
    let token_file = server.data_dir.path().join(format!("tasks/{mine}/token"));
    let token = std::fs::read_to_string(&token_file).unwrap();
    let agent = client_with_token(&Era::Legacy, &server.url, token.trim()).await;
    let boundary = format!("is not for the agent of task {mine}");

    // Every way past the boundary is tried, and each one found is named at the end.
    let mut breaches: Vec<String> = Vec::new();
    let mut held = |ok: bool, what: String| {
        if !ok {
            breaches.push(what);
        }
    };

    // Resources: its own task, the docs and its project's memory; nothing else listed,
    // read or subscribed to.
    let own_uri = format!("drydock://tasks/{mine}");
    let listed: Vec<String> = agent
        .list_all_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.uri.to_string())
        .collect();
    held(
        listed.contains(&own_uri),
        format!("its task is not listed: {listed:?}"),
    );
    for uri in &listed {
        let its = uri.starts_with("drydock://docs/")
            || uri.starts_with("drydock://history/")
            || *uri == own_uri;
        held(its, format!("resources/list shows {uri}"));
    }
    for template in agent.list_all_resource_templates().await.unwrap() {
        let uri = template.uri_template;
        let its = uri.starts_with("drydock://docs") || uri.starts_with("drydock://history/");
        held(its, format!("resources/templates/list offers {uri}"));
    }
    let own = agent
        .read_resource(ReadResourceRequestParams::new(own_uri.clone()))
        .await;
    held(
        own.is_ok_and(|read| format!("{read:?}").contains(&mine)),
        "its own task is not read".into(),
    );
    let encoded = |path: &Path| path.display().to_string().replace('/', "%2F");
    let memory = format!("drydock://history/{}", encoded(&home.project));
    let memory = agent
        .read_resource(ReadResourceRequestParams::new(memory))
        .await;
    held(memory.is_ok(), format!("its project's memory: {memory:?}"));
    for uri in [
        format!("drydock://sessions/task-{other}/screen"),
        "drydock://sessions/person/scrollback".to_string(),
        format!("drydock://sessions/task-{mine}/screen"),
        "drydock://sessions".to_string(),
        format!("drydock://tasks/{other}"),
        "drydock://tasks".to_string(),
        format!("drydock://agents/task-{other}"),
        "drydock://agents".to_string(),
        "drydock://approvals".to_string(),
        "drydock://projects".to_string(),
        "drydock://server".to_string(),
        // The list of what is indexed names every project.
        "drydock://docs".to_string(),
        format!("drydock://history/{}", encoded(&elsewhere)),
    ] {
        let read = agent
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await;
        let refused = read
            .as_ref()
            .is_err_and(|e| e.to_string().contains(&boundary));
        held(refused, format!("resources/read {uri}: {read:?}"));
    }
    let screen = format!("drydock://sessions/task-{other}/screen");
    #[allow(deprecated)]
    let subscribed = agent
        .subscribe(SubscribeRequestParams::new(screen.clone()))
        .await;
    let refused = subscribed
        .as_ref()
        .is_err_and(|e| e.to_string().contains(&boundary));
    held(
        refused,
        format!("resources/subscribe {screen}: {subscribed:?}"),
    );

    // Prompts and completion: only what its tools can do, only its project.
    let prompts: Vec<String> = agent
        .list_all_prompts()
        .await
        .unwrap()
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let terminal_prompts = ["drive_terminal", "supervise_agents"];
    held(
        !prompts
            .iter()
            .any(|p| terminal_prompts.contains(&p.as_str())),
        format!("prompts/list: {prompts:?}"),
    );
    let got = agent
        .get_prompt(GetPromptRequestParams::new("drive_terminal"))
        .await;
    let refused = got
        .as_ref()
        .is_err_and(|e| e.to_string().contains(&boundary));
    held(refused, format!("prompts/get drive_terminal: {got:?}"));
    let completion = agent
        .complete(CompleteRequestParams::new(
            Reference::Prompt(PromptReference::new("fix_build")),
            ArgumentInfo::new("project_path", "/"),
        ))
        .await
        .unwrap();
    // Its project is no cargo or mix project: nothing may be offered.
    held(
        completion.completion.values.is_empty(),
        format!(
            "completion/complete offers {:?}",
            completion.completion.values
        ),
    );

    // Its tools: its own task, and the memory and docs of its project only.
    let shown = call_tool(&agent, "task_show", json!({"task_id": other})).await;
    held(
        is_refused(&shown, &boundary),
        format!("task_show of another task: {shown:#}"),
    );
    call_ok(&agent, "task_show", json!({"task_id": mine})).await;
    let query = json!({"query": "elsewhere_secret mismatched types"});
    let searched = call_ok(&agent, "history_search", query).await;
    held(
        searched["hits"] == json!([]),
        format!("history_search finds another project's error: {searched:#}"),
    );
    let commands = json!({"query": "echo", "kind": "command"});
    let commands = call_tool(&agent, "history_search", commands).await;
    held(
        is_refused(&commands, &boundary),
        format!("history_search of kind command: {commands:#}"),
    );
    let outside = json!({"query": "x", "project_path": path_arg(&elsewhere)});
    let confined = format!("outside the directory of task {mine}");
    for tool in ["history_search", "docs_lookup"] {
        let called = call_tool(&agent, tool, outside.clone()).await;
        held(
            is_refused(&called, &confined),
            format!("{tool} in another project: {called:#}"),
        );
    }
    agent.cancel().await.ok();

    // `drydock task complete` inside the task speaks with the task's own token.
    let data_dir = server.data_dir.path();
    let complete = |id: &str| {
        drydock_in_task(
            data_dir,
            &mine,
            &[
                "task",
                "complete",
                id,
                "--outcome",
                "done",
                "--summary",
                "s",
            ],
        )
    };
    let theirs = complete(&other);
    let said = String::from_utf8_lossy(&theirs.stderr);
    held(
        !theirs.status.success() && said.contains(&format!("works on task {mine}, not {other}")),
        format!("drydock task complete of another task: {theirs:?}"),
    );
    let ours = complete(&mine);
    held(
        ours.status.success(),
        format!("drydock task complete of its own: {ours:?}"),
    );

    // Whichever are still running (all of them if the boundary let the agent through).
    for task in [&mine, &other] {
        call_tool(&client, "task_cancel", json!({"task_id": task})).await;
    }
    no_agent_left(&home, tmux_dir.path(), "both tasks ended").await;
    assert!(breaches.is_empty(), "past the boundary: {breaches:#?}");
}

/// A tool call's result: its structured content, or its text as `{"error": text}` when it is
/// an error.
async fn call_tool(client: &Client, name: &str, arguments: Value) -> Value {
    let params = rmcp::model::CallToolRequestParams::new(name.to_string())
        .with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    if result.is_error != Some(true) {
        return result.structured_content.unwrap_or(Value::Null);
    }
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| Some(block.as_text()?.text.clone()))
        .collect();
    json!({"error": text.join("\n")})
}

fn is_refused(result: &Value, why: &str) -> bool {
    result["error"].as_str().is_some_and(|e| e.contains(why))
}
