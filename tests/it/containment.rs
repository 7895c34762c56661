//! What a server never lets through, tried on a real one: drydock's token or a configured
//! secret into any child it starts (every program goes through a shim on PATH that records the
//! environment it was given: cargo, rustc, mix, elixir, on every path: build tools, project
//! metadata, docs ingest and its `elixir` reading docs out of beams), a docs helper that never
//! ends (the timeout, a cancelled call and Ctrl-C on `drydock index` each end it and its
//! group), and a result larger than a client can read (1 MiB).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;
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
        executable(&dir.join(program), &script);
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
    let client = client_with_token(&Era::Legacy, &server.url, TOKEN).await;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_comes_back_as_a_result_a_client_can_read() {
    let _turn = mix_projects_turn().await;
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

/// A fake toolchain on PATH: `rustc` records its environment and fails (no Rust docs), and
/// `elixir` records its environment, answers the toolchain probe with one installed app
/// (`fakeapp`, beams only) and reads its docs as one module, or, while the file `hang`
/// exists in its directory, starts a `sleep` in its group and waits for it.
struct FakeToolchain {
    dir: tempfile::TempDir,
    logs: tempfile::TempDir,
    path: String,
}

impl FakeToolchain {
    fn new() -> FakeToolchain {
        let dir = tempfile::tempdir().unwrap();
        let logs = tempfile::tempdir().unwrap();
        let (bin, app) = (dir.path().join("bin"), dir.path().join("lib/fakeapp"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(app.join("ebin")).unwrap();
        std::fs::write(app.join("ebin/Elixir.Fake.beam"), "not really a beam").unwrap();
        let record = format!("env > \"{}/$(basename \"$0\").$$\"", logs.path().display());
        let doc = r#"{"app":"fakeapp","vsn":"1.0.0","module":"Fake","kind":"module","doc":"Fake turns widgets into gadgets.","line":1,"source":"/src/fakeapp/lib/fake.ex"}"#;
        let elixir = format!(
            "#!/bin/sh\n{record}\n\
             if [ \"$3\" != \"--\" ]; then printf '1.99.0\\n{app}\\n'; exit 0; fi\n\
             if [ -e \"{hang}\" ]; then sleep 1000 & wait; fi\n\
             echo '{doc}'\n",
            app = app.display(),
            hang = dir.path().join("hang").display(),
        );
        executable(&bin.join("elixir"), &elixir);
        executable(
            &bin.join("rustc"),
            &format!("#!/bin/sh\n{record}\nexit 1\n"),
        );
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        FakeToolchain { dir, logs, path }
    }

    fn hang(&self, hang: bool) {
        let flag = self.dir.path().join("hang");
        match hang {
            true => std::fs::write(flag, "").unwrap(),
            false => std::fs::remove_file(flag).unwrap(),
        }
    }

    /// `drydock serve` with this toolchain on PATH, the token and a secret in its
    /// environment, and `config` as its config file.
    fn server(&self, index: &Path, config: &str) -> Server {
        let config_file = self.dir.path().join("drydock.toml");
        std::fs::write(&config_file, config).unwrap();
        Server::start_with(
            &[
                "--allow-root",
                self.dir.path().to_str().unwrap(),
                "--index",
                index.to_str().unwrap(),
                "--config",
                config_file.to_str().unwrap(),
            ],
            &[
                ("PATH", &self.path),
                ("DRYDOCK_TOKEN", TOKEN),
                ("GITHUB_TOKEN", SECRET),
            ],
        )
    }
}

fn executable(path: &Path, script: &str) {
    std::fs::write(path, script).unwrap();
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(path, permissions).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elixir_reading_docs_out_of_beams_sees_neither_the_token_nor_the_secrets() {
    let toolchain = FakeToolchain::new();
    let index = tempfile::tempdir().unwrap();
    let server = toolchain.server(index.path(), "");
    let client = client_with_token(&Era::Legacy, &server.url, TOKEN).await;

    let report = call_ok(&client, "docs_index", json!({"toolchain_docs": true})).await;
    client.cancel().await.unwrap();

    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["files_indexed"], 1, "{report}");
    let environments = recorded(toolchain.logs.path());
    let runs = |program: &str| environments.iter().filter(|(p, _)| p == program).count();
    assert_eq!(runs("elixir"), 2, "the probe and the docs reader");
    assert_eq!(runs("rustc"), 2, "the sysroot and version probes");
    for (program, environment) in &environments {
        assert!(!environment.contains(TOKEN), "{program} saw DRYDOCK_TOKEN");
        assert!(!environment.contains(SECRET), "{program} saw GITHUB_TOKEN");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_elixir_times_out_and_its_group_dies_while_docs_index_reports_it() {
    let toolchain = FakeToolchain::new();
    toolchain.hang(true);
    let index = tempfile::tempdir().unwrap();
    let config = "[timeouts]\ndocs_index_ms = 3000\n[limits]\nkill_grace_ms = 300\n";
    let server = toolchain.server(index.path(), config);
    let client = client_with_token(&Era::Legacy, &server.url, TOKEN).await;

    let report = call_ok(&client, "docs_index", json!({"toolchain_docs": true})).await;
    client.cancel().await.unwrap();

    assert_eq!(report["error_count"], 1, "{report}");
    let error = report["errors"][0].as_str().unwrap();
    assert!(error.contains("within 3 s"), "{error}");
    server.assert_no_descendants_within(Duration::from_secs(10), "the hung elixir left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_docs_index_ends_a_hung_elixir_and_its_group() {
    let toolchain = FakeToolchain::new();
    toolchain.hang(true);
    let index = tempfile::tempdir().unwrap();
    let server = toolchain.server(index.path(), "");
    let client = client_with_token(&Era::Legacy, &server.url, TOKEN).await;

    let handle = start_call(&client, "docs_index", json!({"toolchain_docs": true})).await;
    server
        .assert_grandchild_starts("the hung elixir started its sleep")
        .await;
    handle.cancel(Some("test".into())).await.unwrap();
    server.assert_no_descendants_within(Duration::from_secs(15), "the cancelled elixir left");
    toolchain.hang(false);
    let again = index_once_the_last_ingest_ended(&client, Duration::from_secs(30)).await;
    client.cancel().await.unwrap();

    assert_eq!(again["files_indexed"], 1, "{again}");
}

/// docs_index of the toolchain docs, retried while the index is busy with an ingest that is
/// winding down (committing what it had).
async fn index_once_the_last_ingest_ended(client: &Client, limit: Duration) -> serde_json::Value {
    let deadline = Instant::now() + limit;
    loop {
        let result = call(client, "docs_index", json!({"toolchain_docs": true})).await;
        let busy = text_of(&result).contains("already running");
        if !busy || Instant::now() > deadline {
            assert_eq!(result.is_error, Some(false), "{result:?}");
            return result.structured_content.expect("structured");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn ctrl_c_on_drydock_index_ends_a_hung_elixir_and_its_group() {
    let toolchain = FakeToolchain::new();
    toolchain.hang(true);
    let index = tempfile::tempdir().unwrap();
    let marker = unique_marker();
    let mut drydock = drydock_command()
        .args(["index", "--toolchain-docs", "--index"])
        .arg(index.path())
        .env("PATH", &toolchain.path)
        .env(MARKER_VAR, &marker)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(120), || marked_sleep_running(&marker)),
        "the hung elixir started its sleep"
    );

    let status = signal_and_wait(&mut drydock, "INT", Duration::from_secs(30));
    if status.is_none() {
        let _ = drydock.kill();
        let _ = drydock.wait();
    }

    assert_eq!(status.and_then(|s| s.code()), Some(130), "{status:?}");
    let left = marked_processes(&marker);
    assert!(left.is_empty(), "Ctrl-C left {left:?}");
}
