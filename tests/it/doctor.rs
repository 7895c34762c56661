//! `drydock doctor`: what it finds on this machine, what it says is missing and how to fix
//! it, and its exit status, run as the installed binary would be (outside the checkout).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drydock::docs::embed::cached_onnx_runtime;
use serde_json::Value;

use crate::postgres::{Postgres, free_port};
use crate::support::{drydock_bin, isolate};

/// `drydock doctor` copied out of the build tree (as `cargo install` leaves it), run in a
/// home of its own (the user's Claude Code settings stay unread) with `config` as its config
/// and `path` as its PATH: its text, and its `--json` report.
fn doctor(home: &Path, config: &str, path: &str) -> (Output, Value) {
    let installed = home.join("bin/drydock");
    if !installed.exists() {
        std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
        std::fs::copy(drydock_bin(), &installed).unwrap();
    }
    let config_file = home.join("drydock.toml");
    std::fs::write(&config_file, config).unwrap();
    let run = |json: bool| {
        let mut command = Command::new(&installed);
        isolate(&mut command)
            .env("PATH", path)
            .env("HOME", home)
            .current_dir(home)
            .arg("doctor")
            .arg("--config")
            .arg(&config_file)
            .arg("--data-dir")
            .arg(home.join("data"));
        // The machine's toolchains and ONNX Runtime, though HOME is another.
        let real_home = PathBuf::from(std::env::var_os("HOME").unwrap());
        for (name, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let dir = std::env::var_os(name).map_or_else(|| real_home.join(default), PathBuf::from);
            command.env(name, dir);
        }
        if std::env::var_os("ORT_DYLIB_PATH").is_none()
            && let Some(ort) = cached_onnx_runtime()
        {
            command.env("ORT_DYLIB_PATH", ort);
        }
        if json {
            command.arg("--json");
        }
        command.output().unwrap()
    };
    let text = run(false);
    let json = run(true);
    let report = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json printed no JSON ({e}): {}",
            String::from_utf8_lossy(&json.stderr)
        )
    });
    assert_eq!(text.status.code(), json.status.code());
    (text, report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report:#}"))
}

#[test]
fn with_what_the_switched_on_toolsets_need_the_doctor_is_satisfied() {
    let home = tempfile::tempdir().unwrap();
    let path = std::env::var("PATH").unwrap();
    let (output, report) = doctor(home.path(), "toolsets = [\"build\", \"docs\"]\n", &path);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}\n{report:#}");
    assert_eq!(report["ok"], true);
    let model = check(&report, "embedding model");
    assert_eq!(model["status"], "ok");
    assert!(
        model["detail"]
            .as_str()
            .unwrap()
            .contains("built into drydock"),
        "an installed binary carries its model: {model}"
    );
    assert_eq!(check(&report, "ONNX Runtime")["status"], "ok");
    assert_eq!(check(&report, "data dir")["status"], "ok");
    assert_eq!(check(&report, "cargo")["status"], "ok");
    // No index yet: reported with the command that builds it, never a failure.
    let index = check(&report, "docs index");
    assert_eq!(
        (&index["status"], &index["need"]),
        (&"missing".into(), &"optional".into())
    );
    assert!(
        index["fix"]
            .as_str()
            .unwrap()
            .contains("drydock index --toolchain-docs")
    );
    let sandbox = check(&report, "sandbox");
    assert_eq!(sandbox["status"], "ok", "{sandbox}");
    assert!(
        sandbox["detail"]
            .as_str()
            .unwrap()
            .contains("makes sandboxes here"),
        "{sandbox}"
    );
    // The tests need git 2.44 (landing by rebase) and the Rust docs: both are here.
    assert_eq!(check(&report, "git")["status"], "ok");
    assert_eq!(check(&report, "git replay")["status"], "ok");
    let rust_docs = check(&report, "Rust docs");
    assert_eq!(rust_docs["status"], "ok", "{rust_docs}");
    assert!(
        rust_docs["detail"]
            .as_str()
            .unwrap()
            .contains("share/doc/rust/html"),
        "{rust_docs}"
    );
    // With no shared queue configured, there is no store to reach.
    assert!(
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "task store")
    );
    // The tests' browser is never required.
    assert_eq!(check(&report, "chromium")["need"], "tests_only");
    assert!(
        text.contains("everything the switched-on toolsets need is here"),
        "{text}"
    );
}

#[test]
fn what_is_missing_is_named_with_its_fix_and_fails_only_when_a_toolset_needs_it() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_str().unwrap();
    let (output, report) = doctor(home.path(), "", path);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(report["ok"], false);
    let tmux = check(&report, "tmux");
    assert_eq!(tmux["status"], "missing");
    assert_eq!(
        tmux["need"], "required",
        "agents and tasks are on by default"
    );
    assert_eq!(tmux["fix"], "sudo apt-get install tmux");
    assert!(text.contains("MISSING  tmux"), "{text}");
    assert!(text.contains("fix: sudo apt-get install tmux"), "{text}");
    // Neither cargo nor elixir: the build tools have no toolchain at all.
    assert_eq!(check(&report, "cargo")["need"], "required");
    assert!(
        check(&report, "cargo")["fix"]
            .as_str()
            .unwrap()
            .contains("rustup")
    );
    // One agent CLI is enough, so one stands for them all.
    let required_clis = ["claude", "codex", "gemini"]
        .iter()
        .filter(|cli| check(&report, cli)["need"] == "required")
        .count();
    assert_eq!(required_clis, 1);
    assert_eq!(check(&report, "zsh")["need"], "optional");
    // No bubblewrap on this PATH: tasks cannot be confined, and the fix says both ways out.
    let sandbox = check(&report, "sandbox");
    assert_eq!(
        (&sandbox["status"], &sandbox["need"]),
        (&"missing".into(), &"required".into())
    );
    let fix = sandbox["fix"].as_str().unwrap();
    assert!(
        fix.contains("bubblewrap") && fix.contains("sandbox = false"),
        "{fix}"
    );
    assert!(text.contains("MISSING  sandbox"), "{text}");

    // Turned off by name, it is no longer missing.
    let (_, report) = doctor(home.path(), "[tasks]\nsandbox = false\n", path);
    let sandbox = check(&report, "sandbox");
    assert_eq!(sandbox["status"], "ok", "{sandbox}");
    assert!(sandbox["detail"].as_str().unwrap().starts_with("off"));

    // The same machine with only the docs on: nothing it lacks is needed.
    let (output, report) = doctor(home.path(), "toolsets = [\"docs\"]\n", path);
    assert!(output.status.success(), "{report:#}");
    assert_eq!(check(&report, "tmux")["need"], "optional");
}

#[test]
fn a_data_dir_that_cannot_be_written_fails_the_doctor() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("data"), "a file where the data dir goes").unwrap();
    let path = std::env::var("PATH").unwrap();
    let (output, report) = doctor(home.path(), "toolsets = [\"docs\"]\n", &path);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let data = check(&report, "data dir");
    assert_eq!(data["status"], "missing");
    assert!(data["fix"].as_str().unwrap().contains("--data-dir"));
}

/// A directory holding `program`, a shell script of `body`, and the PATH with it first.
fn fake_program(program: &str, body: &str) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let script = bin.path().join(program);
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    (bin, path)
}

#[test]
fn a_git_older_than_merges_need_fails_the_doctor_with_the_version_it_needs() {
    let home = tempfile::tempdir().unwrap();
    let (_old, path) = fake_program("git", "echo 'git version 2.34.1'");
    let (output, report) = doctor(home.path(), "toolsets = [\"tasks\"]\n", &path);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let git = check(&report, "git");
    assert_eq!(
        (&git["status"], &git["need"]),
        (&"missing".into(), &"required".into()),
        "{git}"
    );
    let detail = git["detail"].as_str().unwrap();
    assert!(
        detail.contains("git merge-tree --write-tree needs git 2.38, this is 2.34"),
        "{detail}"
    );
    assert!(
        git["fix"].as_str().unwrap().contains("2.38 or later"),
        "{git}"
    );
    assert!(text.contains("MISSING  git "), "{text}");
    // Rebase landing is not configured: its git is reported, never required.
    let replay = check(&report, "git replay");
    assert_eq!(
        (&replay["status"], &replay["need"]),
        (&"missing".into(), &"optional".into()),
        "{replay}"
    );

    // A git that merges but cannot replay: enough, until landing by rebase is configured.
    let (bin, path) = fake_program("git", "echo 'git version 2.39.5'");
    let (_, report) = doctor(home.path(), "toolsets = [\"tasks\"]\n", &path);
    assert_eq!(check(&report, "git")["status"], "ok");
    assert_eq!(check(&report, "git replay")["status"], "missing");
    assert_eq!(
        check(&report, "git")["detail"],
        format!("git version 2.39.5 ({}/git)", bin.path().display())
    );
    let rebase = "toolsets = [\"tasks\"]\n[tasks]\nland_with = \"rebase\"\n";
    let (output, report) = doctor(home.path(), rebase, &path);
    let replay = check(&report, "git replay");
    assert_eq!(
        (&replay["status"], &replay["need"]),
        (&"missing".into(), &"required".into()),
        "{replay}"
    );
    assert!(
        replay["detail"]
            .as_str()
            .unwrap()
            .contains("git replay needs git 2.44, this is 2.39"),
        "{replay}"
    );
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn rust_docs_missing_from_the_sysroot_are_named_with_the_component_that_brings_them() {
    let home = tempfile::tempdir().unwrap();
    let sysroot = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(sysroot.path().join("share/doc")).unwrap();
    let body = format!(
        "case \"$1\" in --print) echo '{}' ;; *) echo 'rustc 1.95.0 (fake)' ;; esac",
        sysroot.path().display()
    );
    let (_bin, path) = fake_program("rustc", &body);
    let (output, report) = doctor(home.path(), "toolsets = [\"docs\"]\n", &path);
    let docs = check(&report, "Rust docs");
    assert_eq!(
        (&docs["status"], &docs["need"]),
        (&"missing".into(), &"optional".into()),
        "{docs}"
    );
    assert_eq!(docs["fix"], "rustup component add rust-docs");
    assert!(
        docs["detail"]
            .as_str()
            .unwrap()
            .contains("share/doc/rust/html: not there"),
        "{docs}"
    );
    assert!(
        output.status.success(),
        "only the toolchain docs need them: {report:#}"
    );
}

#[test]
fn a_shared_task_store_is_reached_or_said_why_not() {
    let home = tempfile::tempdir().unwrap();
    let path = std::env::var("PATH").unwrap();
    let nowhere = format!(
        "toolsets = [\"tasks\"]\n[tasks]\nstore = \"postgres://drydock:hunter2@127.0.0.1:{}/team\"\n",
        free_port()
    );
    let (output, report) = doctor(home.path(), &nowhere, &path);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let store = check(&report, "task store");
    assert_eq!(
        (&store["status"], &store["need"]),
        (&"missing".into(), &"required".into()),
        "{store}"
    );
    let detail = store["detail"].as_str().unwrap();
    assert!(detail.contains("cannot be reached"), "{detail}");
    assert!(
        !text.contains("hunter2") && !report.to_string().contains("hunter2"),
        "the password is never printed: {text}"
    );
    assert!(text.contains("MISSING  task store"), "{text}");

    let postgres = Postgres::start();
    let url = postgres.database("team");
    let reachable = format!("toolsets = [\"tasks\"]\n[tasks]\nstore = \"{url}\"\n");
    let (_, report) = doctor(home.path(), &reachable, &path);
    let store = check(&report, "task store");
    assert_eq!(store["status"], "ok", "{store}");
    assert!(
        store["detail"].as_str().unwrap().contains("reached"),
        "{store}"
    );
}
