use super::*;
use crate::toolchain::recorded;
use std::path::PathBuf;

fn parse(stdout: &str) -> ExUnitRun {
    parse_exunit_output(stdout, Path::new("/p"), 4096)
}

fn umbrella_root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("test-projects/mix-umbrella")
}

fn counts(passed: u32, failed: u32, ignored: u32, filtered_out: u32, invalid: u32) -> TestCounts {
    TestCounts {
        passed,
        failed,
        ignored,
        filtered_out,
        invalid,
    }
}

fn failure(name: &str, module: &str, file: &str, line: u32, message: &str) -> TestFailure {
    TestFailure {
        name: name.into(),
        file: Some(file.into()),
        line: Some(line),
        column: None,
        message: message.into(),
        left: None,
        right: None,
        stdout: None,
        module: Some(module.into()),
        stacktrace: Some(format!("{file}:{line}: (test)")),
    }
}

fn compared(mut failure: TestFailure, left: &str, right: &str) -> TestFailure {
    failure.left = Some(left.into());
    failure.right = Some(right.into());
    failure
}

const LEFT_LIST: &str = r#"["item number 2", "item number 4", "item number 6", "item number 8",
 "item number 10", "item number 12", "item number 14",
 "item number 16", "item number 18", "item number 20",
 "item number 22", "item number 24", "item number 26",
 "item number 28", "item number 30", "item number 32",
 "item number 34", "item number 36", "item number 38",
 "item number 40", "item number 42", "item number 44",
 "item number 46", "item number 48", "item number 50",
 "item number 52", "item number 54", "item number 56",
 "item number 58", "item number 60"]"#;

const RIGHT_LIST: &str = r#"["item number 1", "item number 2", "item number 3", "item number 4",
 "item number 5", "item number 6", "item number 7",
 "item number 8", "item number 9", "item number 10",
 "item number 11", "item number 12", "item number 13",
 "item number 14", "item number 15", "item number 16",
 "item number 17", "item number 18", "item number 19",
 "item number 20", "item number 21", "item number 22",
 "item number 23", "item number 24", "item number 25",
 "item number 26", "item number 27", "item number 28",
 "item number 29", "item number 30"]"#;

fn mix_failing_failures() -> Vec<TestFailure> {
    let test = |name: &str, line: u32, message: &str| {
        failure(
            name,
            "MixFailingTest",
            "test/mix_failing_test.exs",
            line,
            message,
        )
    };
    let mut doctest = compared(
        failure(
            "doctest MixFailing.halve/1 (1)",
            "MixFailingTest",
            "lib/mix_failing.ex",
            15,
            "Doctest failed\niex> MixFailing.halve(9)\n5",
        ),
        "4",
        "5",
    );
    doctest.stacktrace = Some("lib/mix_failing.ex:15: MixFailing (module)".into());
    let mut raises = test(
        "test raises",
        22,
        "** (ArgumentError) not a number: \"forty-two\"",
    );
    raises.stacktrace = Some(
            "(mix_failing 0.1.0) lib/mix_failing.ex:23: MixFailing.parse!/1\ntest/mix_failing_test.exs:22: (test)".into(),
        );
    let mut setup_all = failure(
        "setup_all",
        "MixFailing.SetupAllTest",
        "test/setup_all_test.exs",
        5,
        "** (RuntimeError) database unavailable",
    );
    setup_all.stacktrace = Some(
        "test/setup_all_test.exs:5: MixFailing.SetupAllTest.__ex_unit_setup_all_0/1\n\
             test/setup_all_test.exs:1: MixFailing.SetupAllTest.__ex_unit__/2"
            .into(),
    );
    vec![
        doctest,
        compared(
            test("test compares numbers", 10, "Assertion with == failed"),
            "450",
            "500",
        ),
        compared(
            test("test compares maps", 14, "Assertion with == failed"),
            "%{name: \"drydock\", version: 1}",
            "%{name: \"drydock\", version: 2}",
        ),
        test(
            "test compares with a message",
            18,
            "halving 9 should round up",
        ),
        raises,
        compared(
            test("test prints then fails", 28, "Assertion with > failed"),
            "10",
            "100",
        ),
        test(
            "test multi-line message",
            32,
            "first line of the reason\nsecond line of the reason",
        ),
        compared(
            test(
                "test compares long lists, ünïcode",
                40,
                "Assertion with == failed",
            ),
            LEFT_LIST,
            RIGHT_LIST,
        ),
        setup_all,
    ]
}

#[test]
fn elixir_1_14_failing_suite() {
    let run = parse(&recorded::mix("test-failing").stdout());
    assert_eq!(run.counts, counts(2, 8, 1, 1, 2));
    assert_eq!((run.seed, run.summaries), (Some(0), 1));
    // `Finished in 0.02 seconds (0.00s async, 0.02s sync)`; the time varies between recordings.
    assert!(run.duration_ms.is_some_and(|ms| ms < 10_000));
    assert_eq!(run.failures, mix_failing_failures());
    assert!(!run.all_excluded);
}

#[test]
fn elixir_1_14_colours_inside_values_are_removed() {
    let mut run = parse(&recorded::mix("test-failing-color").stdout());
    assert_eq!(run.counts, counts(2, 8, 1, 1, 2));
    // With colours ExUnit draws the diff of long lists one element per line.
    let lists = run.failures.remove(7);
    let mut expected = mix_failing_failures();
    expected.remove(7);
    assert_eq!(run.failures, expected);
    let left = lists.left.expect("left");
    assert!(
        left.starts_with("[\n  \"item number 2\",\n  \"item number 4\",\n"),
        "{left}"
    );
    assert!(left.ends_with(",\n  \"item number 60\"\n]"), "{left}");
    assert_eq!(lists.right.expect("right").lines().count(), 32);
}

#[test]
fn elixir_1_14_passing_skipped_and_excluded() {
    let run = parse(&recorded::mix("test-clean").stdout());
    assert_eq!(run.counts, counts(5, 0, 1, 1, 0));
    assert_eq!(
        (run.failures.len(), run.summaries, run.seed),
        (0, 1, Some(0))
    );
}

#[test]
fn elixir_1_14_only_filters() {
    let run = parse(&recorded::mix("test-clean-only-missing-tag").stdout());
    assert_eq!(run.counts, counts(0, 0, 0, 7, 0));
    assert!(run.all_excluded);
    let run = parse(&recorded::mix("test-failing-only-slow").stdout());
    assert_eq!(run.counts, counts(0, 1, 0, 13, 0));
    assert_eq!(
        run.failures,
        [compared(
            failure(
                "test slow and failing",
                "MixFailingTest",
                "test/mix_failing_test.exs",
                50,
                "Assertion with == failed"
            ),
            "55",
            "0"
        )]
    );
}

#[test]
fn elixir_1_14_umbrella_sums_apps_and_maps_frames_into_the_app() {
    let run = parse_exunit_output(
        &recorded::mix("test-umbrella").stdout(),
        &umbrella_root(),
        4096,
    );
    assert_eq!((run.counts, run.summaries), (counts(4, 0, 0, 0, 0), 2));
    let run = parse_exunit_output(
        &recorded::mix("test-umbrella-failing").stdout(),
        &umbrella_root(),
        4096,
    );
    assert_eq!(run.counts, counts(4, 1, 0, 0, 0));
    let mut expected = compared(
        failure(
            "test sums differ",
            "WebFailingTest",
            "apps/web/test/web_failing_test.exs",
            5,
            "Assertion with == failed",
        ),
        "\"1 + 1 = 2\"",
        "\"1 + 1 = 3\"",
    );
    expected.stacktrace = Some("test/web_failing_test.exs:5: (test)".into());
    assert_eq!(run.failures, [expected]);
}

#[test]
fn elixir_1_14_suite_that_never_ran() {
    let run = parse(&recorded::mix("test-compile-error").stdout());
    assert_eq!(run, ExUnitRun::default());
}

#[test]
fn elixir_1_15_failure_located_at_the_first_test_frame() {
    let run = parse(&recorded::newer_mix("exunit-1.15.txt"));
    let mut expected = failure(
        "test js word based bag of words",
        "ThemeScannerTest",
        "test/theme_scanner_test.exs",
        42,
        "** (MatchError) no match of right hand side value: []",
    );
    expected.stacktrace = Some(
            "test/theme_scanner_test.exs:42: a\n(elixir 1.15.5) lib/enum.ex:4356: b\ntest/theme_scanner_test.exs:41: (test)".into(),
        );
    assert_eq!(run.failures, [expected]);
    assert_eq!(run.summaries, 0);
}

#[test]
fn elixir_1_16_umbrella_frame_placed_by_the_test_location() {
    let run = parse(&recorded::newer_mix("exunit-1.16-umbrella.txt"));
    let failure = &run.failures[0];
    assert_eq!(
        (
            failure.file.as_deref(),
            failure.line,
            failure.message.as_str()
        ),
        (
            Some("apps/app/test/app/module/name_test.exs"),
            Some(26),
            "** (KeyError) error"
        )
    );
    assert_eq!(failure.module.as_deref(), Some("Module.Name"));
}

#[test]
fn elixir_main_seed_first_load_time_and_failures_without_frames() {
    let run = parse(&recorded::newer_mix("exunit-main.txt"));
    assert_eq!(run.counts, counts(1, 1, 0, 1, 2));
    assert_eq!((run.seed, run.duration_ms), (Some(4242), Some(300)));
    let mut it_works = failure("it works", "MyTest", "file.ex", 7, "** (RuntimeError) oops");
    it_works.stacktrace = None;
    let mut setup_all = failure("setup_all", "Hello", "-", 0, "** (RuntimeError) oops");
    (setup_all.file, setup_all.line, setup_all.stacktrace) = (None, None, None);
    assert_eq!(run.failures, [it_works, setup_all]);
}

#[test]
fn summary_variants() {
    let cases = [
        (
            "1 doctest, 5 tests, 0 failures, 1 skipped",
            counts(5, 0, 1, 0, 0),
        ),
        ("3 tests, 1 failure, 1 excluded", counts(1, 1, 0, 1, 0)),
        ("2 tests, 0 failures, 2 invalid", counts(0, 0, 0, 0, 2)),
        (
            "1 property, 2 doctests, 3 tests, 0 failures",
            counts(6, 0, 0, 0, 0),
        ),
        ("1 test, 0 failures (1 excluded)", counts(0, 0, 0, 1, 0)),
        ("0 tests, 0 failures", counts(0, 0, 0, 0, 0)),
    ];
    for (line, expected) in cases {
        assert_eq!(parse_summary(line), Some(expected), "{line}");
    }
    for line in [
        "3 apples",
        "12 failures were expected by the user",
        "tests, 1 failure",
        "",
    ] {
        assert_eq!(parse_summary(line), None, "{line}");
    }
}

#[test]
fn summaries_whose_numbers_add_up_beyond_u32_saturate() {
    let huge = "4294967295 tests, 4294967295 doctests, 4294967295 failures, 4294967295 failures";
    assert_eq!(parse_summary(huge), Some(counts(0, u32::MAX, 0, 0, 0)));
    let run = parse("1 test, 4294967295 failures\n1 test, 4294967295 failures\n");
    assert_eq!(run.counts.failed, u32::MAX);
}

#[test]
fn logged_output_blank_lines_in_messages_and_wide_counters() {
    let text = "
 12) test logs (LogTest)
     test/log_test.exs:4
     first paragraph

     second paragraph
     code: assert false
     stacktrace:
       test/log_test.exs:5: (test)

     The following output was logged:
     12:00:00.000 [error] boom

     after a blank line
other output

123) test third (LogTest)
     test/log_test.exs:9
     ** (exit) killed
";
    let run = parse(text);
    assert_eq!(run.failures.len(), 2);
    let logs = &run.failures[0];
    assert_eq!(logs.message, "first paragraph\n\nsecond paragraph");
    assert_eq!(
        logs.stdout.as_deref(),
        Some("12:00:00.000 [error] boom\n\nafter a blank line")
    );
    assert_eq!((logs.line, run.failures[1].line), (Some(5), Some(9)));
    assert_eq!(run.failures[1].message, "** (exit) killed");
}

#[test]
fn long_values_are_capped() {
    let value = "x".repeat(10_000);
    let text = format!(
        "  1) test big (BigTest)\n     test/big_test.exs:1\n     Assertion with == failed\n     left:  \"{value}\"\n     right: 1\n"
    );
    let run = parse_exunit_output(&text, Path::new("/p"), 100);
    let left = run.failures[0].left.as_deref().expect("left kept");
    assert!(left.len() < 150, "{}", left.len());
    assert!(left.ends_with("... 9902 bytes omitted"), "{left}");
}

#[test]
fn durations() {
    assert_eq!(seconds_to_ms("0.05"), 50);
    assert_eq!(seconds_to_ms("12.3"), 12_300);
    assert_eq!(seconds_to_ms("7"), 7_000);
    assert_eq!(seconds_to_ms("99999999999999999999.1"), 100);
}

#[test]
fn garbage_and_truncated_output_never_panic() {
    for sample in [
        &recorded::mix("test-failing").stdout(),
        &recorded::mix("test-failing-color").stdout(),
        &recorded::newer_mix("exunit-main.txt"),
    ] {
        let lines: Vec<&str> = sample.lines().collect();
        for end in 0..=lines.len() {
            parse(&lines[..end].join("\n"));
        }
    }
    let garbage = "  1) \n  1) (M)\n  1) test x ()\n     \n     left:\n     right:\n     stacktrace:\n       :\n\
                       Finished in . seconds\n99999999999 tests, 99999999999 failures\nRandomized with seed 99999999999999999999999\n\u{1b}[";
    let run = parse(garbage);
    assert_eq!(run.seed, None);
    // Found by fuzzing (fuzz/regressions/mix_output): the times of several runs summed
    // past u64.
    let long = "Finished in 18446744073709551 seconds\n".repeat(3);
    assert_eq!(parse(&long).duration_ms, Some(u64::MAX));
    let bytes: String = (0u8..=255).map(char::from).collect();
    parse(&bytes);
}
