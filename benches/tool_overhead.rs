//! Tool overhead: drydock `compile` (over MCP/HTTP) on an up-to-date project vs running
//! `cargo build --message-format=json` directly, paired in one run. Also the size, in tokens,
//! of a failed build's result, as text content and as structuredContent.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

async fn cargo_build_directly(project: &std::path::Path) -> Duration {
    let started = Instant::now();
    let status = tokio::process::Command::new("cargo")
        .args(["build", "--message-format=json"])
        .current_dir(project)
        .env("CARGO_TERM_COLOR", "never")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .expect("cargo runs");
    assert!(status.success());
    started.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let url = start_server(&shutdown).await;
        let client = connect(&url).await;
        let project = test_projects().join("cargo-clean");
        let arguments = json!({"project_path": project.to_str().unwrap()});

        // Warm both paths: the build is up to date from here on.
        cargo_build_directly(&project).await;
        call(&client, "compile", arguments.clone()).await;

        let n = iterations(30);
        let (mut direct, mut tool) = (Vec::new(), Vec::new());
        for i in 0..n {
            // Alternate the order so drift on a noisy machine hits both sides alike.
            if i % 2 == 0 {
                direct.push(cargo_build_directly(&project).await);
            }
            let started = Instant::now();
            let report = call(&client, "compile", arguments.clone()).await;
            tool.push(started.elapsed());
            assert_eq!(report["status"], "ok");
            if i % 2 == 1 {
                direct.push(cargo_build_directly(&project).await);
            }
        }
        let (direct_p50, tool_p50) = (percentile(&direct, 50.0), percentile(&tool, 50.0));
        println!("compile on an up-to-date project, {n} paired runs:");
        println!(
            "  cargo build directly  p50 {direct_p50:7.1} ms  p90 {:7.1} ms",
            percentile(&direct, 90.0)
        );
        println!(
            "  drydock compile (MCP) p50 {tool_p50:7.1} ms  p90 {:7.1} ms",
            percentile(&tool, 90.0)
        );
        println!("  overhead ratio (p50 tool / p50 cargo): {:.3}", tool_p50 / direct_p50);

        let errors = test_projects().join("cargo-errors");
        let (failed, text) = call_with_text(
            &client,
            "compile",
            json!({"project_path": errors.to_str().unwrap()}),
        )
        .await;
        let tokens = tiktoken_rs::cl100k_base().unwrap();
        let count = |text: &str| tokens.encode_with_special_tokens(text).len();
        let error_count = failed["errors"].as_array().unwrap().len();
        let warning_count = failed["warnings"].as_array().unwrap().len();
        let structured = serde_json::to_string(&failed).unwrap();
        let errors_only = serde_json::to_string(&failed["errors"]).unwrap();
        println!("failed build result ({error_count} errors, {warning_count} warnings), cl100k_base tokens:");
        println!("  text content (what the model reads)   {:4} tokens, {:5} bytes", count(&text), text.len());
        println!("  structuredContent, whole              {:4} tokens, {:5} bytes", count(&structured), structured.len());
        println!("  structuredContent, errors array only  {:4} tokens, {:5} bytes", count(&errors_only), errors_only.len());
        client.cancel().await.ok();
        shutdown.cancel();
    });
}
