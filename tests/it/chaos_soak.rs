//! The chaos soak: three hosts of one queue on a real PostgreSQL and one tmux server, running
//! the real Claude Code against the scripted fake model API, while the database is paused
//! (SIGSTOP) and restarted, a host is SIGKILLed and started again, and MCP clients call cheap
//! tools all along. Every task is done exactly once, the cheap calls stay fast, the hosts'
//! memory stays bounded, and nothing is left running.
//!
//! CI runs a short plan; `scripts/chaos-soak.sh` runs the long one (`CHAOS_SOAK=full`: 200
//! tasks, three 20 s pauses, two kills, 50 clients).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_spawn::{claude_processes, spawning_server, spawning_server_with};
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::postgres::Postgres;
use crate::support::*;
use crate::task_worktrees::repository;
use crate::team_hosts::{config, count, tasks_now, tmux_sessions, until};

const HOSTS: [(&str, u32); 3] = [("a", 2), ("b", 2), ("c", 3)];

/// What the soak does to the team.
struct Plan {
    tasks: usize,
    pauses: usize,
    pause: Duration,
    database_restarts: usize,
    kills: usize,
    clients: usize,
}

impl Plan {
    fn chosen() -> Plan {
        match std::env::var("CHAOS_SOAK").as_deref() {
            Ok("full") => Plan {
                tasks: 200,
                pauses: 3,
                pause: Duration::from_secs(20),
                database_restarts: 1,
                kills: 2,
                clients: 50,
            },
            _ => Plan {
                tasks: 12,
                pauses: 1,
                pause: Duration::from_secs(20),
                database_restarts: 1,
                kills: 1,
                clients: 10,
            },
        }
    }
}

/// A server's resident memory, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Clients that call cheap tools (no queue: `terminal_list`, `agent_list`) on hosts a and b
/// until `running` is cleared; every call's latency.
fn cheap_callers(
    urls: [String; 2],
    clients: usize,
    running: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Duration>>> {
    (0..clients)
        .map(|n| {
            let (url, running) = (urls[n % 2].clone(), running.clone());
            tokio::spawn(async move {
                let client = modern_client(&url).await;
                let mut took = Vec::new();
                while running.load(Ordering::Relaxed) {
                    let (tool, arguments) = match took.len() % 2 {
                        0 => ("terminal_list", json!({})),
                        _ => ("agent_list", json!({})),
                    };
                    let asked = Instant::now();
                    call_ok(&client, tool, arguments).await;
                    took.push(asked.elapsed());
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                took
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_hosts_do_every_task_once_through_pauses_restarts_and_kills() {
    let plan = Plan::chosen();
    let mut postgres = Postgres::start();
    let url = postgres.database("team");
    let (cli, home, _fake, tmux_dir) = claude_home("claude-soak");
    repository(&home.project);
    let start = |index: usize| {
        let (name, cap) = HOSTS[index];
        spawning_server(&home, &cli, tmux_dir.path(), &config(&url, name, cap))
    };
    let mut servers: Vec<Server> = (0..HOSTS.len()).map(start).collect();
    // A host comes back where its agents reach it: at the address it had.
    let c_address = servers[2]
        .base_url()
        .trim_start_matches("http://")
        .to_string();
    let restart_c = || {
        let (name, cap) = HOSTS[2];
        spawning_server_with(
            &home,
            &cli,
            tmux_dir.path(),
            &config(&url, name, cap),
            &["--bind", &c_address],
        )
    };
    let client = modern_client(&servers[0].url).await;
    let project = path_arg(&home.project);
    call_ok(&client, "queue_configure", json!({"max_concurrent": 6})).await;
    let tasks: Vec<Value> = (0..plan.tasks)
        .map(|n| {
            json!({
                "title": format!("soak task {n}"),
                "description": "Think, then finish lab:think=2 lab:complete=done",
                "project_path": project,
            })
        })
        .collect();
    let added = call_ok(&client, "task_add", json!({ "tasks": tasks })).await;
    assert_eq!(added["added"].as_array().unwrap().len(), plan.tasks);

    let running = Arc::new(AtomicBool::new(true));
    let callers = cheap_callers(
        [servers[0].url.clone(), servers[1].url.clone()],
        plan.clients,
        running.clone(),
    );
    let memory: Arc<Mutex<Vec<u64>>> = Arc::default();
    let sampler = {
        let (memory, running, pid) = (memory.clone(), running.clone(), servers[0].pid());
        tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    memory.lock().unwrap().push(kib);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;

    // The chaos, spread over the run: each round waits for more tasks done, then does what
    // is left of the plan.
    let rounds = plan.pauses.max(plan.kills).max(plan.database_restarts);
    for round in 0..rounds {
        let done_by = (round + 1) * plan.tasks / (rounds + 2);
        until(
            "tasks done before the next round of chaos",
            Duration::from_secs(300),
            &postgres,
            |now| count(now, "done") >= done_by.max(1),
        )
        .await;
        if round < plan.pauses {
            postgres.pause();
            tokio::time::sleep(plan.pause).await;
            postgres.resume();
        }
        if round < plan.kills {
            servers[2].kill_now();
            tokio::time::sleep(Duration::from_secs(3)).await;
            servers[2] = restart_c();
        }
        if round < plan.database_restarts {
            postgres.restart_with(Duration::from_secs(2), || ());
        }
    }
    until(
        "every task done",
        Duration::from_secs(60 + 30 * plan.tasks as u64),
        &postgres,
        |now| {
            assert_eq!(count(now, "failed"), 0, "no task fails: {now:?}");
            count(now, "done") == plan.tasks
        },
    )
    .await;
    running.store(false, Ordering::Relaxed);
    let mut took = Vec::new();
    for caller in callers {
        took.extend(caller.await.unwrap());
    }
    sampler.await.unwrap();

    // Every task done exactly once: by the agent of its last claim, each earlier claim lost
    // first.
    for id in tasks_now(&postgres, "team").keys() {
        let shown = call_ok(&client, "task_show", json!({"task_id": id})).await;
        let task = &shown["task"];
        assert_eq!(task["state"], "done", "{task:#}");
        assert_eq!(task["summary"], "LAB-SUMMARY done", "{task:#}");
        assert_eq!(task["attempts"], task["epoch"], "{task:#}");
    }
    took.sort();
    let p99 = took[took.len() * 99 / 100];
    assert!(
        p99 < Duration::from_secs(1),
        "cheap calls p99 {p99:?} over {} calls (slowest {:?})",
        took.len(),
        took.last()
    );
    let memory = memory.lock().unwrap().clone();
    let quarter = memory.len() / 4;
    let early = memory[..quarter.max(1)].iter().max().copied().unwrap_or(0);
    let late = memory[memory.len() - quarter.max(1)..]
        .iter()
        .max()
        .copied()
        .unwrap_or(0);
    assert!(
        late <= early * 3 / 2 + 64 * 1024,
        "host a's RSS grew from {early} KiB to {late} KiB"
    );

    let gone = eventually(Duration::from_secs(90), || {
        claude_processes(&home).is_empty()
            && tmux_sessions(tmux_dir.path())
                .iter()
                .all(|s| !s.starts_with("drydock-task-"))
    })
    .await;
    assert!(
        gone,
        "left running: {:?}; sessions: {:?}",
        claude_processes(&home),
        tmux_sessions(tmux_dir.path())
    );
    drop(client);
    drop(servers);
    no_agent_left(&home, tmux_dir.path(), "after the soak").await;
}
