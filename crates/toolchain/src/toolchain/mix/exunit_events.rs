//! The events our ExUnit formatter (`exunit_formatter.exs`) prints, gathered into counts
//! and failures. An umbrella runs one suite per app; their results add up.

use std::path::Path;

use serde::Deserialize;

use crate::process::Stream;
use crate::toolchain::line_parser::LineParser;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{TestCounts, TestFailure};

/// Starts every event line; a test that printed without a newline may come before it.
pub(super) const MARKER: &str = "\u{1e}DRYDOCK-EXUNIT ";
pub(super) const FORMATTER_MODULE: &str = "DrydockExUnitFormatter";
pub(super) const FORMATTER_SOURCE: &str = crate::exs::EXUNIT_FORMATTER;

const STACKTRACE_CAP: usize = 2048;

#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    SuiteStarted {
        seed: Option<u64>,
    },
    SuiteFinished {
        run_us: Option<u64>,
    },
    Test(TestEvent),
    ModuleFailed {
        module: String,
        file: Option<String>,
        failures: Vec<FailureEvent>,
    },
    MaxFailuresReached,
}

#[derive(Debug, Deserialize)]
struct TestEvent {
    name: String,
    module: String,
    file: Option<String>,
    line: Option<u32>,
    outcome: ExUnitVerdict,
    failures: Vec<FailureEvent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ExUnitVerdict {
    Passed,
    Failed,
    Skipped,
    Excluded,
    Invalid,
}

#[derive(Debug, Deserialize)]
struct FailureEvent {
    file: Option<String>,
    line: Option<u32>,
    message: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    left: Option<String>,
    #[serde(default)]
    right: Option<String>,
    stacktrace: Option<String>,
}

/// What a line meant, for progress reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    Test {
        name: String,
        outcome: ExUnitVerdict,
    },
    SuiteFinished,
}

/// Everything the formatter reported in one `mix test` run.
#[derive(Debug, Default)]
pub(super) struct ExUnitRun {
    pub counts: TestCounts,
    pub failures: Vec<TestFailure>,
    /// How many suites started (one per umbrella app); 0 when the formatter never ran.
    pub suites: u32,
    pub seed: Option<u64>,
    /// Time ExUnit spent running tests, summed over suites.
    pub run_us: u64,
    pub max_failures_reached: bool,
}

pub(super) struct ExUnitEvents {
    paths: PathMapper,
    run: ExUnitRun,
}

impl LineParser for ExUnitEvents {
    type Event = Seen;
    type Output = ExUnitRun;

    /// Events come on stdout; lines without the marker are the tests' own output.
    fn line(&mut self, stream: Stream, line: &str) -> Option<Seen> {
        if stream != Stream::Stdout {
            return None;
        }
        let (_, json) = line.split_once(MARKER)?;
        let event: Event = serde_json::from_str(json).ok()?;
        self.apply(event)
    }

    fn finish(self) -> ExUnitRun {
        self.run
    }
}

impl ExUnitEvents {
    pub(super) fn new(project_root: &Path) -> Self {
        Self {
            paths: PathMapper::new(project_root, project_root),
            run: ExUnitRun::default(),
        }
    }

    fn apply(&mut self, event: Event) -> Option<Seen> {
        let run = &mut self.run;
        match event {
            Event::SuiteStarted { seed } => {
                run.suites += 1;
                run.seed = run.seed.or(seed);
                None
            }
            Event::SuiteFinished { run_us } => {
                // A test can print an event line too: its numbers may be anything.
                run.run_us = run.run_us.saturating_add(run_us.unwrap_or(0));
                Some(Seen::SuiteFinished)
            }
            Event::MaxFailuresReached => {
                run.max_failures_reached = true;
                None
            }
            Event::ModuleFailed {
                module,
                file,
                failures,
            } => {
                let name = format!("{module} (setup_all)");
                for failure in failures {
                    let failure = self.failure(&name, &module, file.as_deref(), None, failure);
                    self.run.failures.push(failure);
                }
                None
            }
            Event::Test(test) => {
                let counts = &mut run.counts;
                match test.outcome {
                    ExUnitVerdict::Passed => counts.passed += 1,
                    ExUnitVerdict::Failed => counts.failed += 1,
                    ExUnitVerdict::Skipped => counts.ignored += 1,
                    ExUnitVerdict::Excluded => counts.filtered_out += 1,
                    ExUnitVerdict::Invalid => counts.invalid += 1,
                }
                let seen = Seen::Test {
                    name: test.name.clone(),
                    outcome: test.outcome,
                };
                for failure in test.failures {
                    let failure = self.failure(
                        &test.name,
                        &test.module,
                        test.file.as_deref(),
                        test.line,
                        failure,
                    );
                    self.run.failures.push(failure);
                }
                Some(seen)
            }
        }
    }

    /// Located where the failure happened, else where the test is defined.
    fn failure(
        &self,
        name: &str,
        module: &str,
        test_file: Option<&str>,
        test_line: Option<u32>,
        failure: FailureEvent,
    ) -> TestFailure {
        let (file, line) = match failure.file {
            Some(file) => (Some(file), failure.line),
            None => (test_file.map(str::to_string), test_line),
        };
        let message = match failure.code {
            Some(code) => format!("{}\ncode: {code}", failure.message),
            None => failure.message,
        };
        TestFailure {
            name: name.to_string(),
            file: file.map(|f| self.paths.map(&f)),
            line,
            column: None,
            message,
            left: failure.left,
            right: failure.right,
            stdout: None,
            module: Some(module.to_string()),
            stacktrace: failure
                .stacktrace
                .map(|s| cap(s.trim_end(), STACKTRACE_CAP)),
        }
    }
}

fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... {} bytes elided ...]",
        &text[..end],
        text.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded from Elixir 1.14.0 / OTP 25 running our formatter on a small project.
    const RECORDED: &str = concat!(
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"suite_started\",\"seed\":687132}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[],\"file\":\"/p/test/exp_test.exs\",\"line\":31,\"module\":\"BrokenSetupTest\",\"name\":\"test never runs\",\"outcome\":\"invalid\",\"time_us\":0}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"module_failed\",\"failures\":[{\"file\":\"/p/test/exp_test.exs\",\"line\":29,\"message\":\"** (RuntimeError) setup broke\",\"stacktrace\":\"    test/exp_test.exs:29: BrokenSetupTest.__ex_unit_setup_all_0/1\\n\"}],\"file\":\"/p/test/exp_test.exs\",\"module\":\"BrokenSetupTest\"}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[],\"file\":\"/p/test/exp_test.exs\",\"line\":19,\"module\":\"ExpTest\",\"name\":\"test skipped\",\"outcome\":\"skipped\",\"time_us\":0}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[],\"file\":\"/p/test/exp_test.exs\",\"line\":23,\"module\":\"ExpTest\",\"name\":\"test slow one\",\"outcome\":\"excluded\",\"time_us\":0}\n",
        "partial\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[],\"file\":\"/p/test/exp_test.exs\",\"line\":3,\"module\":\"ExpTest\",\"name\":\"doctest Exp.hello/0 (1)\",\"outcome\":\"passed\",\"time_us\":2}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[{\"code\":\"assert 1 + 1 == 3\",\"file\":\"/p/test/exp_test.exs\",\"left\":\"2\",\"line\":11,\"message\":\"Assertion with == failed\",\"right\":\"3\",\"stacktrace\":\"    test/exp_test.exs:11: ExpTest.\\\"test fails eq\\\"/1\\n\"}],\"file\":\"/p/test/exp_test.exs\",\"line\":9,\"module\":\"ExpTest\",\"name\":\"test fails eq\",\"outcome\":\"failed\",\"time_us\":20}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[{\"file\":\"/p/test/exp_test.exs\",\"line\":15,\"message\":\"** (ArgumentError) bad \\\"quote\\\" \u{fc}\",\"stacktrace\":\"    test/exp_test.exs:15: ExpTest.\\\"test raises\\\"/1\\n\"}],\"file\":\"/p/test/exp_test.exs\",\"line\":14,\"module\":\"ExpTest\",\"name\":\"test raises\",\"outcome\":\"failed\",\"time_us\":724}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"test\",\"failures\":[],\"file\":\"/p/test/exp_test.exs\",\"line\":5,\"module\":\"ExpTest\",\"name\":\"test greets the world\",\"outcome\":\"passed\",\"time_us\":0}\n",
        "\u{1e}DRYDOCK-EXUNIT {\"event\":\"suite_finished\",\"run_us\":34791}\n",
    );

    fn parse(text: &str) -> ExUnitRun {
        let mut events = ExUnitEvents::new(Path::new("/p"));
        events.feed(Stream::Stdout, text);
        events.finish()
    }

    #[test]
    fn times_that_add_up_beyond_u64_saturate() {
        let finished =
            "\u{1e}DRYDOCK-EXUNIT {\"event\":\"suite_finished\",\"run_us\":18446744073709551615}\n";
        let run = parse(&finished.repeat(2));
        assert_eq!(run.run_us, u64::MAX);
    }

    #[test]
    fn counts_every_outcome() {
        let run = parse(RECORDED);
        assert_eq!(
            run.counts,
            TestCounts {
                passed: 2,
                failed: 2,
                ignored: 1,
                filtered_out: 1,
                invalid: 1,
            }
        );
        assert_eq!((run.suites, run.seed, run.run_us), (1, Some(687132), 34791));
    }

    #[test]
    fn failures_carry_location_values_and_module() {
        let run = parse(RECORDED);
        let names: Vec<&str> = run.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "BrokenSetupTest (setup_all)",
                "test fails eq",
                "test raises"
            ]
        );
        let eq = &run.failures[1];
        assert_eq!(eq.file.as_deref(), Some("test/exp_test.exs"));
        assert_eq!(eq.line, Some(11));
        assert_eq!(
            eq.message,
            "Assertion with == failed\ncode: assert 1 + 1 == 3"
        );
        assert_eq!(
            (eq.left.as_deref(), eq.right.as_deref()),
            (Some("2"), Some("3"))
        );
        assert_eq!(eq.module.as_deref(), Some("ExpTest"));
        assert_eq!(
            eq.stacktrace.as_deref(),
            Some("    test/exp_test.exs:11: ExpTest.\"test fails eq\"/1")
        );
        assert_eq!(
            run.failures[2].message,
            "** (ArgumentError) bad \"quote\" ü"
        );
        assert_eq!(run.failures[0].line, Some(29));
    }

    #[test]
    fn umbrella_suites_add_up_and_garbage_is_ignored() {
        let text = format!("{RECORDED}{RECORDED}\u{1e}DRYDOCK-EXUNIT {{not json\nplain line\n");
        let run = parse(&text);
        assert_eq!((run.suites, run.counts.passed, run.run_us), (2, 4, 69582));
    }

    #[test]
    fn long_stacktraces_are_capped() {
        let capped = cap(&"é".repeat(2000), 101);
        assert!(capped.ends_with("[... 3900 bytes elided ...]"), "{capped}");
    }
}
