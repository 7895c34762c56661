//! Elixir compiler diagnostics from mix's human output (`mix compile`, and the compile
//! step of `mix test`, `mix run`, ...), fed line by line from stdout and stderr.
//!
//! Layouts understood, all of which can appear in one run:
//! - Elixir 1.14: `warning: msg` at column 0, then `  lib/a.ex:5: Mod.fun/1` (no column;
//!   several such lines after `Invalid call found at N locations:`); errors raised as
//!   `== Compilation error in file lib/b.ex ==` / `** (CompileError) lib/b.ex:3: msg`,
//!   `** (SyntaxError) lib/b.ex:8:5: msg` (multi-line, followed by stack frames).
//! - Elixir 1.15: errors are logged first (`error: msg` / `  lib/x.ex:12: Mod.fun/2`), then
//!   `** (CompileError) lib/x.ex: cannot compile module X (errors have been logged)`.
//! - Elixir 1.16+: the same blocks indented, with a code snippet (`│` lines) and one
//!   `└─ lib/x.ex:3:5: Mod.fun/1` line per location; syntax errors become
//!   `** (SyntaxError) invalid syntax found on lib/b.ex:1:17:` followed by such a block.
//!
//! Choices: a warning reported at several locations gives one diagnostic per location
//! (same message), so each can be listed and fixed where it is. Errors carry the kind of
//! exception mix raised as `code` (`CompileError`, `SyntaxError`, `TokenMissingError`,
//! `MismatchedDelimiterError`, `ArgumentError`, ...); errors logged before a
//! `cannot compile module` (1.15+) are `CompileError` too, so the code does not depend on
//! the Elixir version. Warnings have no code. The function a diagnostic is in
//! (`Mod.fun/1`) goes to `notes` as `in Mod.fun/1`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::process::Stream;
use crate::toolchain::endings::{Distinct, strip_ansi};
use crate::toolchain::line_parser::LineParser;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{Diagnostic, Severity};

/// What one line of mix's output meant, for progress reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MixEvent {
    /// `Compiling 3 files (.ex)`.
    Compiling { files: u32, kind: String },
    /// `Generated my_app app`.
    Generated { app: String },
    /// `==> name`: the umbrella app or dependency the next lines belong to.
    Project { name: String },
}

/// Turns mix's output, fed line by line as it arrives, into diagnostics.
pub(crate) struct MixDiagnosticParser {
    paths: PathMapper,
    apps: AppDirs,
    /// The umbrella app or dependency being compiled (`==> name`), whose paths are
    /// printed relative to its own directory.
    current: Option<String>,
    stdout: StreamState,
    stderr: StreamState,
    diagnostics: Vec<Diagnostic>,
    seen: Distinct,
    /// `cannot compile module X (errors have been logged)`: kept only when none of the
    /// logged errors reached us (they may arrive later, on the other stream).
    already_logged: Vec<Diagnostic>,
}

/// The state of one output stream: warnings (stderr) and errors (stdout in 1.14)
/// interleave, and a block on one must not be cut by a line of the other.
#[derive(Default)]
struct StreamState {
    block: Option<Block>,
    exception: Option<Exception>,
    /// From `== Compilation error in file lib/b.ex ==`, relative to `app_dir`.
    failed_file: Option<String>,
}

/// A printed source position: `lib/a.ex:5:9: Mod.fun/1`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    file: String,
    line: Option<u32>,
    column: Option<u32>,
    function: Option<String>,
}

/// Messages longer than this are cut: they are for reading, not archiving.
const MAX_MESSAGE_LINES: usize = 200;

impl LineParser for MixDiagnosticParser {
    type Event = MixEvent;
    type Output = Vec<Diagnostic>;

    fn line(&mut self, stream: Stream, line: &str) -> Option<MixEvent> {
        let line = clean_line(line);
        let mut state = std::mem::take(self.state(stream));
        let event = self.read_line(&mut state, &line);
        *self.state(stream) = state;
        event
    }

    /// The diagnostics in the order they were completed, duplicates removed.
    fn finish(mut self) -> Vec<Diagnostic> {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let mut state = std::mem::take(self.state(stream));
            self.close(&mut state);
        }
        for diagnostic in std::mem::take(&mut self.already_logged) {
            let logged = self
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error && d.file == diagnostic.file);
            if !logged {
                self.push(diagnostic);
            }
        }
        self.diagnostics
    }
}

impl MixDiagnosticParser {
    /// Reads the umbrella apps (`apps/*`) and fetched dependencies (`deps/*`) of the
    /// project once, to place the paths printed under `==> name`.
    pub(crate) fn new(project_root: &Path) -> Self {
        Self {
            paths: PathMapper::new(project_root, project_root),
            apps: AppDirs::discover(project_root),
            current: None,
            stdout: StreamState::default(),
            stderr: StreamState::default(),
            diagnostics: Vec::new(),
            seen: Distinct::default(),
            already_logged: Vec::new(),
        }
    }

    fn state(&mut self, stream: Stream) -> &mut StreamState {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    fn read_line(&mut self, state: &mut StreamState, line: &str) -> Option<MixEvent> {
        if let Some(block) = &mut state.block {
            match block.accept(line) {
                Accept::Taken => return None,
                Accept::Done => {
                    self.close_block(state);
                    return None;
                }
                Accept::DoneReprocess => self.close_block(state),
            }
        }
        if let Some(exception) = &mut state.exception {
            match exception.accept(line) {
                Accept::Taken => return None,
                Accept::Done => {
                    self.close_exception(state);
                    return None;
                }
                Accept::DoneReprocess => self.close_exception(state),
            }
        }
        self.fresh_line(state, line)
    }

    fn close(&mut self, state: &mut StreamState) {
        self.close_block(state);
        self.close_exception(state);
    }

    fn fresh_line(&mut self, state: &mut StreamState, line: &str) -> Option<MixEvent> {
        let patterns = patterns();
        if let Some(caps) = patterns.header.captures(line) {
            let severity = if &caps[2] == "error" {
                Severity::Error
            } else {
                Severity::Warning
            };
            state.block = Some(Block::new(
                severity,
                caps[1].len(),
                &caps[3],
                self.app_dir(),
            ));
            return None;
        }
        if let Some(caps) = patterns.exception.captures(line) {
            self.start_exception(state, &caps[1], &caps[2]);
            return None;
        }
        if let Some(caps) = patterns.compilation_error.captures(line) {
            state.failed_file = Some(caps[1].to_owned());
            return None;
        }
        self.progress_line(line)
    }

    fn progress_line(&mut self, line: &str) -> Option<MixEvent> {
        let patterns = patterns();
        if let Some(caps) = patterns.project.captures(line) {
            self.current = Some(caps[1].to_owned());
            return Some(MixEvent::Project {
                name: caps[1].to_owned(),
            });
        }
        if let Some(caps) = patterns.compiling.captures(line) {
            return Some(MixEvent::Compiling {
                files: caps[1].parse().unwrap_or(0),
                kind: caps[2].to_owned(),
            });
        }
        let caps = patterns.generated.captures(line)?;
        let app = caps[1].to_owned();
        // A dependency's output has no closing `==>`: the project's own lines follow.
        if self.current.as_deref() == Some(app.as_str()) && self.apps.is_dependency(&app) {
            self.current = None;
        }
        Some(MixEvent::Generated { app })
    }

    fn start_exception(&mut self, state: &mut StreamState, kind: &str, rest: &str) {
        if kind == "Mix" {
            return;
        }
        let app_dir = self.app_dir();
        let in_failed_file = state.failed_file.is_some();
        let exception = Exception::parse(kind, rest, state.failed_file.take(), app_dir);
        if in_failed_file || is_compiler_exception(kind) {
            state.exception = Some(exception);
        }
    }

    fn close_block(&mut self, state: &mut StreamState) {
        let Some(block) = state.block.take() else {
            return;
        };
        for diagnostic in self.block_diagnostics(block) {
            self.push(diagnostic);
        }
    }

    fn close_exception(&mut self, state: &mut StreamState) {
        let Some(exception) = state.exception.take() else {
            return;
        };
        if let Some(body) = exception.body {
            for diagnostic in self.block_diagnostics(body) {
                self.push(diagnostic);
            }
            return;
        }
        let already_logged = exception.already_logged();
        let diagnostic = self.exception_diagnostic(exception);
        if already_logged {
            self.already_logged.push(diagnostic);
        } else {
            self.push(diagnostic);
        }
    }

    fn block_diagnostics(&self, block: Block) -> Vec<Diagnostic> {
        let message = block.message_text();
        let mut locations = block.locations;
        if locations.is_empty() {
            locations.extend(block.fallback);
        }
        if locations.is_empty() {
            return vec![self.diagnostic(block.severity, block.code, message, None, None)];
        }
        locations
            .into_iter()
            .map(|location| {
                let code = block.code.clone();
                let app_dir = block.app_dir.as_deref();
                self.diagnostic(
                    block.severity,
                    code,
                    message.clone(),
                    Some(location),
                    app_dir,
                )
            })
            .collect()
    }

    fn exception_diagnostic(&self, exception: Exception) -> Diagnostic {
        let message = exception.message_text();
        let app_dir = exception.app_dir.clone();
        self.diagnostic(
            Severity::Error,
            Some(exception.kind),
            message,
            exception.location,
            app_dir.as_deref(),
        )
    }

    fn diagnostic(
        &self,
        severity: Severity,
        code: Option<String>,
        message: String,
        location: Option<Location>,
        app_dir: Option<&str>,
    ) -> Diagnostic {
        let code = code.or_else(|| (severity == Severity::Error).then(|| "CompileError".into()));
        let (file, line, column, notes) = match location {
            Some(location) => (
                // Code compiled from a string (`Code.eval_string`) has no file.
                (location.file != "nofile").then(|| self.map_path(&location.file, app_dir)),
                location.line,
                location.column,
                location
                    .function
                    .map(|f| format!("in {f}"))
                    .into_iter()
                    .collect(),
            ),
            None => (None, None, None, Vec::new()),
        };
        Diagnostic {
            file,
            line,
            column,
            end_line: None,
            end_column: None,
            severity,
            code,
            message,
            label: None,
            notes,
            suggestions: Vec::new(),
            rendered: None,
        }
    }

    fn map_path(&self, file: &str, app_dir: Option<&str>) -> String {
        match app_dir {
            Some(dir) if !Path::new(file).is_absolute() => self.paths.map(&format!("{dir}/{file}")),
            _ => self.paths.map(file),
        }
    }

    fn push(&mut self, diagnostic: Diagnostic) {
        if self.seen.first_time(&diagnostic) {
            self.diagnostics.push(diagnostic);
        }
    }

    fn app_dir(&self) -> Option<String> {
        let name = self.current.as_deref()?;
        self.apps.dir(name).map(str::to_owned)
    }
}

/// What a block or an exception made of one line.
enum Accept {
    Taken,
    /// The line closed it and means nothing more (the blank line after a block).
    Done,
    /// The line is not part of it: read it again as a fresh line.
    DoneReprocess,
}

/// A `warning:` / `error:` block: message lines, an optional snippet, then locations.
struct Block {
    severity: Severity,
    /// Set for the body of a 1.16+ `** (SyntaxError) ... found on file:line:col:`.
    code: Option<String>,
    /// Indentation of the header: 1.16+ indent the whole block, and 1.14/1.15 print
    /// their `  file:line` locations only under a header at column 0.
    indent: usize,
    message: Vec<String>,
    pending_blanks: usize,
    locations: Vec<Location>,
    /// The exception header's location, for a body without a `└─` line.
    fallback: Option<Location>,
    in_snippet: bool,
    in_frames: bool,
    app_dir: Option<String>,
}

impl Block {
    fn new(severity: Severity, indent: usize, first_line: &str, app_dir: Option<String>) -> Self {
        Self {
            severity,
            code: None,
            indent,
            message: vec![first_line.to_owned()],
            pending_blanks: 0,
            locations: Vec::new(),
            fallback: None,
            in_snippet: false,
            in_frames: false,
            app_dir,
        }
    }

    fn accept(&mut self, line: &str) -> Accept {
        let done = !self.locations.is_empty() || self.in_frames;
        if line.trim().is_empty() {
            if done {
                return Accept::Done;
            }
            self.pending_blanks += 1;
            return Accept::Taken;
        }
        let patterns = patterns();
        if is_block_boundary(line) || patterns.header.is_match(line) {
            return Accept::DoneReprocess;
        }
        if let Some(caps) = patterns.tree_location.captures(line) {
            self.locations.push(location_from(&caps[1]));
            return Accept::Taken;
        }
        if done {
            return self.accept_after_locations(line);
        }
        if patterns.snippet.is_match(line) {
            self.in_snippet = true;
            return Accept::Taken;
        }
        if let Some(location) = self.plain_location(line) {
            self.locations.push(location);
            return Accept::Taken;
        }
        if patterns.frame.is_match(line) {
            self.in_frames = true;
            return Accept::Taken;
        }
        self.push_message(line);
        Accept::Taken
    }

    /// After the locations only more locations (1.14's `Invalid call found at 2
    /// locations:` list) or stack frames belong to the block.
    fn accept_after_locations(&mut self, line: &str) -> Accept {
        if !self.in_frames
            && let Some(location) = self.plain_location(line)
        {
            self.locations.push(location);
            return Accept::Taken;
        }
        if patterns().frame.is_match(line) {
            self.in_frames = true;
            return Accept::Taken;
        }
        Accept::DoneReprocess
    }

    /// `  lib/a.ex:5: Mod.fun/1`: the 1.14/1.15 location, two spaces under a header at column 0.
    fn plain_location(&self, line: &str) -> Option<Location> {
        if self.indent > 0 || self.in_snippet {
            return None;
        }
        let rest = line.strip_prefix("  ")?;
        if rest.starts_with(' ') {
            return None;
        }
        parse_location(rest).filter(|location| location.line.is_some())
    }

    fn push_message(&mut self, line: &str) {
        if self.message.len() >= MAX_MESSAGE_LINES {
            return;
        }
        for _ in 0..std::mem::take(&mut self.pending_blanks) {
            self.message.push(String::new());
        }
        self.message
            .push(strip_indent(line, self.indent).to_owned());
    }

    fn message_text(&self) -> String {
        let mut lines: Vec<&str> = self.message.iter().map(String::as_str).collect();
        // 1.14's lead-ins to the location list, and 1.18's to the snippet.
        while let Some(last) = lines.last() {
            let last = last.trim();
            if last.is_empty() || patterns().location_lead_in.is_match(last) {
                lines.pop();
            } else {
                break;
            }
        }
        lines.join("\n").trim().to_owned()
    }
}

/// A raised `** (Kind) ...` and the message lines that follow it, up to its stack frames.
struct Exception {
    kind: String,
    location: Option<Location>,
    message: Vec<String>,
    pending_blanks: usize,
    in_frames: bool,
    /// 1.16+ print the error as an indented `error:` block after the header line.
    expects_body: bool,
    body: Option<Block>,
    app_dir: Option<String>,
}

impl Exception {
    /// `rest` is what follows `** (Kind) `; `failed_file` comes from the preceding
    /// `== Compilation error in file ... ==` line, if any.
    fn parse(kind: &str, rest: &str, failed_file: Option<String>, app_dir: Option<String>) -> Self {
        let mut exception = Self {
            kind: kind.to_owned(),
            location: None,
            message: Vec::new(),
            pending_blanks: 0,
            in_frames: false,
            expects_body: false,
            body: None,
            app_dir,
        };
        let patterns = patterns();
        if let Some(caps) = patterns.found_on.captures(rest) {
            exception.expects_body = true;
            exception.location = parse_location(&caps[2]);
            exception.message.push(caps[1].to_owned());
        } else if let Some((location, message)) = split_location_prefix(rest) {
            exception.location = Some(location);
            exception.message.push(message);
        } else {
            exception.location = failed_file.map(|file| Location {
                file,
                line: None,
                column: None,
                function: None,
            });
            exception.message.push(rest.to_owned());
        }
        exception
    }

    fn already_logged(&self) -> bool {
        self.message
            .first()
            .is_some_and(|m| m.ends_with("(errors have been logged)"))
    }

    fn accept(&mut self, line: &str) -> Accept {
        if let Some(body) = &mut self.body {
            return match body.accept(line) {
                Accept::Taken => Accept::Taken,
                // The body's end is the exception's end; its stack frames follow.
                Accept::Done | Accept::DoneReprocess => {
                    self.in_frames = true;
                    self.accept_frame(line)
                }
            };
        }
        if self.expects_body {
            return self.start_body(line);
        }
        if self.in_frames {
            return self.accept_frame(line);
        }
        if line.trim().is_empty() {
            self.pending_blanks += 1;
            return Accept::Taken;
        }
        if is_block_boundary(line) || patterns().header.is_match(line) {
            return Accept::DoneReprocess;
        }
        if patterns().frame.is_match(line) {
            self.in_frames = true;
            return self.accept_frame(line);
        }
        // 1.14 draws some syntax errors with an ASCII snippet: not part of the message.
        if !patterns().ascii_snippet.is_match(line) && self.message.len() < MAX_MESSAGE_LINES {
            for _ in 0..std::mem::take(&mut self.pending_blanks) {
                self.message.push(String::new());
            }
            self.message.push(line.to_owned());
        }
        Accept::Taken
    }

    fn start_body(&mut self, line: &str) -> Accept {
        self.expects_body = false;
        let Some(caps) = patterns().header.captures(line) else {
            return self.accept(line);
        };
        let mut body = Block::new(
            Severity::Error,
            caps[1].len(),
            &caps[3],
            self.app_dir.clone(),
        );
        body.code = Some(self.kind.clone());
        body.fallback = self.location.clone();
        self.body = Some(body);
        Accept::Taken
    }

    /// Stack frames: the first one in the failing file gives a missing line number.
    fn accept_frame(&mut self, line: &str) -> Accept {
        if line.trim().is_empty() {
            return Accept::Done;
        }
        if !patterns().frame.is_match(line) {
            return Accept::DoneReprocess;
        }
        if let Some(location) = &mut self.location
            && location.line.is_none()
            && let Some(frame) = parse_location(line.trim_start())
            && frame.file == location.file
        {
            location.line = frame.line;
        }
        Accept::Taken
    }

    fn message_text(&self) -> String {
        self.message.join("\n").trim().to_owned()
    }
}

/// Lines that never continue a block or an exception message.
fn is_block_boundary(line: &str) -> bool {
    line.starts_with("** (")
        || line.starts_with("== Compilation error")
        || line.starts_with("==> ")
        || line.starts_with("Compilation failed")
        || line.starts_with("could not compile dependency")
        || patterns().compiling.is_match(line)
        || patterns().generated.is_match(line)
}

/// Exceptions that are compile errors even outside a `== Compilation error ... ==` section
/// (a test file loaded by `mix test`, a script).
fn is_compiler_exception(kind: &str) -> bool {
    matches!(
        kind,
        "CompileError" | "SyntaxError" | "TokenMissingError" | "MismatchedDelimiterError"
    )
}

/// `lib/b.ex:8:5: message` or `lib/b.ex: message` at the start of an exception message.
fn split_location_prefix(rest: &str) -> Option<(Location, String)> {
    let patterns = patterns();
    if let Some(caps) = patterns.location_prefix.captures(rest) {
        let location = location_parts(&caps, None);
        return Some((location, caps[4].to_owned()));
    }
    let caps = patterns.file_prefix.captures(rest)?;
    let location = Location {
        file: caps[1].to_owned(),
        line: None,
        column: None,
        function: None,
    };
    Some((location, caps[2].to_owned()))
}

/// `lib/a.ex:5:9: Mod.fun/1`, `lib/a.ex:19`, `nofile:2:3`, or a bare file.
fn parse_location(text: &str) -> Option<Location> {
    if let Some(caps) = patterns().location.captures(text) {
        return Some(location_parts(&caps, caps.get(4).map(|m| m.as_str())));
    }
    is_source_path(text).then(|| Location {
        file: text.to_owned(),
        line: None,
        column: None,
        function: None,
    })
}

fn location_from(text: &str) -> Location {
    parse_location(text).unwrap_or(Location {
        file: text.to_owned(),
        line: None,
        column: None,
        function: None,
    })
}

fn location_parts(caps: &Captures<'_>, function: Option<&str>) -> Location {
    Location {
        file: caps[1].to_owned(),
        line: caps[2].parse().ok(),
        column: caps.get(3).and_then(|c| c.as_str().parse().ok()),
        function: function.map(str::to_owned).filter(|f| !f.is_empty()),
    }
}

/// A file a compiler would name: `nofile`, or a path with an extension and no
/// `(app 1.0.0)` stack-frame prefix.
fn is_source_path(text: &str) -> bool {
    text == "nofile" || patterns().source_path.is_match(text)
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

fn clean_line(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    strip_ansi(line).trim_end().to_owned()
}

/// Where the umbrella apps and dependencies named by `==> name` lines live.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppDirs {
    /// App or dependency name → directory relative to the project root.
    dirs: HashMap<String, String>,
    dependencies: HashSet<String>,
}

impl AppDirs {
    pub(crate) fn discover(project_root: &Path) -> Self {
        let mut apps = Self::default();
        for (parent, is_dependency) in [("apps", false), ("deps", true)] {
            let Ok(entries) = std::fs::read_dir(project_root.join(parent)) else {
                continue;
            };
            for entry in entries.flatten() {
                if !entry.path().is_dir() {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if is_dependency {
                    apps.dependencies.insert(name.clone());
                }
                apps.dirs
                    .entry(name.clone())
                    .or_insert_with(|| format!("{parent}/{name}"));
            }
        }
        apps
    }

    pub(crate) fn dir(&self, name: &str) -> Option<&str> {
        self.dirs.get(name).map(String::as_str)
    }

    fn is_dependency(&self, name: &str) -> bool {
        self.dependencies.contains(name)
    }
}

/// The dependencies mix refuses to go on without, from the output of any mix command:
/// `Unchecked dependencies for environment dev:` entries that are not available or ask
/// for `mix deps.get`, and Hex packages that cannot be fetched because Hex itself is
/// missing. `None` when the output shows no such problem.
pub(crate) fn missing_deps(output: &str) -> Option<Vec<String>> {
    let patterns = patterns();
    let mut names: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in output.lines().map(clean_line) {
        if let Some(caps) = patterns.unchecked_dep.captures(&line) {
            current = Some(caps[1].to_owned());
        } else if let Some(caps) = patterns.hex_dep.captures(&line) {
            add_unique(&mut names, &caps[1]);
        } else if line.starts_with("  ")
            && (line.contains("is not available") || line.contains("mix deps.get"))
            && let Some(name) = current.take()
        {
            add_unique(&mut names, &name);
        }
    }
    (!names.is_empty()).then_some(names)
}

/// Whether mix stopped because Hex is not installed (`mix local.hex` fixes that, not `mix deps.get`).
pub(crate) fn hex_missing(output: &str) -> bool {
    output.contains("Could not find Hex, which is needed to build dependency")
}

fn add_unique(names: &mut Vec<String>, name: &str) {
    if !names.iter().any(|n| n == name) {
        names.push(name.to_owned());
    }
}

struct Patterns {
    header: Regex,
    exception: Regex,
    compilation_error: Regex,
    project: Regex,
    compiling: Regex,
    generated: Regex,
    tree_location: Regex,
    location: Regex,
    location_prefix: Regex,
    file_prefix: Regex,
    found_on: Regex,
    source_path: Regex,
    snippet: Regex,
    ascii_snippet: Regex,
    frame: Regex,
    location_lead_in: Regex,
    unchecked_dep: Regex,
    hex_dep: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let re = |pattern: &str| Regex::new(pattern).expect("valid regex");
        // A path: no `(app 1.0.0) ` frame prefix, ends in an extension.
        let path = r"[^\s(][^:]*?\.[a-z]{1,6}|nofile|[A-Za-z]:[/\\][^:]*?\.[a-z]{1,6}";
        Patterns {
            header: re(r"^(\s*)(warning|error): (.*)$"),
            exception: re(r"^\*\* \(([\w.]+)\) (.*)$"),
            compilation_error: re(r"^== Compilation error in file (.+) ==$"),
            project: re(r"^==> (\S+)(?: \(.*\))?$"),
            compiling: re(r"^Compiling (\d+) files? \((.+)\)$"),
            generated: re(r"^Generated (\S+) app$"),
            tree_location: re(r"^\s*└─ (.+)$"),
            location: re(&format!(r"^({path}):(\d+)(?::(\d+))?(?:: (.*))?$")),
            location_prefix: re(&format!(r"^({path}):(\d+)(?::(\d+))?: (.*)$")),
            file_prefix: re(&format!(r"^({path}): (.*)$")),
            found_on: re(&format!(r"^(.*?) (?:found )?on ((?:{path}):\d+(?::\d+)?):$")),
            source_path: re(&format!(r"^(?:{path})$")),
            snippet: re(r"^\s*(?:\d+\s*)?│|^\s*\.\.\.$"),
            ascii_snippet: re(r"^\s*(?:\d+\s*)?\|(?: |$)"),
            frame: re(&format!(
                r"^\s+(?:\([\w.-]+ [^)]*\) |(?:{path}):\d+: |:\w+\.\w|expanding macro: )"
            )),
            location_lead_in: re(
                r"^(?:Invalid call found at \d+ locations:|Conflict found at|typing violation found at:)$",
            ),
            unchecked_dep: re(r"^\* (\S+) \("),
            hex_dep: re(
                r"^(?:Could not find Hex, which is needed to build dependency|\*\* \(Mix\) Could not find an SCM for dependency) :(\w+)",
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::recorded;
    use std::path::PathBuf;

    /// Elixir 1.14 prints paths relative to the project: any root will do.
    fn root() -> &'static Path {
        Path::new("/p")
    }

    fn umbrella_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("test-projects/mix-umbrella")
    }

    /// Feeds a recorded run the way the tests of the cargo parsers do: stdout, then stderr.
    fn parse_at(
        root: &Path,
        (stdout, stderr): (impl AsRef<str>, impl AsRef<str>),
    ) -> Vec<Diagnostic> {
        let mut parser = MixDiagnosticParser::new(root);
        parser.feed(Stream::Stdout, stdout.as_ref());
        parser.feed(Stream::Stderr, stderr.as_ref());
        parser.finish()
    }

    fn parse(output: (impl AsRef<str>, impl AsRef<str>)) -> Vec<Diagnostic> {
        parse_at(root(), output)
    }

    /// The parallel compiler prints warnings in a different order in each run.
    fn sorted(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diagnostics
            .sort_by(|a, b| (&a.file, a.line, &a.message).cmp(&(&b.file, b.line, &b.message)));
        diagnostics
    }

    fn warning(file: &str, line: u32, message: &str, function: Option<&str>) -> Diagnostic {
        Diagnostic {
            file: Some(file.into()),
            line: Some(line),
            column: None,
            end_line: None,
            end_column: None,
            severity: Severity::Warning,
            code: None,
            message: message.into(),
            label: None,
            notes: function.map(|f| format!("in {f}")).into_iter().collect(),
            suggestions: Vec::new(),
            rendered: None,
        }
    }

    fn error(file: &str, line: u32, code: &str, message: &str) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code: Some(code.into()),
            ..warning(file, line, message, None)
        }
    }

    fn at_column(diagnostic: Diagnostic, column: u32) -> Diagnostic {
        Diagnostic {
            column: Some(column),
            ..diagnostic
        }
    }

    const UNUSED: &str =
        "is unused (if the variable is not meant to be used, prefix it with an underscore)";

    #[test]
    fn elixir_1_14_compile_error_and_the_warnings_before_it() {
        let diagnostics = parse(recorded::mix("compile-errors").streams());
        assert_eq!(
            sorted(diagnostics),
            [
                warning("lib/mix_errors.ex", 4, "unused alias Report", None),
                warning(
                    "lib/mix_errors.ex",
                    7,
                    &format!("variable \"count\" {UNUSED}"),
                    Some("MixErrors.total/1")
                ),
                warning("lib/mix_errors/format.ex", 4, "unused import String", None),
                warning(
                    "lib/mix_errors/format.ex",
                    6,
                    &format!("variable \"width\" {UNUSED}"),
                    Some("MixErrors.Format.title/2")
                ),
                warning(
                    "lib/mix_errors/report.ex",
                    10,
                    &format!("variable \"unused_width\" {UNUSED}"),
                    Some("MixErrors.Report.header/1")
                ),
                error(
                    "lib/mix_errors/report.ex",
                    16,
                    "CompileError",
                    "undefined function format_row/1 (expected MixErrors.Report to define such a function or for it to be imported, but none are available)"
                ),
            ]
        );
    }

    const DEFAULTS_WARNING: &str = "def label/2 has multiple clauses and also declares default values. In such cases, the default values should be defined in a header. Instead of:

    def foo(:first_clause, b \\\\ :default) do ... end
    def foo(:second_clause, b) do ... end

one should write:

    def foo(a, b \\\\ :default)
    def foo(:first_clause, b) do ... end
    def foo(:second_clause, b) do ... end";

    const TYPES_WARNING: &str = "incompatible types:

    binary() !~ integer()

in expression:

    # lib/mix_warnings.ex:20
    is_integer(value)

where \"value\" was given the type binary() in:

    # lib/mix_warnings.ex:20
    is_binary(value)

where \"value\" was given the type integer() in:

    # lib/mix_warnings.ex:20
    is_integer(value)";

    const MISSING_LOAD: &str = "MixWarnings.Missing.load/0 is undefined (module MixWarnings.Missing is not available or is yet to be defined)";

    fn mix_warnings_diagnostics() -> Vec<Diagnostic> {
        vec![
            warning("lib/mix_warnings.ex", 4, "unused alias Storage", None),
            warning(
                "lib/mix_warnings.ex",
                6,
                "module attribute @retries was set but never used",
                None,
            ),
            warning(
                "lib/mix_warnings.ex",
                8,
                &format!("variable \"opts\" {UNUSED}"),
                Some("MixWarnings.fetch/2"),
            ),
            warning(
                "lib/mix_warnings.ex",
                13,
                "MixWarnings.Cache.put/2 is undefined or private",
                Some("MixWarnings.store/2"),
            ),
            warning(
                "lib/mix_warnings.ex",
                17,
                "MixWarnings.Cache.lookup/2 is undefined or private. Did you mean:\n\n      * lookup/1",
                Some("MixWarnings.peek/1"),
            ),
            warning(
                "lib/mix_warnings.ex",
                20,
                TYPES_WARNING,
                Some("MixWarnings.check/1"),
            ),
            warning("lib/mix_warnings.ex", 27, DEFAULTS_WARNING, None),
            warning(
                "lib/mix_warnings/cache.ex",
                7,
                MISSING_LOAD,
                Some("MixWarnings.Cache.warm/0"),
            ),
            warning(
                "lib/mix_warnings/cache.ex",
                11,
                MISSING_LOAD,
                Some("MixWarnings.Cache.refresh/0"),
            ),
        ]
    }

    #[test]
    fn elixir_1_14_multi_line_warnings_and_one_diagnostic_per_location() {
        let diagnostics = parse(recorded::mix("compile-warnings").streams());
        assert_eq!(sorted(diagnostics), mix_warnings_diagnostics());
    }

    #[test]
    fn elixir_1_14_colours_and_warnings_as_errors_change_nothing() {
        assert_eq!(
            sorted(parse(recorded::mix("compile-warnings-color").streams())),
            mix_warnings_diagnostics()
        );
        assert_eq!(
            sorted(parse(recorded::mix("compile-warnings-as-errors").streams())),
            mix_warnings_diagnostics()
        );
    }

    #[test]
    fn elixir_1_14_test_file_that_does_not_compile() {
        let diagnostics = sorted(parse(recorded::mix("test-compile-error").streams()));
        let mut expected = mix_warnings_diagnostics();
        expected.push(error(
            "test/broken_test.exs",
            5,
            "CompileError",
            "undefined function build_fixture/1 (expected MixWarnings.BrokenTest to define such a function or for it to be imported, but none are available)",
        ));
        assert_eq!(diagnostics, expected);
    }

    #[test]
    fn elixir_1_14_non_ascii_path_with_spaces() {
        assert_eq!(
            parse(recorded::mix("compile-odd-path").streams()),
            [warning(
                "lib/módulo con espacio.ex",
                4,
                &format!("variable \"año_sin_uso\" {UNUSED}"),
                Some("OddPaths.Modulo.saludo/2")
            )]
        );
    }

    #[test]
    fn elixir_1_14_multi_line_syntax_error_without_its_stack_frame() {
        let message = "unexpected reserved word: do. In case you wanted to write a \"do\" expression, you must either use do-blocks or separate the keyword argument with comma. For example, you should either write:

    if some_condition? do
      :this
    else
      :that
    end

or the equivalent construct:

    if(some_condition?, do: :this, else: :that)

where \"some_condition?\" is the first argument and the second argument is a keyword list.

You may see this error if you forget a trailing comma before the \"do\" in a \"do\" block";
        assert_eq!(
            parse(recorded::mix("compile-syntax-error").streams()),
            [at_column(
                error("lib/mix_clean/broken.ex", 3, "SyntaxError", message),
                11
            )]
        );
    }

    #[test]
    fn elixir_1_14_token_missing_and_ascii_snippet() {
        assert_eq!(
            parse(recorded::mix("compile-token-missing").streams()),
            [at_column(
                error(
                    "lib/mix_clean/broken.ex",
                    5,
                    "TokenMissingError",
                    "missing terminator: end (for \"do\" starting at line 1)"
                ),
                1
            )]
        );
        assert_eq!(
            parse(recorded::mix("compile-syntax-snippet").streams()),
            [at_column(
                error(
                    "lib/módulo roto.ex",
                    1,
                    "SyntaxError",
                    "invalid character \"ó\" (code point U+00F3) in alias (only ASCII characters, without punctuation, are allowed): Módulo"
                ),
                20
            )]
        );
    }

    #[test]
    fn elixir_1_14_exception_while_compiling_takes_its_line_from_the_stack() {
        assert_eq!(
            parse(recorded::mix("compile-raise-in-body").streams()),
            [error(
                "lib/mix_clean/config.ex",
                2,
                "ArgumentError",
                "errors were found at the given arguments:\n\n  * 1st argument: not a textual representation of an integer"
            )]
        );
    }

    #[test]
    fn elixir_1_14_umbrella_paths_are_relative_to_the_app() {
        let diagnostics = parse_at(
            &umbrella_root(),
            recorded::mix("compile-umbrella-broken").streams(),
        );
        assert_eq!(
            diagnostics,
            [
                warning(
                    "apps/web/lib/web/broken.ex",
                    2,
                    &format!("variable \"arg\" {UNUSED}"),
                    Some("Web.Broken.unused/1")
                ),
                error(
                    "apps/web/lib/web/broken.ex",
                    4,
                    "CompileError",
                    "undefined function nope/0 (expected Web.Broken to define such a function or for it to be imported, but none are available)"
                ),
            ]
        );
    }

    #[test]
    fn elixir_1_14_clean_builds_and_dependency_errors_have_no_diagnostics() {
        assert_eq!(parse(recorded::mix("compile-clean").streams()), []);
        assert_eq!(
            parse_at(
                &umbrella_root(),
                recorded::mix("compile-umbrella").streams()
            ),
            []
        );
        assert_eq!(parse(recorded::mix("compile-missing-deps").streams()), []);
        assert_eq!(parse(recorded::mix("compile-missing-hex").streams()), []);
        assert_eq!(
            parse(recorded::mix("format-check-unformatted").streams()),
            []
        );
    }

    #[test]
    fn elixir_1_14_progress_events() {
        let mut parser = MixDiagnosticParser::new(&umbrella_root());
        let events: Vec<MixEvent> = recorded::mix("compile-umbrella")
            .streams()
            .0
            .lines()
            .filter_map(|line| parser.line(Stream::Stdout, line))
            .collect();
        let project = |name: &str| MixEvent::Project { name: name.into() };
        let compiling = MixEvent::Compiling {
            files: 1,
            kind: ".ex".into(),
        };
        let generated = |app: &str| MixEvent::Generated { app: app.into() };
        assert_eq!(
            events,
            [
                project("core"),
                compiling.clone(),
                generated("core"),
                project("web"),
                compiling,
                generated("web"),
            ]
        );
    }

    #[test]
    fn elixir_1_14_missing_dependencies() {
        let (_, stderr) = recorded::mix("compile-missing-deps").streams();
        assert_eq!(
            missing_deps(&stderr),
            Some(vec!["jason".into(), "shared".into()])
        );
        assert!(!hex_missing(&stderr));
        let (_, stderr) = recorded::mix("test-missing-deps").streams();
        assert_eq!(
            missing_deps(&stderr),
            Some(vec!["jason".into(), "shared".into()])
        );
        let (stdout, stderr) = recorded::mix("compile-missing-hex").streams();
        assert_eq!(
            missing_deps(&format!("{stdout}\n{stderr}")),
            Some(vec!["jason".into()])
        );
        assert!(hex_missing(&stdout));
        let (stdout, stderr) = recorded::mix("compile-errors").streams();
        assert_eq!(missing_deps(&stdout), None);
        assert_eq!(missing_deps(&stderr), None);
    }

    fn parse_text(root: &Path, text: &str) -> Vec<Diagnostic> {
        parse_at(root, (text, ""))
    }

    #[test]
    fn elixir_1_15_logged_errors_are_not_repeated_by_cannot_compile_module() {
        assert_eq!(
            parse_text(
                root(),
                &recorded::newer_mix("elixir-1.15-compile-error.txt")
            ),
            [
                error(
                    "lib/theme_scanner/http.ex",
                    12,
                    "CompileError",
                    "undefined variable \"url\""
                )
                .with_note("in ThemeScanner.Http.download_theme_assets/2"),
                warning(
                    "lib/theme_scanner/http.ex",
                    99,
                    &format!("variable \"tag\" {UNUSED}"),
                    Some("ThemeScanner.Http.do_collect_subresources/2")
                ),
            ]
        );
    }

    #[test]
    fn elixir_1_15_cannot_compile_module_stands_in_for_errors_not_seen() {
        let text = "== Compilation error in file lib/x.ex ==\n\
                    ** (CompileError) lib/x.ex: cannot compile module X (errors have been logged)\n";
        let mut expected = error(
            "lib/x.ex",
            0,
            "CompileError",
            "cannot compile module X (errors have been logged)",
        );
        expected.line = None;
        assert_eq!(parse_text(root(), text), [expected]);
    }

    #[test]
    fn elixir_1_16_warning_with_snippet_and_column() {
        assert_eq!(
            parse_text(root(), &recorded::newer_mix("elixir-1.16-warning.txt")),
            [at_column(
                warning(
                    "lib/sbom.ex",
                    21,
                    "Mix.Dep.load_on_environment/1 is undefined or private",
                    Some("SBoM.components_for_project/1")
                ),
                15
            )]
        );
    }

    #[test]
    fn elixir_1_16_warnings_located_by_stack_frames_have_no_file() {
        let diagnostics = parse_text(
            root(),
            &recorded::newer_mix("elixir-1.16-warning-stacktrace.txt"),
        );
        let messages: Vec<(&Option<String>, &str)> = diagnostics
            .iter()
            .map(|d| (&d.file, d.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            [
                (
                    &None,
                    "in order to compile .yrl files, you must add \"compilers: [:yecc] ++ Mix.compilers()\" to the \"def project\" section of erlex's mix.exs"
                ),
                (
                    &None,
                    "in order to compile .xrl files, you must add \"compilers: [:leex] ++ Mix.compilers()\" to the \"def project\" section of erlex's mix.exs"
                ),
            ]
        );
    }

    #[test]
    fn elixir_1_17_logged_error_with_span() {
        assert_eq!(
            parse_text(root(), &recorded::newer_mix("elixir-1.17-compile-error.txt")),
            [at_column(
                error(
                    "lib/getting_started_ml/chapter01.ex",
                    47,
                    "CompileError",
                    "undefined function predict_by_rule/1 (expected GettingStartedMl.Chapter01 to define such a function or for it to be imported, but none are available)"
                ),
                32
            )
            .with_note("in GettingStartedMl.Chapter01.run/0")]
        );
    }

    #[test]
    fn elixir_1_18_type_warnings_keep_their_traces_but_not_the_lead_in() {
        let diagnostics = parse_text(
            root(),
            &recorded::newer_mix("elixir-1.18-type-warnings.txt"),
        );
        let incompatible = "incompatible types given to User.drive/2:

    User.drive({:ok, %User{age: nil, car_choice: nil}}, car_choices)

given types:

    {:ok, %User{age: nil, car_choice: nil}}, empty_list()

but expected one of:

    dynamic(%User{age: term(), car_choice: term()}), dynamic()

where \"car_choices\" was given the type:

    # type: empty_list()
    # from: lib/foo.ex:21:17
    car_choices = []";
        let never = "the following clause will never match:

    :error

because it attempts to match on the result of:

    User.drive(user, car_choices)

which has type:

    dynamic({:ok, term()} or {:error, :no_choice} or {:error, :not_allowed})";
        assert_eq!(
            diagnostics,
            [
                at_column(
                    warning("lib/foo.ex", 22, incompatible, Some("Example.run/0")),
                    10
                ),
                warning("lib/foo.ex", 26, never, Some("Example.run/0")),
            ]
        );
    }

    #[test]
    fn elixir_1_19_three_digit_gutter_and_compile_headers() {
        assert_eq!(
            parse_text(root(), &recorded::newer_mix("elixir-1.19-warning.txt")),
            [at_column(
                warning(
                    "lib/regex.ex",
                    601,
                    ":re.import/1 is undefined or private",
                    Some("Regex.maybe_import_pattern/1")
                ),
                13
            )]
        );
    }

    #[test]
    fn elixir_main_warning_groups_and_multi_line_messages() {
        let unknown =
            "Unknown.bar/0 is undefined (module Unknown is not available or is yet to be defined)";
        let group = |line| {
            at_column(
                warning("lib/sample.ex", line, unknown, Some("Sample.a/0")),
                13,
            )
        };
        let mut unused_alias = at_column(warning("nofile", 2, "unused alias List", None), 3);
        unused_alias.file = None;
        let no_file = |line| Diagnostic {
            file: None,
            ..group(line)
        };
        assert_eq!(
            parse_text(root(), &recorded::newer_mix("main-warnings.txt")),
            [
                group(5),
                group(6),
                group(7),
                group(8),
                at_column(
                    warning(
                        "lib/sample.ex",
                        4,
                        &format!("variable \"unused_param\" {UNUSED}"),
                        Some("Sample.foo/1")
                    ),
                    11
                ),
                at_column(
                    warning(
                        "lib/sample.ex",
                        5,
                        "Unknown.bar/1 is undefined (module Unknown is not available or is yet to be defined)",
                        Some("Sample.a/0")
                    ),
                    53
                ),
                at_column(warning("lib/sample.ex", 1, "oops\nmulti\nline", None), 4),
                unused_alias,
                no_file(3),
                no_file(4),
            ]
        );
    }

    #[test]
    fn elixir_main_logged_errors_then_cannot_compile_module() {
        assert_eq!(
            parse_text(root(), &recorded::newer_mix("main-errors.txt")),
            [
                at_column(
                    error(
                        "lib/sample.ex",
                        5,
                        "CompileError",
                        "undefined variable \"unknown_var\""
                    ),
                    9
                )
                .with_note("in Sample.foo/1"),
                error(
                    "lib/sample.ex",
                    3,
                    "CompileError",
                    "function names should start with lowercase characters or underscore, invalid name CamelCase"
                ),
            ]
        );
    }

    #[test]
    fn elixir_main_syntax_errors_with_snippets() {
        let cases = [
            (
                &recorded::newer_mix("main-syntax-error.txt"),
                "SyntaxError",
                1,
                17,
                "syntax error before: '*'",
            ),
            (
                &recorded::newer_mix("main-token-missing.txt"),
                "TokenMissingError",
                1,
                4,
                "syntax error: expression is incomplete",
            ),
            (
                &recorded::newer_mix("main-mismatched-delimiter.txt"),
                "MismatchedDelimiterError",
                2,
                9,
                "unexpected token: }",
            ),
        ];
        for (text, code, line, column, message) in cases {
            assert_eq!(
                parse_text(root(), text),
                [at_column(
                    error("lib/sample.ex", line, code, message),
                    column
                )],
                "{code}"
            );
        }
    }

    #[test]
    fn absolute_paths_are_mapped_like_cargo_paths() {
        let text = "warning: unused alias B\n  /home/u/app/lib/a.ex:2\n\n\
                    warning: deprecated\n  /home/u/.hex/dep/lib/d.ex:9: Dep.f/0\n\n";
        let diagnostics = parse_text(Path::new("/home/u/app"), text);
        let files: Vec<_> = diagnostics.iter().map(|d| d.file.as_deref()).collect();
        assert_eq!(files, [Some("lib/a.ex"), Some("/home/u/.hex/dep/lib/d.ex")]);
    }

    #[test]
    fn a_warning_on_stderr_is_not_cut_by_stdout_lines() {
        let mut parser = MixDiagnosticParser::new(root());
        parser.line(Stream::Stderr, "warning: variable \"x\" is unused");
        assert_eq!(
            parser.line(Stream::Stdout, "Compiling 2 files (.ex)\r\n"),
            Some(MixEvent::Compiling {
                files: 2,
                kind: ".ex".into()
            })
        );
        parser.line(Stream::Stderr, "  lib/a.ex:3: A.f/1");
        parser.line(Stream::Stderr, "");
        assert_eq!(
            parser.finish(),
            [warning(
                "lib/a.ex",
                3,
                "variable \"x\" is unused",
                Some("A.f/1")
            )]
        );
    }

    #[test]
    fn repeated_warnings_are_reported_once() {
        let block = "warning: unused alias B\n  lib/a.ex:2\n\n";
        assert_eq!(
            parse_text(root(), &block.repeat(3)),
            [warning("lib/a.ex", 2, "unused alias B", None)]
        );
    }

    #[test]
    fn garbage_and_truncated_output_never_panic() {
        let samples = [
            recorded::mix("compile-errors").stdout(),
            recorded::mix("compile-warnings").stderr(),
            recorded::mix("compile-syntax-error").stdout(),
            recorded::mix("compile-raise-in-body").stdout(),
            recorded::newer_mix("main-warnings.txt"),
            recorded::newer_mix("main-token-missing.txt"),
            recorded::newer_mix("elixir-1.17-compile-error.txt"),
        ];
        for sample in samples {
            let lines: Vec<&str> = sample.lines().collect();
            for end in 0..=lines.len() {
                parse_text(root(), &lines[..end].join("\n"));
                parse_at(root(), ("", &lines[..end].join("\n")));
            }
        }
        let garbage = "** (\n** (CompileError)\n** (SyntaxError) on :1:\n== Compilation error in file  ==\n\
                       └─\n└─ :::\n    │\nwarning:\nerror: \n  :0:\n==> \n\u{0}\u{1b}[31m\u{1b}[\n\
                       ** (X) lib/a.ex:99999999999999999999: big\nwarning: x\n  lib/a.ex:4294967296\n";
        let diagnostics = parse_text(root(), garbage);
        assert!(diagnostics.len() < 20, "{diagnostics:?}");
        let bytes: String = (0u8..=255).map(char::from).collect();
        parse_text(root(), &bytes);
        assert_eq!(missing_deps(&bytes), None);
    }

    impl Diagnostic {
        fn with_note(mut self, note: &str) -> Self {
            self.notes.push(note.into());
            self
        }
    }
}
