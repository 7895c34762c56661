//! ExUnit's plain CLI formatter output (`mix test` stdout), for when drydock's own JSON
//! formatter cannot run: counts from the summary lines, failures from the numbered blocks.
//!
//! A failure's `name` is ExUnit's own (`test adds numbers`, `doctest Mod.fun/1 (1)`) and
//! `module` its test module. Its `file`/`line` are where it failed: the first stack frame
//! in test code (frames of compiled apps carry an `(app 1.0.0)` prefix and are skipped),
//! else the test's own location. A `setup_all` that fails is reported as one failure
//! named `setup_all` (its tests are counted as `invalid`, not as failed).

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::compiler::AppDirs;
use crate::toolchain::endings::strip_ansi;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{TestCounts, TestFailure};

/// Everything gathered from one `mix test` run's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExUnitRun {
    /// Summed over the summary lines (one per umbrella app that ran tests).
    pub counts: TestCounts,
    /// In the order ExUnit printed them.
    pub failures: Vec<TestFailure>,
    pub seed: Option<u64>,
    /// Summed over the `Finished in ...` lines.
    pub duration_ms: Option<u64>,
    /// Summary lines seen; 0 when the suite never finished (compile error, crash, timeout).
    pub summaries: u32,
    /// `All tests have been excluded.` (a `--only` filter matched nothing).
    pub all_excluded: bool,
}

/// What one line of ExUnit output meant, for progress reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExUnitEvent {
    Failure { name: String },
    Finished { counts: TestCounts },
}

/// Parses a whole `mix test` stdout; `cap` bounds each failure's message, values,
/// stack trace and logged output, in bytes.
pub(crate) fn parse_exunit_output(stdout: &str, project_root: &Path, cap: usize) -> ExUnitRun {
    let mut parser = ExUnitParser::new(project_root, cap);
    for line in stdout.lines() {
        parser.line(line);
    }
    parser.finish()
}

/// Reads ExUnit's output line by line as it arrives.
pub(crate) struct ExUnitParser {
    paths: PathMapper,
    apps: AppDirs,
    cap: usize,
    /// The umbrella app whose tests are running (`==> name`): its stack frames are
    /// relative to its own directory.
    current_app: Option<String>,
    block: Option<FailureBlock>,
    run: ExUnitRun,
}

impl ExUnitParser {
    pub(crate) fn new(project_root: &Path, cap: usize) -> Self {
        Self {
            paths: PathMapper::new(project_root, project_root),
            apps: AppDirs::discover(project_root),
            cap,
            current_app: None,
            block: None,
            run: ExUnitRun::default(),
        }
    }

    pub(crate) fn line(&mut self, line: &str) -> Option<ExUnitEvent> {
        let line = line.trim_end_matches(['\n', '\r']);
        let line = strip_ansi(line);
        let line = line.trim_end();
        if let Some(block) = &mut self.block {
            if block.accept(line) {
                return None;
            }
            self.close_block();
        }
        self.fresh_line(line)
    }

    pub(crate) fn finish(mut self) -> ExUnitRun {
        self.close_block();
        self.run
    }

    fn fresh_line(&mut self, line: &str) -> Option<ExUnitEvent> {
        let patterns = patterns();
        if let Some(block) = FailureBlock::start(line, self.app_dir()) {
            let name = block.name.clone();
            self.block = Some(block);
            return Some(ExUnitEvent::Failure { name });
        }
        if let Some(counts) = parse_summary(line) {
            self.run.counts.add(&counts);
            self.run.summaries += 1;
            return Some(ExUnitEvent::Finished { counts });
        }
        if let Some(caps) = patterns.finished.captures(line) {
            let ms = seconds_to_ms(&caps[1]);
            self.run.duration_ms = Some(self.run.duration_ms.unwrap_or(0).saturating_add(ms));
        } else if let Some(caps) = patterns.seed.captures(line) {
            self.run.seed = caps[1].parse().ok();
        } else if let Some(caps) = patterns.project.captures(line) {
            self.current_app = Some(caps[1].to_owned());
        } else if line == "All tests have been excluded." {
            self.run.all_excluded = true;
        }
        None
    }

    fn close_block(&mut self) {
        if let Some(block) = self.block.take() {
            let failure = block.into_failure(&self.paths, self.cap);
            self.run.failures.push(failure);
        }
    }

    fn app_dir(&self) -> Option<String> {
        let name = self.current_app.as_deref()?;
        self.apps.dir(name).map(str::to_owned)
    }
}

/// Which labelled part of a failure block the current line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Message,
    Doctest,
    Code,
    Left,
    Right,
    Stacktrace,
    Logged,
    Other,
}

/// One `  1) test name (Module)` block, read as it streams by.
struct FailureBlock {
    name: String,
    module: Option<String>,
    /// The test's own `file:line`, printed under the header.
    location: Option<(String, u32)>,
    section: Section,
    pending_blanks: usize,
    message: Vec<String>,
    doctest: Vec<String>,
    left: Vec<String>,
    right: Vec<String>,
    frames: Vec<String>,
    logged: Vec<String>,
    app_dir: Option<String>,
}

/// Body lines are indented by five spaces, under the counter.
const BODY_INDENT: &str = "     ";
/// `left:  ` and `right: ` values continue two columns past their label.
const VALUE_INDENT: usize = 7;

impl FailureBlock {
    fn start(line: &str, app_dir: Option<String>) -> Option<Self> {
        let patterns = patterns();
        let caps = patterns.failure_header.captures(line)?;
        let title = &caps[1];
        let (name, module) = if let Some(module) = patterns.setup_all.captures(title) {
            ("setup_all".to_owned(), module[1].to_owned())
        } else {
            let test = patterns.test_title.captures(title)?;
            (test[1].to_owned(), test[2].to_owned())
        };
        Some(Self {
            name,
            module: Some(module),
            location: None,
            section: Section::Message,
            pending_blanks: 0,
            message: Vec::new(),
            doctest: Vec::new(),
            left: Vec::new(),
            right: Vec::new(),
            frames: Vec::new(),
            logged: Vec::new(),
            app_dir,
        })
    }

    /// Whether the line belongs to this block; a line that does not ends it.
    fn accept(&mut self, line: &str) -> bool {
        if line.is_empty() {
            self.pending_blanks += 1;
            return true;
        }
        let Some(body) = line.strip_prefix(BODY_INDENT) else {
            return false;
        };
        let blanks = std::mem::take(&mut self.pending_blanks);
        // After the stack trace only the logged output (newer ExUnit) may follow a gap.
        if blanks > 0 && self.section == Section::Stacktrace {
            return body == "The following output was logged:" && self.switch(body);
        }
        if self.location.is_none()
            && self.is_first_body_line()
            && let Some(caps) = patterns().test_location.captures(body)
        {
            self.location = Some((caps[1].to_owned(), caps[2].parse().unwrap_or(0)));
            return true;
        }
        if self.switch(body) {
            return true;
        }
        self.push(body, blanks);
        true
    }

    fn is_first_body_line(&self) -> bool {
        self.section == Section::Message && self.message.is_empty()
    }

    /// Starts the section a label line opens; false when the line is no label.
    fn switch(&mut self, body: &str) -> bool {
        let (section, value) = match body {
            "doctest:" => (Section::Doctest, None),
            "stacktrace:" => (Section::Stacktrace, None),
            "The following output was logged:" => (Section::Logged, None),
            _ => match body.split_once(':') {
                Some(("code", _)) => (Section::Code, None),
                Some(("arguments" | "parameters" | "Parameters", _)) => (Section::Other, None),
                Some(("left", value)) => (Section::Left, Some(value)),
                Some(("right", value)) => (Section::Right, Some(value)),
                _ => return false,
            },
        };
        self.section = section;
        if let Some(value) = value {
            self.push(value.trim_start(), 0);
        }
        true
    }

    fn push(&mut self, text: &str, blanks: usize) {
        let (lines, indent) = match self.section {
            Section::Message => (&mut self.message, 0),
            Section::Doctest => (&mut self.doctest, 2),
            Section::Left => (&mut self.left, VALUE_INDENT),
            Section::Right => (&mut self.right, VALUE_INDENT),
            Section::Stacktrace => (&mut self.frames, 2),
            Section::Logged => (&mut self.logged, 0),
            Section::Code | Section::Other => return,
        };
        // Lines kept per part: far more than any real failure shows.
        if lines.len() >= 2_000 {
            return;
        }
        lines.extend(std::iter::repeat_n(String::new(), blanks));
        lines.push(strip_spaces(text, indent).to_owned());
    }

    fn into_failure(self, paths: &PathMapper, cap: usize) -> TestFailure {
        let location = self.failure_location();
        let mut message = join(&self.message).unwrap_or_else(|| "test failed".into());
        if let Some(doctest) = join(&self.doctest) {
            message = format!("{message}\n{doctest}");
        }
        TestFailure {
            name: self.name,
            file: location.as_ref().map(|(file, _)| paths.map(file)),
            line: location.as_ref().map(|&(_, line)| line),
            column: None,
            message: capped(message, cap),
            left: join(&self.left).map(|text| capped(text, cap)),
            right: join(&self.right).map(|text| capped(text, cap)),
            stdout: join(&self.logged).map(|text| capped(text, cap)),
            module: self.module,
            stacktrace: join(&self.frames).map(|text| capped(text, cap)),
        }
    }

    /// The first frame in test code (no `(app vsn)` prefix), relative to the project root.
    fn failure_location(&self) -> Option<(String, u32)> {
        let frame = self.frames.iter().find_map(|frame| {
            let caps = patterns().frame_location.captures(frame)?;
            Some((caps[1].to_owned(), caps[2].parse().ok()?))
        });
        match frame {
            Some((file, line)) => Some((self.frame_path(file), line)),
            None => self.location.clone(),
        }
    }

    /// Umbrella apps print stack frames relative to the app, the test location relative
    /// to the umbrella root.
    fn frame_path(&self, file: String) -> String {
        if Path::new(&file).is_absolute() {
            return file;
        }
        if let Some((test_file, _)) = &self.location
            && let Some(prefix) = test_file.strip_suffix(&format!("/{file}"))
        {
            return format!("{prefix}/{file}");
        }
        match &self.app_dir {
            Some(dir) => format!("{dir}/{file}"),
            None => file,
        }
    }
}

fn strip_spaces(text: &str, max: usize) -> &str {
    let spaces = text.len() - text.trim_start_matches(' ').len();
    &text[spaces.min(max)..]
}

/// Joins lines, dropping blank lines at either end; `None` when nothing is left.
fn join(lines: &[String]) -> Option<String> {
    let start = lines.iter().position(|line| !line.trim().is_empty())?;
    let end = lines.iter().rposition(|line| !line.trim().is_empty())?;
    Some(lines[start..=end].join("\n"))
}

fn capped(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n... {} bytes omitted", &text[..end], text.len() - end)
}

/// `2 doctests, 12 tests, 8 failures, 1 excluded, 2 invalid, 1 skipped`.
fn parse_summary(line: &str) -> Option<TestCounts> {
    let patterns = patterns();
    if !line.contains(" failure") || !patterns.summary.is_match(line) {
        return None;
    }
    let mut counts = TestCounts::default();
    let mut total = 0u32;
    for caps in patterns.summary_part.captures_iter(line) {
        let number: u32 = caps[1].parse().unwrap_or(0);
        // A test can print such a line too: its numbers may add up beyond u32.
        let count = match &caps[2] {
            "failure" | "failures" => &mut counts.failed,
            "excluded" => &mut counts.filtered_out,
            "skipped" => &mut counts.ignored,
            "invalid" => &mut counts.invalid,
            // tests, doctests, properties, or any other test type.
            _ => &mut total,
        };
        *count = count.saturating_add(number);
    }
    counts.passed = total
        .saturating_sub(counts.failed)
        .saturating_sub(counts.filtered_out)
        .saturating_sub(counts.ignored)
        .saturating_sub(counts.invalid);
    Some(counts)
}

/// `0.05` → 50; ExUnit prints at most two decimals.
fn seconds_to_ms(seconds: &str) -> u64 {
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let whole: u64 = whole.parse().unwrap_or(0);
    let fraction: String = fraction.chars().chain("000".chars()).take(3).collect();
    whole
        .saturating_mul(1000)
        .saturating_add(fraction.parse().unwrap_or(0))
}

struct Patterns {
    failure_header: Regex,
    setup_all: Regex,
    test_title: Regex,
    test_location: Regex,
    frame_location: Regex,
    summary: Regex,
    summary_part: Regex,
    finished: Regex,
    seed: Regex,
    project: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let re = |pattern: &str| Regex::new(pattern).expect("valid regex");
        Patterns {
            // The counter is padded to width 3: `  1) `, ` 12) `, `123) `.
            failure_header: re(r"^ {0,2}\d+\) (.+)$"),
            setup_all: re(
                r"^(.+?): failure on setup_all callback, all tests have been invalidated$",
            ),
            test_title: re(r"^(.+) \(([^()]+)\)$"),
            test_location: re(r"^([^\s*][^:]*\.exs?):(\d+)$"),
            frame_location: re(r"^([^\s(][^:]*):(\d+): "),
            summary: re(r"^\d+ [a-z]+(?:,? \(?\d+ [a-z]+\)?)*$"),
            summary_part: re(r"(\d+) ([a-z]+)"),
            finished: re(r"^Finished in (\d+(?:\.\d+)?) seconds?\b"),
            seed: re(r"^(?:Randomized with seed |Running ExUnit with seed: )(\d+)"),
            project: re(r"^==> (\S+)(?: \(.*\))?$"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::recorded;
    use std::path::PathBuf;

    fn parse(stdout: &str) -> ExUnitRun {
        parse_exunit_output(stdout, Path::new("/p"), 4096)
    }

    fn umbrella_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("test-projects/mix-umbrella")
    }

    fn counts(
        passed: u32,
        failed: u32,
        ignored: u32,
        filtered_out: u32,
        invalid: u32,
    ) -> TestCounts {
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
        let huge =
            "4294967295 tests, 4294967295 doctests, 4294967295 failures, 4294967295 failures";
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
}
