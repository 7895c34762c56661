//! The landing queue's throughput on a crate whose tests take about 10 s: results landed per
//! hour one at a time (`land_batch = 1`) against tested together (`land_batch = 4`), in the
//! same run, with every result green, and with one result among them that is red only on
//! the merged tree (a caller of a function another result renames; it is split out and left
//! to a person). Each scenario: the results are made by the real Claude Code against the
//! tests' Anthropic fake and wait, held untested, behind the person's dirty checkout; the
//! clock runs from the moment the checkout is clean until every result is settled (landed or
//! left to a person). A real `drydock serve`; `DRYDOCK_BENCH_ITERS` results a scenario (6).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

#[path = "../tests/it/agent_kit/mod.rs"]
mod agent_kit;
#[path = "support/agent_serve.rs"]
mod agent_serve;
#[path = "../tests/it/proc_env.rs"]
mod proc_env;
mod support;

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use support::*;

use agent_kit::fake_anthropic::FakeAnthropic;
use agent_kit::home::{AgentHome, Cli};
use agent_kit::lab_crate::{git, lab_crate};
use agent_serve::serve;

/// How long the crate's own tests take.
const TEST_SECONDS: u64 = 10;
const BATCH: usize = 4;

const LIB: &str = "pub fn one() -> u32 {\n    1\n}\n";

struct Settled {
    landed: usize,
    to_person: usize,
    took: Duration,
}

impl Settled {
    fn per_hour(&self) -> f64 {
        self.landed as f64 * 3600.0 / self.took.as_secs_f64()
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let results = iterations(6).max(2);
    let cli = Cli::claude();
    let green: Vec<(String, String)> = (0..results)
        .map(|n| (format!("adds test {n}"), new_test(&format!("t{n}"), "true")))
        .collect();
    // The last but one renames `one()`, the last calls it: each green alone, red together.
    let mut one_red = green.clone();
    one_red[results - 2] = (
        "renames one".into(),
        "sed -i 's/one()/uno()/g' src/lib.rs".into(),
    );
    one_red[results - 1] = ("calls one".into(), new_test("calls_one", "lab::one() == 1"));

    let mut rows = Vec::new();
    for (label, tasks) in [("all green", &green), ("one red", &one_red)] {
        let alone = scenario(&cli, &format!("{label} alone"), 1, tasks).await;
        let together = scenario(&cli, &format!("{label} together"), BATCH, tasks).await;
        rows.push((label, alone, together));
    }
    println!(
        "landing {results} results, tests of {TEST_SECONDS} s (Claude Code 2.1.330 against the fake):"
    );
    for (label, alone, together) in rows {
        println!(
            "  {label:<9}: one at a time {:>6.1} s ({} landed, {} to a person, {:>5.0}/hour) | \
             {BATCH} together {:>6.1} s ({} landed, {} to a person, {:>5.0}/hour) | {:.2}x",
            alone.took.as_secs_f64(),
            alone.landed,
            alone.to_person,
            alone.per_hour(),
            together.took.as_secs_f64(),
            together.landed,
            together.to_person,
            together.per_hour(),
            together.per_hour() / alone.per_hour(),
        );
    }
}

/// `tasks` run to done on a fresh lab crate, held behind a dirty checkout, then landed with
/// `land_batch = batch`: how long that took from the clean checkout on.
async fn scenario(cli: &Cli, label: &str, batch: usize, tasks: &[(String, String)]) -> Settled {
    let name = format!("bench-landing-{}", label.replace(' ', "-"));
    let mut home = AgentHome::new(&name);
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let slow = format!(
        "#[test]\nfn slow() {{\n    std::thread::sleep(std::time::Duration::from_secs({TEST_SECONDS}));\n}}\n"
    );
    lab_crate(
        &home.project,
        LIB,
        &[("tests/slow.rs", &slow), ("NOTES.md", "")],
    );
    std::fs::write(home.project.join("NOTES.md"), "a draft\n").unwrap();

    let tmux_dir = tempfile::tempdir().unwrap();
    // Short: the sandboxes' sockets live below it (a socket's path has at most 108 bytes).
    let data_dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_batch = {batch}\nland_attempts = 1\n\
         [tasks.policies]\ntrusted = [\"Bash\"]\n"
    );
    let (mut server, url) = serve(&home, cli, tmux_dir.path(), data_dir.path(), &config);
    let client = connect(&url).await;
    let project = home.project.display().to_string();
    let encode = |c: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c);
    let specs: Vec<Value> = tasks
        .iter()
        .map(|(title, run)| {
            json!({"title": title, "project_path": project, "auto_approve": "trusted",
                   "description": format!("Change the crate lab:run={} lab:complete=done", encode(run))})
        })
        .collect();
    let ids = run_tasks(&client, Value::Array(specs), 2).await;
    for id in &ids {
        until_landing(&client, id, &["held"]).await;
    }

    git(&home.project, &["checkout", "--", "NOTES.md"]);
    let started = Instant::now();
    let mut settled = Settled {
        landed: 0,
        to_person: 0,
        took: Duration::ZERO,
    };
    for id in &ids {
        match until_landing(&client, id, &["landed", "waits_for_person"]).await {
            "landed" => settled.landed += 1,
            _ => settled.to_person += 1,
        }
    }
    settled.took = started.elapsed();
    eprintln!(
        "{label}: {} landed, {} to a person, in {:.1} s",
        settled.landed,
        settled.to_person,
        settled.took.as_secs_f64()
    );

    call(&client, "queue_configure", json!({"mode": "manual"})).await;
    drop(client);
    server.kill().ok();
    server.wait().ok();
    settled
}

/// A command that adds an integration test `name` asserting `check`.
fn new_test(name: &str, check: &str) -> String {
    format!(
        "mkdir -p tests && printf '#[test]\\nfn {name}() {{\\n    assert!({check});\\n}}\\n' > tests/{name}.rs"
    )
}

/// Waits until task `id`'s landing is in one of `states`; which one.
async fn until_landing(client: &Client, id: &str, states: &[&'static str]) -> &'static str {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let task = call(client, "task_show", json!({"task_id": id})).await["task"].clone();
        let state = task["landing"]["state"]["state"].as_str().unwrap_or("");
        if let Some(reached) = states.iter().find(|s| **s == state) {
            return reached;
        }
        assert!(
            !matches!(
                task["state"].as_str(),
                Some("failed" | "cancelled" | "lost")
            ),
            "{task:#}"
        );
        assert!(
            Instant::now() < deadline,
            "task {id} never reached {states:?}: {task:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
