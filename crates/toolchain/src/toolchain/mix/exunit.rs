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
pub struct ExUnitRun {
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
pub enum ExUnitEvent {
    Failure { name: String },
    Finished { counts: TestCounts },
}

/// Parses a whole `mix test` stdout; `cap` bounds each failure's message, values,
/// stack trace and logged output, in bytes.
pub fn parse_exunit_output(stdout: &str, project_root: &Path, cap: usize) -> ExUnitRun {
    let mut parser = ExUnitParser::new(project_root, cap);
    for line in stdout.lines() {
        parser.line(line);
    }
    parser.finish()
}

/// Reads ExUnit's output line by line as it arrives.
pub struct ExUnitParser {
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
    pub fn new(project_root: &Path, cap: usize) -> Self {
        Self {
            paths: PathMapper::new(project_root, project_root),
            apps: AppDirs::discover(project_root),
            cap,
            current_app: None,
            block: None,
            run: ExUnitRun::default(),
        }
    }

    pub fn line(&mut self, line: &str) -> Option<ExUnitEvent> {
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

    pub fn finish(mut self) -> ExUnitRun {
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
mod tests;
