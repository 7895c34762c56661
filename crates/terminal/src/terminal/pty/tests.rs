use super::*;
use crate::terminal::core::{WaitFor, WaitMethod};
use crate::terminal::shell_integration;
use regex::Regex;
use std::time::Instant;

const SECOND: Duration = Duration::from_secs(1);
const CAP: usize = 64 * 1024;

fn never() -> CancellationToken {
    CancellationToken::new()
}

/// Processes of session `sid` that are not zombies.
fn session_processes(sid: u32) -> Vec<i32> {
    crate::process::procfs::all_processes()
        .into_iter()
        .filter(|p| p.session == sid as i32 && !p.is_gone())
        .map(|p| p.pid)
        .collect()
}

struct Shell {
    session: PtySession,
    _home: tempfile::TempDir,
    _integration: tempfile::TempDir,
}

/// `program` (bash or zsh) with drydock's integration, HOME in a fresh temp dir
/// holding `rc` as `rc_name`.
fn shell_with_rc(program: &str, rc_name: &str, rc: &str) -> Shell {
    let home = tempfile::tempdir().unwrap();
    if !rc_name.is_empty() {
        std::fs::write(home.path().join(rc_name), rc).unwrap();
    }
    let integration = tempfile::tempdir().unwrap();
    let launch = shell_integration::launch(program, integration.path()).unwrap();
    let mut env = launch.env.clone();
    env.push(("HOME".into(), home.path().to_string_lossy().into_owned()));
    let session = PtySession::spawn(PtySpawn {
        argv: launch.argv,
        cwd: home.path().to_path_buf(),
        env,
        rows: 24,
        cols: 80,
        env_remove: Vec::new(),
        scrollback: 1000,
        expect_marks: launch.marks,
    })
    .unwrap();
    Shell {
        session,
        _home: home,
        _integration: integration,
    }
}

fn shell(program: &str) -> Shell {
    shell_with_rc(program, "", "")
}

async fn run(shell: &Shell, command: &str, timeout: Duration) -> RunOutcome {
    run_capped(shell, command, timeout, CAP).await
}

async fn run_capped(shell: &Shell, command: &str, timeout: Duration, cap: usize) -> RunOutcome {
    shell
        .session
        .run(command, timeout, Fallback::default(), cap, &never())
        .await
        .unwrap()
}

async fn exact_completion(program: &str) {
    let shell = shell(program);
    let outcome = run(&shell, "echo hi", 10 * SECOND).await;
    assert_eq!(outcome.output, "hi\n", "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.method, WaitMethod::Mark);
    assert!(outcome.completed);

    let outcome = run(&shell, "false", 5 * SECOND).await;
    assert_eq!((outcome.exit_code, outcome.output.as_str()), (Some(1), ""));

    let outcome = run(&shell, "true", 5 * SECOND).await;
    assert_eq!((outcome.exit_code, outcome.output.as_str()), (Some(0), ""));
    assert!(outcome.duration_ms < 1000, "{outcome:?}");

    let outcome = run(&shell, "sleep 2; echo done", 10 * SECOND).await;
    assert_eq!(outcome.output, "done\n", "{outcome:?}");
    assert!(outcome.completed && outcome.duration_ms >= 2000);

    let outcome = run(&shell, "printf 'a\\nb'; (exit 7)", 5 * SECOND).await;
    assert_eq!(
        (outcome.exit_code, outcome.output.as_str()),
        (Some(7), "a\nb")
    );
    // Output without a final newline stays visible; the next prompt starts a new line.
    let (screen, _) = shell.session.core().screen_and_top_line(false);
    eprintln!("{program} screen:\n{screen}");
    assert!(
        screen.lines().any(|line| line.starts_with('b')),
        "{program}: {screen}"
    );
}

#[tokio::test]
async fn bash_commands_complete_at_their_mark() {
    exact_completion("bash").await;
}

#[tokio::test]
async fn zsh_commands_complete_at_their_mark() {
    exact_completion("zsh").await;
}

#[tokio::test]
async fn large_output_is_capped_and_its_lines_keep_their_numbers() {
    let shell = shell("bash");
    let cap = 256 * 1024;
    let outcome = run_capped(&shell, "seq 1 200000", 60 * SECOND, cap).await;
    assert!(outcome.completed, "{:?}", outcome.method);
    assert_eq!(outcome.exit_code, Some(0));
    let output = &outcome.output;
    assert!(output.starts_with("1\n2\n3\n"));
    assert!(output.ends_with("199999\n200000\n"));
    let marker_start = output.find("\n[... ").expect("a marker");
    let marker_end = marker_start + output[marker_start..].find(" ...]\n").unwrap() + 6;
    // seq 1 200000 prints 1,288,895 bytes in 200,000 lines.
    let kept = output.len() - (marker_end - marker_start);
    assert_eq!(kept as u64 + outcome.elided_bytes, 1_288_895);
    let kept_lines = output.matches('\n').count() as u64 - 2;
    assert_eq!(kept_lines + outcome.elided_lines, 200_000);
    assert!(serde_json::to_string(output).unwrap().len() < cap + 300);

    let lines = outcome.scrollback;
    assert_eq!(lines.end - lines.offset, 200_000, "{lines:?}");
    let core = shell.session.core();
    let last = core.lines(lines.end - 2, 2);
    assert_eq!(last.lines, ["199999", "200000"]);
    assert_eq!(last.oldest, lines.oldest_kept);
    assert!(
        last.total - last.oldest <= 1000 + 24,
        "scrollback is bounded: {last:?}"
    );
}

#[tokio::test]
async fn timeout_then_interrupt_leaves_the_shell_usable() {
    let shell = shell("bash");
    let outcome = run(&shell, "echo started; sleep 30", SECOND).await;
    assert!(!outcome.completed);
    assert_eq!(outcome.method, WaitMethod::Timeout);
    assert_eq!(outcome.output, "started\n");
    // C-c as a key: the terminal turns it into SIGINT for the foreground job.
    shell.session.write(b"\x03").unwrap();
    let outcome = run(&shell, "echo again", 5 * SECOND).await;
    assert_eq!(outcome.output, "again\n", "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
}

#[tokio::test]
async fn run_while_the_shell_is_busy_waits_for_the_previous_command() {
    let shell = shell("bash");
    let outcome = run(&shell, "sleep 1; echo first", Duration::from_millis(200)).await;
    assert!(!outcome.completed);
    let outcome = run(&shell, "echo second", 5 * SECOND).await;
    assert_eq!(outcome.output, "second\n", "{outcome:?}");
}

#[tokio::test]
async fn python_repl_falls_back_to_a_pattern() {
    let home = tempfile::tempdir().unwrap();
    let session = PtySession::spawn(PtySpawn {
        argv: vec!["python3".into(), "-q".into(), "-i".into()],
        cwd: home.path().to_path_buf(),
        env: vec![("TERM".into(), "xterm-256color".into())],
        env_remove: Vec::new(),
        rows: 24,
        cols: 80,
        scrollback: 100,
        expect_marks: false,
    })
    .unwrap();
    let core = session.core();
    let ready = core
        .wait(
            WaitFor {
                pattern: Some(Regex::new(">>> $").unwrap()),
                max_wait: 10 * SECOND,
                ..Default::default()
            },
            &never(),
        )
        .await
        .unwrap();
    assert_eq!(ready.method, WaitMethod::Pattern);
    let fallback = Fallback {
        quiet_ms: None,
        pattern: Some(Regex::new(r">>> $").unwrap()),
    };
    let outcome = session
        .run("6 * 7", 10 * SECOND, fallback.clone(), CAP, &never())
        .await
        .unwrap();
    assert_eq!(outcome.method, WaitMethod::Pattern);
    assert_eq!(outcome.output, "42\n", "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert!(!core.has_marks());

    let outcome = session
        .run(
            "import time; time.sleep(1.5); print('late')",
            10 * SECOND,
            fallback,
            CAP,
            &never(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.output, "late\n", "{outcome:?}");

    let quiet = Fallback {
        quiet_ms: Some(300),
        pattern: None,
    };
    let outcome = session
        .run("print('q')", 10 * SECOND, quiet, CAP, &never())
        .await
        .unwrap();
    assert_eq!(outcome.method, WaitMethod::Quiet);
    assert!(outcome.output.starts_with("q\n"), "{outcome:?}");
}

#[tokio::test]
async fn resize_changes_the_screen_and_the_program_sees_it() {
    let shell = shell("bash");
    run(&shell, "true", 10 * SECOND).await;
    shell.session.resize(30, 100).unwrap();
    assert_eq!(shell.session.core().size(), (30, 100));
    let outcome = run(&shell, "tput cols; tput lines", 5 * SECOND).await;
    assert_eq!(outcome.output, "100\n30\n");
}

#[tokio::test]
async fn kill_ends_every_process_of_the_session() {
    let shell = shell("bash");
    run(&shell, "sleep 1000 & sleep 1001 | cat &", 10 * SECOND).await;
    let sid = shell.session.pid();
    assert!(
        session_processes(sid).len() >= 4,
        "{:?}",
        session_processes(sid)
    );
    let started = Instant::now();
    shell.session.kill();
    assert!(session_processes(sid).is_empty());
    eprintln!("kill took {:?}", started.elapsed());
    let closed = shell
        .session
        .core()
        .wait(
            WaitFor {
                max_wait: 5 * SECOND,
                ..Default::default()
            },
            &never(),
        )
        .await
        .unwrap();
    assert!(shell.session.core().has_exited(), "{closed:?}");
    assert!(!shell.session.is_alive());
}

#[tokio::test]
async fn drop_kills_the_session_without_blocking() {
    let shell = shell("bash");
    run(&shell, "trap '' HUP TERM; sleep 1000 &", 10 * SECOND).await;
    let sid = shell.session.pid();
    let started = Instant::now();
    drop(shell);
    let dropped_in = started.elapsed();

    assert!(
        dropped_in < KILL_GRACE,
        "the drop blocked for {dropped_in:?}"
    );
    while !session_processes(sid).is_empty() && started.elapsed() < 5 * SECOND {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(session_processes(sid), Vec::<i32>::new());
}

#[tokio::test]
async fn the_users_own_rc_is_sourced() {
    let bash = shell_with_rc(
        "bash",
        ".bashrc",
        "export FROM_USER_RC=bash-yes\nalias hello='echo hello-alias'\n",
    );
    let outcome = run(&bash, "echo $FROM_USER_RC; hello", 10 * SECOND).await;
    assert_eq!(outcome.output, "bash-yes\nhello-alias\n");

    let zsh = shell_with_rc("zsh", ".zshrc", "export FROM_USER_RC=zsh-yes\n");
    let outcome = run(
        &zsh,
        "echo $FROM_USER_RC; echo ${ZDOTDIR:-unset}",
        10 * SECOND,
    )
    .await;
    assert_eq!(outcome.output, "zsh-yes\nunset\n");
}

#[tokio::test]
async fn removed_variables_never_reach_the_program() {
    assert!(
        std::env::var_os("PATH").is_some(),
        "tests run with PATH set"
    );
    let dir = tempfile::tempdir().unwrap();
    let session = PtySession::spawn(PtySpawn {
        argv: vec!["/usr/bin/env".into()],
        cwd: dir.path().to_path_buf(),
        env: vec![("DRYDOCK_GIVEN".into(), "yes".into())],
        env_remove: vec!["PATH".into(), "DRYDOCK_GIVEN".into()],
        rows: 24,
        cols: 200,
        scrollback: 1000,
        expect_marks: false,
    })
    .unwrap();
    let core = session.core();
    let ended = core
        .wait(
            WaitFor {
                after_generation: Some(u64::MAX),
                max_wait: 10 * SECOND,
                ..Default::default()
            },
            &never(),
        )
        .await
        .unwrap();
    assert_eq!(ended.method, WaitMethod::Exited);
    let lines = core.lines(0, usize::MAX).lines;
    assert!(lines.iter().any(|l| l == "DRYDOCK_GIVEN=yes"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("PATH=")), "{lines:?}");
}

#[tokio::test]
async fn a_programs_start_up_probes_are_answered_in_order_and_its_status_kept() {
    // Probes as Claude Code sends them (agent-lab.md §6.1), then a program status
    // report; the program prints, in hex, what its terminal answered.
    let script = r#"
import os, sys, tty
tty.setraw(0)
os.write(1, b"\x1b[>0q\x1b[?u\x1b]7501;?\x1b\\\x1b[c")
got = b""
while not got.endswith(b"c"):
    got += os.read(0, 1024)
os.write(1, b"\x1b]7501;state=idle:app=test\x07\r\nANSWER " + got.hex().encode() + b"\r\n")
"#;
    let session = PtySession::spawn(PtySpawn {
        argv: vec!["python3".into(), "-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        rows: 24,
        cols: 200,
        env_remove: Vec::new(),
        scrollback: 100,
        expect_marks: false,
    })
    .unwrap();
    let core = session.core();
    let deadline = Instant::now() + 10 * SECOND;
    while !core.has_exited() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let expected = format!(
        "\x1bP>|drydock {}\x1b\\\x1b]7501;?\x1b\\\x1b[?62;22c",
        env!("CARGO_PKG_VERSION")
    );
    let hex: String = expected.bytes().map(|b| format!("{b:02x}")).collect();
    let (screen, _) = core.screen_and_top_line(false);
    assert!(screen.contains(&format!("ANSWER {hex}")), "{screen}");
    let status: Vec<String> = core
        .program_status()
        .into_iter()
        .map(|s| s.report)
        .collect();
    assert_eq!(status, ["state=idle:app=test"]);
}

#[test]
fn spawn_errors_are_clear() {
    let spawn = |argv: Vec<&str>, cwd: &str| {
        PtySession::spawn(PtySpawn {
            argv: argv.into_iter().map(String::from).collect(),
            cwd: cwd.into(),
            env: vec![],
            env_remove: Vec::new(),
            rows: 24,
            cols: 80,
            scrollback: 10,
            expect_marks: false,
        })
    };
    assert!(matches!(spawn(vec![], "/"), Err(PtyError::EmptyCommand)));
    assert!(matches!(
        spawn(vec!["sh"], "/no/such/dir"),
        Err(PtyError::BadCwd(_))
    ));
    let error = spawn(vec!["no-such-program-drydock"], "/").err().unwrap();
    assert!(
        error.to_string().contains("no-such-program-drydock"),
        "{error}"
    );
}

#[test]
fn run_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let shell = shell("bash");
    let cancel = never();
    let future = shell
        .session
        .run("true", SECOND, Fallback::default(), CAP, &cancel);
    assert_send(&future);
    let core = shell.session.core();
    let wait = core.wait(WaitFor::default(), &cancel);
    assert_send(&wait);
}
