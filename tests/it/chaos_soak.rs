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
use crate::postgres::{Postgres, free_port};
use crate::support::*;
use crate::task_worktrees::repository;
use crate::team_hosts::{config, count, tasks_now, tmux_sessions, until};

const HOSTS: [(&str, u32); 3] = [("a", 2), ("b", 2), ("c", 3)];

/// The time a task may take, on average, before the soak says the queue stalled.
const PER_TASK: Duration = Duration::from_secs(30);

/// What the soak does to the team.
struct Plan {
    name: &'static str,
    tasks: usize,
    pauses: usize,
    pause: Duration,
    database_restarts: usize,
    kills: usize,
    clients: usize,
    /// The agents' `[tasks] nice`. The full plan, run alone, measures drydock holding its
    /// agents at the default 10. The short one runs with the whole test suite, in its one
    /// busy session, where other tests' agents run at 0 (`mcp_spawn`): at 10 its own would
    /// get a tenth of their share and miss its rounds' deadlines.
    nice: u8,
}

impl Plan {
    /// The plan `CHAOS_SOAK` names, its agents at `CHAOS_SOAK_NICE` and its task count
    /// `CHAOS_SOAK_TASKS` when those are set.
    fn chosen() -> Plan {
        let plan = Plan::named();
        Plan {
            nice: setting("CHAOS_SOAK_NICE").unwrap_or(plan.nice),
            tasks: setting("CHAOS_SOAK_TASKS").unwrap_or(plan.tasks),
            ..plan
        }
    }

    fn named() -> Plan {
        match std::env::var("CHAOS_SOAK").as_deref() {
            Ok("full") => Plan {
                name: "full",
                tasks: 200,
                pauses: 3,
                pause: Duration::from_secs(20),
                database_restarts: 1,
                kills: 2,
                clients: 50,
                nice: 10,
            },
            _ => Plan {
                name: "short",
                tasks: 12,
                pauses: 1,
                pause: Duration::from_secs(20),
                database_restarts: 1,
                kills: 1,
                clients: 10,
                nice: 0,
            },
        }
    }
}

/// The environment variable `name`, read as a `T`, if set.
fn setting<T: std::str::FromStr<Err: std::fmt::Display>>(name: &str) -> Option<T> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|e| panic!("{name}={value}: {e}")),
    )
}

/// How long a round of the chaos waits for its `tasks` to be done: as long as the whole run
/// gives each task, and never less than 5 minutes. Agents held at a low priority while 50
/// clients keep the hosts busy take longer, as they are meant to: the deadlines catch a
/// stall, not slow agents.
fn round_deadline(tasks: usize) -> Duration {
    PER_TASK
        .saturating_mul(tasks as u32)
        .max(Duration::from_secs(300))
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

/// How long a server's threads ran on a CPU and waited in its run queue, in seconds (each
/// thread's `/proc/PID/task/TID/schedstat`): a server that waited much longer than it ran
/// was starved, one that ran long was busy.
fn cpu_run_and_wait(pid: u32) -> (f64, f64) {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0.0, 0.0);
    };
    threads
        .flatten()
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .map(|stat| {
            let mut fields = stat
                .split_whitespace()
                .map(|f| f.parse::<f64>().unwrap_or(0.0));
            let ran = fields.next().unwrap_or(0.0);
            (ran / 1e9, fields.next().unwrap_or(0.0) / 1e9)
        })
        .fold((0.0, 0.0), |(r, w), (ran, waited)| (r + ran, w + waited))
}

/// One cheap call: the tool, the host it asked (0: a, 1: b), when it was made (since the
/// soak began) and how long it took.
struct CheapCall {
    tool: &'static str,
    host: usize,
    at: Duration,
    took: Duration,
}

/// Clients that call cheap tools (no queue: `terminal_list`, `agent_list`) on hosts a and b
/// until `running` is cleared; every call. They run on a runtime of their own: the soak's
/// own steps block their thread (psql, starting a server, a database restart), and a call
/// waiting for that would be timed as if drydock were slow.
fn cheap_callers(
    urls: [String; 2],
    clients: usize,
    began: Instant,
    running: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<CheapCall>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let callers: Vec<_> = (0..clients)
                .map(|n| {
                    let (url, running) = (urls[n % 2].clone(), running.clone());
                    tokio::spawn(async move {
                        let client = modern_client(&url).await;
                        let mut calls = Vec::new();
                        while running.load(Ordering::Relaxed) {
                            let (tool, arguments) = match calls.len() % 2 {
                                0 => ("terminal_list", json!({})),
                                _ => ("agent_list", json!({})),
                            };
                            let asked = Instant::now();
                            call_ok(&client, tool, arguments).await;
                            calls.push(CheapCall {
                                tool,
                                host: n % 2,
                                at: asked - began,
                                took: asked.elapsed(),
                            });
                            tokio::time::sleep(Duration::from_millis(300)).await;
                        }
                        calls
                    })
                })
                .collect();
            let mut calls = Vec::new();
            for caller in callers {
                calls.extend(caller.await.unwrap());
            }
            calls
        })
    })
}

/// The `share` percentile of `sorted`, in ms.
fn percentile_ms(sorted: &[Duration], share: usize) -> f64 {
    sorted[(sorted.len() * share / 100).min(sorted.len() - 1)].as_secs_f64() * 1e3
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
        spawning_server(
            &home,
            &cli,
            tmux_dir.path(),
            &format!("{}nice = {}\n", config(&url, name, cap), plan.nice),
        )
    };
    // Host c is killed and comes back as a restarted drydock does: at the address its agents
    // reach it at, with its data directory (its tasks' tokens, its hooks' endpoint).
    let c_data = tempfile::tempdir().unwrap();
    let c_address = format!("127.0.0.1:{}", free_port());
    let start_c = || {
        let (name, cap) = HOSTS[2];
        spawning_server_with(
            &home,
            &cli,
            tmux_dir.path(),
            &format!("{}nice = {}\n", config(&url, name, cap), plan.nice),
            &[
                "--bind",
                &c_address,
                "--data-dir",
                c_data.path().to_str().unwrap(),
            ],
        )
    };
    let mut servers: Vec<Server> = vec![start(0), start(1), start_c()];
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

    let began = Instant::now();
    let running = Arc::new(AtomicBool::new(true));
    let callers = cheap_callers(
        [servers[0].url.clone(), servers[1].url.clone()],
        plan.clients,
        began,
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
    // What was done when (since the soak began), to read the slowest calls against.
    let mut chaos: Vec<(Duration, &str)> = Vec::new();
    let (mut paused, mut killed, mut restarted) = (0, 0, 0);

    // The chaos, spread over the run: each round waits for more tasks done, then does what
    // is left of the plan.
    let rounds = plan.pauses.max(plan.kills).max(plan.database_restarts);
    let done_before = |round: usize| round * plan.tasks / (rounds + 2);
    for round in 0..rounds {
        let done_by = done_before(round + 1);
        until(
            "tasks done before the next round of chaos",
            round_deadline(done_by - done_before(round)),
            &postgres,
            |now| count(now, "done") >= done_by.max(1),
        )
        .await;
        if round < plan.pauses {
            chaos.push((began.elapsed(), "database paused"));
            postgres.pause();
            tokio::time::sleep(plan.pause).await;
            postgres.resume();
            chaos.push((began.elapsed(), "database resumed"));
            paused += 1;
        }
        if round < plan.kills {
            chaos.push((began.elapsed(), "host c killed"));
            servers[2].kill_now();
            tokio::time::sleep(Duration::from_secs(3)).await;
            servers[2] = start_c();
            chaos.push((began.elapsed(), "host c started again"));
            killed += 1;
        }
        if round < plan.database_restarts {
            chaos.push((began.elapsed(), "database restarting"));
            postgres.restart_with(Duration::from_secs(2), || ());
            chaos.push((began.elapsed(), "database restarted"));
            restarted += 1;
        }
    }
    until(
        "every task done",
        Duration::from_secs(60) + PER_TASK.saturating_mul(plan.tasks as u32),
        &postgres,
        |now| {
            assert_eq!(
                count(now, "failed"),
                0,
                "no task fails: {}",
                postgres.psql_in(
                    "team",
                    "SELECT id, host, epoch, attempts, failure FROM drydock.tasks \
                     WHERE state = 'failed'"
                )
            );
            count(now, "done") == plan.tasks
        },
    )
    .await;
    running.store(false, Ordering::Relaxed);
    let cpu: Vec<(f64, f64)> = servers[..2]
        .iter()
        .map(|s| cpu_run_and_wait(s.pid()))
        .collect();
    let mut calls = callers.join().unwrap();
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
    let took_all = began.elapsed();
    let mut took: Vec<Duration> = calls.iter().map(|call| call.took).collect();
    took.sort();
    let (p50, p99, slowest) = (
        percentile_ms(&took, 50),
        percentile_ms(&took, 99),
        percentile_ms(&took, 100),
    );
    let memory = memory.lock().unwrap().clone();
    let quarter = memory.len() / 4;
    let early = memory[..quarter.max(1)].iter().max().copied().unwrap_or(0);
    let late = memory[memory.len() - quarter.max(1)..]
        .iter()
        .max()
        .copied()
        .unwrap_or(0);
    println!(
        "chaos soak, {} plan: {} tasks done once each in {:.0} s; PostgreSQL paused {paused} \
         time(s) for {} s and restarted {restarted} time(s), host c killed and restarted \
         {killed} time(s); {} clients made {} cheap calls: p50 {p50:.1} ms, p99 {p99:.1} ms, \
         max {slowest:.1} ms; host a's RSS {} MiB early, {} MiB late (highest of the first \
         and last quarter of {} samples)",
        plan.name,
        plan.tasks,
        took_all.as_secs_f64(),
        plan.pause.as_secs(),
        plan.clients,
        took.len(),
        early / 1024,
        late / 1024,
        memory.len(),
    );
    for tool in ["terminal_list", "agent_list"] {
        for (host, name) in ["a", "b"].into_iter().enumerate() {
            let mut these: Vec<Duration> = calls
                .iter()
                .filter(|call| call.tool == tool && call.host == host)
                .map(|call| call.took)
                .collect();
            these.sort();
            if !these.is_empty() {
                println!(
                    "  {tool} on {name}: {} calls, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                    these.len(),
                    percentile_ms(&these, 50),
                    percentile_ms(&these, 99),
                    percentile_ms(&these, 100),
                );
            }
        }
    }
    for (name, (ran, waited)) in ["a", "b"].iter().zip(&cpu) {
        println!(
            "  host {name}'s threads ran {ran:.1} s on a CPU and waited {waited:.1} s for one"
        );
    }
    let shown: Vec<String> = chaos
        .iter()
        .map(|(at, what)| format!("{what} at {:.1} s", at.as_secs_f64()))
        .collect();
    println!("  the chaos: {}", shown.join(", "));
    let mut over: Vec<u64> = calls
        .iter()
        .filter(|call| call.took >= Duration::from_secs(1))
        .map(|call| call.at.as_secs())
        .collect();
    over.sort();
    over.dedup();
    println!("  calls of 1 s or more made in the seconds: {over:?}");
    calls.sort_by_key(|call| std::cmp::Reverse(call.took));
    for call in calls.iter().take(5) {
        println!(
            "  slow: {} on {} at {:.1} s took {:.0} ms",
            call.tool,
            ["a", "b"][call.host],
            call.at.as_secs_f64(),
            call.took.as_secs_f64() * 1e3,
        );
    }
    // The full plan holds the bound. The short one is over within a minute, a fifth
    // of it the first agents starting at once (six Claude Codes booting take both cores of
    // the machine it was written on, and the cheap calls of that start wait for the CPU: up
    // to 2.8 s there, none of them during the chaos): it catches a stall instead, a call that
    // waited for the paused database (its calls' deadline is 5 s) or for tmux.
    let bound = match plan.name {
        "full" => 1000.0,
        _ => 5000.0,
    };
    assert!(
        p99 < bound && slowest < plan.pause.as_secs_f64() * 1e3,
        "cheap calls p99 {p99:.1} ms (bound {bound} ms) over {} calls (slowest {slowest:.1} \
         ms)",
        took.len(),
    );
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
