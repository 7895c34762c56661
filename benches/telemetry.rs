//! What traces cost a tool call: on a `drydock serve` exporting its traces to a collector,
//! beside one with traces off (the baseline), paired in one run: `terminal_list` (the
//! cheapest call, where a span weighs most), `project_info` and `compile` on an up-to-date
//! project.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// A collector that takes every export and counts the bytes.
async fn collector(taken: Arc<AtomicUsize>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            taken.fetch_add(body.len(), Ordering::Relaxed);
            std::future::ready((
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            ))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A `drydock serve` over the test projects with `config`; its URL.
fn serve(dir: &Path, name: &str, config: &str) -> (Child, String) {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, config).unwrap();
    drydock_serve(|command| {
        command
            .arg("--allow-root")
            .arg(test_projects())
            .arg("--config")
            .arg(&file)
            .arg("--data-dir")
            .arg(dir.join(name));
    })
}

async fn timed(client: &Client, tool: &str, arguments: &Value) -> Duration {
    let started = Instant::now();
    call(client, tool, arguments.clone()).await;
    started.elapsed()
}

/// `n` calls of `tool` on each server, alternating which goes first.
async fn paired(off: &Client, on: &Client, tool: &str, arguments: &Value, n: usize) {
    for client in [off, on] {
        for _ in 0..3 {
            timed(client, tool, arguments).await;
        }
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for i in 0..n {
        if i % 2 == 0 {
            without.push(timed(off, tool, arguments).await);
            with.push(timed(on, tool, arguments).await);
        } else {
            with.push(timed(on, tool, arguments).await);
            without.push(timed(off, tool, arguments).await);
        }
    }
    let (off_p50, on_p50) = (percentile(&without, 50.0), percentile(&with, 50.0));
    println!("{tool}, {n} paired calls:");
    println!(
        "  traces off  p50 {off_p50:7.2} ms  p90 {:7.2} ms",
        percentile(&without, 90.0)
    );
    println!(
        "  traces on   p50 {on_p50:7.2} ms  p90 {:7.2} ms",
        percentile(&with, 90.0)
    );
    println!("  ratio (p50 on / p50 off): {:.3}", on_p50 / off_p50);
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let taken = Arc::new(AtomicUsize::new(0));
        let collector = collector(taken.clone()).await;
        let dir = tempfile::tempdir().unwrap();
        let (mut off_server, off_url) = serve(dir.path(), "off", "");
        let traced = format!("[telemetry]\notlp_endpoint = \"{collector}\"\n");
        let (mut on_server, on_url) = serve(dir.path(), "on", &traced);
        let (off, on) = (connect(&off_url).await, connect(&on_url).await);
        let project = test_projects().join("cargo-clean");
        let arguments = json!({"project_path": project.to_str().unwrap()});

        paired(&off, &on, "terminal_list", &json!({}), iterations(1000)).await;
        paired(&off, &on, "project_info", &arguments, iterations(400)).await;
        paired(&off, &on, "compile", &arguments, iterations(30)).await;

        // The spans did reach the collector (it exports every 2 s).
        tokio::time::sleep(Duration::from_secs(3)).await;
        let bytes = taken.load(Ordering::Relaxed);
        assert!(bytes > 0, "the collector received no trace");
        println!("  the collector received {bytes} bytes of spans");
        for server in [&mut off_server, &mut on_server] {
            let _ = server.kill();
            let _ = server.wait();
        }
    });
}
