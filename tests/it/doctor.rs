//! `drydock doctor`: what it finds on this machine, what it says is missing and how to fix
//! it, and its exit status, run as the installed binary would be (outside the checkout).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drydock::docs::embed::cached_onnx_runtime;
use serde_json::Value;

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
