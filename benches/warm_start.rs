//! Warm starts: a task's first `cargo build` in a new worktree of a crate using regex and
//! serde (derive), from cargo's local registry (offline), against a no-change build in the
//! checkout (the baseline) and a cold build in a fresh worktree, in the same run; the time the
//! warm start itself takes (`warm_start::warm`, what `task_start` adds), and the disk a
//! worktree takes (its files, and its cargo target after the first build). A mix project with
//! a dependency in its (ignored) `deps` the same way (its own app compiles anew: only the
//! dependencies' builds are copied). `DRYDOCK_BENCH_ITERS` warm worktrees
//! (default 3); one cold build.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use drydock::toolchain::warm_start::{self, Method};
use support::{copy_dir, dir_size, iterations, percentile};

const LOTS: u64 = 1 << 40;

fn main() {
    // Every build below names its target; `warm` must find the checkout's as cargo does.
    // SAFETY: no other thread is running yet.
    unsafe {
        std::env::remove_var("CARGO_TARGET_DIR");
        std::env::remove_var("CARGO_BUILD_TARGET_DIR");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let n = iterations(3);
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_project(root.path());
    let target = checkout.join("target");
    let (cold_checkout, built) = cargo_build(&checkout, &target);
    assert!(built > 10, "regex and serde build");
    let baseline: Vec<Duration> = (0..n.max(5))
        .map(|_| {
            let (took, compiled) = cargo_build(&checkout, &target);
            assert_eq!(compiled, 0, "a no-change build compiles nothing");
            took
        })
        .collect();

    let cold_dir = worktree(&checkout, root.path(), "cold");
    let cold_target = root.path().join("targets/cold");
    let (cold, cold_compiled) = cargo_build(&cold_dir, &cold_target);

    let (mut warm, mut seeds, mut disk, mut compiled, mut how) =
        (Vec::new(), Vec::new(), 0, 0, Method::None);
    for k in 0..n {
        let dir = worktree(&checkout, root.path(), &format!("warm-{k}"));
        let into = root.path().join(format!("targets/warm-{k}"));
        let start = Instant::now();
        let warmed = warm_start::warm(&checkout, &dir, Some(&into), LOTS).await;
        seeds.push(start.elapsed());
        assert_ne!(warmed.method, Method::None, "{}", warmed.note());
        how = warmed.method;
        let (took, built) = cargo_build(&dir, &into);
        warm.push(took);
        compiled = compiled.max(built);
        disk = dir_size(&dir) + dir_size(&into);
        if k == 0 {
            println!("note: {}", warmed.note());
        }
    }
    let (baseline_ms, warm_ms) = (percentile(&baseline, 50.0), percentile(&warm, 50.0));
    let cold_ms = cold.as_secs_f64() * 1000.0;
    println!(
        "warm_start: a crate using regex 1 + serde 1 (derive), cargo build, {n} warm worktrees"
    );
    println!(
        "  cold build in the checkout:            {:8.0} ms",
        cold_checkout.as_secs_f64() * 1000.0
    );
    println!("  no-change build in the checkout (p50):  {baseline_ms:8.0} ms");
    println!(
        "  cold first build in a new worktree:     {cold_ms:8.0} ms ({cold_compiled} units compiled)"
    );
    println!(
        "  warm first build in a new worktree p50: {warm_ms:8.0} ms ({compiled} units compiled)"
    );
    println!(
        "  the warm start itself (p50):            {:8.0} ms ({how:?})",
        percentile(&seeds, 50.0)
    );
    println!(
        "  warm / no-change: {:.2}x (goal <= 2)    cold / warm: {:.1}x (goal >= 10)",
        warm_ms / baseline_ms,
        cold_ms / warm_ms
    );
    println!(
        "  disk per warm worktree: {:.1} MB (the checkout's target: {:.1} MB)",
        mb(disk),
        mb(dir_size(&target))
    );

    mix(root.path(), n).await;
}

async fn mix(root: &Path, n: usize) {
    let checkout = mix_project(&root.join("mix"));
    let (cold_checkout, _) = mix_compile(&checkout);
    let baseline: Vec<Duration> = (0..n.max(5)).map(|_| mix_compile(&checkout).0).collect();
    // Cold: a worktree with the dependency's sources (deps) but no _build.
    let cold_dir = worktree(&checkout, root, "mix-cold");
    copy_dir(&checkout.join("deps"), &cold_dir.join("deps"), &[]);
    let (cold, cold_out) = mix_compile(&cold_dir);
    assert!(cold_out.contains("Compiling"), "{cold_out}");
    let (mut warm, mut seeds, mut disk) = (Vec::new(), Vec::new(), 0);
    for k in 0..n {
        let dir = worktree(&checkout, root, &format!("mix-warm-{k}"));
        let start = Instant::now();
        let warmed = warm_start::warm(&checkout, &dir, None, LOTS).await;
        seeds.push(start.elapsed());
        assert_ne!(warmed.method, Method::None, "{}", warmed.note());
        let (took, out) = mix_compile(&dir);
        assert!(
            !out.contains("==> dep"),
            "the dependency was rebuilt: {out}"
        );
        warm.push(took);
        disk = dir_size(&dir);
    }
    let (baseline_ms, warm_ms) = (percentile(&baseline, 50.0), percentile(&warm, 50.0));
    let cold_ms = cold.as_secs_f64() * 1000.0;
    println!(
        "warm_start: a mix project of 20 modules with a dependency of 20 in deps, mix compile"
    );
    println!(
        "  cold compile in the checkout:            {:8.0} ms",
        cold_checkout.as_secs_f64() * 1000.0
    );
    println!("  no-change compile in the checkout (p50): {baseline_ms:8.0} ms");
    println!("  cold first compile in a new worktree:    {cold_ms:8.0} ms");
    println!("  warm first compile in a new worktree p50:{warm_ms:8.0} ms");
    println!(
        "  the warm start itself (p50):             {:8.0} ms",
        percentile(&seeds, 50.0)
    );
    println!(
        "  warm / no-change: {:.2}x    cold / warm: {:.1}x    disk per warm worktree: {:.1} MB",
        warm_ms / baseline_ms,
        cold_ms / warm_ms,
        mb(disk)
    );
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_NET_OFFLINE", "true")
        .env("MIX_ENV", "dev")
        .output()
        .unwrap_or_else(|e| panic!("{program} did not run: {e}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{program} {args:?}: {text}");
    text
}

fn git(dir: &Path, args: &[&str]) {
    let mut all = vec!["-c", "user.name=b", "-c", "user.email=b@b.invalid"];
    all.extend_from_slice(args);
    run(dir, "git", &all);
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn cargo_project(root: &Path) -> PathBuf {
    let dir = root.join("checkout");
    write(
        &dir.join("Cargo.toml"),
        "[package]\nname = \"warm-bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nregex = \"1\"\nserde = { version = \"1\", features = [\"derive\"] }\n\n[workspace]\n",
    );
    write(
        &dir.join("src/lib.rs"),
        "pub mod shapes;\n\nuse serde::{Deserialize, Serialize};\n\n#[derive(Serialize, Deserialize, Debug, PartialEq)]\npub struct Match {\n    pub start: usize,\n    pub end: usize,\n}\n\npub fn numbers(text: &str) -> Vec<Match> {\n    regex::Regex::new(r\"\\d+\")\n        .unwrap()\n        .find_iter(text)\n        .map(|m| Match { start: m.start(), end: m.end() })\n        .collect()\n}\n",
    );
    write(
        &dir.join("src/shapes.rs"),
        "#[derive(serde::Serialize, serde::Deserialize, Debug)]\npub enum Shape {\n    Square(f64),\n    Circle { radius: f64 },\n}\n",
    );
    write(&dir.join(".gitignore"), "/target\n");
    run(&dir, "git", &["init", "-q", "-b", "main"]);
    run(&dir, "cargo", &["generate-lockfile", "--offline"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "start"]);
    dir
}

/// `cargo build` as drydock's `compile` runs it: how long, and how many units it compiled.
fn cargo_build(dir: &Path, target: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let output = Command::new("cargo")
        .args(["build", "--offline", "--message-format=json"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .unwrap();
    let took = start.elapsed();
    assert!(output.status.success(), "{output:?}");
    let compiled = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
        .count();
    (took, compiled)
}

fn mix_project(dir: &Path) -> PathBuf {
    write(
        &dir.join("mix.exs"),
        "defmodule Bench.MixProject do\n  use Mix.Project\n\n  def project, do: [app: :bench, version: \"0.1.0\", elixir: \"~> 1.14\", deps: [{:dep, path: \"deps/dep\"}]]\nend\n",
    );
    write(
        &dir.join("deps/dep/mix.exs"),
        "defmodule Dep.MixProject do\n  use Mix.Project\n\n  def project, do: [app: :dep, version: \"0.1.0\"]\nend\n",
    );
    for k in 0..20 {
        write(
            &dir.join(format!("lib/bench_{k}.ex")),
            &format!("defmodule Bench{k} do\n  def value, do: Dep{k}.value() + {k}\nend\n"),
        );
        write(
            &dir.join(format!("deps/dep/lib/dep_{k}.ex")),
            &format!("defmodule Dep{k} do\n  def value, do: {k}\nend\n"),
        );
    }
    write(&dir.join(".gitignore"), "/_build/\n/deps/\n");
    run(dir, "git", &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "start"]);
    dir.to_path_buf()
}

fn mix_compile(dir: &Path) -> (Duration, String) {
    let start = Instant::now();
    let out = run(dir, "mix", &["compile"]);
    (start.elapsed(), out)
}

fn worktree(checkout: &Path, root: &Path, name: &str) -> PathBuf {
    let dir = root.join("worktrees").join(name);
    git(
        checkout,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            name,
            dir.to_str().unwrap(),
            "HEAD",
        ],
    );
    dir
}
