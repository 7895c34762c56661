//! The parser of libtest's human output, as cargo test prints it.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::process::Stream;
use crate::toolchain::endings::clean_line;
use crate::toolchain::line_parser::LineParser;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{TestCounts, TestFailure};

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestOutcome {
    Passed,
    Failed,
    Ignored,
}

/// What one line of test output meant, for progress reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibtestEvent {
    BinaryStarted { name: String },
    TestFinished { name: String, outcome: TestOutcome },
    BinaryFinished { counts: TestCounts },
}

/// Everything gathered from one `cargo test` run's human output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestRun {
    pub counts: TestCounts,
    /// Grouped by test binary in run order, sorted by name within a binary
    /// (libtest prints them in completion order, which varies between runs).
    pub failures: Vec<TestFailure>,
    /// Test binaries started (`Running ...` / `Doc-tests ...` on stderr; when stderr
    /// was not fed, libtest's `running N tests` headers).
    pub binaries: u32,
}

/// Turns libtest's human output (stdout) and cargo's progress lines (stderr), fed line
/// by line, into counts and failures.
pub struct LibtestParser {
    paths: PathMapper,
    stdout_cap: usize,
    counts: TestCounts,
    failures: Vec<TestFailure>,
    binaries_announced: u32,
    harness_runs: u32,
    binary: Option<BinaryRun>,
}

impl LineParser for LibtestParser {
    type Event = LibtestEvent;
    type Output = TestRun;

    fn line(&mut self, stream: Stream, line: &str) -> Option<LibtestEvent> {
        match stream {
            Stream::Stdout => self.stdout_line(line),
            Stream::Stderr => self.stderr_line(line),
        }
    }

    fn finish(mut self) -> TestRun {
        // A binary without a summary was killed (timeout) or crashed: keep what it showed.
        if let Some(binary) = self.binary.take() {
            let observed = binary.observed.clone();
            self.close_binary(binary, observed);
        }
        TestRun {
            counts: self.counts,
            failures: self.failures,
            binaries: if self.binaries_announced > 0 {
                self.binaries_announced
            } else {
                self.harness_runs
            },
        }
    }
}

impl LibtestParser {
    pub fn new(workspace_root: &Path, project_root: &Path, stdout_cap: usize) -> Self {
        Self {
            paths: PathMapper::new(workspace_root, project_root),
            stdout_cap,
            counts: TestCounts::default(),
            failures: Vec::new(),
            binaries_announced: 0,
            harness_runs: 0,
            binary: None,
        }
    }

    /// Feeds one stdout line; cargo's JSON messages (`{"reason":...`) are ignored.
    fn stdout_line(&mut self, line: &str) -> Option<LibtestEvent> {
        if line.starts_with("{\"reason\":") {
            return None;
        }
        let line = clean_line(line);
        let patterns = patterns();
        if patterns.running.is_match(&line) {
            self.start_harness_run();
            return None;
        }
        if let Some(counts) = parse_summary(&line) {
            return Some(self.finish_binary(counts));
        }
        let binary = self.binary.get_or_insert_with(BinaryRun::default);
        binary.feed(&line, self.stdout_cap)
    }

    /// Feeds one stderr line: `Running ...` and `Doc-tests ...` announce a test binary.
    fn stderr_line(&mut self, line: &str) -> Option<LibtestEvent> {
        let line = clean_line(line);
        let name = binary_name(&line)?;
        self.binaries_announced += 1;
        Some(LibtestEvent::BinaryStarted { name })
    }

    fn start_harness_run(&mut self) {
        if let Some(binary) = self.binary.take() {
            let observed = binary.observed.clone();
            self.close_binary(binary, observed);
        }
        self.harness_runs += 1;
        self.binary = Some(BinaryRun::default());
    }

    fn finish_binary(&mut self, counts: TestCounts) -> LibtestEvent {
        let binary = self.binary.take().unwrap_or_default();
        self.close_binary(binary, counts.clone());
        LibtestEvent::BinaryFinished { counts }
    }

    fn close_binary(&mut self, binary: BinaryRun, counts: TestCounts) {
        self.counts.add(&counts);
        let mut failures = binary.into_failures(&self.paths);
        failures.sort_by(|a, b| a.name.cmp(&b.name));
        self.failures.extend(failures);
    }
}

/// One `running N tests` ... `test result:` stretch of output.
#[derive(Default)]
struct BinaryRun {
    observed: TestCounts,
    /// Failed tests in the order libtest reported them, with their output block if any.
    failed: Vec<(String, Option<FailureBlock>)>,
    failed_index: HashMap<String, usize>,
    reading: Reading,
}

/// Which part of a binary's output the current line belongs to.
#[derive(Default, Clone, Copy)]
enum Reading {
    #[default]
    Results,
    FailureBlock(usize),
    /// A block of a test that did not fail (`--show-output` prints those too).
    OtherBlock,
}

impl BinaryRun {
    fn feed(&mut self, line: &str, stdout_cap: usize) -> Option<LibtestEvent> {
        if let Some(name) = block_header(line) {
            self.start_block(name, stdout_cap);
            return None;
        }
        if line == "failures:" || line == "successes:" {
            self.reading = Reading::Results;
            return None;
        }
        match self.reading {
            Reading::Results => self.feed_result_line(line),
            Reading::FailureBlock(index) => {
                if let Some(block) = &mut self.failed[index].1 {
                    block.feed(line);
                }
                None
            }
            Reading::OtherBlock => None,
        }
    }

    fn start_block(&mut self, name: &str, stdout_cap: usize) {
        self.reading = match self.failed_index.get(name) {
            Some(&index) => {
                self.failed[index].1 = Some(FailureBlock::new(name, stdout_cap));
                Reading::FailureBlock(index)
            }
            None => Reading::OtherBlock,
        };
    }

    fn feed_result_line(&mut self, line: &str) -> Option<LibtestEvent> {
        let (name, outcome) = parse_test_line(line)?;
        match outcome {
            TestOutcome::Passed => self.observed.passed += 1,
            TestOutcome::Failed => {
                self.observed.failed += 1;
                self.failed_index.insert(name.clone(), self.failed.len());
                self.failed.push((name.clone(), None));
            }
            TestOutcome::Ignored => self.observed.ignored += 1,
        }
        Some(LibtestEvent::TestFinished { name, outcome })
    }

    fn into_failures(self, paths: &PathMapper) -> Vec<TestFailure> {
        self.failed
            .into_iter()
            .map(|(name, block)| match block {
                Some(block) => block.into_failure(name, paths),
                None => TestFailure {
                    name,
                    file: None,
                    line: None,
                    column: None,
                    message: "test failed".into(),
                    left: None,
                    right: None,
                    stdout: None,
                    module: None,
                    stacktrace: None,
                },
            })
            .collect()
    }
}

/// A file position printed by a panic or a compiler error.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    file: String,
    line: u32,
    column: Option<u32>,
}

/// The `---- name stdout ----` block of one failed test, read as it streams by.
struct FailureBlock {
    doc_test: Option<Location>,
    /// The thread a panic of this test runs on (doc tests run as `main`).
    test_thread: String,
    captured: CappedText,
    panic: Option<PanicSection>,
    did_not_panic: Option<Option<Location>>,
    compile_error: Option<(String, Option<Location>)>,
    exit_status: Option<String>,
    last_line: Option<String>,
    in_backtrace: bool,
}

struct PanicSection {
    header: String,
    thread: String,
    location: Option<Location>,
    lines: Vec<String>,
}

/// Panic messages longer than this are cut: they are for reading, not archiving.
const MAX_PANIC_LINES: usize = 400;

impl FailureBlock {
    fn new(name: &str, stdout_cap: usize) -> Self {
        let doc_test = doc_test_location(name);
        Self {
            test_thread: if doc_test.is_some() {
                "main".into()
            } else {
                name.into()
            },
            doc_test,
            captured: CappedText::new(stdout_cap),
            panic: None,
            did_not_panic: None,
            compile_error: None,
            exit_status: None,
            last_line: None,
            in_backtrace: false,
        }
    }

    fn feed(&mut self, line: &str) {
        if self.skip_backtrace(line) {
            return;
        }
        if let Some(panic) = parse_panic_header(line) {
            self.start_panic(line, panic);
            return;
        }
        if let Some(panic) = &mut self.panic {
            if panic.lines.len() < MAX_PANIC_LINES {
                panic.lines.push(line.to_owned());
            }
            return;
        }
        self.feed_captured(line);
    }

    /// Backtraces, and the notes about them, are noise in a failure message.
    fn skip_backtrace(&mut self, line: &str) -> bool {
        if line == "stack backtrace:" {
            self.in_backtrace = true;
            return true;
        }
        if self.in_backtrace {
            if line.is_empty() {
                self.in_backtrace = false;
                return true;
            }
            if line.starts_with(' ') || line.starts_with("note: Some details are omitted") {
                return true;
            }
            self.in_backtrace = false;
        }
        line.starts_with("note: run with `RUST_BACKTRACE=1`")
    }

    fn start_panic(&mut self, header: &str, panic: PanicSection) {
        let Some(earlier) = &mut self.panic else {
            self.panic = Some(panic);
            return;
        };
        // A test can print another thread's panic before its own; its own one wins.
        if earlier.thread != self.test_thread && panic.thread == self.test_thread {
            let earlier = self.panic.replace(panic).expect("checked above");
            self.captured.push_line(&earlier.header);
            for line in &earlier.lines {
                self.captured.push_line(line);
            }
        } else if earlier.lines.len() < MAX_PANIC_LINES {
            earlier.lines.push(header.to_owned());
        }
    }

    fn feed_captured(&mut self, line: &str) {
        if let Some(caps) = patterns().did_not_panic.captures(line) {
            self.did_not_panic = Some(location_from(&caps));
            return;
        }
        if self.doc_test.is_some() && self.doc_test_marker(line) {
            return;
        }
        if !line.trim().is_empty() {
            self.last_line = Some(line.to_owned());
        }
        self.captured.push_line(line);
    }

    /// rustdoc's own lines around a doc test's output, and its compile errors.
    fn doc_test_marker(&mut self, line: &str) -> bool {
        if line.starts_with("Test executable failed (") {
            self.exit_status = Some(line.to_owned());
            return true;
        }
        if line == "stdout:" || line == "stderr:" {
            return true;
        }
        let patterns = patterns();
        match &mut self.compile_error {
            None => {
                if patterns.compile_error.is_match(line) && !line.starts_with("error: aborting") {
                    self.compile_error = Some((line.to_owned(), None));
                }
            }
            Some((_, location @ None)) => {
                if let Some(caps) = patterns.compile_error_location.captures(line) {
                    *location = location_from(&caps);
                }
            }
            Some(_) => {}
        }
        false
    }

    fn into_failure(self, name: String, paths: &PathMapper) -> TestFailure {
        let failed_to_compile = self.panic.is_none() && self.compile_error.is_some();
        let doc_test = self.doc_test.clone();
        let (cause, stdout) = self.cause_and_stdout();
        let location = match doc_test {
            Some(doc) if !failed_to_compile => {
                Some(doc_test_panic_location(doc, cause.location, paths))
            }
            _ => cause.location,
        };
        TestFailure {
            name,
            file: location.as_ref().map(|l| paths.map(&l.file)),
            line: location.as_ref().map(|l| l.line),
            column: location.as_ref().and_then(|l| l.column),
            message: cause.message,
            left: cause.left,
            right: cause.right,
            stdout,
            module: None,
            stacktrace: None,
        }
    }

    /// Why the test failed, most telling evidence first, and what it printed.
    fn cause_and_stdout(self) -> (Cause, Option<String>) {
        let stdout = self.captured.into_text();
        if let Some(panic) = self.panic {
            return (parse_panic(panic), stdout);
        }
        let cause = if let Some(location) = self.did_not_panic {
            Cause::new("test did not panic as expected", location)
        } else if let Some((message, location)) = self.compile_error {
            Cause::new(message, location)
        } else if let Some(status) = self.exit_status {
            Cause::new(status, None)
        } else if let Some(last) = self.last_line {
            // A test returning `Err` prints `Error: ...` last, with no panic.
            let stdout = stdout.and_then(|text| without_last_line(text, &last));
            return (Cause::new(last, None), stdout);
        } else {
            Cause::new("test failed", None)
        };
        (cause, stdout)
    }
}

/// A failure's message and where it happened.
struct Cause {
    message: String,
    location: Option<Location>,
    left: Option<String>,
    right: Option<String>,
}

impl Cause {
    fn new(message: impl Into<String>, location: Option<Location>) -> Self {
        Self {
            message: message.into(),
            location,
            left: None,
            right: None,
        }
    }
}

/// A doc test's panic location points into rustdoc's generated wrapper unless the
/// panic happened in another file of the workspace (a function the example called).
fn doc_test_panic_location(doc: Location, found: Option<Location>, paths: &PathMapper) -> Location {
    match found {
        Some(found) if found.file != doc.file && paths.is_in_workspace(&found.file) => found,
        _ => doc,
    }
}

fn without_last_line(text: String, last: &str) -> Option<String> {
    let rest = text.trim_end().strip_suffix(last)?.trim_end();
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// Splits the lines after `panicked at` into the message and assert_eq's values, which
/// may span several lines each (`{:#?}`-style Debug output).
fn parse_panic(panic: PanicSection) -> Cause {
    #[derive(PartialEq)]
    enum Part {
        Message,
        Left,
        Right,
        Done,
    }
    let lines = &panic.lines;
    let mut part = Part::Message;
    let (mut message, mut left, mut right) = (Vec::new(), Vec::new(), Vec::new());
    for (index, line) in lines.iter().enumerate() {
        if line.starts_with("note: panic did not contain expected string") {
            return Cause::new(expected_string_mismatch(&lines[index..]), panic.location);
        }
        if part == Part::Message && line.starts_with("  left: ") {
            part = Part::Left;
        } else if part == Part::Left && line.starts_with(" right: ") {
            part = Part::Right;
        } else if part == Part::Right && line.trim().is_empty() {
            part = Part::Done;
        }
        match part {
            Part::Message => message.push(line.as_str()),
            Part::Left => left.push(line.strip_prefix("  left: ").unwrap_or(line)),
            Part::Right => right.push(line.strip_prefix(" right: ").unwrap_or(line)),
            Part::Done => {}
        }
    }
    Cause {
        message: join_trimmed(&message).unwrap_or_else(|| "explicit panic".into()),
        location: panic.location,
        left: join_trimmed(&left),
        right: join_trimmed(&right),
    }
}

/// `#[should_panic(expected = ...)]` whose panic said something else: the note and
/// its indented details.
fn expected_string_mismatch(lines: &[String]) -> String {
    let mut message = vec![lines[0].trim_start_matches("note: ")];
    message.extend(
        lines[1..]
            .iter()
            .take_while(|line| line.starts_with(' '))
            .map(|line| line.trim()),
    );
    message.join("\n")
}

/// Joins lines, dropping blank lines at either end; `None` when nothing is left.
fn join_trimmed(lines: &[&str]) -> Option<String> {
    let start = lines.iter().position(|line| !line.trim().is_empty())?;
    let end = lines.iter().rposition(|line| !line.trim().is_empty())?;
    Some(lines[start..=end].join("\n"))
}

/// Keeps the head and the tail of a test's output within `cap` bytes.
struct CappedText {
    cap: usize,
    head: String,
    tail: VecDeque<String>,
    tail_bytes: usize,
    omitted_bytes: usize,
}

impl CappedText {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            head: String::new(),
            tail: VecDeque::new(),
            tail_bytes: 0,
            omitted_bytes: 0,
        }
    }

    fn push_line(&mut self, line: &str) {
        let head_cap = self.cap / 2;
        if self.tail.is_empty() && self.head.len() + line.len() < head_cap {
            self.head.push_str(line);
            self.head.push('\n');
            return;
        }
        let tail_cap = self.cap - head_cap;
        let kept = truncate_to(line, tail_cap.saturating_sub(1));
        self.omitted_bytes += line.len() - kept.len();
        self.tail_bytes += kept.len() + 1;
        self.tail.push_back(kept.to_owned());
        while self.tail_bytes > tail_cap {
            let Some(dropped) = self.tail.pop_front() else {
                break;
            };
            self.tail_bytes -= dropped.len() + 1;
            self.omitted_bytes += dropped.len() + 1;
        }
    }

    fn into_text(self) -> Option<String> {
        let mut text = self.head;
        if self.omitted_bytes > 0 {
            text.push_str(&format!("... {} bytes omitted ...\n", self.omitted_bytes));
        }
        for line in &self.tail {
            text.push_str(line);
            text.push('\n');
        }
        let lines: Vec<&str> = text.lines().collect();
        join_trimmed(&lines)
    }
}

fn truncate_to(line: &str, max: usize) -> &str {
    let mut end = max.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

struct Patterns {
    running: Regex,
    test_line: Regex,
    summary: Regex,
    block_header: Regex,
    panic_header: Regex,
    legacy_panic_header: Regex,
    did_not_panic: Regex,
    doc_test_name: Regex,
    compile_error: Regex,
    compile_error_location: Regex,
    cargo_running: Regex,
    doc_tests: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let re = |pattern: &str| Regex::new(pattern).expect("valid regex");
        Patterns {
            running: re(r"^running \d+ tests?$"),
            test_line: re(r"^test (.+) \.\.\. (ok|FAILED|ignored)(?:, (.*))?$"),
            summary: re(
                r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered out",
            ),
            block_header: re(r"^---- (.+) (?:stdout|stderr) ----$"),
            panic_header: re(
                r"^thread '(.*?)'(?: \(\d+\))? panicked at (.+):(\d+):(\d+):$",
            ),
            legacy_panic_header: re(r"^thread '(.*?)' panicked at '(.*)', (.+):(\d+):(\d+)$"),
            did_not_panic: re(r"^note: test did not panic as expected(?: at (.+):(\d+):(\d+))?$"),
            doc_test_name: re(r"^(.+) - .+ \(line (\d+)\)$"),
            compile_error: re(r"^error(?:\[\w+\])?: "),
            compile_error_location: re(r"^\s*--> (.+):(\d+):(\d+)$"),
            cargo_running: re(r"^\s*Running (.+?)(?: \([^()]*\))?$"),
            doc_tests: re(r"^\s*Doc-tests (\S+)$"),
        }
    })
}

fn parse_test_line(line: &str) -> Option<(String, TestOutcome)> {
    if !line.starts_with("test ") {
        return None;
    }
    let caps = patterns().test_line.captures(line)?;
    let outcome = match &caps[2] {
        "ok" => TestOutcome::Passed,
        "FAILED" => TestOutcome::Failed,
        _ => TestOutcome::Ignored,
    };
    Some((test_name(&caps[1]).to_owned(), outcome))
}

/// The test's own name, without the attributes libtest appends to the result line.
fn test_name(shown: &str) -> &str {
    shown
        .strip_suffix(" - should panic")
        .or_else(|| shown.strip_suffix(" - compile fail"))
        .unwrap_or(shown)
}

fn parse_summary(line: &str) -> Option<TestCounts> {
    if !line.starts_with("test result: ") {
        return None;
    }
    let caps = patterns().summary.captures(line)?;
    let number = |index: usize| caps[index].parse().unwrap_or(0);
    Some(TestCounts {
        passed: number(1),
        failed: number(2),
        ignored: number(3),
        filtered_out: number(4),
        invalid: 0,
    })
}

fn block_header(line: &str) -> Option<&str> {
    if !line.starts_with("---- ") {
        return None;
    }
    let caps = patterns().block_header.captures(line)?;
    caps.get(1).map(|name| name.as_str())
}

fn parse_panic_header(line: &str) -> Option<PanicSection> {
    if !line.starts_with("thread '") {
        return None;
    }
    let patterns = patterns();
    if let Some(caps) = patterns.panic_header.captures(line) {
        return Some(PanicSection {
            header: line.to_owned(),
            thread: caps[1].to_owned(),
            location: location_at(&caps, 2),
            lines: Vec::new(),
        });
    }
    // Before Rust 1.73 the message came first, on the same line.
    let caps = patterns.legacy_panic_header.captures(line)?;
    Some(PanicSection {
        header: line.to_owned(),
        thread: caps[1].to_owned(),
        location: location_at(&caps, 3),
        lines: vec![caps[2].to_owned()],
    })
}

fn location_from(caps: &Captures<'_>) -> Option<Location> {
    location_at(caps, 1)
}

/// Reads `file`, `line`, `column` from three consecutive groups starting at `first`;
/// column 0 (rustdoc's should_panic note) means "no column".
fn location_at(caps: &Captures<'_>, first: usize) -> Option<Location> {
    Some(Location {
        file: caps.get(first)?.as_str().to_owned(),
        line: caps.get(first + 1)?.as_str().parse().ok()?,
        column: caps
            .get(first + 2)
            .and_then(|column| column.as_str().parse().ok())
            .filter(|&column| column > 0),
    })
}

/// `src/lib.rs - add (line 5)` is a doc test written at line 5 of src/lib.rs.
fn doc_test_location(name: &str) -> Option<Location> {
    let caps = patterns().doc_test_name.captures(name)?;
    Some(Location {
        file: caps[1].to_owned(),
        line: caps[2].parse().ok()?,
        column: None,
    })
}

/// `Running unittests src/lib.rs (target/...)` → `unittests src/lib.rs`;
/// `Doc-tests name` → `Doc-tests name`.
fn binary_name(line: &str) -> Option<String> {
    let patterns = patterns();
    if let Some(caps) = patterns.cargo_running.captures(line) {
        return Some(caps[1].to_owned());
    }
    let caps = patterns.doc_tests.captures(line)?;
    Some(format!("Doc-tests {}", &caps[1]))
}

#[cfg(test)]
mod tests;
