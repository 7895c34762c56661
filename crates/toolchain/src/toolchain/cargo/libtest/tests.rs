use super::*;
use crate::toolchain::recorded;

/// Feeds a recorded run the way drydock does: stderr and stdout, each in order.
fn run_fixture(case: &str) -> (TestRun, Vec<LibtestEvent>) {
    let root = recorded::cargo(case).root();
    let mut parser = LibtestParser::new(&root, &root, 4096);
    let mut events = parser.feed(Stream::Stderr, &recorded::cargo(case).stderr());
    events.extend(parser.feed(Stream::Stdout, &recorded::cargo(case).stdout()));
    (parser.finish(), events)
}

fn feed(parser: &mut LibtestParser, text: &str) {
    parser.feed(Stream::Stdout, text);
}

fn parse_stdout(text: &str) -> TestRun {
    let mut parser = LibtestParser::new(Path::new("/p"), Path::new("/p"), 4096);
    feed(&mut parser, text);
    parser.finish()
}

fn counts(passed: u32, failed: u32, ignored: u32, filtered_out: u32) -> TestCounts {
    TestCounts {
        passed,
        failed,
        ignored,
        filtered_out,
        invalid: 0,
    }
}

fn failure(name: &str, file: &str, line: u32, column: Option<u32>, message: &str) -> TestFailure {
    TestFailure {
        name: name.into(),
        file: Some(file.into()),
        line: Some(line),
        column,
        message: message.into(),
        left: None,
        right: None,
        stdout: None,
        module: None,
        stacktrace: None,
    }
}

fn with_values(mut failure: TestFailure, left: &str, right: &str) -> TestFailure {
    failure.left = Some(left.into());
    failure.right = Some(right.into());
    failure
}

const ASSERT_EQ: &str = "assertion `left == right` failed";

fn cargo_failing_failures() -> Vec<TestFailure> {
    let point = |y| format!("Point {{\n    x: 1,\n    y: {y},\n}}");
    let mut prints = failure(
        "tests::prints_then_fails",
        "src/lib.rs",
        87,
        Some(9),
        "twenty is not over a hundred",
    );
    prints.stdout = Some("first line of output\nsecond line of output".into());
    let mut doc_compile = failure(
        "src/lib.rs - double (line 23)",
        "src/lib.rs",
        25,
        Some(42),
        "error[E0308]: mismatched types",
    );
    doc_compile.stdout = Some(fixture_block(
        "test-failing",
        "src/lib.rs - double (line 23)",
    ));
    vec![
        with_values(
            failure(
                "tests::compares_numbers",
                "src/lib.rs",
                59,
                Some(9),
                ASSERT_EQ,
            ),
            "5000",
            "500",
        ),
        with_values(
            failure(
                "tests::compares_points",
                "src/lib.rs",
                69,
                Some(9),
                ASSERT_EQ,
            ),
            &point(2),
            &point(3),
        ),
        with_values(
            failure(
                "tests::compares_with_message",
                "src/lib.rs",
                64,
                Some(9),
                "assertion `left == right` failed: halving 9 should round up",
            ),
            "4",
            "5",
        ),
        failure(
            "tests::panics_with_message",
            "src/lib.rs",
            74,
            Some(9),
            "something went wrong: code 7",
        ),
        prints,
        failure(
            "tests::should_panic_but_does_not",
            "src/lib.rs",
            79,
            Some(8),
            "test did not panic as expected",
        ),
        with_values(
            failure(
                "integration_fails",
                "tests/integration.rs",
                10,
                Some(5),
                ASSERT_EQ,
            ),
            "3",
            "4",
        ),
        doc_compile,
        with_values(
            failure(
                "src/lib.rs - halve (line 14)",
                "src/lib.rs",
                14,
                None,
                ASSERT_EQ,
            ),
            "5",
            "4",
        ),
    ]
}

/// The lines of a failure block in a fixture, up to the next block.
fn fixture_block(case: &str, name: &str) -> String {
    let stdout = recorded::cargo(case).stdout();
    let header = format!("---- {name} stdout ----\n");
    let start = stdout.find(&header).expect("block in fixture") + header.len();
    let end = stdout[start..].find("\n----").expect("a block follows") + start;
    stdout[start..end].trim().to_owned()
}

#[test]
fn failing_project_reports_every_failure_with_location_and_values() {
    let (run, _) = run_fixture("test-failing");
    assert_eq!(run.counts, counts(4, 9, 1, 0));
    assert_eq!(run.binaries, 3);
    assert_eq!(run.failures, cargo_failing_failures());
}

#[test]
fn backtraces_do_not_change_the_failures() {
    let (run, _) = run_fixture("test-failing-backtrace");
    assert!(
        recorded::cargo("test-failing-backtrace")
            .stdout()
            .contains("stack backtrace:")
    );
    assert_eq!(run.counts, counts(4, 9, 1, 0));
    assert_eq!(run.failures, cargo_failing_failures());
}

#[test]
fn colours_do_not_change_the_failures() {
    let (run, events) = run_fixture("test-failing-color");
    assert!(
        recorded::cargo("test-failing-color")
            .stdout()
            .contains("\x1b(B\x1b[m")
    );
    assert_eq!(run.counts, counts(4, 9, 1, 0));
    assert_eq!(run.binaries, 3);
    assert_eq!(run.failures, cargo_failing_failures());
    assert!(events.contains(&LibtestEvent::BinaryStarted {
        name: "tests/integration.rs".into()
    }));
}

#[test]
fn clean_project_counts_every_binary_and_ignored_test() {
    let (run, events) = run_fixture("test-clean");
    assert_eq!(run.counts, counts(7, 0, 1, 0));
    assert_eq!(run.binaries, 4);
    assert!(run.failures.is_empty());
    let started: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            LibtestEvent::BinaryStarted { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            "unittests src/lib.rs",
            "unittests src/main.rs",
            "tests/api.rs",
            "Doc-tests cargo_clean"
        ]
    );
    assert!(events.contains(&LibtestEvent::TestFinished {
        name: "tests::slow_test".into(),
        outcome: TestOutcome::Ignored,
    }));
    assert!(events.contains(&LibtestEvent::TestFinished {
        name: "src/lib.rs - greet (line 14)".into(),
        outcome: TestOutcome::Passed,
    }));
    assert!(events.contains(&LibtestEvent::BinaryFinished {
        counts: counts(3, 0, 1, 0)
    }));
}

#[test]
fn workspace_sums_its_members() {
    let (run, _) = run_fixture("test-workspace");
    assert_eq!(run.counts, counts(3, 0, 0, 0));
    assert_eq!(run.binaries, 3);
    assert!(run.failures.is_empty());
}

#[test]
fn build_failure_runs_no_binaries() {
    let (run, events) = run_fixture("test-errors");
    assert_eq!(run, TestRun::default());
    assert!(events.is_empty());
}

#[test]
fn stdout_without_stderr_counts_harness_runs() {
    let mut parser = LibtestParser::new(Path::new("/p"), Path::new("/p"), 4096);
    feed(&mut parser, &recorded::cargo("test-failing").stdout());
    assert_eq!(parser.finish().binaries, 3);
}

const SHOULD_PANIC_AND_RESULT: &str = "
running 2 tests
test res ... FAILED
test sp - should panic ... FAILED

failures:

---- res stdout ----
out
Error: \"bad\"

---- sp stdout ----

thread 'sp' (14567) panicked at src/lib.rs:16:11:
bar
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
note: panic did not contain expected string
      panic message: \"bar\"
 expected substring: \"foo\"

failures:
    res
    sp

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s
";

#[test]
fn result_errors_and_expected_panic_mismatches() {
    let run = parse_stdout(SHOULD_PANIC_AND_RESULT);
    assert_eq!(run.counts, counts(0, 2, 0, 3));
    let mut res = failure("res", "-", 0, None, "Error: \"bad\"");
    (res.file, res.line, res.stdout) = (None, None, Some("out".into()));
    let sp = failure(
        "sp",
        "src/lib.rs",
        16,
        Some(11),
        "panic did not contain expected string\npanic message: \"bar\"\nexpected substring: \"foo\"",
    );
    assert_eq!(run.failures, [res, sp]);
}

const DOC_TEST_FAILURES: &str = "
running 2 tests
test crates/m/src/lib.rs - h (line 9) ... FAILED
test crates/m/src/lib.rs - g (line 5) - should panic ... FAILED

failures:

---- crates/m/src/lib.rs - h (line 9) stdout ----
Test executable failed (exit status: 3).

stdout:
hello from doc


---- crates/m/src/lib.rs - g (line 5) stdout ----
note: test did not panic as expected at crates/m/src/lib.rs:5:0

failures:
    crates/m/src/lib.rs - g (line 5)
    crates/m/src/lib.rs - h (line 9)

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

running 1 test
test crates/m/src/lib.rs - f (line 1) - compile fail ... FAILED

failures:

---- crates/m/src/lib.rs - f (line 1) stdout ----
Test compiled successfully, but it's marked `compile_fail`.

failures:
    crates/m/src/lib.rs - f (line 1)

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.08s
";

#[test]
fn doc_test_exits_and_attributes_in_a_workspace_member() {
    let mut parser = LibtestParser::new(Path::new("/ws"), Path::new("/ws/crates/m"), 4096);
    feed(&mut parser, DOC_TEST_FAILURES);
    let run = parser.finish();
    let mut exit = failure(
        "crates/m/src/lib.rs - h (line 9)",
        "src/lib.rs",
        9,
        None,
        "Test executable failed (exit status: 3).",
    );
    exit.stdout = Some("hello from doc".into());
    let no_panic = failure(
        "crates/m/src/lib.rs - g (line 5)",
        "src/lib.rs",
        5,
        None,
        "test did not panic as expected",
    );
    let compiled = failure(
        "crates/m/src/lib.rs - f (line 1)",
        "src/lib.rs",
        1,
        None,
        "Test compiled successfully, but it's marked `compile_fail`.",
    );
    assert_eq!(run.failures, [no_panic, exit, compiled]);
    assert_eq!((run.counts, run.binaries), (counts(0, 3, 0, 0), 2));
}

#[test]
fn panic_paths_map_like_diagnostics() {
    let text = "
running 2 tests
test a ... FAILED
test b ... FAILED

failures:

---- a stdout ----
thread 'a' panicked at crates/m/tests/módulo con espacio.rs:3:5:
¡falló!
---- b stdout ----
thread 'b' (7) panicked at /home/u/.cargo/registry/src/dep-1.0/src/lib.rs:10:1:
dependency panicked

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
    let mut parser = LibtestParser::new(Path::new("/ws"), Path::new("/ws/crates/m"), 4096);
    feed(&mut parser, text);
    let run = parser.finish();
    assert_eq!(
        run.failures,
        [
            failure("a", "tests/módulo con espacio.rs", 3, Some(5), "¡falló!"),
            failure(
                "b",
                "/home/u/.cargo/registry/src/dep-1.0/src/lib.rs",
                10,
                Some(1),
                "dependency panicked"
            ),
        ]
    );
}

#[test]
fn legacy_headers_other_threads_and_missing_blocks() {
    let text = "
running 3 tests
test legacy ... FAILED
test threads ... FAILED
test silent ... FAILED

failures:

---- legacy stdout ----
thread 'legacy' panicked at 'old style message', src/lib.rs:4:9
---- threads stdout ----
thread '<unnamed>' (3) panicked at src/worker.rs:2:5:
worker died
thread 'threads' (4) panicked at src/lib.rs:20:5:
called `Result::unwrap()` on an `Err` value: Any { .. }

failures:
    legacy
    silent
    threads

test result: FAILED. 0 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
    let run = parse_stdout(text);
    let mut silent = failure("silent", "-", 0, None, "test failed");
    (silent.file, silent.line) = (None, None);
    let mut threads = failure(
        "threads",
        "src/lib.rs",
        20,
        Some(5),
        "called `Result::unwrap()` on an `Err` value: Any { .. }",
    );
    threads.stdout =
        Some("thread '<unnamed>' (3) panicked at src/worker.rs:2:5:\nworker died".into());
    assert_eq!(
        run.failures,
        [
            failure("legacy", "src/lib.rs", 4, Some(9), "old style message"),
            silent,
            threads,
        ]
    );
}

#[test]
fn interrupted_binary_keeps_what_it_showed() {
    let mut parser = LibtestParser::new(Path::new("/p"), Path::new("/p"), 4096);
    assert_eq!(
        parser.line(
            Stream::Stderr,
            "\r\x1b[K     Running unittests src/lib.rs (target/debug/deps/p-1)\r\n"
        ),
        Some(LibtestEvent::BinaryStarted {
            name: "unittests src/lib.rs".into()
        })
    );
    feed(
        &mut parser,
        "running 3 tests\ntest a ... ok\ntest b ... ignored\ntest c ... FAILED\n",
    );
    assert_eq!(
        parser.line(
            Stream::Stdout,
            "test hangs has been running for over 60 seconds"
        ),
        None
    );
    let run = parser.finish();
    assert_eq!((run.counts, run.binaries), (counts(1, 1, 1, 0), 1));
    assert_eq!(run.failures[0].name, "c");
}

#[test]
fn cargo_json_lines_are_skipped() {
    let mut parser = LibtestParser::new(Path::new("/p"), Path::new("/p"), 4096);
    let json = r#"{"reason":"compiler-artifact","target":{"name":"test x ... ok"}}"#;
    assert_eq!(parser.line(Stream::Stdout, json), None);
    assert_eq!(parser.finish(), TestRun::default());
}

#[test]
fn captured_output_keeps_head_and_tail_within_the_cap() {
    let mut text = String::from(
        "running 1 test\ntest noisy ... FAILED\n\nfailures:\n\n---- noisy stdout ----\n",
    );
    for index in 0..10_000 {
        text.push_str(&format!("line {index}\n"));
    }
    text.push_str(
        "\nthread 'noisy' (1) panicked at src/lib.rs:1:1:\nboom\n\nfailures:\n    noisy\n\n",
    );
    text.push_str("test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
    let mut parser = LibtestParser::new(Path::new("/p"), Path::new("/p"), 200);
    feed(&mut parser, &text);
    let failure = &parser.finish().failures[0];
    let stdout = failure.stdout.as_deref().expect("output kept");
    assert!(stdout.starts_with("line 0\nline 1\n"), "{stdout}");
    assert!(stdout.ends_with("line 9998\nline 9999"), "{stdout}");
    assert!(stdout.contains(" bytes omitted ..."), "{stdout}");
    assert!(stdout.len() < 260, "{}", stdout.len());
    assert_eq!(failure.message, "boom");
}

#[test]
fn one_enormous_line_is_cut_too() {
    let mut text = CappedText::new(100);
    text.push_line(&"é".repeat(10_000));
    let kept = text.into_text().expect("something kept");
    assert!(kept.len() < 150, "{}", kept.len());
    assert_eq!(
        kept,
        format!("... 19952 bytes omitted ...\n{}", "é".repeat(24))
    );
}
