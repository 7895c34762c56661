//! Terminal sessions through the real server and a real MCP client: real bash and zsh on
//! real PTYs, and a real tmux server on a private socket (TMUX_TMPDIR points into a
//! temporary directory, so the user's own tmux is never touched).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// A server whose tmux servers (drydock's own and "the user's") live in `tmux_dir`, which
/// is also the shells' HOME: its rc files stand for the user's own.
fn server(tmux_dir: &Path, extra: &[&str]) -> Server {
    server_with_env(tmux_dir, extra, &[])
}

/// `server`, with more variables in the server's environment.
fn server_with_env(tmux_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    std::fs::write(tmux_dir.join(".bashrc"), "export FROM_USER_RC=bash\n").unwrap();
    std::fs::write(tmux_dir.join(".zshrc"), "export FROM_USER_RC=zsh\n").unwrap();
    let dir = tmux_dir.to_str().unwrap();
    let mut env = env.to_vec();
    env.extend([("TMUX_TMPDIR", dir), ("TMUX", ""), ("HOME", dir)]);
    Server::start_with_env(extra, &env)
}

/// The user's tmux server of these tests (the default socket below `tmux_dir`). Its HOME is
/// `tmux_dir` like the server's: the shells drydock starts in it source the test's .bashrc,
/// not the machine's (whose start-up may wait on a lock a killed shell left behind).
fn user_tmux(tmux_dir: &Path, args: &[&str]) -> std::process::Output {
    isolate(&mut Command::new("tmux"))
        .args(args)
        .env("TMUX_TMPDIR", tmux_dir)
        .env("HOME", tmux_dir)
        .env_remove("TMUX")
        .output()
        .expect("tmux runs")
}

/// Kills every tmux server of the test when dropped, so none outlives it.
struct TmuxServers(tempfile::TempDir);

impl TmuxServers {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn dir(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for TmuxServers {
    fn drop(&mut self) {
        user_tmux(self.dir(), &["kill-server"]);
        user_tmux(self.dir(), &["-L", "drydock", "kill-server"]);
        user_tmux(self.dir(), &["-L", "other", "kill-server"]);
    }
}

async fn run(client: &Client, session: &str, command: &str, timeout_ms: u64) -> Value {
    call_ok(
        client,
        "terminal_run",
        json!({"session": session, "command": command, "timeout_ms": timeout_ms}),
    )
    .await
}

#[tokio::test]
async fn terminal_run_returns_each_commands_output_and_exit_code_when_it_ends() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    let created = call_ok(
        &client,
        "terminal_create",
        json!({"name": "sh1", "cwd": "cargo-clean"}),
    )
    .await;
    assert_eq!(
        (&created["name"], &created["backend"]),
        (&json!("sh1"), &json!("pty"))
    );
    assert_eq!(created["marks"], true, "{created}");

    let hi = run(&client, "sh1", "echo hi", 10_000).await;
    assert_eq!(
        (
            &hi["output"],
            &hi["exit_code"],
            &hi["completed"],
            &hi["method"]
        ),
        (&json!("hi\n"), &json!(0), &json!(true), &json!("mark"))
    );
    let user_rc = run(&client, "sh1", "echo $FROM_USER_RC", 10_000).await;
    assert_eq!(
        user_rc["output"], "bash\n",
        "the user's ~/.bashrc is sourced first"
    );
    let pwd = run(&client, "sh1", "pwd", 10_000).await;
    assert!(
        pwd["output"]
            .as_str()
            .unwrap()
            .trim_end()
            .ends_with("test-projects/cargo-clean"),
        "{pwd}"
    );
    let failed = run(&client, "sh1", "false", 10_000).await;
    assert_eq!(
        (&failed["exit_code"], &failed["output"]),
        (&json!(1), &json!(""))
    );
    let silent = run(&client, "sh1", "true", 10_000).await;
    assert_eq!(
        (&silent["exit_code"], &silent["output"]),
        (&json!(0), &json!(""))
    );

    // A pause in the output is not the end of the command.
    let gap = run(&client, "sh1", "echo start; sleep 2; echo done", 20_000).await;
    assert_eq!(
        (&gap["output"], &gap["exit_code"]),
        (&json!("start\ndone\n"), &json!(0)),
        "{gap}"
    );

    let exit_code = run(&client, "sh1", "sh -c 'exit 7'", 10_000).await;
    assert_eq!(exit_code["exit_code"], 7);

    let huge = run(&client, "sh1", "seq 1 200000", 60_000).await;
    assert_eq!(
        (&huge["completed"], &huge["exit_code"]),
        (&json!(true), &json!(0))
    );
    let output = huge["output"].as_str().unwrap();
    assert!(output.starts_with("1\n2\n3\n"), "{}", &output[..50]);
    assert!(
        output.ends_with("199999\n200000\n"),
        "{}",
        &output[output.len() - 50..]
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_command_still_running_at_timeout_leaves_the_session_usable() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "slow", "cwd": "."}),
    )
    .await;
    let slow = run(&client, "slow", "echo begun; sleep 30", 1500).await;
    assert_eq!(slow["completed"], false, "{slow}");
    assert_eq!(slow["output"], "begun\n");
    let interrupted = call_ok(
        &client,
        "terminal_manage",
        json!({"session": "slow", "action": "interrupt"}),
    )
    .await;
    assert_eq!(interrupted["done"], "sent C-c");
    let again = run(&client, "slow", "echo again", 10_000).await;
    assert_eq!(
        (&again["output"], &again["completed"]),
        (&json!("again\n"), &json!(true)),
        "{again}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn screen_send_wait_resize_and_a_repl_without_marks() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "py", "cwd": ".", "command": "python3 -q", "rows": 24, "cols": 80}),
    )
    .await;
    let prompt = call_ok(
        &client,
        "terminal_wait",
        json!({"session": "py", "pattern": ">>> $", "max_wait_ms": 10000}),
    )
    .await;
    assert_eq!(
        (&prompt["completed"], &prompt["method"]),
        (&json!(true), &json!("pattern")),
        "{prompt}"
    );
    let sum = call_ok(
        &client,
        "terminal_run",
        json!({"session": "py", "command": "6 * 7", "pattern": ">>> $", "timeout_ms": 10000}),
    )
    .await;
    assert_eq!(sum["method"], "pattern", "{sum}");
    assert!(sum["output"].as_str().unwrap().contains("42"), "{sum}");
    assert_eq!(sum["exit_code"], Value::Null);

    let sent = call_ok(
        &client,
        "terminal_send",
        json!({"session": "py", "text": "print('typed' + 'here')", "keys": ["Enter"]}),
    )
    .await;
    assert_eq!(sent["screen_changed"], true, "{sent}");
    let waited = call_ok(
        &client,
        "terminal_wait",
        json!({"session": "py", "pattern": "typedhere", "max_wait_ms": 10000}),
    )
    .await;
    assert_eq!(
        (&waited["completed"], &waited["method"]),
        (&json!(true), &json!("pattern")),
        "{waited}"
    );
    // Without a pattern, after_generation waits for the next change and says so.
    let generation = waited["generation"].as_u64().unwrap();
    call_ok(
        &client,
        "terminal_send",
        json!({"session": "py", "text": "1"}),
    )
    .await;
    let changed = call_ok(
        &client,
        "terminal_wait",
        json!({"session": "py", "after_generation": generation, "max_wait_ms": 10000}),
    )
    .await;
    assert_eq!(changed["method"], "changed", "{changed}");
    assert!(changed["generation"].as_u64().unwrap() > generation);
    call_ok(
        &client,
        "terminal_send",
        json!({"session": "py", "keys": ["BSpace"]}),
    )
    .await;
    let screen = call_ok(&client, "terminal_screen", json!({"session": "py"})).await;
    assert!(
        screen["text"].as_str().unwrap().contains("typedhere"),
        "{screen}"
    );
    assert_eq!((&screen["rows"], &screen["cols"]), (&json!(24), &json!(80)));
    let scrollback = call_ok(
        &client,
        "terminal_scrollback",
        json!({"session": "py", "offset": -3, "limit": 3}),
    )
    .await;
    assert_eq!(
        scrollback["lines"].as_array().unwrap().len(),
        3,
        "{scrollback}"
    );

    call_ok(
        &client,
        "terminal_send",
        json!({"session": "py", "keys": ["C-d"]}),
    )
    .await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "sized", "cwd": "."}),
    )
    .await;
    call_ok(
        &client,
        "terminal_manage",
        json!({"session": "sized", "action": "resize", "rows": 30, "cols": 100}),
    )
    .await;
    let cols = run(&client, "sized", "tput cols; tput lines", 10_000).await;
    assert_eq!(cols["output"], "100\n30\n", "{cols}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn killing_a_session_leaves_no_process_and_bad_input_gets_clear_errors() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "bg", "cwd": "."}),
    )
    .await;
    run(&client, "bg", "sleep 1000 & sleep 1001 &", 10_000).await;
    assert!(!server.descendants().is_empty());
    let killed = call_ok(
        &client,
        "terminal_manage",
        json!({"session": "bg", "action": "kill"}),
    )
    .await;
    assert_eq!(killed["done"], "killed");
    server.assert_no_descendants_within(Duration::from_secs(10), "processes left behind");

    let cases = [
        (
            "terminal_run",
            json!({"session": "nope", "command": "true"}),
            "no session named \"nope\"",
        ),
        (
            "terminal_create",
            json!({"cwd": "/"}),
            "outside the allowed roots",
        ),
        (
            "terminal_create",
            json!({"cwd": ".", "name": "bad name"}),
            "invalid session name",
        ),
        (
            "terminal_send",
            json!({"session": "tmux:x", "text": "a"}),
            "invalid tmux pane address",
        ),
    ];
    for (tool, args, expected) in cases {
        let error = call_err(&client, tool, args.clone()).await;
        assert!(error.contains(expected), "{tool} {args}: {error}");
    }
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "dup", "cwd": "."}),
    )
    .await;
    let duplicate = call_err(
        &client,
        "terminal_create",
        json!({"name": "dup", "cwd": "."}),
    )
    .await;
    assert!(duplicate.contains("already exists"), "{duplicate}");
    let bad_key = call_err(
        &client,
        "terminal_send",
        json!({"session": "dup", "keys": ["Hyper-X"]}),
    )
    .await;
    assert!(bad_key.contains("Hyper-X"), "{bad_key}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn tmux_sessions_survive_a_restart_of_drydock() {
    let tmux = TmuxServers::new();
    let mut first = server(tmux.dir(), &[]);
    let client = modern_client(&first.url).await;
    let created = call_ok(
        &client,
        "terminal_create",
        json!({"name": "keep", "cwd": ".", "backend": "tmux", "env": {"GREETING": "hello"}}),
    )
    .await;
    assert_eq!(created["backend"], "tmux");
    assert_eq!(created["attach"], "tmux -L drydock attach -t drydock-keep");
    let answer = run(&client, "keep", "echo $GREETING $((6*7))", 10_000).await;
    assert_eq!(
        (&answer["output"], &answer["exit_code"]),
        (&json!("hello 42\n"), &json!(0)),
        "{answer}"
    );
    client.cancel().await.ok();
    assert!(first.terminate(Duration::from_secs(10)));

    let second = server(tmux.dir(), &[]);
    let client = modern_client(&second.url).await;
    let listed = call_ok(&client, "terminal_list", json!({"session": "keep"})).await;
    assert_eq!(listed["sessions"][0]["backend"], "tmux", "{listed}");
    let screen = call_ok(&client, "terminal_screen", json!({"session": "keep"})).await;
    assert!(
        screen["text"].as_str().unwrap().contains("hello 42"),
        "{screen}"
    );
    let again = run(&client, "keep", "echo still here", 15_000).await;
    assert_eq!(
        (&again["output"], &again["exit_code"]),
        (&json!("still here\n"), &json!(0)),
        "{again}"
    );
    call_ok(
        &client,
        "terminal_manage",
        json!({"session": "keep", "action": "kill"}),
    )
    .await;
    let gone = user_tmux(
        tmux.dir(),
        &["-L", "drydock", "has-session", "-t", "drydock-keep"],
    );
    assert!(!gone.status.success(), "the tmux session was killed");
    client.cancel().await.ok();
}

/// Two drydocks of one machine (a team's hosts) share its tmux server: one that starts again
/// takes up its own sessions, not the other's, which go on undisturbed under their host.
#[tokio::test]
async fn a_restarted_drydock_takes_up_only_its_own_sessions_of_a_shared_tmux_server() {
    let tmux = TmuxServers::new();
    let configs = tempfile::tempdir().unwrap();
    let host = |name: &str| {
        let file = configs.path().join(format!("{name}.toml"));
        std::fs::write(&file, format!("[tasks]\nhost = \"{name}\"\n")).unwrap();
        file.display().to_string()
    };
    let (config_a, config_b) = (host("a"), host("b"));
    let mut a = server(tmux.dir(), &["--config", &config_a]);
    let b = server(tmux.dir(), &["--config", &config_b]);
    let (client_a, client_b) = (modern_client(&a.url).await, modern_client(&b.url).await);
    for (client, name) in [(&client_a, "of-a"), (&client_b, "of-b")] {
        call_ok(
            client,
            "terminal_create",
            json!({"name": name, "cwd": ".", "backend": "tmux"}),
        )
        .await;
    }
    client_a.cancel().await.ok();
    assert!(a.terminate(Duration::from_secs(10)));

    let a = server(tmux.dir(), &["--config", &config_a]);
    let client_a = modern_client(&a.url).await;
    let listed = call_ok(&client_a, "terminal_list", json!({})).await;
    let own: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["backend"] == "tmux")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(own, ["of-a"], "{listed:#}");
    let refused = call_err(&client_a, "terminal_screen", json!({"session": "of-b"})).await;
    assert!(refused.contains("of-b"), "{refused}");
    // b's session is b's, as it was: its shell answers b, untouched by a's start.
    let answer = run(&client_b, "of-b", "echo b still here", 15_000).await;
    assert_eq!(
        (&answer["output"], &answer["exit_code"]),
        (&json!("b still here\n"), &json!(0)),
        "{answer}"
    );
    client_a.cancel().await.ok();
    client_b.cancel().await.ok();
}

#[tokio::test]
async fn the_users_own_tmux_panes_are_listed_read_and_driven() {
    let tmux = TmuxServers::new();
    let started = user_tmux(
        tmux.dir(),
        &[
            "new-session",
            "-d",
            "-s",
            "work",
            "-x",
            "100",
            "-y",
            "30",
            "bash --norc --noprofile",
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    let listed = call_ok(&client, "terminal_list", json!({})).await;
    let pane = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "tmux:work:0.0")
        .unwrap_or_else(|| panic!("the user's pane is listed: {listed}"));
    assert_eq!(
        (&pane["backend"], &pane["cols"], &pane["rows"]),
        (&json!("user_tmux"), &json!(100), &json!(30))
    );
    assert_eq!(pane["command"], "bash");
    assert!(
        listed["environment"]["tmux_version"]
            .as_str()
            .unwrap()
            .starts_with('3')
    );

    call_ok(
        &client,
        "terminal_send",
        json!({"session": "tmux:work:0.0", "text": "echo from-agent-$((40+2))", "keys": ["Enter"]}),
    )
    .await;
    let waited = call_ok(
        &client,
        "terminal_wait",
        json!({"session": "tmux:work:0.0", "pattern": "^from-agent-42$", "max_wait_ms": 10000}),
    )
    .await;
    assert_eq!(
        (&waited["completed"], &waited["method"]),
        (&json!(true), &json!("pattern")),
        "{waited}"
    );
    let refused = call_err(
        &client,
        "terminal_manage",
        json!({"session": "tmux:work:0.0", "action": "kill"}),
    )
    .await;
    assert!(refused.contains("your own tmux server"), "{refused}");
    let still = user_tmux(tmux.dir(), &["has-session", "-t", "work"]);
    assert!(still.status.success());

    // A second server of the user's, on a socket of its own (`tmux -L other`).
    let other = user_tmux(
        tmux.dir(),
        &[
            "-L",
            "other",
            "new-session",
            "-d",
            "-s",
            "side",
            "bash --norc --noprofile",
        ],
    );
    assert!(other.status.success(), "{other:?}");
    let names = session_names(&client).await;
    assert!(
        names.iter().any(|n| n == "tmux:side:0.0@other"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.ends_with("@drydock")),
        "drydock's own server is not the user's: {names:?}"
    );
    call_ok(
        &client,
        "terminal_send",
        json!({"session": "tmux:side:0.0@other", "text": "echo other-$((6*7))", "keys": ["Enter"]}),
    )
    .await;
    let waited = call_ok(
        &client,
        "terminal_wait",
        json!({"session": "tmux:side:0.0@other", "pattern": "^other-42$", "max_wait_ms": 10000}),
    )
    .await;
    assert_eq!(waited["method"], "pattern", "{waited}");
    user_tmux(tmux.dir(), &["-L", "other", "kill-server"]);
    client.cancel().await.ok();
}

#[tokio::test]
async fn zsh_sessions_have_marks_too() {
    let tmux = TmuxServers::new();
    let config = tmux.dir().join("drydock.toml");
    std::fs::write(&config, "[terminal]\nshell = \"zsh\"\n").unwrap();
    let server = server(tmux.dir(), &["--config", config.to_str().unwrap()]);
    let client = modern_client(&server.url).await;
    let created = call_ok(&client, "terminal_create", json!({"name": "z", "cwd": "."})).await;
    assert_eq!(created["marks"], true, "{created}");
    let out = run(
        &client,
        "z",
        "print -r -- $ZSH_NAME $FROM_USER_RC; (exit 3)",
        10_000,
    )
    .await;
    assert_eq!(
        (&out["output"], &out["exit_code"]),
        (&json!("zsh zsh\n"), &json!(3)),
        "{out}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn session_resources_show_screens() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "res", "cwd": "."}),
    )
    .await;
    run(&client, "res", "echo resource-text", 10_000).await;
    let listed = client.list_all_resources().await.unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r.uri == "drydock://sessions/res/screen"),
        "{listed:?}"
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "drydock://sessions/{name}/screen")
    );
    let text = read_text_resource(&client, "drydock://sessions/res/screen").await;
    assert!(text.contains("resource-text"), "{text}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn tmux_windows_and_split_panes_open_next_to_a_session_and_close_alone() {
    let tmux = TmuxServers::new();
    start_users_session(&tmux);
    let server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "main", "cwd": ".", "backend": "tmux"}),
    )
    .await;
    let window = call_ok(
        &client,
        "terminal_create",
        json!({"name": "w2", "cwd": "cargo-clean", "place": {"window": {"of": "main"}}}),
    )
    .await;
    assert_eq!(window["backend"], "tmux", "{window}");
    let split = call_ok(
        &client,
        "terminal_create",
        json!({"name": "p2", "cwd": ".", "place": {"split": {"of": "main", "vertical": true}}}),
    )
    .await;
    assert_eq!(split["marks"], true, "{split}");
    let in_window = run(&client, "w2", "basename $PWD", 10_000).await;
    assert_eq!(in_window["output"], "cargo-clean\n", "{in_window}");
    let in_split = run(&client, "p2", "echo split $((1+1))", 10_000).await;
    assert_eq!(in_split["output"], "split 2\n", "{in_split}");
    let panes = |session: &str| {
        let out = user_tmux(
            tmux.dir(),
            &["-L", "drydock", "list-panes", "-s", "-t", session],
        );
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(
        panes("drydock-main"),
        3,
        "main, its split, and the new window's pane"
    );

    call_ok(
        &client,
        "terminal_manage",
        json!({"session": "p2", "action": "kill"}),
    )
    .await;
    call_ok(
        &client,
        "terminal_manage",
        json!({"session": "w2", "action": "kill"}),
    )
    .await;
    assert_eq!(panes("drydock-main"), 1);
    let still = run(&client, "main", "echo alive", 10_000).await;
    assert_eq!(still["output"], "alive\n");

    // A pane next to one of the user's own: drydock's to kill, the user's stays.
    let beside = call_ok(
        &client,
        "terminal_create",
        json!({"name": "beside", "cwd": ".", "place": {"split": {"of": "tmux:mine:0.0"}}}),
    )
    .await;
    assert_eq!(beside["backend"], "tmux", "{beside}");
    let next_to_user = run(&client, "beside", "echo next-to-you", 10_000).await;
    assert_eq!(next_to_user["output"], "next-to-you\n", "{next_to_user}");
    let user_panes = || {
        let out = user_tmux(tmux.dir(), &["list-panes", "-t", "mine"]);
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(user_panes(), 2);
    call_ok(
        &client,
        "terminal_manage",
        json!({"session": "beside", "action": "kill"}),
    )
    .await;
    assert_eq!(user_panes(), 1);
    let pty_anchor = call_ok(
        &client,
        "terminal_create",
        json!({"name": "plain", "cwd": "."}),
    )
    .await;
    assert_eq!(pty_anchor["backend"], "pty");
    let refused = call_err(
        &client,
        "terminal_create",
        json!({"name": "nope", "cwd": ".", "place": {"window": {"of": "plain"}}}),
    )
    .await;
    assert!(refused.contains("only be opened in tmux"), "{refused}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn sessions_are_capped_and_idle_ones_reaped() {
    let tmux = TmuxServers::new();
    let config = tmux.dir().join("drydock.toml");
    std::fs::write(
        &config,
        "[terminal]\nmax_sessions = 2\nidle_timeout_s = 2\n",
    )
    .unwrap();
    let server = server(tmux.dir(), &["--config", config.to_str().unwrap()]);
    let client = modern_client(&server.url).await;
    call_ok(&client, "terminal_create", json!({"name": "a", "cwd": "."})).await;
    call_ok(&client, "terminal_create", json!({"name": "b", "cwd": "."})).await;
    let refused = call_err(&client, "terminal_create", json!({"name": "c", "cwd": "."})).await;
    assert!(refused.contains("2 sessions are open"), "{refused}");

    let mut names = Vec::new();
    for _ in 0..100 {
        names = session_names(&client).await;
        if names.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(names.is_empty(), "idle sessions were not reaped: {names:?}");
    server.assert_no_descendants_within(Duration::from_secs(10), "reaped sessions left processes");
    call_ok(&client, "terminal_create", json!({"name": "c", "cwd": "."})).await;
    client.cancel().await.ok();
}

#[tokio::test]
async fn pty_sessions_end_with_the_server() {
    let tmux = TmuxServers::new();
    let mut server = server(tmux.dir(), &[]);
    let client = modern_client(&server.url).await;
    call_ok(&client, "terminal_create", json!({"name": "p", "cwd": "."})).await;
    run(&client, "p", "sleep 1000 &", 10_000).await;
    assert!(!server.descendants().is_empty());
    client.cancel().await.ok();
    assert!(
        server.terminate(Duration::from_secs(15)),
        "the server stops"
    );
    server
        .assert_no_descendants_within(Duration::from_secs(10), "a PTY session outlived the server");
}

#[test]
fn drydock_call_drives_tmux_sessions_from_the_shell() {
    let tmux = TmuxServers::new();
    let call = |tool: &str, arguments: Value| {
        drydock_call(tool, &arguments.to_string())
            .env("TMUX_TMPDIR", tmux.dir())
            .env("TMUX", "")
            .env("HOME", tmux.dir())
            .output()
            .unwrap()
    };
    let created = call(
        "terminal_create",
        json!({"name": "cli", "cwd": ".", "backend": "tmux"}),
    );
    assert_eq!(created.status.code(), Some(0), "{created:?}");
    // A second drydock process finds the session on drydock's tmux server.
    let ran = call(
        "terminal_run",
        json!({"session": "cli", "command": "echo via-call"}),
    );
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    let report: Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(
        (&report["output"], &report["exit_code"]),
        (&json!("via-call\n"), &json!(0)),
        "{report}"
    );
    let missing = call(
        "terminal_run",
        json!({"session": "missing", "command": "true"}),
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no session named \"missing\""));
    let killed = call(
        "terminal_manage",
        json!({"session": "cli", "action": "kill"}),
    );
    assert_eq!(killed.status.code(), Some(0), "{killed:?}");
}

#[tokio::test]
async fn a_subscribed_screen_sends_updates_when_it_changes() {
    let tmux = TmuxServers::new();
    let server = server(tmux.dir(), &[]);
    let (client, updates) = client_with_updates(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "watched", "cwd": "."}),
    )
    .await;
    let uri = "drydock://sessions/watched/screen";
    #[allow(deprecated)]
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await
        .expect("subscribed");
    call_ok(
        &client,
        "terminal_run",
        json!({"session": "watched", "command": "echo changed"}),
    )
    .await;
    let notified = eventually(Duration::from_secs(10), || {
        updates.0.lock().unwrap().iter().any(|u| u == uri)
    })
    .await;
    assert!(
        notified,
        "no update for {uri}: {:?}",
        updates.0.lock().unwrap()
    );
    #[allow(deprecated)]
    client
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
        .await
        .expect("unsubscribed");
    #[allow(deprecated)]
    let unknown = client
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "drydock://sessions/none/screen",
        ))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    client.cancel().await.ok();
}

const TOKEN: &str = "drydock-token-8d1e5a";
const SECRET: &str = "github-secret-3f9c07";

#[tokio::test]
async fn no_terminal_sees_drydocks_token_or_the_configured_secrets() {
    let tmux = TmuxServers::new();
    start_users_session(&tmux);
    let server = server_with_env(
        tmux.dir(),
        &[],
        &[("DRYDOCK_TOKEN", TOKEN), ("GITHUB_TOKEN", SECRET)],
    );
    let client = client_with_token(&Era::Modern, &server.url, TOKEN).await;
    let sessions = [
        ("pty", json!({"name": "pty", "cwd": "."})),
        (
            "tmux",
            json!({"name": "tmux", "cwd": ".", "backend": "tmux"}),
        ),
        (
            "window",
            json!({"name": "window", "cwd": ".", "place": {"window": {"of": "tmux"}}}),
        ),
        (
            "split",
            json!({"name": "split", "cwd": ".", "place": {"split": {"of": "tmux"}}}),
        ),
        // A pane of the user's own server: drydock adds nothing of its own to it.
        (
            "beside",
            json!({"name": "beside", "cwd": ".", "place": {"split": {"of": "tmux:mine:0.0"}}}),
        ),
    ];
    for (name, arguments) in sessions {
        call_ok(&client, "terminal_create", arguments).await;
        let env = run(&client, name, "env", 10_000).await;
        let output = env["output"].as_str().unwrap();
        assert!(
            output.contains("HOME="),
            "{name}: env printed nothing: {env}"
        );
        for secret in ["DRYDOCK_TOKEN", TOKEN, "GITHUB_TOKEN", SECRET] {
            assert!(!output.contains(secret), "{name} sees {secret}:\n{output}");
        }
    }
    let global = user_tmux(tmux.dir(), &["-L", "drydock", "show-environment", "-g"]);
    let global = String::from_utf8_lossy(&global.stdout);
    assert!(global.contains("HOME="), "{global}");
    for secret in ["DRYDOCK_TOKEN", TOKEN, "GITHUB_TOKEN", SECRET] {
        assert!(
            !global.contains(secret),
            "drydock's tmux server has {secret}:\n{global}"
        );
    }
    client.cancel().await.ok();
}

/// The serialized size of a tool's result, which must stay under the 1 MiB a client reads.
async fn result_size(client: &Client, tool: &str, arguments: Value) -> (usize, Value) {
    let result = call(client, tool, arguments.clone()).await;
    assert_eq!(
        result.is_error,
        Some(false),
        "{tool} {arguments}: {:?}",
        result.content
    );
    let size = serde_json::to_string(&result).unwrap().len();
    assert!(
        size < 1024 * 1024,
        "{tool} {arguments}: the result is {size} bytes"
    );
    let text = text_of(&result);
    assert!(
        text.len() < 40 * 1024,
        "{tool}: the text rendering is {} bytes",
        text.len()
    );
    (size, result.structured_content.expect("structuredContent"))
}

/// Runs `seq 1 count` in `session`: the output comes back capped, with a marker that counts
/// what was left out and says where the whole of it is; every line of it is read back from
/// terminal_scrollback at those numbers.
async fn a_flood_pages_back_from_the_scrollback(client: &Client, session: &str, count: u64) {
    let command = format!("seq 1 {count}");
    let arguments = json!({"session": session, "command": command, "timeout_ms": 300_000});
    let (size, report) = result_size(client, "terminal_run", arguments).await;
    eprintln!("{session}: terminal_run of `{command}`: a result of {size} bytes");
    assert_eq!(
        (&report["completed"], &report["exit_code"]),
        (&json!(true), &json!(0)),
        "{report:.300}"
    );
    let output = report["output"].as_str().unwrap();
    let seq: String = (1..=count).map(|n| format!("{n}\n")).collect();
    let at = &report["scrollback"];
    let (offset, end) = (at["offset"].as_u64().unwrap(), at["end"].as_u64().unwrap());
    assert_eq!(end - offset, count, "{at}");
    assert!(
        at["oldest_kept"].as_u64().unwrap() <= offset,
        "the scrollback holds all of it: {at}"
    );
    let (elided_bytes, elided_lines) = (
        report["elided_bytes"].as_u64().unwrap(),
        report["elided_lines"].as_u64().unwrap(),
    );
    let marker = format!(
        "\n[... {elided_bytes} bytes, {elided_lines} lines elided; the whole output is terminal_scrollback offset {offset}, {count} lines ...]\n"
    );
    let (head, tail) = output
        .split_once(&marker)
        .unwrap_or_else(|| panic!("no marker {marker:?}"));
    assert!(seq.starts_with(head) && seq.ends_with(tail));
    assert_eq!(
        (head.len() + tail.len()) as u64 + elided_bytes,
        seq.len() as u64
    );
    let newlines = |text: &str| text.matches('\n').count() as u64;
    assert_eq!(newlines(head) + newlines(tail) + elided_lines, count);

    let mut line = offset;
    while line < end {
        let page = call_ok(
            client,
            "terminal_scrollback",
            json!({"session": session, "offset": line, "limit": 10_000, "max_output_bytes": 262_144}),
        )
        .await;
        assert_eq!(
            (page["offset"].as_u64(), &page["elided"]),
            (Some(line), &Value::Null),
            "{page:.300}"
        );
        for text in page["lines"].as_array().unwrap() {
            if line < end {
                assert_eq!(
                    text.as_str().unwrap(),
                    (line - offset + 1).to_string(),
                    "line {line}"
                );
            }
            line += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_comes_back_capped_and_every_terminal_result_stays_small() {
    let tmux = TmuxServers::new();
    let config = tmux.dir().join("drydock.toml");
    std::fs::write(&config, "[terminal]\nscrollback_lines = 310000\n").unwrap();
    let server = server(tmux.dir(), &["--config", config.to_str().unwrap()]);
    let client = modern_client(&server.url).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "pty", "cwd": "."}),
    )
    .await;
    a_flood_pages_back_from_the_scrollback(&client, "pty", 300_000).await;
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "tmux", "cwd": ".", "backend": "tmux"}),
    )
    .await;
    a_flood_pages_back_from_the_scrollback(&client, "tmux", 100_000).await;

    // A screen as large as a session gets, full of long lines.
    call_ok(
        &client,
        "terminal_create",
        json!({"name": "wide", "cwd": ".", "rows": 500, "cols": 1000}),
    )
    .await;
    let fill = "yes \"$(printf '%0999d' 7)\" | head -n 3000";
    let calls = [
        (
            "terminal_run",
            json!({"session": "wide", "command": fill, "timeout_ms": 120_000}),
        ),
        ("terminal_screen", json!({"session": "wide"})),
        (
            "terminal_screen",
            json!({"session": "wide", "format": "styled", "max_output_bytes": 262_144}),
        ),
        (
            "terminal_scrollback",
            json!({"session": "wide", "offset": -10_000, "limit": 10_000}),
        ),
        (
            "terminal_scrollback",
            json!({"session": "pty", "offset": -10_000, "limit": 10_000, "max_output_bytes": 262_144}),
        ),
        ("terminal_wait", json!({"session": "wide", "quiet_ms": 100})),
        (
            "terminal_send",
            json!({"session": "wide", "keys": ["Enter"]}),
        ),
        ("terminal_list", json!({})),
        (
            "terminal_create",
            json!({"name": "flooding", "cwd": ".", "rows": 500, "cols": 1000, "command": fill}),
        ),
    ];
    for (tool, arguments) in calls {
        let (size, report) = result_size(&client, tool, arguments.clone()).await;
        eprintln!("{tool} {arguments}: {size} bytes");
        if tool == "terminal_screen" {
            assert!(
                report["text"]
                    .as_str()
                    .unwrap()
                    .contains(" lines elided: terminal_scrollback offset "),
                "{report:.300}"
            );
        }
    }
    let bad = call_err(
        &client,
        "terminal_run",
        json!({"session": "wide", "command": "true", "max_output_bytes": 2_000_000}),
    )
    .await;
    assert!(
        bad.contains("2000000 is out of range: expected an integer from 1024 to 262144"),
        "{bad}"
    );
    let resource = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "drydock://sessions/pty/scrollback",
        ))
        .await
        .unwrap();
    let size = serde_json::to_string(&resource).unwrap().len();
    assert!(
        size < 1024 * 1024,
        "the scrollback resource is {size} bytes"
    );
    client.cancel().await.ok();
}

/// The user's own tmux session `mine` (120x40, a plain bash) on the test's tmux server.
fn start_users_session(tmux: &TmuxServers) {
    let started = user_tmux(
        tmux.dir(),
        &[
            "new-session",
            "-d",
            "-s",
            "mine",
            "-x",
            "120",
            "-y",
            "40",
            "bash --norc --noprofile",
        ],
    );
    assert!(started.status.success(), "{started:?}");
}
