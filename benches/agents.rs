//! Agents: how soon a supervisor hears that Claude Code waits at a permission prompt, counted
//! from the prompt's first frame on drydock's screen. `agent_wait` over MCP (OSC 7501 status
//! and screen rules), against what other tools wait for, on the same prompts in one run: the
//! Notification hook (claude-squad's and most hook-based tools' signal) and a 1.5 s quiet-time
//! detector (ccmanager's). The real Claude Code 2.1.330 against the tests' Anthropic fake
//! (the CLIs come from scripts/agent-clis.sh). `DRYDOCK_BENCH_ITERS` prompts (default 5).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

#[path = "../tests/it/agent_kit/mod.rs"]
mod agent_kit;
#[path = "../tests/it/proc_env.rs"]
mod proc_env;
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use drydock::app::{App, Mode};
use drydock::config::{Config, Overrides};
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

use agent_kit::fake_anthropic::FakeAnthropic;
use agent_kit::home::{AgentHome, Cli};

const PROMPT: &str = "Do you want to proceed";
const QUIET_MS: u64 = 1500;
/// How long the Notification hook is waited for (it comes about 6 s after the prompt).
const NOTIFICATION_WITHIN: Duration = Duration::from_secs(20);

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds = iterations(5);
    let cli = Cli::claude();
    let mut home = AgentHome::new("bench-agents");
    let fake = FakeAnthropic::start(&home.project);
    home.prepare_claude(fake.url());
    let notifications = home.scratch().join("notifications.log");
    log_notification_times(&home, &notifications);

    let shutdown = CancellationToken::new();
    let app = App::start(config(&home), Mode::Server).await;
    let client = connect(&serve(app, &shutdown).await).await;
    let command = home.launch(&cli, &[]).shell_command(&["TERM"]);
    let created = call(
        &client,
        "terminal_create",
        json!({"cwd": home.project, "command": command, "backend": "pty"}),
    )
    .await;
    let agent = created["name"].as_str().unwrap().to_string();
    wait_for(&client, &agent, "idle").await;

    let (mut heard, mut notified, mut quiet) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let logged_before = notification_times(&notifications).len();
        let frame = first_frame(&client, &agent);
        let waiting = wait_for(&client, &agent, "waiting");
        let text = format!("Round {round}: run the lab command lab:bash");
        call(&client, "agent_send", json!({"agent": agent, "text": text})).await;
        let ((frame_at, frame_wall), heard_at) = tokio::join!(frame, waiting);
        let quiet_at = quiet_period(&client, &agent).await;
        let notified_wall = notification_after(&notifications, logged_before).await;

        heard.push(signed_ms(frame_at, heard_at));
        quiet.push(quiet_at.map(|at| signed_ms(frame_at, at)));
        notified.push(notified_wall.map(|wall| wall_ms(frame_wall, wall)));
        call(
            &client,
            "agent_answer",
            json!({"agent": agent, "action": "approve"}),
        )
        .await;
        wait_for(&client, &agent, "idle").await;
    }
    call(&client, "agent_kill", json!({"agent": agent})).await;
    shutdown.cancel();

    report(rounds, &heard, &notified, &quiet);
}

fn report(rounds: usize, heard: &[f64], notified: &[Option<f64>], quiet: &[Option<f64>]) {
    println!("agents: {rounds} permission prompts of Claude Code 2.1.330 in a drydock PTY");
    println!("  ms from the prompt's first frame until the supervisor knows (median, min..max)");
    let heard_median = median(heard);
    println!("  agent_wait (OSC 7501, screen)  {}", summary(heard));
    for (name, samples) in [
        ("Notification hook            ", notified),
        ("quiet-time detector (1.5 s)  ", quiet),
    ] {
        let seen: Vec<f64> = samples.iter().flatten().copied().collect();
        let missed = samples.len() - seen.len();
        let missed = match missed {
            0 => String::new(),
            n => format!(", never in {n} of {}", samples.len()),
        };
        if seen.is_empty() {
            println!("  {name} never{missed}");
            continue;
        }
        println!(
            "  {name} {}{missed}: {:.0} ms later than agent_wait",
            summary(&seen),
            median(&seen) - heard_median
        );
    }
}

/// The Notification hook appends its arrival time (ns since the epoch) to `log`.
fn log_notification_times(home: &AgentHome, log: &Path) {
    let path = home.claude_settings();
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|_| json!({}));
    let command = format!("date +%s%N >> '{}'", log.display());
    settings["hooks"]["Notification"] =
        json!([{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]);
    std::fs::write(&path, settings.to_string()).unwrap();
}

fn notification_times(log: &Path) -> Vec<u128> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The wall time (ns since the epoch) of the first Notification after the first `seen`.
async fn notification_after(log: &Path, seen: usize) -> Option<u128> {
    let deadline = Instant::now() + NOTIFICATION_WITHIN;
    while Instant::now() < deadline {
        if let Some(at) = notification_times(log).get(seen) {
            return Some(*at);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// When the permission prompt is first on drydock's screen: terminal_wait on its text.
async fn first_frame(client: &Client, agent: &str) -> (Instant, SystemTime) {
    let waited = call(
        client,
        "terminal_wait",
        json!({"session": agent, "pattern": PROMPT, "max_wait_ms": 60000, "max_output_bytes": 1024}),
    )
    .await;
    assert_eq!(waited["method"], "pattern", "no prompt: {waited:#}");
    (Instant::now(), SystemTime::now())
}

/// When 1.5 s passed without output after the prompt: what a quiet-time detector waits for.
async fn quiet_period(client: &Client, agent: &str) -> Option<Instant> {
    let waited = call(
        client,
        "terminal_wait",
        json!({"session": agent, "quiet_ms": QUIET_MS, "max_wait_ms": 15000, "max_output_bytes": 1024}),
    )
    .await;
    (waited["method"] == "quiet").then(Instant::now)
}

/// When agent_wait says `agent` is in `state`.
async fn wait_for(client: &Client, agent: &str, state: &str) -> Instant {
    let waited = call(
        client,
        "agent_wait",
        json!({"agents": [agent], "states": [state], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(waited["matched"], true, "{agent} never {state}: {waited:#}");
    Instant::now()
}

fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(after) => after.as_secs_f64() * 1000.0,
        None => -(from.duration_since(to).as_secs_f64() * 1000.0),
    }
}

fn wall_ms(from: SystemTime, ns_since_epoch: u128) -> f64 {
    let from = from.duration_since(UNIX_EPOCH).unwrap().as_nanos();
    (ns_since_epoch as f64 - from as f64) / 1e6
}

fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    sorted[sorted.len() / 2]
}

fn summary(samples: &[f64]) -> String {
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:>7.0} ({min:.0}..{max:.0})", median(samples))
}

fn config(home: &AgentHome) -> Arc<Config> {
    let overrides = Overrides {
        allow_roots: vec![home.project.clone()],
        bind: Some("127.0.0.1:0".into()),
        data_dir: Some(home.scratch().join("data")),
        ..Default::default()
    };
    Arc::new(Config::resolve(&overrides, &|_| None, &home.project).expect("config"))
}
