//! What a server never lets through, tried on a real one: drydock's token or a configured
//! secret into any child it starts (every program goes through a shim on PATH that records the
//! environment it was given: cargo, rustc, mix, elixir, on every path: build tools, project
//! metadata, docs ingest), and a result larger than a client can read (1 MiB).

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::json;

const TOKEN: &str = "drydock-token-never-in-a-child";
const SECRET: &str = "github-token-never-in-a-child";

/// A directory of shims, one per program, each writing its environment to `log_dir` and then
/// running the real program.
fn shims(dir: &Path, log_dir: &Path, programs: &[&str]) {
    for program in programs {
        let real = which(program);
        let script = format!(
            "#!/bin/sh\nenv > \"{log}/{program}.$$\"\nexec \"{real}\" \"$@\"\n",
            log = log_dir.display(),
            real = real.display()
        );
        let path = dir.join(program);
        std::fs::write(&path, script).unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).unwrap();
    }
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// The environments the shims recorded, by program.
fn recorded(log_dir: &Path) -> Vec<(String, String)> {
    std::fs::read_dir(log_dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let program = name.split('.').next().unwrap().to_string();
            (program, std::fs::read_to_string(entry.path()).unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_child_on_any_path_sees_the_token_or_the_configured_secrets() {
    let (_cargo_copy, cargo_project) = copy_project("docs-deps");
    let (_mix_copy, mix_project) = copy_project("mix-clean");
    let shim_dir = tempfile::tempdir().unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    let index = tempfile::tempdir().unwrap();
    shims(
        shim_dir.path(),
        log_dir.path(),
        &["cargo", "rustc", "mix", "elixir"],
    );
    let path = format!(
        "{}:{}",
        shim_dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let server = Server::start_with(
        &[
            "--allow-root",
            cargo_project.parent().unwrap().to_str().unwrap(),
            "--allow-root",
            mix_project.parent().unwrap().to_str().unwrap(),
            "--index",
            index.path().to_str().unwrap(),
        ],
        &[
            ("PATH", &path),
            ("DRYDOCK_TOKEN", TOKEN),
            ("GITHUB_TOKEN", SECRET),
        ],
    );
    let client = legacy_client_with_token(&server.url, TOKEN).await;

    call_ok(
        &client,
        "project_info",
        json!({"project_path": path_arg(&cargo_project)}),
    )
    .await;
    call_ok(
        &client,
        "compile",
        json!({"project_path": path_arg(&cargo_project)}),
    )
    .await;
    call_ok(
        &client,
        "docs_index",
        json!({"project_path": path_arg(&cargo_project)}),
    )
    .await;
    call_ok(
        &client,
        "project_info",
        json!({"project_path": path_arg(&mix_project)}),
    )
    .await;
    call_ok(
        &client,
        "test",
        json!({"project_path": path_arg(&mix_project)}),
    )
    .await;
    let shown = call_ok(
        &client,
        "run",
        json!({
            "project_path": path_arg(&mix_project),
            "args": ["-e", "IO.puts(System.get_env(\"DRYDOCK_TOKEN\", \"unset\") <> \" \" <> System.get_env(\"GITHUB_TOKEN\", \"unset\"))"],
        }),
    )
    .await;
    client.cancel().await.unwrap();

    assert_eq!(
        shown["stdout"].as_str().unwrap().trim(),
        "unset unset",
        "{shown}"
    );
    let environments = recorded(log_dir.path());
    for program in ["cargo", "rustc", "mix", "elixir"] {
        assert!(
            environments.iter().any(|(p, _)| p == program),
            "{program} was never started"
        );
    }
    for (program, environment) in &environments {
        assert!(!environment.contains(TOKEN), "{program} saw DRYDOCK_TOKEN");
        assert!(!environment.contains(SECRET), "{program} saw GITHUB_TOKEN");
    }
}

async fn legacy_client_with_token(url: &str, token: &str) -> Client {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    rmcp::model::ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Initialize,
        )
        .await
        .expect("MCP client connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_comes_back_as_a_result_a_client_can_read() {
    let project = test_project("mix-clean");
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    // 8 MB of NUL bytes (six bytes each as JSON) on stdout, 8 MB of é on stderr.
    let flood = "IO.binwrite(:binary.copy(<<0>>, 8_000_000)); \
                 IO.write(:stderr, String.duplicate(\"é\", 4_000_000))";

    let result = call(
        &client,
        "run",
        json!({"project_path": path_arg(&project), "args": ["-e", flood]}),
    )
    .await;
    client.cancel().await.unwrap();

    let size = serde_json::to_string(&result).unwrap().len();
    assert!(size < 1024 * 1024, "the result is {size} bytes");
    let report = result.structured_content.clone().expect("structured");
    assert_eq!(report["status"], "ok", "{report}");
    for (stream, total) in [("stdout", 8_000_000u64), ("stderr", 8_000_000)] {
        let text = report[stream].as_str().unwrap();
        let elided: u64 = text
            .split("[... ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no marker in {stream}"));
        let kept = text.len() as u64 - format!("\n[... {elided} bytes elided ...]\n").len() as u64;
        assert_eq!(
            kept + elided,
            total,
            "{stream}: the marker counts what was left out"
        );
    }
    let text = text_of(&result);
    assert!(
        text.len() < 100 * 1024,
        "the text rendering is {} bytes",
        text.len()
    );
    assert!(
        text.contains("structuredContent has the whole result"),
        "{text:.200}"
    );
}
