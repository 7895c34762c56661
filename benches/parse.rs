//! Parsing a tool's output at scale, end to end: `test` over MCP on a stand-in `cargo` that
//! prints 100 000 libtest lines (100 of them failing, with their panics) among 25 000 of
//! cargo's JSON messages (5 000 warnings), and `compile` on a stand-in `mix` that prints
//! 30 000 warnings. Each against the same stand-in's output read line by line without
//! parsing, and against the same call on a few lines (drydock's fixed cost), in one run.
//! These are the sizes the parsers' unit tests once timed; the figure to watch is the cost
//! per line beyond reading it.
//!
//! Needs cargo and mix on PATH (the stand-ins pass every other subcommand to them).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

const TEST_LINES: usize = 100_000;
const MIX_WARNINGS: usize = 30_000;

fn main() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().canonicalize().unwrap();
    let cargo_project = root.join("cargo-clean");
    let mix_project = root.join("mix-clean");
    copy_dir(
        &test_projects().join("cargo-clean"),
        &cargo_project,
        &["target"],
    );
    copy_dir(
        &test_projects().join("mix-clean"),
        &mix_project,
        &["_build", "deps"],
    );
    let outputs = root.join("outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    let fakes = root.join("bin");
    std::fs::create_dir_all(&fakes).unwrap();
    stand_in(
        &fakes,
        "cargo",
        "test",
        &outputs,
        ("cargo-test.out", ""),
        101,
    );
    stand_in(
        &fakes,
        "mix",
        "compile",
        &outputs,
        ("", "mix-compile.err"),
        0,
    );

    let rounds = iterations(5);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut server, url) = serve(&root, &fakes);
    runtime.block_on(async {
        let client = connect(&url).await;
        let cargo_args = json!({"project_path": cargo_project.to_str().unwrap()});
        let mix_args = json!({"project_path": mix_project.to_str().unwrap()});

        std::fs::write(outputs.join("cargo-test.out"), cargo_test_output(10)).unwrap();
        std::fs::write(outputs.join("mix-compile.err"), mix_warnings(10)).unwrap();
        call(&client, "compile", mix_args.clone()).await;
        let small_test = timed(rounds, || call(&client, "test", cargo_args.clone())).await;
        let small_mix = timed(rounds, || call(&client, "compile", mix_args.clone())).await;

        let test_output = cargo_test_output(TEST_LINES);
        std::fs::write(outputs.join("cargo-test.out"), &test_output).unwrap();
        std::fs::write(outputs.join("mix-compile.err"), mix_warnings(MIX_WARNINGS)).unwrap();
        let report = call(&client, "test", cargo_args.clone()).await;
        assert_eq!(
            (&report["passed"], &report["failed"]),
            (&json!(TEST_LINES - 100), &json!(100)),
            "the stand-in's run was read: {report:#}"
        );
        let big_test = timed(rounds, || call(&client, "test", cargo_args.clone())).await;
        let read_test = timed(rounds, || async {
            read_lines(&fakes.join("cargo"), &["test"], &cargo_project)
        })
        .await;
        let compiled = call(&client, "compile", mix_args.clone()).await;
        let warnings = compiled["warnings"].as_array().unwrap().len() as u64
            + compiled["omitted_warnings"].as_u64().unwrap();
        assert_eq!(
            warnings, MIX_WARNINGS as u64,
            "the stand-in's warnings were read"
        );
        let big_mix = timed(rounds, || call(&client, "compile", mix_args.clone())).await;
        let read_mix = timed(rounds, || async {
            read_lines(&fakes.join("mix"), &["compile"], &mix_project)
        })
        .await;

        let lines = test_output.lines().count();
        println!("parse: {rounds} rounds each, p50 in ms");
        report_one("cargo test", lines, &small_test, &big_test, &read_test);
        report_one(
            "mix compile",
            3 * MIX_WARNINGS,
            &small_mix,
            &big_mix,
            &read_mix,
        );
    });
    let _ = server.kill();
    let _ = server.wait();
}

fn report_one(what: &str, lines: usize, small: &[Duration], big: &[Duration], read: &[Duration]) {
    let (small, big, read) = (
        percentile(small, 50.0),
        percentile(big, 50.0),
        percentile(read, 50.0),
    );
    let per_line_us = (big - small) * 1000.0 / lines as f64;
    let read_per_line_us = read * 1000.0 / lines as f64;
    println!(
        "  {what}: {lines} lines {big:.0} ms through drydock ({small:.0} ms on 10 lines), \
         {read:.0} ms read without parsing; {per_line_us:.2} µs a line against {read_per_line_us:.2} µs \
         ({:.1}x)",
        per_line_us / read_per_line_us.max(f64::EPSILON)
    );
}

async fn timed<F: Future>(rounds: usize, mut run: impl FnMut() -> F) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        run().await;
        samples.push(started.elapsed());
    }
    samples
}

/// The stand-in's output for `args`, read line by line and dropped: the baseline.
fn read_lines(program: &Path, args: &[&str], dir: &Path) -> usize {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let errors = std::thread::spawn(move || stderr.lines().count());
    let lines = BufReader::new(child.stdout.take().unwrap()).lines().count();
    let lines = lines + errors.join().unwrap();
    child.wait().unwrap();
    lines
}

/// `dir/NAME`, a script that prints `outputs/STDOUT` and `outputs/STDERR` and exits with
/// `code` for `NAME SUBCOMMAND ...`, and runs the real `NAME` (found on PATH now) otherwise.
fn stand_in(
    dir: &Path,
    name: &str,
    subcommand: &str,
    outputs: &Path,
    files: (&str, &str),
    code: u8,
) {
    let real = which(name);
    let cat = |file: &str, to: &str| match file {
        "" => String::new(),
        file => format!("cat {} {to}\n", outputs.join(file).display()),
    };
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = {subcommand} ]; then\n{}{}exit {code}\nfi\nexec {} \"$@\"\n",
        cat(files.0, ""),
        cat(files.1, ">&2"),
        real.display()
    );
    let path = dir.join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(script.as_bytes()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

/// `cargo test --message-format=json` as a huge run prints it: cargo's messages (an
/// artifact or a warning every fourth line), then libtest's lines, one test in 1000 failing.
fn cargo_test_output(tests: usize) -> String {
    let mut text = String::new();
    for index in 0..tests / 4 {
        match index % 5 {
            0 => text.push_str(&warning_message(index / 5 % 5_000 + 1)),
            _ => text.push_str(
                r#"{"reason":"compiler-artifact","target":{"name":"t"},"profile":{"test":true},"executable":null,"fresh":true}"#,
            ),
        }
        text.push('\n');
    }
    text.push_str(&format!("\nrunning {tests} tests\n"));
    let failing = |index: usize| index.is_multiple_of(1000);
    for index in 0..tests {
        let outcome = if failing(index) { "FAILED" } else { "ok" };
        text.push_str(&format!("test module::test_{index} ... {outcome}\n"));
    }
    text.push_str("\nfailures:\n\n");
    for index in (0..tests).filter(|i| failing(*i)) {
        text.push_str(&format!(
            "---- module::test_{index} stdout ----\n\nthread 'module::test_{index}' (1) panicked at src/lib.rs:{line}:5:\nassertion `left == right` failed\n  left: 1\n right: 2\n\n",
            line = index + 1
        ));
    }
    let failed = (0..tests).filter(|i| failing(*i)).count();
    text.push_str(&format!(
        "test result: FAILED. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s\n",
        tests - failed
    ));
    text
}

fn warning_message(line: usize) -> String {
    let span = json!({
        "file_name": "src/lib.rs", "byte_start": 0, "byte_end": 1, "line_start": line,
        "line_end": line, "column_start": 1, "column_end": 2, "is_primary": true,
        "text": [], "label": null, "suggested_replacement": null,
        "suggestion_applicability": null, "expansion": null
    });
    let message: Value = json!({
        "reason": "compiler-message",
        "package_id": "path+file:///p#cargo-clean@0.1.0",
        "manifest_path": "/p/Cargo.toml",
        "target": {"name": "cargo_clean", "kind": ["lib"], "src_path": "src/lib.rs"},
        "message": {
            "$message_type": "diagnostic", "message": "unused", "level": "warning",
            "code": {"code": "unused", "explanation": null}, "spans": [span],
            "children": [], "rendered": "warning: unused\n"
        }
    });
    message.to_string()
}

/// mix (Elixir 1.14) warning about `count` unused variables, three lines each.
fn mix_warnings(count: usize) -> String {
    (0..count)
        .map(|index| {
            format!(
                "warning: variable \"v{index}\" is unused\n  lib/big.ex:{}: Big.f/1\n\n",
                index + 1
            )
        })
        .collect()
}

/// A `drydock serve` whose only root is `root` and whose `cargo` and `mix` are the stand-ins
/// in `fakes`; its URL.
fn serve(root: &Path, fakes: &Path) -> (Child, String) {
    let path = format!(
        "{}:{}",
        fakes.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    drydock_serve(|command| {
        command
            .arg("--allow-root")
            .arg(root)
            .arg("--data-dir")
            .arg(root.join("data"))
            .env("PATH", path)
            .current_dir(root);
    })
}
