//! Tests against a real tmux server on a private socket per test (never the user's default
//! server); the server is killed when the guard drops.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::procs;
use super::test_support::{OptionScope, validate_key_name};
use super::*;
use crate::process::procfs::ProcStat;
use std::process::Stdio;

mod control_client;

/// Generous: these wait on real tmux, on a machine that may be busy with other tests.
const WAIT: Duration = Duration::from_secs(30);

/// A private tmux server for one test, killed on drop.
struct TestServer {
    dir: tempfile::TempDir,
    tmux: Tmux,
}

impl TestServer {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("dd-tmux-")
            .tempdir_in("/tmp")
            .unwrap();
        let tmux = Tmux::new(SocketSpec::Path(dir.path().join("sock")))
            .with_config_file("/dev/null")
            .with_defaults(SessionDefaults {
                history_limit: 5000,
                ..SessionDefaults::default()
            });
        Self { dir, tmux }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// A plain bash with a fixed prompt.
    fn bash_spawn() -> (Vec<String>, Vec<(String, String)>) {
        (
            strings(&["bash", "--norc", "--noprofile"]),
            vec![("PS1".to_string(), "$ ".to_string())],
        )
    }

    async fn bash_session(&self, name: &str) -> PaneInfo {
        let (argv, env) = Self::bash_spawn();
        let cwd = self.dir.path().to_path_buf();
        let pane = self
            .tmux
            .new_session(
                name,
                &Spawn {
                    cwd: Some(&cwd),
                    argv: &argv,
                    env: &env,
                },
                24,
                80,
            )
            .await
            .unwrap();
        // capture-pane drops trailing spaces: the prompt "$ " reads "$".
        wait_screen(&self.tmux, &pane.id, |s| s.lines().any(|l| l == "$")).await;
        pane
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(self.socket())
            .arg("kill-server")
            .env_remove("TMUX")
            .stderr(Stdio::null())
            .status();
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until the pane's screen plus scrollback satisfies `check`; returns it.
async fn wait_screen(tmux: &Tmux, pane: &str, check: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let options = CaptureOptions {
            start: Some(i64::MIN),
            ..Default::default()
        };
        last = tmux.capture(pane, options).await.unwrap_or(last);
        if check(&last) {
            return last;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out; screen:\n{last}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn run_line(tmux: &Tmux, pane: &str, line: &str) {
    tmux.send_text(pane, line).await.unwrap();
    tmux.send_keys(pane, &strings(&["Enter"])).await.unwrap();
}

fn alive(pid: i32) -> bool {
    ProcStat::read(pid).is_some_and(|p| !p.is_gone())
}

#[tokio::test]
async fn version_and_environment() {
    let version = version().await.unwrap();
    assert!(version.starts_with('3'), "{version}");
    // Only checks it does not panic; the answer depends on where the tests run.
    let _ = inside_tmux();
}

#[tokio::test]
async fn session_runs_in_cwd_with_env() {
    let server = TestServer::new();
    let (argv, mut env) = TestServer::bash_spawn();
    env.push(("DRYDOCK_VAR".into(), "hello world; $HOME".into()));
    let cwd = server.dir.path().join("work dir");
    std::fs::create_dir(&cwd).unwrap();
    let pane = server
        .tmux
        .new_session(
            "drydock-env",
            &Spawn {
                cwd: Some(&cwd),
                argv: &argv,
                env: &env,
            },
            24,
            80,
        )
        .await
        .unwrap();
    run_line(&server.tmux, &pane.id, r#"pwd; echo "v=$DRYDOCK_VAR""#).await;
    let cwd_text = cwd.canonicalize().unwrap().display().to_string();
    let screen = wait_screen(&server.tmux, &pane.id, |s| s.contains("v=hello")).await;
    assert!(
        screen.lines().any(|l| l == cwd_text),
        "cwd {cwd_text} not in:\n{screen}"
    );
    assert!(
        screen.lines().any(|l| l == "v=hello world; $HOME"),
        "{screen}"
    );
}

#[tokio::test]
async fn list_panes_reports_every_field() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-list").await;
    let panes = server.tmux.list_panes().await.unwrap();
    assert_eq!(panes.len(), 1);
    let listed = &panes[0];
    assert_eq!(listed, &pane);
    assert!(listed.id.starts_with('%'), "{listed:?}");
    assert_eq!(listed.session, "drydock-list");
    assert_eq!((listed.window_index, listed.pane_index), (0, 0));
    assert_eq!(listed.command, "bash");
    assert_eq!(listed.path, server.dir.path().canonicalize().unwrap());
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", listed.pid)).unwrap();
    assert_eq!(comm.trim(), "bash");
    assert_eq!((listed.width, listed.height), (80, 24));
    assert!(listed.active && !listed.dead);
    assert_eq!(listed.dead_status, None);
    assert_eq!(listed.address(), "tmux:drydock-list:0.0");

    let address = parse_address(&listed.address()).unwrap();
    assert_eq!(server.tmux.pane_at(&address).await.unwrap().id, listed.id);
    assert_eq!(server.tmux.pane_size(&listed.id).await.unwrap(), (24, 80));
    let (x, y) = server.tmux.cursor(&listed.id).await.unwrap();
    assert_eq!((x, y), (2, 0), "cursor after the \"$ \" prompt");
}

#[tokio::test]
async fn windows_and_splits() {
    let server = TestServer::new();
    let first = server.bash_session("drydock-split").await;
    let (argv, env) = TestServer::bash_spawn();
    let spawn = Spawn {
        cwd: None,
        argv: &argv,
        env: &env,
    };

    let below = server
        .tmux
        .split_pane(&first.id, true, &spawn)
        .await
        .unwrap();
    let top = server.tmux.pane(&first.id).await.unwrap();
    assert_eq!((top.width, below.width), (80, 80));
    assert_eq!(top.height + 1 + below.height, 24, "{top:?} {below:?}");
    assert_eq!(below.pane_index, 1);

    let window = server
        .tmux
        .new_window("drydock-split", Some("second"), &spawn)
        .await
        .unwrap();
    assert_eq!(window.window_index, 1);
    assert_eq!(window.window_name, "second");
    let right = server
        .tmux
        .split_pane(&window.id, false, &spawn)
        .await
        .unwrap();
    let left = server.tmux.pane(&window.id).await.unwrap();
    assert_eq!((left.height, right.height), (24, 24));
    assert_eq!(left.width + 1 + right.width, 80, "{left:?} {right:?}");
    assert_eq!(
        server
            .tmux
            .session_panes("drydock-split")
            .await
            .unwrap()
            .len(),
        4
    );

    server.tmux.kill_pane(&right.id).await.unwrap();
    assert_eq!(
        server
            .tmux
            .session_panes("drydock-split")
            .await
            .unwrap()
            .len(),
        3
    );
    server.tmux.kill_window(&window.id).await.unwrap();
    let panes = server.tmux.session_panes("drydock-split").await.unwrap();
    let mut ids: Vec<_> = panes.iter().map(|p| p.id.clone()).collect();
    ids.sort();
    let mut expected = vec![first.id.clone(), below.id.clone()];
    expected.sort();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn keys_interrupt_and_text_is_literal() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-keys").await;
    run_line(&server.tmux, &pane.id, "sleep 100").await;
    wait_until("sleep running", || async {
        server.tmux.pane(&pane.id).await.unwrap().command == "sleep"
    })
    .await;
    server
        .tmux
        .send_keys(&pane.id, &strings(&["C-c"]))
        .await
        .unwrap();
    wait_until("sleep interrupted", || async {
        server.tmux.pane(&pane.id).await.unwrap().command == "bash"
    })
    .await;

    server.tmux.send_text(&pane.id, "C-c").await.unwrap();
    wait_screen(&server.tmux, &pane.id, |s| s.lines().any(|l| l == "$ C-c")).await;
    server
        .tmux
        .send_keys(&pane.id, &strings(&["C-u"]))
        .await
        .unwrap();

    // A trailing ';' (tmux's command separator), a leading '-' and tmux format syntax all
    // arrive as typed.
    run_line(&server.tmux, &pane.id, "echo -n '#{pane_id} ~' ; echo ';'").await;
    wait_screen(&server.tmux, &pane.id, |s| {
        s.lines().any(|l| l == "#{pane_id} ~;")
    })
    .await;

    server
        .tmux
        .send_bytes(&pane.id, b"echo b\xc3\xa9\r")
        .await
        .unwrap();
    wait_screen(&server.tmux, &pane.id, |s| s.lines().any(|l| l == "bé")).await;

    let bad = server
        .tmux
        .send_keys(&pane.id, &strings(&["Enter", "Entr"]))
        .await;
    assert!(
        matches!(bad, Err(TmuxError::InvalidKey(ref k)) if k == "Entr"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn argv_reaches_the_program_unchanged() {
    let server = TestServer::new();
    // The program lingers before it exits: tmux 3.3 on a busy machine loses the last output
    // of a program that exits at once (measured: 2 of 60 panes running a bare printf).
    let argv = strings(&[
        "sh",
        "-c",
        r#"printf '[%s]\n' "$@"; sleep 0.2"#,
        "sh",
        "a b",
        "x;",
        ";",
        "$HOME",
        "-n",
        "'q'",
        "",
    ]);
    let pane = server
        .tmux
        .new_session(
            "drydock-argv",
            &Spawn {
                cwd: None,
                argv: &argv,
                env: &[],
            },
            24,
            80,
        )
        .await
        .unwrap();
    // tmux marks the pane dead when the pty closes and learns the status a moment later.
    wait_until("program exited", || async {
        server
            .tmux
            .pane(&pane.id)
            .await
            .unwrap()
            .dead_status
            .is_some()
    })
    .await;
    let screen = wait_screen(&server.tmux, &pane.id, |s| s.contains("['q']")).await;
    let printed: Vec<&str> = screen.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(
        printed,
        ["[a b]", "[x;]", "[;]", "[$HOME]", "[-n]", "['q']", "[]"],
        "{screen}"
    );
    let dead = server.tmux.pane(&pane.id).await.unwrap();
    assert_eq!(dead.dead_status, Some(0));

    // A single-element argv is a program path, not a shell command line.
    let dir = server.dir.path().join("my dir");
    std::fs::create_dir(&dir).unwrap();
    let script = dir.join("it's.sh");
    std::fs::write(&script, "#!/bin/sh\necho single-ok\nsleep 100\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let argv = vec![script.display().to_string()];
    let window = server
        .tmux
        .new_window(
            "drydock-argv",
            None,
            &Spawn {
                cwd: None,
                argv: &argv,
                env: &[],
            },
        )
        .await
        .unwrap();
    wait_screen(&server.tmux, &window.id, |s| s.contains("single-ok")).await;
}

/// Many programs that exit at once: every dead pane is listed with how it ended. On a busy
/// machine tmux 3.3 misses some of these exits until it is nudged (see `settle_exits`).
#[tokio::test]
async fn quick_exits_are_listed_with_their_status() {
    let server = TestServer::new();
    server
        .tmux
        .bash_spawn_session_again("drydock-quick")
        .await
        .unwrap();
    const EXITS: usize = 12;
    for i in 0..EXITS {
        let argv = match i % 3 {
            0 => strings(&["sh", "-c", "exit 7"]),
            1 => strings(&["true"]),
            _ => strings(&["sh", "-c", "kill -TERM $$"]),
        };
        let spawn = Spawn {
            cwd: None,
            argv: &argv,
            env: &[],
        };
        server
            .tmux
            .new_window("drydock-quick", None, &spawn)
            .await
            .unwrap();
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    let panes = loop {
        let panes = server.tmux.list_panes().await.unwrap();
        if panes.iter().filter(|p| p.dead).count() == EXITS {
            break panes;
        }
        assert!(tokio::time::Instant::now() < deadline, "{panes:#?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    for pane in panes.iter().filter(|p| p.dead) {
        let ended = (pane.dead_status, pane.dead_signal);
        let expected = match pane.window_index as usize % 3 {
            1 => (Some(7), None),
            2 => (Some(0), None),
            _ => (None, Some(15)),
        };
        assert_eq!(ended, expected, "{pane:?}");
    }
}

#[tokio::test]
async fn resize_changes_what_the_program_sees() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-resize").await;
    server.tmux.resize_pane(&pane.id, 30, 100).await.unwrap();
    assert_eq!(server.tmux.pane_size(&pane.id).await.unwrap(), (30, 100));
    run_line(&server.tmux, &pane.id, "stty size; tput cols").await;
    wait_screen(&server.tmux, &pane.id, |s| {
        s.lines().any(|l| l == "30 100") && s.lines().any(|l| l == "100")
    })
    .await;

    // With two panes in the window, the pane is resized inside it.
    let (argv, env) = TestServer::bash_spawn();
    let other = server
        .tmux
        .split_pane(
            &pane.id,
            false,
            &Spawn {
                cwd: None,
                argv: &argv,
                env: &env,
            },
        )
        .await
        .unwrap();
    server.tmux.resize_pane(&other.id, 30, 40).await.unwrap();
    assert_eq!(server.tmux.pane_size(&other.id).await.unwrap(), (30, 40));
    assert_eq!(server.tmux.pane_size(&pane.id).await.unwrap(), (30, 59));
}

#[tokio::test]
async fn kill_session_leaves_no_process() {
    let server = TestServer::new();
    let spawn_argv = strings(&["sh", "-c", "sleep 1000 & sleep 1000"]);
    let pane = server
        .tmux
        .new_session(
            "drydock-kill",
            &Spawn {
                cwd: None,
                argv: &spawn_argv,
                env: &[],
            },
            24,
            80,
        )
        .await
        .unwrap();
    // A pane whose processes ignore SIGHUP: tmux's kill alone leaves them running.
    let hup_proof = strings(&["sh", "-c", "trap '' HUP; sleep 1000 & sleep 1000"]);
    let window = server
        .tmux
        .new_window(
            "drydock-kill",
            None,
            &Spawn {
                cwd: None,
                argv: &hup_proof,
                env: &[],
            },
        )
        .await
        .unwrap();
    let mut pids = Vec::new();
    wait_until("both sleeps started in each pane", || {
        pids = procs::of_panes([pane.pid, window.pid])
            .members()
            .iter()
            .map(|p| p.pid)
            .collect();
        let n = pids.len();
        async move { n == 6 }
    })
    .await;
    server.tmux.kill_session("drydock-kill").await.unwrap();
    let survivors: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
    assert!(matches!(
        server.tmux.session_panes("drydock-kill").await,
        Err(TmuxError::UnknownTarget { .. }) | Err(TmuxError::NoServer { .. })
    ));
}

/// The names in the environment of a pane's `sleep`, once it runs (until tmux's child
/// execs it, /proc shows the server's own environment).
async fn environment_names(pid: u32) -> Vec<String> {
    wait_until("the pane runs sleep", || {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        async move { cmdline.starts_with(b"sleep\0") }
    })
    .await;
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|&b| b == 0)
        .filter_map(|entry| entry.split(|&b| b == b'=').next())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

async fn global_environment(tmux: &Tmux) -> String {
    tmux.run(cmd(["show-environment", "-g"])).await.unwrap()
}

#[tokio::test]
async fn removed_variables_reach_no_pane_and_leave_the_global_environment() {
    assert!(
        std::env::var_os("HOME").is_some(),
        "tests run with HOME set"
    );
    let sleeper = strings(&["sleep", "600"]);
    let spawn = Spawn {
        cwd: None,
        argv: &sleeper,
        env: &[],
    };
    let has_home = |text: &str| text.lines().any(|line| line.starts_with("HOME="));

    // A server drydock starts itself never gets them.
    let fresh = TestServer::new();
    let scrubbed = fresh.tmux.clone().with_env_remove(vec!["HOME".into()]);
    let pane = scrubbed.new_session("fresh", &spawn, 24, 80).await.unwrap();
    assert!(
        !environment_names(pane.pid)
            .await
            .contains(&"HOME".to_string())
    );
    assert!(!has_home(&global_environment(&scrubbed).await));

    // A server an older drydock started with them: new panes no longer inherit them.
    let old = TestServer::new();
    let first = old.tmux.new_session("old", &spawn, 24, 80).await.unwrap();
    assert!(
        environment_names(first.pid)
            .await
            .contains(&"HOME".to_string())
    );
    assert!(has_home(&global_environment(&old.tmux).await));
    let scrubbed = old.tmux.clone().with_env_remove(vec!["HOME".into()]);
    let window = scrubbed.new_window("old", None, &spawn).await.unwrap();
    let split = scrubbed.split_pane(&first.id, false, &spawn).await.unwrap();
    let session = scrubbed.new_session("new", &spawn, 24, 80).await.unwrap();
    for pane in [&window, &split, &session] {
        let names = environment_names(pane.pid).await;
        assert!(
            !names.contains(&"HOME".to_string()),
            "{}: {names:?}",
            pane.id
        );
    }
    assert!(!has_home(&global_environment(&old.tmux).await));
}

#[tokio::test]
async fn sessions_are_found_again_after_a_restart() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-keep").await;
    let client = ControlClient::attach(&server.tmux, "drydock-keep")
        .await
        .unwrap();
    run_line(&server.tmux, &pane.id, "echo before-restart").await;
    drop(client);
    let socket = server.socket();
    // A session drydock did not create, with the same prefix.
    std::process::Command::new("tmux")
        .arg("-S")
        .arg(&socket)
        .args(["new-session", "-d", "-s", "drydock-foreign"])
        .env_remove("TMUX")
        .status()
        .unwrap();

    // "Restart": new objects on the same socket.
    let tmux = Tmux::new(SocketSpec::Path(socket)).with_config_file("/dev/null");
    let mut sessions = tmux.list_sessions_with_prefix("drydock-").await.unwrap();
    sessions.sort_by(|a, b| a.name.cmp(&b.name));
    let summary: Vec<(&str, Option<&str>)> = sessions
        .iter()
        .map(|s| (s.name.as_str(), s.owner.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            ("drydock-foreign", None),
            ("drydock-keep", Some(UNNAMED_OWNER))
        ]
    );
    assert!(tmux.is_drydock_session("drydock-keep").await.unwrap());
    assert!(!tmux.is_drydock_session("drydock-foreign").await.unwrap());
    assert_eq!(
        tmux.show_option(None, OptionScope::GlobalSession, "history-limit")
            .await
            .unwrap()
            .as_deref(),
        Some("5000")
    );

    let client = ControlClient::attach(&tmux, "drydock-keep").await.unwrap();
    let received = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = received.clone();
    client.subscribe(
        &pane.id,
        Arc::new(move |b| sink.lock().unwrap().extend_from_slice(b)),
    );
    wait_screen(&tmux, &pane.id, |s| {
        s.lines().any(|l| l == "before-restart")
    })
    .await;
    run_line(&tmux, &pane.id, "echo after-restart").await;
    wait_until("output after reattach", || {
        let got = String::from_utf8_lossy(&received.lock().unwrap()).into_owned();
        async move { got.contains("after-restart\r\n") }
    })
    .await;
    client.close().await;

    tmux.rename_session("drydock-keep", "drydock-renamed")
        .await
        .unwrap();
    assert!(tmux.is_drydock_session("drydock-renamed").await.unwrap());
}

#[tokio::test]
async fn clear_errors() {
    let server = TestServer::new();
    // Nothing started yet.
    assert!(matches!(
        server.tmux.list_panes().await,
        Err(TmuxError::NoServer { .. })
    ));
    assert!(!server.tmux.server_running().await.unwrap());
    assert!(
        server
            .tmux
            .list_sessions_with_prefix("drydock-")
            .await
            .unwrap()
            .is_empty()
    );

    let pane = server.bash_session("drydock-a b").await;
    assert!(server.tmux.server_running().await.unwrap());
    assert_eq!(pane.address(), "tmux:drydock-a b:0.0");
    // A prefix of an existing name is not that session.
    let prefix = server.tmux.kill_session("drydock-a").await;
    assert!(
        matches!(prefix, Err(TmuxError::UnknownTarget { .. })),
        "{prefix:?}"
    );
    let duplicate = server.tmux.bash_spawn_session_again("drydock-a b").await;
    assert!(
        matches!(duplicate, Err(TmuxError::DuplicateSession(_))),
        "{duplicate:?}"
    );
    let missing = server.tmux.capture("%999", CaptureOptions::default()).await;
    assert!(
        matches!(missing, Err(TmuxError::UnknownTarget { .. })),
        "{missing:?}"
    );
    let address = parse_address("tmux:nope:0.0").unwrap();
    let missing = server.tmux.pane_at(&address).await;
    assert!(
        matches!(missing, Err(TmuxError::UnknownTarget { .. })),
        "{missing:?}"
    );
    let bad_name = server.tmux.bash_spawn_session_again("a.b").await;
    assert!(
        matches!(bad_name, Err(TmuxError::InvalidSessionName { .. })),
        "{bad_name:?}"
    );
    let bad_cwd = server
        .tmux
        .new_session(
            "drydock-cwd",
            &Spawn {
                cwd: Some(Path::new("/no/such/dir")),
                argv: &[],
                env: &[],
            },
            24,
            80,
        )
        .await;
    assert!(
        matches!(bad_cwd, Err(TmuxError::InvalidArgument(_))),
        "{bad_cwd:?}"
    );

    assert!(Tmux::user_default().kill_server().await.is_err());
}

impl Tmux {
    async fn bash_spawn_session_again(&self, name: &str) -> Result<PaneInfo> {
        let (argv, env) = TestServer::bash_spawn();
        self.new_session(
            name,
            &Spawn {
                cwd: None,
                argv: &argv,
                env: &env,
            },
            24,
            80,
        )
        .await
    }
}

#[tokio::test]
async fn capture_reaches_into_scrollback() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-scroll").await;
    run_line(&server.tmux, &pane.id, "seq 1 200").await;
    let all = wait_screen(&server.tmux, &pane.id, |s| s.lines().any(|l| l == "200")).await;
    assert!(all.lines().any(|l| l == "1"), "history from the start");
    let screen = server
        .tmux
        .capture(&pane.id, CaptureOptions::default())
        .await
        .unwrap();
    assert_eq!(screen.lines().count(), 24);
    assert!(!screen.lines().any(|l| l == "1"));
    let window = server
        .tmux
        .capture(
            &pane.id,
            CaptureOptions {
                start: Some(-5),
                end: Some(-1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(window.lines().count(), 5, "{window}");
}

#[test]
fn key_names() {
    for good in [
        "Enter", "C-c", "Escape", "Up", "Tab", "BSpace", "F5", "F12", "M-x", "C-M-Left", "a", "^C",
        "PageUp", "S-Tab", "KPEnter",
    ] {
        assert!(validate_key_name(good).is_ok(), "{good}");
    }
    for bad in ["", "Entr", "F13", "C-", "hello", "C-hello"] {
        assert!(validate_key_name(bad).is_err(), "{bad}");
    }
}

/// tmux before 3.6 crashes when it tells control clients of a change while one of them is
/// still identifying itself (see `changes`): sessions made and killed without pause while
/// control clients attach and detach over and over leave the server running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_coming_and_going_while_clients_attach_leave_the_server_running() {
    const FOR: Duration = Duration::from_secs(6);
    let server = TestServer::new();
    server.bash_session("drydock-anchor").await;
    let tmux = server.tmux.clone();
    let churn = tokio::spawn(async move {
        let (argv, env) = TestServer::bash_spawn();
        let started = std::time::Instant::now();
        let mut made = 0;
        while started.elapsed() < FOR {
            let name = format!("drydock-churn-{made}");
            let spawn = Spawn {
                cwd: None,
                argv: &argv,
                env: &env,
            };
            tmux.new_session(&name, &spawn, 24, 80).await.unwrap();
            tmux.kill_session(&name).await.unwrap();
            made += 1;
        }
        made
    });
    let attachers: Vec<_> = (0..2)
        .map(|_| {
            let tmux = server.tmux.clone();
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let mut attached = 0;
                while started.elapsed() < FOR {
                    let client = ControlClient::attach(&tmux, "drydock-anchor")
                        .await
                        .unwrap();
                    drop(client);
                    attached += 1;
                }
                attached
            })
        })
        .collect();
    let made = churn.await.unwrap();
    let mut attached = 0;
    for attacher in attachers {
        attached += attacher.await.unwrap();
    }
    assert!(
        made > 10 && attached > 10,
        "{made} sessions, {attached} attaches"
    );
    assert!(
        server.tmux.server_running().await.unwrap(),
        "the server crashed ({made} sessions made and killed, {attached} attaches)"
    );
}
