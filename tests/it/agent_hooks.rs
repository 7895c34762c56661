//! `drydock hooks install|uninstall` on real settings files, and `drydock hook` against a
//! real server, no server, and a server that does not know it. The hooks of the real Claude
//! Code reaching the server are in `mcp_agents`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

const USERS_SETTINGS: &str = r#"{
  "permissions": {
    "defaultMode": "default"
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/audit.sh"
          }
        ]
      }
    ]
  },
  "model": "opus"
}
"#;

fn hooks(action: &str, project: &Path, data_dir: Option<&Path>) -> Output {
    let mut command = drydock_command();
    command.args(["hooks", action, "--project"]).arg(project);
    if let Some(dir) = data_dir {
        command.arg("--data-dir").arg(dir);
    }
    command.output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn hooks_install_and_uninstall_round_trip_on_a_settings_file_with_hooks_of_its_own() {
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.local.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, USERS_SETTINGS).unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o640)).unwrap();
    let data_dir = project.path().join("my data");

    let installed = hooks("install", project.path(), Some(&data_dir));
    assert!(installed.status.success(), "{installed:?}");
    assert!(
        stdout(&installed).starts_with(&format!(
            "installed drydock's hooks in {}\n  added: SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest, PostToolUse, Notification, Stop, SessionEnd",
            settings.display()
        )),
        "{}",
        stdout(&installed)
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let command = format!("{} hook --data-dir '{}'", drydock_bin(), data_dir.display());
    let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0]["hooks"][0]["command"], "~/bin/audit.sh");
    assert_eq!(pre[1]["hooks"][0]["command"], json!(command));
    assert_eq!(
        value["hooks"]["Stop"][0]["hooks"][0]["command"],
        json!(command)
    );
    assert_eq!(value["model"], "opus");
    let mode = std::fs::metadata(&settings).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640, "the file keeps its permissions");

    let again = hooks("install", project.path(), Some(&data_dir));
    assert!(
        stdout(&again).starts_with("drydock's hooks are already installed in"),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        text,
        "untouched"
    );

    let removed = hooks("uninstall", project.path(), None);
    assert!(removed.status.success(), "{removed:?}");
    assert!(stdout(&removed).starts_with("removed drydock's hooks from"));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        USERS_SETTINGS,
        "exactly what was there before"
    );
    let nothing = hooks("uninstall", project.path(), None);
    assert!(stdout(&nothing).starts_with("no drydock hooks in"));

    std::fs::write(&settings, "{\"hooks\": {\n").unwrap();
    let broken = hooks("install", project.path(), None);
    assert_eq!(broken.status.code(), Some(1));
    let error = String::from_utf8_lossy(&broken.stderr);
    assert!(error.contains("is not JSON (line 2"), "{error}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{\"hooks\": {\n"
    );

    let nowhere = hooks("install", &project.path().join("absent"), None);
    assert_eq!(nowhere.status.code(), Some(2));
}

/// `drydock hook` with `payload` on stdin; its output and how long it took.
fn run_hook(data_dir: &Path, payload: &str) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = drydock_command()
        .args(["hook", "--data-dir"])
        .arg(data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (output, started.elapsed())
}

#[test]
fn the_hook_command_never_fails_the_agent_whether_or_not_a_server_listens() {
    let payload = r#"{"hook_event_name": "Stop", "session_id": "s"}"#;
    let empty = tempfile::tempdir().unwrap();
    let (no_server, _) = run_hook(empty.path(), payload);
    assert_eq!(no_server.status.code(), Some(0));
    assert!(no_server.stdout.is_empty() && no_server.stderr.is_empty());

    // A server that died without withdrawing its endpoint: nothing listens on the port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stale = json!({"base": format!("http://127.0.0.1:{port}"), "token": "t", "pid": 1});
    std::fs::write(empty.path().join("local-endpoint.json"), stale.to_string()).unwrap();
    let (dead, _) = run_hook(empty.path(), payload);
    assert_eq!(dead.status.code(), Some(0));
    assert!(dead.stdout.is_empty());

    let server = Server::start(&[]);
    let endpoint_file = server.data_dir.path().join("local-endpoint.json");
    assert!(
        wait_until(Duration::from_secs(10), || endpoint_file.exists()),
        "the server publishes its hook endpoint"
    );
    let mode = std::fs::metadata(&endpoint_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the token is the user's alone");
    let (live, _) = run_hook(server.data_dir.path(), payload);
    assert_eq!(live.status.code(), Some(0));
    assert!(live.stdout.is_empty(), "nothing for the agent: {live:?}");
    let (garbage, _) = run_hook(server.data_dir.path(), "not json at all");
    assert_eq!(garbage.status.code(), Some(0));

    let endpoint: Value =
        serde_json::from_str(&std::fs::read_to_string(&endpoint_file).unwrap()).unwrap();
    let url = &format!("{}/hooks", endpoint["base"].as_str().unwrap());
    let wrong = post_status(url, "Bearer wrong", &json!({"pid": 1, "payload": {}}));
    assert_eq!(wrong, 401);
    let right = post_status(
        url,
        &format!("Bearer {}", endpoint["token"].as_str().unwrap()),
        &json!({"pid": 1, "payload": {"hook_event_name": "Stop"}}),
    );
    assert_eq!(right, 200);

    let mut server = server;
    assert!(server.terminate(Duration::from_secs(10)));
    assert!(!endpoint_file.exists(), "withdrawn when the server stops");
}

/// The status of a JSON POST to `url` with `authorization`.
fn post_status(url: &str, authorization: &str, body: &Value) -> u16 {
    let url = url.to_string();
    let authorization = authorization.to_string();
    let body = body.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            reqwest::Client::new()
                .post(url)
                .header("Authorization", authorization)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    })
    .join()
    .unwrap()
}
