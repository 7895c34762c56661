//! Tool overhead on mix projects: drydock `compile` and `test` (over MCP/HTTP) on an
//! up-to-date project vs running `mix compile` / `mix test` directly, paired in one run.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

async fn mix_directly(project: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let status = tokio::process::Command::new("mix")
        .args(args)
        .current_dir(project)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .expect("mix runs");
    assert!(status.success(), "mix {args:?}");
    started.elapsed()
}

/// `n` pairs, alternating which side goes first so drift on a noisy machine hits both alike.
async fn paired(
    client: &Client,
    project: &Path,
    tool: &str,
    mix_args: &[&str],
    n: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let arguments = json!({"project_path": project.to_str().unwrap()});
    mix_directly(project, mix_args).await;
    call(client, tool, arguments.clone()).await;
    let (mut direct, mut tool_samples) = (Vec::new(), Vec::new());
    for i in 0..n {
        if i % 2 == 0 {
            direct.push(mix_directly(project, mix_args).await);
        }
        let started = Instant::now();
        call(client, tool, arguments.clone()).await;
        tool_samples.push(started.elapsed());
        if i % 2 == 1 {
            direct.push(mix_directly(project, mix_args).await);
        }
    }
    (direct, tool_samples)
}

fn report(what: &str, direct: &[Duration], tool: &[Duration]) {
    let (direct_p50, tool_p50) = (percentile(direct, 50.0), percentile(tool, 50.0));
    println!("{what}, {} paired runs:", tool.len());
    println!(
        "  mix directly          p50 {direct_p50:7.1} ms  p90 {:7.1} ms",
        percentile(direct, 90.0)
    );
    println!(
        "  drydock (MCP)         p50 {tool_p50:7.1} ms  p90 {:7.1} ms",
        percentile(tool, 90.0)
    );
    println!(
        "  overhead ratio (p50 tool / p50 mix): {:.3}",
        tool_p50 / direct_p50
    );
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let url = start_server(&shutdown).await;
        let client = connect(&url).await;
        let project = test_projects().join("mix-clean");
        let n = iterations(20);

        let (direct, tool) = paired(
            &client,
            &project,
            "compile",
            &["compile", "--all-warnings"],
            n,
        )
        .await;
        report("mix compile on an up-to-date project", &direct, &tool);
        // drydock's test also loads its ExUnit formatter and parses one event per test.
        let (direct, tool) = paired(&client, &project, "test", &["test"], n).await;
        report("mix test on mix-clean (7 tests)", &direct, &tool);
        client.cancel().await.ok();
        shutdown.cancel();
    });
}
