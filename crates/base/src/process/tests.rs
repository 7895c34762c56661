use tokio::time::sleep;

use super::*;

const GENEROUS: Duration = Duration::from_secs(20);
const WATCHDOG: Duration = Duration::from_secs(180);

fn spec(program: &str, args: &[&str]) -> CommandSpec {
    CommandSpec::new(program, args.iter().copied(), std::env::temp_dir())
}

fn sh(script: &str) -> CommandSpec {
    spec("sh", &["-c", script])
}

fn limits(timeout: Duration) -> Limits {
    Limits {
        timeout,
        output_cap: 64 * 1024,
        kill_grace: Duration::from_secs(1),
    }
}

#[derive(Default)]
struct Lines {
    stdout: Vec<String>,
    stderr: Vec<String>,
}

async fn run_collecting(spec: &CommandSpec, limits: &Limits) -> (ProcessOutput, Lines) {
    run_cancellable(spec, limits, &CancellationToken::new()).await
}

async fn run_cancellable(
    spec: &CommandSpec,
    limits: &Limits,
    cancel: &CancellationToken,
) -> (ProcessOutput, Lines) {
    let mut lines = Lines::default();
    let mut on_line = |stream: Stream, line: &str| match stream {
        Stream::Stdout => lines.stdout.push(line.to_owned()),
        Stream::Stderr => lines.stderr.push(line.to_owned()),
    };
    // A watchdog, so that a regression that hangs fails instead of blocking the suite.
    let output = tokio::time::timeout(WATCHDOG, run(spec, limits, cancel, &mut on_line))
        .await
        .expect("run hung")
        .expect("the child starts");
    (output, lines)
}

fn pgid_of(output: &ProcessOutput) -> i32 {
    output.pid as i32
}

/// Waits (generously) until no process of the group is running any more.
async fn assert_group_gone(pgid: i32) {
    let running = || {
        procfs::all_processes()
            .into_iter()
            .any(|p| p.pgrp == pgid && !p.is_gone())
    };
    wait_until_not(
        running,
        &format!("process group {pgid} still has running members"),
    )
    .await;
}

/// Waits (generously) until `pid` is not running any more.
async fn assert_process_gone(pid: i32) {
    let running = || procfs::ProcStat::read(pid).is_some_and(|p| !p.is_gone());
    wait_until_not(running, &format!("process {pid} is still running")).await;
}

async fn wait_until_not(condition: impl Fn() -> bool, failure: &str) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while condition() {
        if Instant::now() >= give_up {
            let _ = std::process::Command::new("ps")
                .args(["-eo", "pid,ppid,pgid,sid,stat,args"])
                .status();
            panic!("{failure}");
        }
        sleep(Duration::from_millis(50)).await;
    }
}

// --- the process group dies with the run ---

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let (output, _) = run_collecting(
        &sh("sleep 1000 & sleep 1000"),
        &limits(Duration::from_secs(2)),
    )
    .await;

    assert_eq!(output.termination, Termination::TimedOut);
    assert!(output.duration >= Duration::from_secs(2));
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let limits = Limits {
        timeout: Duration::from_secs(1),
        kill_grace: Duration::from_secs(2),
        ..limits(Duration::ZERO)
    };
    let (output, _) = run_collecting(&sh("trap '' TERM; sleep 1000 & sleep 1000"), &limits).await;

    assert_eq!(output.termination, Termination::TimedOut);
    assert!(
        output.duration >= Duration::from_secs(3),
        "took {:?}",
        output.duration
    );
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn a_group_that_obeys_sigterm_does_not_wait_for_the_grace_period() {
    let limits = Limits {
        timeout: Duration::from_millis(500),
        kill_grace: Duration::from_secs(60),
        ..limits(Duration::ZERO)
    };
    let (output, _) = run_collecting(&sh("sleep 1000 & sleep 1000"), &limits).await;

    assert_eq!(output.termination, Termination::TimedOut);
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn cancelling_kills_the_whole_group() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let (output, _) = run_cancellable(
        &sh("sleep 1000 & sleep 1000"),
        &limits(Duration::from_secs(600)),
        &cancel,
    )
    .await;

    assert_eq!(output.termination, Termination::Cancelled);
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn dropping_the_future_kills_the_whole_group() {
    let spec = sh("echo $$; sleep 1000 & sleep 1000");
    let limits = limits(Duration::from_secs(600));
    let cancel = CancellationToken::new();
    let mut pgid = None;
    let mut on_line = |_: Stream, line: &str| {
        pgid.get_or_insert_with(|| line.parse::<i32>().expect("sh prints its pid"));
    };

    let dropped = tokio::time::timeout(
        Duration::from_secs(3),
        run(&spec, &limits, &cancel, &mut on_line),
    )
    .await;

    assert!(dropped.is_err(), "the run should still have been going");
    assert_group_gone(pgid.expect("the child printed its pid")).await;
}

#[tokio::test]
async fn a_grandchild_holding_stdout_after_a_normal_exit_is_killed() {
    let (output, lines) = run_collecting(
        &sh("sleep 1000 & echo done"),
        &limits(Duration::from_secs(600)),
    )
    .await;

    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(lines.stdout, ["done"]);
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn a_daemon_left_behind_by_a_normal_exit_is_killed_and_does_not_hold_the_run_open() {
    let (output, lines) = run_collecting(
        &sh("setsid sleep 60 & echo $!"),
        &limits(Duration::from_secs(600)),
    )
    .await;
    let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

    assert_eq!(output.termination, Termination::Exited(0));
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_process_gone(escaped).await;
}

#[tokio::test]
async fn a_setsid_grandchild_that_ignores_sigterm_dies_at_the_timeout() {
    let script = "setsid sh -c 'trap \"\" TERM; exec sleep 1000' & echo $!; sleep 1000";
    let limits = Limits {
        timeout: Duration::from_secs(1),
        kill_grace: Duration::from_secs(1),
        ..limits(Duration::ZERO)
    };
    let (output, lines) = run_collecting(&sh(script), &limits).await;
    let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

    assert_eq!(output.termination, Termination::TimedOut);
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    assert_process_gone(escaped).await;
    assert_group_gone(pgid_of(&output)).await;
}

#[tokio::test]
async fn an_orphan_in_a_session_of_its_own_dies_when_the_run_is_cancelled() {
    // The middle shell exits at once, so the setsid grandchild is reparented and only the
    // run's tag in its environment still ties it to the run.
    let middle = "setsid sh -c 'trap \"\" TERM; exec sleep 1000' & echo $!";
    let spec = spec("sh", &["-c", "sh -c \"$0\"; sleep 1000", middle]);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let (output, lines) = run_cancellable(&spec, &limits(Duration::from_secs(600)), &cancel).await;
    let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

    assert_eq!(output.termination, Termination::Cancelled);
    assert_process_gone(escaped).await;
}

#[tokio::test]
async fn every_child_carries_the_run_tag() {
    let (first, lines) = run_collecting(&spec("env", &[]), &limits(GENEROUS)).await;
    let (_, again) = run_collecting(&spec("env", &[]), &limits(GENEROUS)).await;
    let tag = |lines: &Lines| {
        lines
            .stdout
            .iter()
            .find_map(|line| {
                line.strip_prefix(&format!("{RUN_TAG_VAR}="))
                    .map(str::to_owned)
            })
            .expect("the tag is in the environment")
    };

    assert_eq!(first.termination, Termination::Exited(0));
    assert_ne!(tag(&lines), tag(&again), "each run has its own tag");
}

// --- termination ---

#[tokio::test]
async fn exit_codes_are_reported_exactly() {
    let limits = limits(Duration::from_secs(600));
    let (ok, _) = run_collecting(&spec("true", &[]), &limits).await;
    let (three, _) = run_collecting(&sh("exit 3"), &limits).await;

    assert_eq!(ok.termination, Termination::Exited(0));
    assert!(ok.termination.success());
    assert_eq!(three.termination, Termination::Exited(3));
    assert!(!three.termination.success());
}

#[tokio::test]
async fn a_signal_not_from_us_is_reported_as_signaled() {
    let (output, _) = run_collecting(&sh("kill -KILL $$"), &limits(Duration::from_secs(600))).await;

    assert_eq!(output.termination, Termination::Signaled(9));
}

#[tokio::test]
async fn a_missing_program_is_not_found() {
    let spec = spec("drydock-no-such-program-xyz", &[]);
    let error = run(
        &spec,
        &limits(GENEROUS),
        &CancellationToken::new(),
        &mut |_, _| {},
    )
    .await
    .unwrap_err();

    assert!(
        matches!(&error, RunError::NotFound { program } if program == "drydock-no-such-program-xyz")
    );
    assert_eq!(
        error.to_string(),
        "`drydock-no-such-program-xyz` was not found on PATH"
    );
}

#[tokio::test]
async fn a_missing_working_directory_is_a_spawn_error() {
    let spec = CommandSpec::new("true", [""; 0], "/nonexistent/drydock/dir");
    let error = run(
        &spec,
        &limits(GENEROUS),
        &CancellationToken::new(),
        &mut |_, _| {},
    )
    .await
    .unwrap_err();

    assert!(matches!(error, RunError::Spawn { .. }), "{error:?}");
    assert!(
        error.to_string().contains("/nonexistent/drydock/dir"),
        "{error}"
    );
}

#[test]
fn the_run_future_is_send() {
    fn assert_send(_: impl Send) {}
    let spec = spec("true", &[]);
    let limits = limits(GENEROUS);
    let cancel = CancellationToken::new();
    assert_send(run(&spec, &limits, &cancel, &mut |_, _| {}));
}

// --- lines ---

#[tokio::test]
async fn lines_arrive_in_order_per_stream_with_the_partial_last_line() {
    let script = "echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf partial";
    let (output, lines) = run_collecting(&sh(script), &limits(Duration::from_secs(600))).await;

    assert_eq!(lines.stdout, ["out1", "out2", "partial"]);
    assert_eq!(lines.stderr, ["err1", "err2"]);
    assert_eq!(output.stdout.text, "out1\nout2\npartial");
    assert_eq!(output.stderr.text, "err1\nerr2\n");
}

#[tokio::test]
async fn many_lines_all_arrive_in_order() {
    let (output, lines) = run_collecting(
        &spec("seq", &["1", "200000"]),
        &limits(Duration::from_secs(600)),
    )
    .await;

    let expected: Vec<String> = (1..=200_000).map(|n| n.to_string()).collect();
    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(lines.stdout, expected);
}

#[tokio::test]
async fn crlf_line_endings_are_stripped() {
    let (_, lines) =
        run_collecting(&spec("printf", &["a\\r\\nb\\r\\nc\\r"]), &limits(GENEROUS)).await;

    assert_eq!(lines.stdout, ["a", "b", "c"]);
}

#[tokio::test]
async fn invalid_utf8_is_converted_lossily() {
    let (output, lines) =
        run_collecting(&spec("printf", &["ok\\377\\376x\\n"]), &limits(GENEROUS)).await;

    assert_eq!(lines.stdout, ["ok\u{FFFD}\u{FFFD}x"]);
    assert_eq!(output.stdout.text, "ok\u{FFFD}\u{FFFD}x\n");
    assert_eq!(output.stdout.total_bytes, 6);
}

#[tokio::test]
async fn a_huge_line_is_delivered_truncated_and_reading_goes_on() {
    let script = "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo after";
    let (output, lines) = run_collecting(&sh(script), &limits(Duration::from_secs(600))).await;

    let truncated = format!(
        "{}[... {} bytes elided ...]",
        "a".repeat(MAX_LINE_BYTES),
        3_000_000 - MAX_LINE_BYTES
    );
    assert_eq!(lines.stdout.len(), 2);
    assert!(
        lines.stdout[0] == truncated,
        "the long line was not cut as expected"
    );
    assert_eq!(lines.stdout[1], "after");
    assert_eq!(
        output.stdout.total_bytes,
        3_000_000 + "\nafter\n".len() as u64
    );
}

// --- capture ---

#[tokio::test]
async fn output_over_the_cap_keeps_head_and_tail_with_an_exact_marker() {
    let limits = Limits {
        output_cap: 100,
        ..limits(Duration::from_secs(600))
    };
    let (output, lines) = run_collecting(&spec("seq", &["1", "1000"]), &limits).await;

    let full: String = (1..=1000).map(|n| format!("{n}\n")).collect();
    // A newline costs two bytes as JSON: 49 and 50 of the 50 bytes each half may take.
    let head = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15";
    let tail = "91\n992\n993\n994\n995\n996\n997\n998\n999\n1000\n";
    let elided = full.len() - head.len() - tail.len();
    let expected = format!("{head}\n[... {elided} bytes elided ...]\n{tail}");
    assert_eq!(output.stdout.text, expected);
    assert_eq!(output.stdout.total_bytes, full.len() as u64);
    assert_eq!(output.stdout.elided_bytes, elided as u64);
    assert_eq!(lines.stdout.len(), 1000, "lines are not capped");
}

#[tokio::test]
async fn output_under_the_cap_is_kept_whole() {
    let (output, _) = run_collecting(&spec("seq", &["1", "10"]), &limits(GENEROUS)).await;

    assert_eq!(output.stdout.text, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    assert_eq!(output.stdout.total_bytes, 21);
    assert_eq!(output.stdout.elided_bytes, 0);
    assert_eq!(
        output.stderr,
        CapturedOutput {
            text: String::new(),
            total_bytes: 0,
            elided_bytes: 0
        }
    );
}

/// Peak memory is a whole-process figure: measured in a test process of its own, so the
/// other tests running alongside do not count.
#[tokio::test]
async fn two_hundred_megabytes_are_counted_exactly_in_bounded_memory() {
    const ALONE: &str = "DRYDOCK_TEST_ALONE";
    if std::env::var_os(ALONE).is_none() {
        let measured = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::tests::two_hundred_megabytes_are_counted_exactly_in_bounded_memory",
                "--test-threads=1",
            ])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&measured.stdout);
        assert!(
            measured.status.success(),
            "the measuring test process failed:\n{report}"
        );
        // A renamed test would match nothing and pass without measuring.
        assert!(
            report.contains("1 passed"),
            "the measuring test did not run:\n{report}"
        );
        return;
    }
    let cap = 1024 * 1024;
    let limits = Limits {
        output_cap: cap,
        ..limits(Duration::from_secs(600))
    };
    let total = 200_000_000u64;
    let (output, lines) = run_collecting(
        &spec("head", &["-c", &total.to_string(), "/dev/zero"]),
        &limits,
    )
    .await;

    // A NUL byte costs six bytes as JSON.
    let half = "\0".repeat(cap / 2 / 6);
    let elided = total - 2 * half.len() as u64;
    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(output.stdout.total_bytes, total);
    assert_eq!(output.stdout.elided_bytes, elided);
    assert!(output.stdout.text == format!("{half}\n[... {elided} bytes elided ...]\n{half}"));
    assert_eq!(lines.stdout.len(), 1);
    assert!(lines.stdout[0].len() < MAX_LINE_BYTES + 100);
    assert!(
        peak_memory_bytes() < 150_000_000,
        "peak memory {}",
        peak_memory_bytes()
    );
}

/// The process's peak resident set size.
fn peak_memory_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

// --- stdin and environment ---

#[tokio::test]
async fn stdin_bytes_are_delivered_and_closed() {
    let spec = CommandSpec {
        stdin: Some(b"hello\nworld".to_vec()),
        ..spec("cat", &[])
    };
    let (output, lines) = run_collecting(&spec, &limits(Duration::from_secs(600))).await;

    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(output.stdout.text, "hello\nworld");
    assert_eq!(lines.stdout, ["hello", "world"]);
}

#[tokio::test]
async fn stdin_is_written_while_output_is_read() {
    let size = 5_000_000;
    let spec = CommandSpec {
        stdin: Some(vec![b'x'; size]),
        ..spec("cat", &[])
    };
    let (output, _) = run_collecting(&spec, &limits(Duration::from_secs(120))).await;

    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(output.stdout.total_bytes, size as u64);
}

#[tokio::test]
async fn a_child_that_never_reads_stdin_does_not_block_the_timeout() {
    let spec = CommandSpec {
        stdin: Some(vec![b'x'; 10_000_000]),
        ..spec("sleep", &["1000"])
    };
    let (output, _) = run_collecting(&spec, &limits(Duration::from_secs(1))).await;

    assert_eq!(output.termination, Termination::TimedOut);
    assert!(output.duration < GENEROUS, "took {:?}", output.duration);
}

#[tokio::test]
async fn without_stdin_the_child_reads_end_of_file() {
    let (output, _) = run_collecting(&spec("cat", &[]), &limits(Duration::from_secs(600))).await;

    assert_eq!(output.termination, Termination::Exited(0));
    assert_eq!(output.stdout.total_bytes, 0);
}

#[tokio::test]
async fn the_environment_is_inherited_minus_removed_plus_set() {
    let inherited = std::env::vars()
        .find(|(name, value)| name != "PATH" && !value.contains('\n'))
        .map(|(name, value)| format!("{name}={value}"));
    let spec = CommandSpec {
        env_set: vec![
            ("DRYDOCK_SET".into(), "hello".into()),
            ("DRYDOCK_BOTH".into(), "set wins".into()),
        ],
        env_remove: vec!["PATH".into(), "DRYDOCK_BOTH".into()],
        ..spec("/usr/bin/env", &[])
    };
    let (_, lines) = run_collecting(&spec, &limits(GENEROUS)).await;

    assert!(lines.stdout.contains(&"DRYDOCK_SET=hello".to_owned()));
    assert!(lines.stdout.contains(&"DRYDOCK_BOTH=set wins".to_owned()));
    assert!(!lines.stdout.iter().any(|line| line.starts_with("PATH=")));
    if let Some(inherited) = inherited {
        assert!(
            lines.stdout.contains(&inherited),
            "{inherited} not inherited"
        );
    }
}

/// Issue 48: `.`, an empty entry or `./bin` in PATH name the folder a child starts in (a
/// project's, an agent's worktree): a program there is never the one drydock runs.
#[test]
fn a_relative_path_entry_is_never_searched() {
    let here = tempfile::tempdir().unwrap();
    let found = |path: &str| {
        find_in("cargo", std::ffi::OsStr::new(path), |candidate| {
            candidate == Path::new("cargo")
                || candidate == Path::new("./cargo")
                || candidate == Path::new("bin/cargo")
                || candidate == here.path().join("cargo")
        })
    };
    for relative in [".", "", "./", "bin", ":"] {
        assert_eq!(found(relative), None, "{relative:?}");
    }
    let absolute = format!(".::bin:{}", here.path().display());
    assert_eq!(found(&absolute), Some(here.path().join("cargo")));
}
