//! What a task's sandbox costs: starting one (`env -i` and bubblewrap's namespaces and
//! mounts, `true` inside against `true` outside), and a build and a test run inside against outside, paired
//! in one run on a copy of test-projects/cargo-clean with one warm target directory.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drydock::sandbox::confinement::{passed_env, readable, toolchain_dirs};
use drydock::sandbox::{Confinement, Mount, support as sandbox_support};
use support::{iterations, percentile, test_projects};

fn timed(command: &mut Command) -> Duration {
    let started = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("runs");
    assert!(status.success(), "{command:?}");
    started.elapsed()
}

/// `program args` in `dir`, outside or inside `confinement`.
fn command(
    bwrap: Option<(&Path, &Confinement)>,
    dir: &Path,
    program: &str,
    args: &[&str],
) -> Command {
    match bwrap {
        // As a task's sandbox starts: `env -i` with the passed variables, then bubblewrap.
        Some((bwrap, confinement)) => {
            let argv = std::iter::once(program)
                .chain(args.iter().copied())
                .map(String::from);
            let words = confinement.command(bwrap, argv);
            let mut command = Command::new(&words[0]);
            command.args(&words[1..]).current_dir(dir);
            command
        }
        None => {
            let mut command = Command::new(program);
            command.args(args).current_dir(dir);
            command
        }
    }
}

fn compare(
    label: &str,
    n: usize,
    mut outside: impl FnMut() -> Duration,
    mut inside: impl FnMut() -> Duration,
) {
    let (mut direct, mut confined) = (Vec::new(), Vec::new());
    for i in 0..n {
        // Alternate the order so drift on a noisy machine hits both sides alike.
        if i % 2 == 0 {
            direct.push(outside());
        }
        confined.push(inside());
        if i % 2 == 1 {
            direct.push(outside());
        }
    }
    let (out, ins) = (percentile(&direct, 50.0), percentile(&confined, 50.0));
    println!("{label}, {n} paired runs:");
    println!(
        "  outside      p50 {out:8.1} ms  p90 {:8.1} ms",
        percentile(&direct, 90.0)
    );
    println!(
        "  in a sandbox p50 {ins:8.1} ms  p90 {:8.1} ms",
        percentile(&confined, 90.0)
    );
    println!(
        "  sandbox costs {:+.1} ms at p50 ({:.2}x)",
        ins - out,
        ins / out
    );
}

fn main() {
    let support = sandbox_support::host();
    let Some(bwrap) = support.bwrap() else {
        panic!("no sandbox on this host: {}", support.describe());
    };
    let place = tempfile::tempdir().unwrap();
    let root = place.path().canonicalize().unwrap();
    let project = root.join("cargo-clean");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(test_projects().join("cargo-clean"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    let target = root.join("target");
    std::fs::create_dir_all(&target).unwrap();
    let confinement = Confinement {
        work: project.clone(),
        readable: readable(toolchain_dirs(), None, &[]),
        writable: vec![Mount::same(&target)],
        passed: passed_env(&[]),
        env: vec![
            ("CARGO_NET_OFFLINE".into(), "true".into()),
            ("CARGO_TARGET_DIR".into(), target.display().to_string()),
        ],
        ..Confinement::default()
    };
    let sandboxed = Some((bwrap, &confinement));
    println!("{}", support.describe());

    compare(
        "start: `true`",
        iterations(40),
        || timed(&mut command(None, &project, "true", &[])),
        || timed(&mut command(sandboxed, &project, "true", &[])),
    );
    let cargo = |bwrap, args: &[&str]| {
        let mut command = command(bwrap, &project, "cargo", args);
        command.env("CARGO_TARGET_DIR", &target);
        timed(&mut command)
    };
    // Warm: the same target directory serves both sides (the paths are the same inside).
    cargo(None, &["test", "--no-run"]);
    compare(
        "cargo build, up to date",
        iterations(20),
        || cargo(None, &["build"]),
        || cargo(sandboxed, &["build"]),
    );
    compare(
        "cargo test, built",
        iterations(10),
        || cargo(None, &["test"]),
        || cargo(sandboxed, &["test"]),
    );
}
