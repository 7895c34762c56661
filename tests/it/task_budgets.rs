//! A task's budget on the real Claude Code against the scripted fake model API: an agent that
//! keeps working is stopped within a turn of its budget, its commits kept, and the task fails
//! with the reason; a retry with a larger budget goes on from its worktree and finishes.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::landing::task;
use crate::mcp_spawn::spawning_server;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::{lab_crate, repository};

/// What the fake model returns for each turn: 100 input and 20 output tokens.
const PER_TURN: u64 = 120;

async fn until_task(client: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    until_read(
        Duration::from_secs(300),
        || async { call_ok(client, "task_show", json!({"task_id": id})).await["task"].clone() },
        done,
    )
    .await
    .unwrap_or_else(|task| panic!("task {id} never got there: {task:#}"))
}

fn spent_tokens(task: &Value) -> u64 {
    task["usage"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["tokens"].as_object().cloned().unwrap_or_default())
        .map(|(_, t)| {
            ["input", "output", "cache_read", "cache_write"]
                .iter()
                .map(|k| t[k].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum()
}

fn steps_in(worktree: &Path) -> usize {
    std::fs::read_to_string(worktree.join("steps.txt"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_stops_at_its_budget_keeps_its_work_and_goes_on_with_a_larger_one() {
    let (cli, home, fake, tmux_dir) = claude_home("claude-budget");
    repository(&home.project);
    let config = "[tasks]\ngrace_s = 1\nbudget_max = { tokens = 100000 }\n\
                  [tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;

    // Bad budgets change nothing.
    for (budget, needle) in [
        (json!({}), "name tokens, usd, or both"),
        (json!({"tokens": -5}), "budget.tokens is -5"),
        (json!({"usd": 0.0}), "budget.usd is 0"),
        (
            json!({"tokens": 5_000_000}),
            "more than a task may ask for here",
        ),
    ] {
        let refused = call_err(
            &client,
            "task_add",
            json!({"tasks": [{"title": "x", "project_path": project, "budget": budget}]}),
        )
        .await;
        assert!(refused.contains(needle), "{budget}: {refused}");
    }
    let listed = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "{listed:#}");

    // An agent that commits a step every four seconds, ten times, under a budget of about
    // four turns.
    let step = "timeout 4 tail -f /dev/null; date +%s%N >> steps.txt && git add steps.txt && git commit -qm step";
    let description = format!(
        "Keep at it lab:run={} lab:repeat=10 lab:complete=done",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(step)
    );
    let budget = 4 * PER_TURN + 20;
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [{"title": "keeps at it", "project_path": project, "description": description,
                          "auto_approve": "trusted", "budget": {"tokens": budget}}]}),
    )
    .await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    assert!(
        added["added"][0]["usage"]
            .as_str()
            .unwrap()
            .contains(&format!("budget {budget} tokens")),
        "{added:#}"
    );

    let stopped = until_task(&client, &id, |t| {
        t["state"] != "queued" && t["state"] != "running"
    })
    .await;
    assert_eq!(stopped["state"], "failed", "{stopped:#}");
    let failure = stopped["failure"].as_str().unwrap();
    assert!(failure.starts_with("budget: it spent "), "{failure}");
    assert!(
        failure.contains("task_retry with a larger budget"),
        "{failure}"
    );
    let stopped = until_task(&client, &id, |t| spent_tokens(t) >= budget).await;
    let spent = spent_tokens(&stopped);
    assert!(
        spent < budget + 2 * PER_TURN,
        "stopped within a turn of its budget: {spent} of {budget}\n{stopped:#}"
    );
    // What the fake returned is what the agent wrote down, but for a turn it was interrupted
    // in (its tokens are in no record of the agent's; docs/tasks.md says so).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let streamed = || {
        fake.turns()
            .iter()
            .filter(|t| t.body["stream"] == true)
            .count() as u64
    };
    let unrecorded = streamed() - spent / PER_TURN;
    assert!(
        spent.is_multiple_of(PER_TURN) && unrecorded <= 1,
        "spent {spent}, the fake returned {} turns",
        streamed()
    );
    let worktree = Path::new(stopped["isolation"]["path"].as_str().unwrap()).to_path_buf();
    let kept = steps_in(&worktree);
    assert!((1..10).contains(&kept), "its steps are kept: {kept}");

    // No retry without a larger budget; a larger one goes on from the same worktree.
    let refused = call_err(&client, "task_retry", json!({"task_id": id})).await;
    assert!(refused.contains("may spend no more"), "{refused}");
    let refused = call_err(
        &client,
        "task_retry",
        json!({"task_id": id, "budget": {"tokens": 1_000_000}}),
    )
    .await;
    assert!(
        refused.contains("more than a task may ask for"),
        "{refused}"
    );
    call_ok(
        &client,
        "task_retry",
        json!({"task_id": id, "budget": {"tokens": 100_000}}),
    )
    .await;
    let finished = until_task(&client, &id, |t| t["state"] == "done").await;
    assert_eq!(finished["attempts"], 2, "{finished:#}");
    assert_eq!(finished["isolation"]["path"], stopped["isolation"]["path"]);
    assert_eq!(steps_in(&worktree), kept + 10, "{finished:#}");
    // Counted once more when its session closed: every turn the fake returned since.
    let finished = until_task(&client, &id, |t| {
        t["usage"]["attempts"]
            .as_array()
            .is_some_and(|a| a.len() == 2)
            && spent_tokens(t) == (streamed() - unrecorded) * PER_TURN
    })
    .await;
    assert!(
        finished["usage"]["attempts"][1]["cost_usd"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    no_agent_left(&home, tmux_dir.path(), "after the budget test").await;
}

/// A result sent back by the landing queue is one more attempt of the same task, on the same
/// budget: the first attempt's red result goes back, and the attempt that fixes it is
/// stopped at the budget the two spend together; a retry with a larger budget lands it.
#[tokio::test(flavor = "multi_thread")]
async fn a_landings_send_back_spends_the_same_budget() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-budget-landing");
    lab_crate(&home.project, "pub fn one() -> u32 {\n    1\n}\n", &[]);
    let config = "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_batch = 1\n\
                  budget_max = { tokens = 100000 }\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);

    // Eight steps an attempt: a failing test written, then (sent back) fixed, a step every
    // two seconds; the budget holds one attempt and a half.
    let add = "mkdir -p tests && printf '#[test]\\nfn two() {\\n    assert_eq!(1 + 1, 3);\\n}\\n' > tests/two.rs";
    let fix = "timeout 2 tail -f /dev/null; sed -i 's/1 + 1, 3/1 + 1, 2/' tests/two.rs";
    let mut spec = task("adds a test", &project, add, Some(fix));
    let description = spec["description"]
        .as_str()
        .unwrap()
        .replace(" lab:complete=done", " lab:repeat=8 lab:complete=done");
    spec["description"] = json!(description);
    spec["budget"] = json!({"tokens": 15 * PER_TURN});
    let added = call_ok(&client, "task_add", json!({"tasks": [spec]})).await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;

    let stopped = until_task(&client, &id, |t| {
        t["state"] == "failed" || t["landing"]["state"]["state"] == "landed"
    })
    .await;
    assert_eq!(stopped["state"], "failed", "{stopped:#}");
    assert_eq!(stopped["attempts"], 2, "{stopped:#}");
    let failure = stopped["failure"].as_str().unwrap();
    assert!(failure.starts_with("budget: it spent "), "{failure}");
    let sent_back = stopped["landing"]["sent_back"].as_array().unwrap();
    assert_eq!(sent_back.len(), 1, "{stopped:#}");
    let first = &stopped["usage"]["attempts"][0];
    assert_eq!(first["attempt"], 1, "{stopped:#}");
    assert!(
        spent_tokens(&stopped) >= 15 * PER_TURN,
        "both attempts count: {stopped:#}"
    );

    call_ok(
        &client,
        "task_retry",
        json!({"task_id": id, "budget": {"tokens": 100_000}}),
    )
    .await;
    let landed = until_task(&client, &id, |t| t["landing"]["state"]["state"] == "landed").await;
    assert!(landed["attempts"].as_u64().unwrap() >= 3, "{landed:#}");
    no_agent_left(&home, tmux_dir.path(), "after the landing's budget test").await;
}
