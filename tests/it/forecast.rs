//! Conflicts seen coming while tasks run, on the real Claude Code against the scripted fake:
//! two running tasks change the same line of `src/lib.rs` (uncommitted, in their worktrees)
//! and a third writes a file of its own. The two are each told of a likely conflict with the
//! other in `task_list` and `task_show`, the third of none; once the person changes that line
//! on `main`, the branch is in the forecast too. A queued task that says it touches
//! `src/lib.rs` is held (`[tasks] hold_colliding`) while they run, with a free slot, and
//! starts once they end; then the ended tasks' forecasts are gone.

use std::time::Duration;

use serde_json::{Value, json};

use crate::chromium::Chromium;
use crate::landing::task;
use crate::mcp_spawn::spawning_server;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::{git, lab_crate};

const LIB: &str = "pub fn one() -> u32 {\n    1\n}\n";

/// task_show's report of task `id` once `done(report)` holds (`what` says what is awaited).
async fn until_shown(
    client: &Client,
    id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    until_read(
        Duration::from_secs(300),
        || call_ok(client, "task_show", json!({"task_id": id})),
        done,
    )
    .await
    .unwrap_or_else(|shown| panic!("{what}: {shown:#}"))
}

/// The `collisions` of task `id` in `task_list`.
async fn listed_collisions(client: &Client, id: &str) -> Vec<String> {
    let listed = call_ok(client, "task_list", json!({})).await;
    let line = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or(Value::Null);
    line["collisions"]
        .as_array()
        .map(|c| c.iter().map(|c| c.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn running_tasks_that_change_the_same_lines_are_told_before_they_end() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-forecast");
    lab_crate(&home.project, LIB, &[]);
    let config =
        "[tasks]\ngrace_s = 1\nhold_colliding = true\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    // Each changes its worktree, then works on for a while (the agent's Bash call sleeps).
    let working = |change: &str| format!("{change} && sleep 40");
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [
            task("X makes one ten", &project, &working("sed -i 's/    1/    10/' src/lib.rs"), None),
            task("Y makes one eleven", &project, &working("sed -i 's/    1/    11/' src/lib.rs"), None),
            task("Z writes its own file", &project, &working("echo z > z.txt"), None),
        ]}),
    )
    .await;
    let ids: Vec<String> = (0..3)
        .map(|n| added["added"][n]["id"].as_str().unwrap().to_string())
        .collect();
    let (x, y, z) = (&ids[0], &ids[1], &ids[2]);
    call_ok(
        &client,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 4}),
    )
    .await;

    let likely = |other: &str| format!("likely conflict with task {other} in src/lib.rs");
    for (id, other) in [(x, y), (y, x)] {
        let shown = until_shown(&client, id, "its forecast", |t| {
            t["task"]["state"] == "running" && t.get("forecast").is_some()
        })
        .await;
        assert_eq!(shown["forecast"][0]["with"], **other, "{shown:#}");
        assert_eq!(shown["forecast"][0]["same_lines"], json!(["src/lib.rs"]));
        assert_eq!(listed_collisions(&client, id).await, [likely(other)]);
    }
    // The dashboard says it on their lines.
    let chromium = Chromium::start();
    chromium.open(&format!("{}/", server.base_url())).await;
    let forecast_of = |id: &str| {
        format!(
            "const e = document.querySelector('#tasks li[data-task=\"{id}\"] [data-testid=task-forecast]'); \
             return e && e.textContent"
        )
    };
    let shown = chromium
        .until_text(&forecast_of(x), "X's forecast on the dashboard")
        .await;
    assert_eq!(shown, format!("forecast: {}", likely(y)));
    let z_shown = call_ok(&client, "task_show", json!({"task_id": z})).await;
    assert_eq!(z_shown["task"]["state"], "running", "{z_shown:#}");
    assert_eq!(z_shown.get("forecast"), None, "{z_shown:#}");

    // The person changes the same line on main: the branch joins the forecast.
    std::fs::write(
        home.project.join("src/lib.rs"),
        "pub fn one() -> u32 {\n    100\n}\n",
    )
    .unwrap();
    git(&home.project, &["commit", "-qam", "one is a hundred"]);
    let shown = until_shown(&client, x, "main in its forecast", |t| {
        t["forecast"].as_array().is_some_and(|f| f.len() == 2)
    })
    .await;
    let with_main = &shown["forecast"][1];
    assert_eq!(with_main["with"], "main", "{shown:#}");
    assert_eq!(with_main["branch"], true);
    let text = call_ok(&client, "task_list", json!({})).await.to_string();
    assert!(
        text.contains("likely conflict with main (changed since it started) in src/lib.rs"),
        "{text}"
    );
    let z_shown = call_ok(&client, "task_show", json!({"task_id": z})).await;
    assert_eq!(z_shown.get("forecast"), None, "{z_shown:#}");

    // A task to touch src/lib.rs waits, with a slot free, while the others change it.
    let mut w = task("W touches lib.rs", &project, &working("true"), None);
    w["touches"] = json!(["src/*.rs"]);
    let bad = call_err(
        &client,
        "task_add",
        json!({"tasks": [{"title": "x", "project_path": project, "touches": ["../elsewhere/**"]}]}),
    )
    .await;
    assert!(
        bad.contains("touches: \"../elsewhere/**\" is not a glob below the project"),
        "{bad}"
    );
    let w = call_ok(&client, "task_add", json!({"tasks": [w]})).await["added"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let held = until_shown(&client, &w, "W held", |t| t.get("forecast").is_some()).await;
    let line = listed_collisions(&client, &w).await;
    assert!(
        line[0].starts_with("held: running task ")
            && line[0].ends_with(
                "changes what it is to touch (src/lib.rs); it starts once that one ends"
            ),
        "{line:?}"
    );
    assert_eq!(held["forecast"][0]["waiting"], "held", "{held:#}");
    let shown = chromium
        .until_text(&forecast_of(&w), "W held on the dashboard")
        .await;
    assert_eq!(shown, format!("forecast: {}", line[0]));
    // Asked to fill its free slot, the queue still holds W back.
    let refilled = call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;
    assert_eq!(refilled["started"], json!([]), "{refilled:#}");
    let still = call_ok(&client, "task_show", json!({"task_id": w})).await;
    assert_eq!(still["task"]["state"], "queued", "{still:#}");

    // Ended, they are forecast no more (their results' overlap is task_show's `overlaps`).
    for id in [x, y, z] {
        call_ok(&client, "task_cancel", json!({"task_id": id})).await;
    }
    for id in [x, y] {
        until_shown(&client, id, "no forecast once ended", |t| {
            t["task"]["state"] != "running" && t.get("forecast").is_none()
        })
        .await;
    }
    until_shown(&client, &w, "W starts once they ended", |t| {
        t["task"]["state"] == "running" && t.get("forecast").is_none()
    })
    .await;
    call_ok(&client, "task_cancel", json!({"task_id": w})).await;
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}
