//! Terminals: terminal_run latency for `true` (shell-integration marks) against the
//! quiet-period method other tools use (2 s of silence), in one run; output throughput
//! through the screen model (`cat` of a large file); floods of output (`yes`, `seq`) through
//! terminal_run over MCP against the screen model alone on the same bytes; memory of a full
//! scrollback.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::time::{Duration, Instant};

use drydock::terminal::core::{Fallback, TerminalCore, WaitMethod};
use drydock::terminal::pty::{PtySession, PtySpawn};
use drydock::terminal::shell_integration;
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

const QUIET: Duration = Duration::from_secs(2);
const CAP: usize = 64 * 1024;

fn bash(marks: bool, home: &std::path::Path) -> PtySession {
    let launch = shell_integration::launch("bash", &home.join("integration")).unwrap();
    let (argv, env, expect_marks) = if marks {
        (launch.argv, launch.env, true)
    } else {
        (
            vec!["bash".into(), "--norc".into(), "-i".into()],
            Vec::new(),
            false,
        )
    };
    let mut env = env;
    env.push(("HOME".into(), home.display().to_string()));
    PtySession::spawn(PtySpawn {
        argv,
        cwd: home.to_path_buf(),
        env,
        env_remove: Vec::new(),
        rows: 40,
        cols: 120,
        scrollback: 10_000,
        expect_marks,
    })
    .unwrap()
}

/// Runs `true` `n` times; each must end by `method` (with marks, with exit code 0 and no
/// output; the quiet period of a shell without marks sees its next prompt).
async fn latency(
    session: &PtySession,
    fallback: Fallback,
    method: WaitMethod,
    n: usize,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let outcome = session
            .run(
                "true",
                Duration::from_secs(30),
                fallback.clone(),
                CAP,
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        assert!(outcome.completed && outcome.method == method, "{outcome:?}");
        if method == WaitMethod::Mark {
            assert_eq!((outcome.exit_code, outcome.output.as_str()), (Some(0), ""));
        }
        samples.push(started.elapsed());
    }
    samples
}

/// `yes | head -c` this many bytes (the PTY adds a \r to each line).
const FLOOD_BYTES: usize = 200_000_000;
const SEQ_LINES: usize = 3_000_000;

/// `command` (which prints `bytes` on the terminal) through terminal_run over MCP, against
/// the screen model alone (vt100, every line laid out) fed the same bytes in the 4 KiB reads
/// a PTY gives.
async fn flood(client: &Client, session: &str, command: &str, bytes: &[u8]) {
    if session == "pty" {
        call(
            client,
            "terminal_create",
            json!({"name": "pty", "cwd": "."}),
        )
        .await;
    }
    let started = Instant::now();
    let (report, text) = call_with_text(
        client,
        "terminal_run",
        json!({"session": session, "command": command, "timeout_ms": 1_800_000}),
    )
    .await;
    let through_run = started.elapsed().as_secs_f64();
    assert_eq!(
        (&report["completed"], &report["exit_code"]),
        (&json!(true), &json!(0)),
        "{report:.300}"
    );
    let result_bytes = report.to_string().len() + text.len();
    let size = |n| std::num::NonZeroU16::new(n).unwrap();
    let mut model = vt100::Parser::new(size(40), size(120), 10_000);
    let started = Instant::now();
    for chunk in bytes.chunks(4096) {
        model.process(chunk);
    }
    let alone = started.elapsed().as_secs_f64();
    let mb = bytes.len() as f64 / 1e6;
    println!("{command} in a {session} session ({mb:.0} MB on the terminal):");
    println!(
        "  terminal_run over MCP         {through_run:8.2} s {:8.1} MB/s (a result of {result_bytes} bytes)",
        mb / through_run
    );
    println!(
        "  the screen model alone        {alone:8.2} s {:8.1} MB/s",
        mb / alone
    );
    println!("  ratio (terminal_run / model): {:.2}", through_run / alone);
    if session == "pty" {
        call(
            client,
            "terminal_manage",
            json!({"session": "pty", "action": "kill"}),
        )
        .await;
    }
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let home = tempfile::tempdir().unwrap();
        let n = iterations(20);

        let marked = bash(true, home.path());
        latency(&marked, Fallback::default(), WaitMethod::Mark, 2).await;
        let with_marks = latency(&marked, Fallback::default(), WaitMethod::Mark, n).await;
        let plain = bash(false, home.path());
        let quiet = Fallback {
            quiet_ms: Some(QUIET.as_millis() as u64),
            pattern: None,
        };
        let by_quiet = latency(&plain, quiet, WaitMethod::Quiet, 3).await;
        let (marks_p50, quiet_p50) = (percentile(&with_marks, 50.0), percentile(&by_quiet, 50.0));
        println!("terminal run of `true`:");
        println!("  shell-integration marks  p50 {marks_p50:8.2} ms  p90 {:8.2} ms ({n} runs)", percentile(&with_marks, 90.0));
        println!("  2 s quiet period         p50 {quiet_p50:8.2} ms ({} runs)", by_quiet.len());
        println!("  ratio (quiet / marks): {:.0}x", quiet_p50 / marks_p50);

        // The same through the MCP server (HTTP, JSON, the registry).
        let shutdown = CancellationToken::new();
        let url = start_server(&shutdown).await;
        let client = connect(&url).await;
        call(&client, "terminal_create", json!({"name": "bench", "cwd": "."})).await;
        call(&client, "terminal_run", json!({"session": "bench", "command": "true"})).await;
        let mut over_mcp = Vec::new();
        for _ in 0..n {
            let started = Instant::now();
            let report = call(&client, "terminal_run", json!({"session": "bench", "command": "true"})).await;
            assert_eq!(report["method"], "mark");
            over_mcp.push(started.elapsed());
        }
        println!("  terminal_run over MCP    p50 {:8.2} ms  p90 {:8.2} ms", percentile(&over_mcp, 50.0), percentile(&over_mcp, 90.0));

        let yes = b"y\r\n".repeat(FLOOD_BYTES / 2);
        flood(&client, "pty", &format!("yes | head -c {FLOOD_BYTES}"), &yes).await;
        let seq: Vec<u8> = (1..=SEQ_LINES).flat_map(|n| format!("{n}\r\n").into_bytes()).collect();
        flood(&client, "pty", &format!("seq 1 {SEQ_LINES}"), &seq).await;
        call(&client, "terminal_create", json!({"name": "tmux-flood", "cwd": ".", "backend": "tmux"})).await;
        flood(&client, "tmux-flood", &format!("seq 1 {SEQ_LINES}"), &seq).await;
        call(&client, "terminal_manage", json!({"session": "tmux-flood", "action": "kill"})).await;
        client.cancel().await.ok();
        shutdown.cancel();

        let file = home.path().join("big.txt");
        let line = format!("{}\n", "0123456789abcdef".repeat(5));
        let lines = 50 * 1024 * 1024 / line.len();
        std::fs::write(&file, line.repeat(lines)).unwrap();
        let cat = marked
            .run(&format!("cat {}", file.display()), Duration::from_secs(600), Fallback::default(), CAP, &CancellationToken::new())
            .await
            .unwrap();
        assert!(cat.completed);
        // The PTY turns each \n into \r\n.
        let bytes = (line.len() + 1) * lines;
        println!(
            "cat of a {} MB file through the PTY and screen model: {:.2} s, {:.1} MB/s",
            bytes / 1_000_000,
            cat.duration_ms as f64 / 1000.0,
            bytes as f64 / (cat.duration_ms as f64 / 1000.0) / 1e6
        );

        let before = resident_kib();
        let core = TerminalCore::new(40, 120, 10_000);
        let full_line = format!("{}\r\n", "x".repeat(119));
        for _ in 0..12_000 {
            core.feed(full_line.as_bytes());
        }
        let lines = core.lines(0, 0);
        let kept = lines.total - lines.oldest;
        println!(
            "memory of one session with a full scrollback ({kept} lines of 120 columns): {} KiB resident",
            resident_kib().saturating_sub(before)
        );
        marked.kill();
        plain.kill();
    });
}
