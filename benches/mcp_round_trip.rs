//! MCP round trip of a cheap call (project_info) with 1 and 32 concurrent clients, against
//! the same call made in-process without MCP (the baseline), in one run.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::time::{Duration, Instant};

use drydock::app::App;
use drydock::call::Call;
use drydock::call::Silent;
use drydock::toolchain::requests::ProjectInfoRequest;
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

/// `concurrency` callers sharing one App, `n` calls each.
async fn in_process_concurrent(
    app: &std::sync::Arc<App>,
    project: &str,
    concurrency: usize,
    n: usize,
) -> Vec<Duration> {
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (app, project) = (app.clone(), project.to_string());
        tasks.push(tokio::spawn(
            async move { in_process(&app, &project, n).await },
        ));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

async fn in_process(app: &App, project: &str, n: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let call = Call::new(&Silent, CancellationToken::new());
        let request = ProjectInfoRequest {
            project_path: project.to_string(),
            toolchain: None,
        };
        let started = Instant::now();
        app.toolchains()
            .project_info(request, &call)
            .await
            .expect("project_info");
        samples.push(started.elapsed());
    }
    samples
}

async fn over_mcp(url: &str, project: &str, clients: usize, calls_each: usize) -> Vec<Duration> {
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (url, project) = (url.to_string(), project.to_string());
        tasks.push(tokio::spawn(async move {
            let client = connect(&url).await;
            let mut samples = Vec::with_capacity(calls_each);
            for _ in 0..calls_each {
                let started = Instant::now();
                call(&client, "project_info", json!({"project_path": project})).await;
                samples.push(started.elapsed());
            }
            client.cancel().await.ok();
            samples
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

fn report(label: &str, samples: &[Duration], baseline: Option<&[Duration]>) {
    let p50 = percentile(samples, 50.0);
    let ratio = baseline
        .map(|baseline| {
            format!(
                ", p50 ratio to in-process {:.2}",
                p50 / percentile(baseline, 50.0)
            )
        })
        .unwrap_or_default();
    println!(
        "  {label:<34} p50 {p50:7.1} ms  p99 {:7.1} ms  ({} calls{ratio})",
        percentile(samples, 99.0),
        samples.len(),
    );
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let url = start_server(&shutdown).await;
        let project = test_projects().join("cargo-clean");
        let project = project.to_str().unwrap();
        let app = app().await;
        let n = iterations(40);
        let per_client = n.div_ceil(8);

        in_process(&app, project, 3).await;
        let serial = in_process(&app, project, n).await;
        let concurrent = in_process_concurrent(&app, project, 32, per_client).await;
        println!("project_info round trips:");
        report("in-process (no MCP), 1 caller", &serial, None);
        report(
            "MCP, 1 client",
            &over_mcp(&url, project, 1, n).await,
            Some(&serial),
        );
        report("in-process (no MCP), 32 callers", &concurrent, None);
        report(
            "MCP, 32 concurrent clients",
            &over_mcp(&url, project, 32, per_client).await,
            Some(&concurrent),
        );
        shutdown.cancel();
    });
}
