//! Warm starts on real cargo and mix projects in temporary git repositories, with real
//! worktrees and real builds (offline: the dependency comes from cargo's local registry).

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

const LOTS: u64 = 1 << 40;

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_NET_OFFLINE", "true")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("MIX_ENV", "dev")
        .output()
        .unwrap_or_else(|e| panic!("{program} did not run: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{text}"
    );
    text
}

fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@t.invalid"];
    all.extend_from_slice(args);
    run(dir, "git", &all)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A committed crate using memchr (from the local registry) in `root/checkout`.
fn cargo_checkout(root: &Path) -> PathBuf {
    let checkout = root.join("checkout");
    write(
        &checkout.join("Cargo.toml"),
        "[package]\nname = \"warmed\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nmemchr = \"2\"\n\n[workspace]\n",
    );
    write(
        &checkout.join("src/lib.rs"),
        "pub mod words;\n\npub fn count(text: &[u8]) -> usize {\n    memchr::memchr_iter(b' ', text).count()\n}\n",
    );
    write(
        &checkout.join("src/words.rs"),
        "pub fn first() -> &'static str {\n    \"one\"\n}\n",
    );
    write(&checkout.join(".gitignore"), "/target\n");
    run(&checkout, "git", &["init", "-q", "-b", "main"]);
    run(&checkout, "cargo", &["generate-lockfile", "--offline"]);
    git(&checkout, &["add", "-A"]);
    git(&checkout, &["commit", "-q", "-m", "start"]);
    checkout
}

/// `cargo build` in `dir` into `target`: each built unit's name and whether it was fresh.
fn cargo_build(dir: &Path, target: &Path) -> BTreeMap<String, bool> {
    let output = Command::new("cargo")
        .args(["build", "--offline", "--message-format=json"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_NET_OFFLINE", "true")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .map(|m| {
            let name = m["target"]["name"].as_str().unwrap().to_string();
            (name, m["fresh"].as_bool().unwrap())
        })
        .collect()
}

fn worktree(checkout: &Path, root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
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

async fn warm_cargo(checkout: &Path, worktree: &Path, target: &Path, limit: u64) -> Warmed {
    let checkout_target = checkout.join("target");
    let env = [("CARGO_TARGET_DIR", Some(checkout_target.to_str().unwrap()))];
    warm_with(checkout, worktree, Some(target), limit, &env).await
}

/// Every file under `dir` with its (device, inode) and link count.
fn files(dir: &Path) -> Vec<(PathBuf, (u64, u64), u64)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let m = e.metadata().unwrap();
            (e.path().to_path_buf(), (m.dev(), m.ino()), m.nlink())
        })
        .collect()
}

#[tokio::test]
async fn a_warm_worktree_builds_nothing_the_checkout_built() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    let built = cargo_build(&checkout, &checkout.join("target"));
    assert_eq!(built.get("memchr"), Some(&false), "{built:?}");

    // Cold: a worktree that is not warmed builds everything.
    let cold = worktree(&checkout, root.path(), "cold");
    let cold_built = cargo_build(&cold, &root.path().join("cold-target"));
    assert_eq!(cold_built.get("memchr"), Some(&false), "{cold_built:?}");
    assert_eq!(cold_built.get("warmed"), Some(&false), "{cold_built:?}");

    let warm = worktree(&checkout, root.path(), "warm");
    let target = root.path().join("warm-target");
    let warmed = warm_cargo(&checkout, &warm, &target, LOTS).await;
    assert_ne!(warmed.method, Method::None, "{}", warmed.note());
    assert!(warmed.bytes > 0 && warmed.files > 0, "{warmed:?}");
    assert!(warmed.kept_times >= 4, "{warmed:?}");
    let note = warmed.note();
    assert!(note.contains("cargo target"), "{note}");

    // Never a hard link: each file is one of its own, sharing no inode with the checkout's.
    let theirs: HashSet<_> = files(&checkout.join("target"))
        .into_iter()
        .map(|(_, inode, _)| inode)
        .collect();
    let ours = files(&target);
    assert!(!ours.is_empty());
    for (path, inode, links) in &ours {
        assert_eq!(*links, 1, "{} has {links} links", path.display());
        assert!(
            !theirs.contains(inode),
            "{} shares an inode",
            path.display()
        );
    }

    let warm_built = cargo_build(&warm, &target);
    assert!(
        warm_built.values().all(|fresh| *fresh),
        "the warm worktree rebuilt something: {warm_built:?}"
    );
    assert!(warm_built.contains_key("memchr") && warm_built.contains_key("warmed"));
}

#[tokio::test]
async fn a_file_changed_in_the_checkout_rebuilds_in_the_worktree() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    // Changed in the checkout and not committed: the checkout's build is of other code.
    write(
        &checkout.join("src/words.rs"),
        "pub fn first() -> &'static str {\n    \"uno\"\n}\n",
    );
    cargo_build(&checkout, &checkout.join("target"));

    let warm = worktree(&checkout, root.path(), "warm");
    let target = root.path().join("warm-target");
    let warmed = warm_cargo(&checkout, &warm, &target, LOTS).await;
    assert_ne!(warmed.method, Method::None, "{}", warmed.note());
    let built = cargo_build(&warm, &target);
    assert_eq!(built.get("memchr"), Some(&true), "{built:?}");
    assert_eq!(
        built.get("warmed"),
        Some(&false),
        "the worktree's crate differs from the checkout's and must rebuild: {built:?}"
    );
    let words = std::fs::read_to_string(warm.join("src/words.rs")).unwrap();
    assert!(words.contains("\"one\""), "{words}");
}

#[tokio::test]
async fn the_cap_leaves_out_incremental_caches_then_everything() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    cargo_build(&checkout, &checkout.join("target"));
    let (needed, optional) = size_of(&Part {
        label: "cargo target",
        from: checkout.join("target"),
        to: root.path().join("unused"),
        cargo: true,
        from_root: checkout.clone(),
        to_root: root.path().join("unused"),
        skip: Vec::new(),
        checkout_paths: Vec::new(),
    });
    assert!(needed > 0 && optional > 0, "{needed} {optional}");

    // Over the cap: nothing is copied, and the note says why.
    let over = worktree(&checkout, root.path(), "over");
    let over_target = root.path().join("over-target");
    let warmed = warm_cargo(&checkout, &over, &over_target, needed - 1).await;
    assert_eq!(warmed.method, Method::None);
    assert_eq!((warmed.bytes, warmed.files), (0, 0));
    assert!(!over_target.exists());
    let note = warmed.note();
    assert!(note.contains("warm_start_limit_mb"), "{note}");
    assert!(note.contains("no build output was copied"), "{note}");

    // Room for all but the incremental caches: those are left out, and the build is warm.
    let tight = worktree(&checkout, root.path(), "tight");
    let tight_target = root.path().join("tight-target");
    let warmed = warm_cargo(&checkout, &tight, &tight_target, needed).await;
    assert_eq!(warmed.bytes, needed, "{}", warmed.note());
    assert!(
        warmed.note().contains("incremental caches"),
        "{}",
        warmed.note()
    );
    assert!(!tight_target.join("debug/incremental").exists());
    let built = cargo_build(&tight, &tight_target);
    assert!(built.values().all(|fresh| *fresh), "{built:?}");
}

#[tokio::test]
async fn a_checkout_that_never_built_gives_nothing_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    let fresh = worktree(&checkout, root.path(), "fresh");
    let target = root.path().join("target");
    let warmed = warm_cargo(&checkout, &fresh, &target, LOTS).await;
    assert_eq!(warmed.method, Method::None);
    assert!(
        warmed.note().contains("has not built with cargo yet"),
        "{}",
        warmed.note()
    );
    assert!(!target.exists());
}

/// A committed mix project with a path dependency kept in its (ignored) `deps` folder.
fn mix_checkout(root: &Path) -> PathBuf {
    let checkout = root.join("checkout");
    write(
        &checkout.join("mix.exs"),
        "defmodule Warmed.MixProject do\n  use Mix.Project\n\n  def project, do: [app: :warmed, version: \"0.1.0\", elixir: \"~> 1.14\", deps: [{:tiny, path: \"deps/tiny\"}]]\nend\n",
    );
    write(
        &checkout.join("lib/warmed.ex"),
        "defmodule Warmed do\n  def hello, do: Tiny.word()\nend\n",
    );
    write(
        &checkout.join("lib/other.ex"),
        "defmodule Warmed.Other do\n  def two, do: 2\nend\n",
    );
    write(
        &checkout.join("lib/where.ex"),
        "defmodule Warmed.Where do\n  def dir, do: __DIR__\nend\n",
    );
    write(
        &checkout.join("deps/tiny/mix.exs"),
        "defmodule Tiny.MixProject do\n  use Mix.Project\n\n  def project, do: [app: :tiny, version: \"0.1.0\"]\nend\n",
    );
    write(
        &checkout.join("deps/tiny/lib/tiny.ex"),
        "defmodule Tiny do\n  def word, do: :world\nend\n",
    );
    write(&checkout.join(".gitignore"), "/_build/\n/deps/\n");
    run(&checkout, "git", &["init", "-q", "-b", "main"]);
    git(&checkout, &["add", "-A"]);
    git(&checkout, &["commit", "-q", "-m", "start"]);
    checkout
}

#[tokio::test]
async fn a_warm_mix_worktree_compiles_its_own_app_and_not_its_dependency() {
    let root = tempfile::tempdir().unwrap();
    let checkout = mix_checkout(root.path());
    let first = run(&checkout, "mix", &["compile"]);
    assert!(first.contains("Compiling"), "{first}");
    // Changed in the checkout, not committed: compiled there, must compile again in a task.
    write(
        &checkout.join("lib/other.ex"),
        "defmodule Warmed.Other do\n  def two, do: 1 + 1\nend\n",
    );
    run(&checkout, "mix", &["compile"]);

    let task_dir = worktree(&checkout, root.path(), "warm");
    assert!(!task_dir.join("deps").exists(), "deps is not tracked");
    let warmed = warm(&checkout, &task_dir, None, LOTS).await;
    assert_ne!(warmed.method, Method::None, "{}", warmed.note());
    let note = warmed.note();
    assert!(
        note.contains("mix _build") && note.contains("mix deps"),
        "{note}"
    );
    for (path, _, links) in files(&task_dir.join("_build")) {
        assert_eq!(links, 1, "{} is linked", path.display());
    }
    let compiled = run(&task_dir, "mix", &["compile"]);
    assert!(
        compiled.contains("Compiling 3 files (.ex)"),
        "the project's own app compiles anew (its code may hold the checkout's paths): {compiled}"
    );
    assert!(
        !compiled.contains("==> tiny"),
        "the dependency was rebuilt: {compiled}"
    );
    let again = run(&task_dir, "mix", &["compile"]);
    assert!(!again.contains("Compiling"), "{again}");
    let dir = run(
        &task_dir,
        "mix",
        &["run", "-e", "IO.puts(Warmed.Where.dir())"],
    );
    assert_eq!(dir.trim(), task_dir.join("lib").to_str().unwrap(), "{dir}");
    // The checkout's build is its own still.
    let theirs = run(&checkout, "mix", &["compile"]);
    assert!(!theirs.contains("Compiling"), "{theirs}");
}

#[tokio::test]
async fn a_project_of_neither_kind_or_a_shared_target_is_left_alone_and_said_so() {
    let root = tempfile::tempdir().unwrap();
    let plain = root.path().join("plain");
    write(&plain.join("README.md"), "hello\n");
    run(&plain, "git", &["init", "-q", "-b", "main"]);
    git(&plain, &["add", "-A"]);
    git(&plain, &["commit", "-q", "-m", "start"]);
    let dir = worktree(&plain, root.path(), "plain-task");
    let warmed = warm(&plain, &dir, Some(&root.path().join("t")), LOTS).await;
    assert_eq!(warmed.method, Method::None);
    assert!(
        warmed.note().contains("neither a cargo nor a mix project"),
        "{}",
        warmed.note()
    );

    let other = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(other.path());
    let dir = worktree(&checkout, other.path(), "shared-task");
    let warmed = warm(&checkout, &dir, None, LOTS).await;
    assert_eq!(warmed.method, Method::None);
    assert!(
        warmed.note().contains("shared by tasks"),
        "{}",
        warmed.note()
    );
}

#[tokio::test]
async fn a_crate_compiled_with_the_checkout_s_path_in_it_rebuilds() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    write(
        &checkout.join("src/words.rs"),
        "pub fn first() -> &'static str {\n    \"one\"\n}\n\npub const HOME: &str = env!(\"CARGO_MANIFEST_DIR\");\n",
    );
    git(&checkout, &["commit", "-q", "-a", "-m", "home"]);
    cargo_build(&checkout, &checkout.join("target"));

    let task_dir = worktree(&checkout, root.path(), "warm");
    let target = root.path().join("warm-target");
    let warmed = warm_cargo(&checkout, &task_dir, &target, LOTS).await;
    assert_ne!(warmed.method, Method::None, "{}", warmed.note());
    assert!(
        warmed.note().contains("rebuild: warmed"),
        "{}",
        warmed.note()
    );
    let built = cargo_build(&task_dir, &target);
    assert_eq!(built.get("memchr"), Some(&true), "{built:?}");
    assert_eq!(
        built.get("warmed"),
        Some(&false),
        "env!(\"CARGO_MANIFEST_DIR\") names the checkout in the copied build: {built:?}"
    );
    let info = std::fs::read_dir(target.join("debug/deps"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("warmed-"))
        .filter(|e| e.path().extension().is_some_and(|x| x == "d"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    let home = format!("env-dep:CARGO_MANIFEST_DIR={}", task_dir.display());
    assert!(info.contains(&home), "{info}");
}

/// Issue 48: the repository's `.cargo/config.toml` names a target directory outside the
/// checkout (the person's `~/.ssh`, say): nothing of it is copied for the agent.
#[tokio::test]
async fn a_target_the_repository_names_outside_the_checkout_is_not_copied() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    let secrets = root.path().join("ssh");
    write(&secrets.join("id_ed25519"), "the person's key");
    write(
        &checkout.join(".cargo/config.toml"),
        "[build]\ntarget-dir = \"../ssh\"\n",
    );
    let tree = worktree(&checkout, root.path(), "outside");
    let target = root.path().join("task-target");
    // No CARGO_TARGET_DIR of the person's: the checkout's config decides.
    let warmed = warm_with(
        &checkout,
        &tree,
        Some(&target),
        LOTS,
        &[("CARGO_TARGET_DIR", None)],
    )
    .await;
    assert_eq!(warmed.method, Method::None, "{}", warmed.note());
    assert!(
        warmed.note().contains("is not inside it"),
        "{}",
        warmed.note()
    );
    assert!(!target.join("id_ed25519").exists());
    assert!(
        kept_target(checkout.join("target"), &checkout, None).is_ok(),
        "the checkout's own target is kept"
    );
    let link = checkout.join("linked");
    std::os::unix::fs::symlink(&secrets, &link).unwrap();
    assert!(matches!(
        kept_target(link.join("debug"), &checkout, None),
        Err(WarmStartError::TargetOutside { .. })
    ));
    assert!(kept_target(secrets.clone(), &checkout, Some(&secrets)).is_ok());
}

/// Issue 48: `cargo metadata` reads the repository's `rust-toolchain.toml`, whose `path` may
/// name a program of the repository's: it runs in a sandbox, where it changes nothing outside.
#[tokio::test]
async fn a_toolchain_the_repository_names_runs_in_a_sandbox() {
    let root = tempfile::tempdir().unwrap();
    let checkout = cargo_checkout(root.path());
    let marker = root.path().join("ran-outside");
    let fake = checkout.join("evil-toolchain/bin");
    write(
        &fake.join("cargo"),
        &format!("#!/bin/sh\necho ran > '{}'\nexit 1\n", marker.display()),
    );
    for program in ["cargo", "rustc"] {
        let path = fake.join(program);
        if !path.exists() {
            std::fs::copy(fake.join("cargo"), &path).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(
        &checkout.join("rust-toolchain.toml"),
        &format!(
            "[toolchain]\npath = \"{}\"\n",
            checkout.join("evil-toolchain").display()
        ),
    );
    // As a drydock started outside cargo: no RUSTUP_TOOLCHAIN over the repository's file.
    let refused = cargo_target_of(&checkout, &[("RUSTUP_TOOLCHAIN", None)])
        .await
        .unwrap_err();
    assert!(
        matches!(refused, WarmStartError::MetadataFailed(_)),
        "{refused}"
    );
    assert!(
        !marker.exists(),
        "the repository's toolchain ran outside the sandbox"
    );
}
