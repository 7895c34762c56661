//! Tasks: how soon the next queued task's agent is started once the running one signals its
//! end (queue in auto mode, cap 1), against the agent's own start-up in the same run (its
//! session's process start until agent_wait sees it up); what 100 queued tasks add to
//! `task_list`, against `task_list` of an empty queue; and what a worktree costs a task:
//! `task_start` on a git project (worktree, branch, folder trust) against in place, the disk
//! a worktree takes, and a task's first `compile` with its own (cold) target directory
//! against one with the target shared by tasks (warmed by another task). A real `drydock
//! serve` with the real Claude Code 2.1.330 against the tests' Anthropic fake.
//! `DRYDOCK_BENCH_ITERS` handoffs and starts of each kind (default 5).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

#[path = "../tests/it/agent_kit/mod.rs"]
mod agent_kit;
#[path = "support/agent_serve.rs"]
mod agent_serve;
#[path = "../tests/it/proc_env.rs"]
mod proc_env;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use support::*;

use agent_kit::fake_anthropic::FakeAnthropic;
use agent_kit::home::{AgentHome, Cli};
use agent_serve::serve;
use drydock::config::{CargoTarget, TaskDirs};
use drydock::tasks::worktree::Worktrees;

const LIST_CALLS: usize = 50;
const QUEUED: usize = 100;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let handoffs = iterations(5);
    let cli = Cli::claude();
    let mut home = AgentHome::new("bench-tasks");
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let tmux_dir = tempfile::tempdir().unwrap();
    let data_dir = home.scratch().join("data");
    let config = "[tasks]\ngrace_s = 1\n";
    let (mut server, url) = serve(&home, &cli, tmux_dir.path(), &data_dir, config);
    let client = connect(&url).await;
    let project = home.project.display().to_string();

    let empty = list_times(&client).await;
    let queued: Vec<Value> = (0..QUEUED)
        .map(|n| json!({"title": format!("queued {n}"), "project_path": project}))
        .collect();
    call(&client, "task_add", json!({"tasks": queued})).await;
    let full = list_times(&client).await;
    call(&client, "queue_clear", json!({})).await;

    let tasks: Vec<Value> = (0..=handoffs)
        .map(|n| {
            json!({"title": format!("handoff {n}"), "project_path": project,
                   "description": "Work a little lab:think=2 lab:complete=done"})
        })
        .collect();
    let ids = run_tasks(&client, Value::Array(tasks), 1).await;
    let mut started_ms = Vec::new();
    let mut working_ms = Vec::new();
    for id in &ids {
        let waited = wait_working(&client, id).await;
        if waited["matched"] != true {
            let listing = call(&client, "task_list", json!({})).await;
            panic!("task {id} never worked: {waited:#}\n{listing:#}");
        }
        working_ms.push(now_ms());
        started_ms.push(process_start_ms(waited["agent"]["pid"].as_u64().unwrap()));
    }
    let mut records = Vec::new();
    for id in &ids {
        records.push(until_finished(&client, id).await);
    }
    let worktrees = worktree_costs(&client, &home, handoffs).await;
    server.kill().ok();
    server.wait().ok();

    // Tasks queued in one call share their creation time and then start in id order: the
    // handoffs follow the order they ran in.
    let mut runs: Vec<(Value, f64, f64)> = records
        .into_iter()
        .zip(started_ms)
        .zip(working_ms)
        .map(|((record, started), working)| (record, started, working))
        .collect();
    runs.sort_by_key(|run| run.0["started_at_ms"].as_u64());
    let mut handoff = Vec::new();
    let mut decided = Vec::new();
    let mut startup = Vec::new();
    for pair in runs.windows(2) {
        let ((before, _, _), (next, started, working)) = (&pair[0], &pair[1]);
        let finished = before["finished_at_ms"].as_f64().unwrap();
        handoff.push(started - finished);
        decided.push(next["started_at_ms"].as_f64().unwrap() - finished);
        startup.push(working - started);
    }
    report(handoffs, &handoff, &decided, &startup, &empty, &full);
    worktrees.report();
}

/// What working in a worktree costs a task, measured in one run.
struct WorktreeCosts {
    starts: usize,
    in_place: Vec<Duration>,
    worktree: Vec<Duration>,
    worktree_kib: u64,
    git_kib: u64,
    /// Making a task's worktree alone (`Worktrees::create`), per repository.
    creations: [(&'static str, (Vec<Duration>, u64)); 2],
    per_task: Duration,
    per_task_kib: u64,
    shared: Duration,
}

impl WorktreeCosts {
    fn report(&self) {
        let (in_place, worktree) = (
            percentile(&self.in_place, 50.0),
            percentile(&self.worktree, 50.0),
        );
        println!(
            "task_start on the real Claude Code ({} starts of each, median)",
            self.starts
        );
        println!("  in place (a folder that is no git repository) {in_place:.0} ms");
        println!(
            "  in a worktree of its own (test-projects/docs-deps as a git repository) {worktree:.0} ms: +{:.0} ms ({:.2}x in place)",
            worktree - in_place,
            worktree / in_place
        );
        for (repo, (times, disk)) in &self.creations {
            println!(
                "  making the worktree alone, {repo}: {:.1} ms (median of {}), {disk} KiB on disk",
                percentile(times, 50.0),
                times.len()
            );
        }
        println!(
            "  disk per worktree: its checkout {} KiB (the project's tracked files) + git's index for it {} KiB; its own cargo target after one compile {} KiB",
            self.worktree_kib, self.git_kib, self.per_task_kib
        );
        println!(
            "a task's first compile: own cold target {:.2} s; target shared with an earlier task {:.2} s ({:.1}% of cold)",
            self.per_task.as_secs_f64(),
            self.shared.as_secs_f64(),
            100.0 * self.shared.as_secs_f64() / self.per_task.as_secs_f64()
        );
    }
}

async fn worktree_costs(client: &Client, home: &AgentHome, starts: usize) -> WorktreeCosts {
    let plain = home.project.join("in-place");
    std::fs::create_dir_all(&plain).unwrap();
    let repo = home.project.join("repo");
    let docs_deps = test_projects().join("docs-deps");
    let fetched = Command::new("cargo")
        .arg("fetch")
        .current_dir(&docs_deps)
        .output()
        .unwrap();
    assert!(fetched.status.success(), "cargo fetch: {fetched:?}");
    copy_dir(&docs_deps, &repo, &["target"]);
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "docs-deps",
        ],
    ] {
        let done = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(done.status.success(), "git {args:?}: {done:?}");
    }
    call(
        client,
        "queue_configure",
        json!({"mode": "manual", "max_concurrent": 1}),
    )
    .await;
    let (mut in_place, mut worktree, mut dirs) = (Vec::new(), Vec::new(), Vec::new());
    let task_of = |dir: &str| dir.rsplit('/').next().unwrap().to_string();
    for _ in 0..starts {
        for (project, times) in [(&plain, &mut in_place), (&repo, &mut worktree)] {
            // Deferred, not done: no checks run, so the compiles below start cold.
            let task = json!({"title": "start", "project_path": project,
                              "description": "Finish at once lab:complete=deferred"});
            let added = call(client, "task_add", json!({"tasks": [task]})).await;
            let id = added["added"][0]["id"].as_str().unwrap().to_string();
            let start = Instant::now();
            let started = call(client, "task_start", json!({"task_id": id})).await;
            times.push(start.elapsed());
            assert_eq!(started["task"]["state"], "running", "{started:#}");
            let done = until_state(client, &id, "deferred").await;
            if let Some(dir) = done["isolation"]["dir"].as_str() {
                dirs.push(dir.to_string());
            }
        }
    }
    let worktree_kib = kib(Path::new(&dirs[0]));
    let git_kib = kib(&repo.join(".git/worktrees").join(task_of(&dirs[0])));
    let own_repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let creations = [
        ("docs-deps", create_times(&repo, starts).await),
        (
            "drydock's own repository",
            create_times(own_repo, starts).await,
        ),
    ];
    let start = Instant::now();
    let built = call(client, "compile", json!({"project_path": dirs[0]})).await;
    let per_task = start.elapsed();
    assert_eq!(built["status"], "ok", "{built:#}");
    let data = home.scratch().join("data");
    let per_task_kib = kib(&data.join("task-targets").join(task_of(&dirs[0])));
    let shared_config = home.scratch().join("shared.toml");
    std::fs::write(&shared_config, "[tasks]\ncargo_target = \"shared\"\n").unwrap();
    let compile = |dir: &str| {
        let arguments = json!({"project_path": dir}).to_string();
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_drydock"))
            .args(["call", "compile", &arguments, "--allow-root"])
            .arg(&home.project)
            .arg("--config")
            .arg(&shared_config)
            .arg("--data-dir")
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        start.elapsed()
    };
    compile(&dirs[1]);
    let shared = compile(&dirs[2]);
    WorktreeCosts {
        starts,
        in_place,
        worktree,
        worktree_kib,
        git_kib,
        creations,
        per_task,
        per_task_kib,
        shared,
    }
}

/// `Worktrees::create` on `repo`, `n` times (each worktree and branch discarded after), and
/// the disk the first one took.
async fn create_times(repo: &Path, n: usize) -> (Vec<Duration>, u64) {
    let root = tempfile::tempdir().unwrap();
    let worktrees = Worktrees::new(TaskDirs::new(root.path(), CargoTarget::PerTask));
    let (mut times, mut disk) = (Vec::new(), 0);
    for k in 0..n {
        let id = format!("bench-{}-{k}", std::process::id());
        let start = Instant::now();
        let made = worktrees
            .create(&id, 1, repo, repo, None, &[])
            .await
            .unwrap();
        times.push(start.elapsed());
        if k == 0 {
            disk = kib(made.path());
        }
        worktrees.discard(&made).await.unwrap();
    }
    (times, disk)
}

/// The disk `dir` takes, in KiB.
fn kib(dir: &Path) -> u64 {
    dir_size(dir) / 1024
}

fn report(
    handoffs: usize,
    handoff: &[f64],
    decided: &[f64],
    startup: &[f64],
    empty: &[Duration],
    full: &[Duration],
) {
    println!("tasks: {handoffs} handoffs on the real Claude Code 2.1.330 (auto mode, cap 1)");
    println!(
        "  completion signal -> next task running        {:>7.1} ms (median; {:.1}..{:.1})",
        median(decided),
        min(decided),
        max(decided)
    );
    println!(
        "  completion signal -> next agent's process     {:>7.1} ms (median; {:.1}..{:.1}; 10 ms clock)",
        median(handoff),
        min(handoff),
        max(handoff)
    );
    println!(
        "  baseline: the agent's own start-up (process -> up) {:.0} ms: the handoff is {:.1}% of it",
        median(startup),
        100.0 * median(handoff) / median(startup)
    );
    let (empty, full) = (percentile(empty, 50.0), percentile(full, 50.0));
    println!("task_list over MCP ({LIST_CALLS} calls each, median)");
    println!("  empty queue {empty:.2} ms; {QUEUED} queued tasks {full:.2} ms");
    println!(
        "  overhead of {QUEUED} tasks: {:.2} ms ({:.2}x the empty queue's call)",
        full - empty,
        full / empty
    );
}

async fn list_times(client: &Client) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..LIST_CALLS {
        let start = Instant::now();
        call(client, "task_list", json!({})).await;
        times.push(start.elapsed());
    }
    times
}

/// agent_wait for the agent of task `id` to be up: working, or past it (its session may not
/// exist yet).
async fn wait_working(client: &Client, id: &str) -> Value {
    let arguments = json!({"agents": [format!("task-{id}")], "states": ["working", "idle", "waiting"], "timeout_ms": 120000});
    call(client, "agent_wait", arguments).await
}

async fn until_finished(client: &Client, id: &str) -> Value {
    until_state(client, id, "done").await
}

async fn until_state(client: &Client, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let task = call(client, "task_show", json!({"task_id": id})).await["task"].clone();
        if task["state"] == state {
            return task;
        }
        assert!(
            task["state"] == "running" || task["state"] == "queued",
            "{task:#}"
        );
        assert!(Instant::now() < deadline, "task {id} never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// When process `pid` started, in ms since the epoch: the kernel counts in clock ticks since
/// boot, and the boot's wall time comes from /proc/uptime (10 ms steps; btime is whole seconds).
fn process_start_ms(pid: u64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let ticks: f64 = after_name.split(' ').nth(19).unwrap().parse().unwrap();
    let tick_hz: f64 = String::from_utf8(
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let booted_ms = now_ms() - uptime * 1000.0;
    booted_ms + ticks / tick_hz * 1000.0
}

fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    sorted[sorted.len() / 2]
}

fn min(samples: &[f64]) -> f64 {
    samples.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(samples: &[f64]) -> f64 {
    samples.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
