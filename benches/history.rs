//! The project memory's cost: an up-to-date `compile` of `test-projects/history-rust` with
//! recording on against the same call with it off (the baseline), alternated in one run; and
//! what a thousand recorded calls take on disk (each with three errors, one source file
//! changed per call, as an agent's edit-compile loop does); and the same compile with the
//! memory's file write-locked by another connection against it free (a held memory stalls
//! no call: `tests/it/blocked_memory.rs` shows nothing is lost, this measures the wait).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use drydock::call::{Call, Silent};
use drydock::catalog::ToolName;
use drydock::config::Config;
use drydock::docs::Docs;
use drydock::events::Events;
use drydock::history::History;
use drydock::toolchain::observe::{Observed, ObservedResult, Observer, Toolchain};
use drydock::toolchain::reports::{BuildDiagnostics, BuildReport, BuildStatus};
use drydock::toolchain::requests::CompileRequest;
use drydock::toolchain::results::{Diagnostic, Severity};
use drydock::toolchain::{BuildKind, Toolchains};
use support::*;
use tokio_util::sync::CancellationToken;

fn copy(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| e.file_name() != "target")
        .filter_map(Result::ok)
    {
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        match entry.file_type().is_dir() {
            true => std::fs::create_dir_all(&dest).unwrap(),
            false => {
                std::fs::copy(entry.path(), &dest).unwrap();
            }
        }
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "p",
        ],
    ] {
        std::process::Command::new("git")
            .args(args)
            .current_dir(to)
            .output()
            .unwrap();
    }
}

fn config_with(root: &Path, data_dir: &Path, recording: bool) -> Arc<Config> {
    let mut config = (*config()).clone();
    config.allowed_roots = vec![root.to_path_buf()];
    config.data_dir = data_dir.to_path_buf();
    config.history.enabled = recording;
    Arc::new(config)
}

async fn compile(tools: &Toolchains, project: &Path) -> Duration {
    let request = CompileRequest {
        project_path: project.display().to_string(),
        ..Default::default()
    };
    let call = Call::new(&Silent, CancellationToken::new());
    let started = Instant::now();
    let report = tools
        .build(BuildKind::Compile, request, &call)
        .await
        .unwrap();
    assert_eq!(report.status, BuildStatus::Ok);
    started.elapsed()
}

fn error(file: &str, line: u32, message: &str) -> Diagnostic {
    Diagnostic {
        file: Some(file.into()),
        line: Some(line),
        column: Some(5),
        end_line: None,
        end_column: None,
        severity: Severity::Error,
        code: Some("E0308".into()),
        message: message.into(),
        label: Some("expected `u32`, found `&str`".into()),
        notes: Vec::new(),
        suggestions: Vec::new(),
        rendered: None,
    }
}

#[tokio::main]
async fn main() {
    let n = iterations(30);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("history-rust");
    copy(&test_projects().join("history-rust"), &project);
    let (on_dir, off_dir) = (root.join("data-on"), root.join("data-off"));
    let on = config_with(&root, &on_dir, true);
    let off = config_with(&root, &off_dir, false);
    let history = History::new(
        on.clone(),
        Docs::new(on.clone(), Arc::new(Events::default())),
    );
    let recording = Toolchains::new(on.clone()).observed_by(history.clone());
    let baseline = Toolchains::new(off);
    compile(&recording, &project).await;
    compile(&baseline, &project).await;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..n {
        without.push(compile(&baseline, &project).await);
        with.push(compile(&recording, &project).await);
    }
    history.flush().await;
    let (p50_on, p50_off) = (percentile(&with, 50.0), percentile(&without, 50.0));
    println!(
        "up-to-date compile of history-rust, {n} each: recording on p50 {p50_on:.2} ms, p99 {:.2} ms; off p50 {p50_off:.2} ms, p99 {:.2} ms; {:+.2} ms p50 ({:.3}x)",
        percentile(&with, 99.0),
        percentile(&without, 99.0),
        p50_on - p50_off,
        p50_on / p50_off
    );

    // The memory's file held by a neighbour in a write transaction (as `sqlite3` holds it):
    // the build answers as it does with the file free, its run recorded once the lock goes.
    let holder = rusqlite::Connection::open(on_dir.join("history.sqlite3")).unwrap();
    let (mut held, mut free) = (Vec::new(), Vec::new());
    for _ in 0..n {
        free.push(compile(&recording, &project).await);
        holder.execute_batch("BEGIN EXCLUSIVE;").unwrap();
        held.push(compile(&recording, &project).await);
        holder.execute_batch("ROLLBACK;").unwrap();
        history.flush().await;
    }
    let (p50_held, p50_free) = (percentile(&held, 50.0), percentile(&free, 50.0));
    println!(
        "up-to-date compile of history-rust, {n} each, recording on: the memory write-locked by another connection p50 {p50_held:.2} ms, p99 {:.2} ms; free p50 {p50_free:.2} ms, p99 {:.2} ms ({:.3}x)",
        percentile(&held, 99.0),
        percentile(&free, 99.0),
        p50_held / p50_free
    );

    // A thousand recorded calls, each after one edit of one file.
    let store_dir = root.join("data-thousand");
    let thousand = config_with(&root, &store_dir, true);
    let memory = History::new(
        thousand.clone(),
        Docs::new(thousand, Arc::new(Events::default())),
    );
    let calls = 1000;
    let started = Instant::now();
    for i in 0..calls {
        let edited = project.join("src/report.rs");
        let mut text = std::fs::read_to_string(&edited).unwrap();
        text.push_str(&format!("// edit {i}\n"));
        std::fs::write(&edited, text).unwrap();
        let report = BuildReport {
            status: BuildStatus::Failed,
            diagnostics: BuildDiagnostics::capped(vec![
                error("src/report.rs", 10 + i % 7, "mismatched types"),
                error(
                    "src/inventory.rs",
                    40,
                    &format!("cannot find value `v{}` in this scope", i % 50),
                ),
                error("src/lib.rs", 3, "mismatched types"),
            ]),
            duration_ms: 100,
            output: None,
            notes: Vec::new(),
            seen_before: Vec::new(),
        };
        let started = memory.starting(&project);
        memory
            .observe(
                started,
                Observed {
                    project: &project,
                    toolchain: Toolchain::named("cargo").expect("drydock has cargo"),
                    tool: ToolName::Compile,
                    check: "compile".into(),
                    result: ObservedResult::Build(&report),
                    client: Some("bench"),
                },
            )
            .await;
        if i % 100 == 99 {
            memory.flush().await;
        }
    }
    memory.flush().await;
    let took = started.elapsed();
    let bytes = dir_size(&store_dir);
    println!(
        "{calls} recorded calls (3 errors each, one file edited before each): {:.1} KiB on disk, {:.2} KiB per call, {:.2} MiB per thousand; recorded at {:.0} calls/s",
        bytes as f64 / 1024.0,
        bytes as f64 / 1024.0 / calls as f64,
        bytes as f64 / 1024.0 / 1024.0 / calls as f64 * 1000.0,
        calls as f64 / took.as_secs_f64()
    );
}
