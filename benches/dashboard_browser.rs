//! The dashboard in a real Chromium (Debian's, headless, through chromedriver): what the
//! person's browser sees and pays. Keystroke → echo as the page gets it (typed through
//! xterm.js's own input path, timed in the page from the key to the echo parsed into xterm's
//! buffer and to the next frame painted), against a tool call round trip from the same page;
//! how long after a 20 MB print ends the page shows its end; and the memory of Chromium's
//! processes (PSS, chromedriver left out) with a blank page, the dashboard on one terminal,
//! on four, and after the four printed ~5 MB each.
//! `DRYDOCK_BENCH_ITERS` keystrokes (default 200).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

#[allow(dead_code, reason = "the tests' driver: the benchmark uses part of it")]
#[path = "../tests/it/chromium.rs"]
mod chromium;

use std::time::{Duration, Instant};

use chromium::Chromium;
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let keystrokes = iterations(200);
    let shutdown = CancellationToken::new();
    let url = start_server(&shutdown).await;
    let base = url.trim_end_matches("/mcp").to_string();
    let client = connect(&url).await;
    let first = new_shell(&client).await;

    let chromium = Chromium::start();
    chromium.command("POST", "/url", json!({"url": "about:blank"}));
    settle().await;
    let blank = chromium_pss_kib(&chromium);
    chromium.open(&format!("{base}/")).await;
    until_panels(&chromium, 1).await;
    settle().await;
    let one_panel = chromium_pss_kib(&chromium);

    let latency = chromium.eval_async(&keystroke_script(&first, keystrokes));
    let parsed = millis(&latency["parsed"]);
    let painted = millis(&latency["painted"]);
    let calls = millis(&latency["calls"]);
    println!("dashboard in Chromium: {keystrokes} keystrokes into bash in a drydock PTY");
    println!(
        "  key -> echo in xterm's buffer  p50 {:.2} ms, p99 {:.2} ms",
        percentile(&parsed, 50.0),
        percentile(&parsed, 99.0)
    );
    println!(
        "  key -> echo painted            p50 {:.2} ms, p99 {:.2} ms (the next frame: Chromium paints every 16.7 ms)",
        percentile(&painted, 50.0),
        percentile(&painted, 99.0)
    );
    println!(
        "  baseline: a tool call (terminal_list) from the page p50 {:.2} ms: the echo is {:.2}x it",
        percentile(&calls, 50.0),
        percentile(&parsed, 50.0) / percentile(&calls, 50.0)
    );

    let (alone, behind) = print_and_follow(&client, &chromium, &first).await;
    println!("20 MB printed in a terminal the page shows");
    println!(
        "  the command took {:.2} s; the page showed its end {:.0} ms after it ended",
        alone.as_secs_f64(),
        behind.as_secs_f64() * 1000.0
    );

    let mut sessions = vec![first];
    for _ in 0..3 {
        sessions.push(new_shell(&client).await);
    }
    until_panels(&chromium, 4).await;
    settle().await;
    let four_panels = chromium_pss_kib(&chromium);
    let printing = sessions.iter().map(|session| {
        call(
            &client,
            "terminal_run",
            json!({"session": session, "command": "seq 1 700000"}),
        )
    });
    futures::future::join_all(printing).await;
    for session in &sessions {
        let shown = format!(
            "return (window.drydock.terminalText({session:?}) || '').includes('\\n700000\\n')"
        );
        chromium.until(&shown, "the page shows the end").await;
    }
    settle().await;
    let printed = chromium_pss_kib(&chromium);
    println!("Chromium's memory (PSS of its processes)");
    println!("  a blank page                 {:>7.1} MB", mb(blank));
    println!(
        "  the dashboard, 1 terminal    {:>7.1} MB ({:+.1} MB)",
        mb(one_panel),
        mb(one_panel) - mb(blank)
    );
    println!(
        "  4 terminals                  {:>7.1} MB ({:+.1} MB per more terminal)",
        mb(four_panels),
        (mb(four_panels) - mb(one_panel)) / 3.0
    );
    println!(
        "  after each printed ~4.6 MB   {:>7.1} MB ({:+.1} MB; xterm keeps 5000 lines each)",
        mb(printed),
        mb(printed) - mb(four_panels)
    );
    drop(chromium);
    shutdown.cancel();
}

async fn until_panels(chromium: &Chromium, count: usize) {
    let script = format!("return document.querySelectorAll('.panel').length === {count}");
    chromium.until(&script, "the panels").await;
}

/// Lets the page and Chromium's processes settle before their memory is read.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// In the page: `count` keys typed into `session`'s xterm (its input path, as a person's
/// keys), each timed until bash's echo is parsed into the buffer and until the next frame;
/// every 20 keys the line is cleared (Ctrl-U). Then `count` tool calls from the page.
fn keystroke_script(session: &str, count: usize) -> String {
    format!(
        r#"
        const t = window.drydock.terminal({session:?});
        const echoed = (moved) => new Promise((resolve) => {{
          const sub = t.onWriteParsed(() => {{ if (moved()) {{ sub.dispose(); resolve(); }} }});
        }});
        const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
        const home = t.buffer.active.cursorX;
        const parsed = [], painted = [], calls = [];
        for (let i = 0; i < {count}; i++) {{
          const x = t.buffer.active.cursorX;
          const seen = echoed(() => t.buffer.active.cursorX !== x);
          const start = performance.now();
          t.input(String.fromCharCode(97 + (i % 26)), true);
          await seen;
          parsed.push(performance.now() - start);
          await frame();
          painted.push(performance.now() - start);
          if (i % 20 === 19) {{
            const cleared = echoed(() => t.buffer.active.cursorX === home);
            t.input("\x15", true);
            await cleared;
          }}
        }}
        for (let i = 0; i < {count}; i++) {{
          const start = performance.now();
          await window.drydock.call("terminal_list", {{ session: {session:?} }});
          calls.push(performance.now() - start);
        }}
        return {{ parsed, painted, calls }};
        "#
    )
}

/// Prints 20 MB in `session`: how long the command took, and how long after it ended the
/// page showed its last line.
async fn print_and_follow(
    client: &Client,
    chromium: &Chromium,
    session: &str,
) -> (Duration, Duration) {
    let command = "head -c 20000000 /dev/zero | tr '\\0' 'a'; echo; echo PRINTED-$((2+2))";
    let started = Instant::now();
    call(
        client,
        "terminal_run",
        json!({"session": session, "command": command, "timeout_ms": 120000}),
    )
    .await;
    let alone = started.elapsed();
    let shown =
        format!("return (window.drydock.terminalText({session:?}) || '').includes('PRINTED-4')");
    chromium.until(&shown, "the page shows the end").await;
    (alone, started.elapsed() - alone)
}

fn millis(samples: &Value) -> Vec<Duration> {
    let samples = samples
        .as_array()
        .unwrap_or_else(|| panic!("timings from the page: {samples}"));
    samples
        .iter()
        .map(|ms| Duration::from_secs_f64(ms.as_f64().unwrap() / 1000.0))
        .collect()
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The proportional set size of every process in the driver's group but chromedriver: the
/// memory Chromium's processes take, shared pages counted once.
fn chromium_pss_kib(chromium: &Chromium) -> u64 {
    let group = chromium.process_group().to_string();
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …: comm may hold spaces, so read after its ')'.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let pgrp = rest.split_whitespace().nth(2);
        if pgrp != Some(group.as_str()) || head.ends_with("(chromedriver") {
            continue;
        }
        let rollup = std::fs::read_to_string(dir.join("smaps_rollup")).unwrap_or_default();
        total += rollup
            .lines()
            .find_map(|line| line.strip_prefix("Pss:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}
