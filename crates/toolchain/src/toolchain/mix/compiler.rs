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
pub enum MixEvent {
    /// `Compiling 3 files (.ex)`.
    Compiling { files: u32, kind: String },
    /// `Generated my_app app`.
    Generated { app: String },
    /// `==> name`: the umbrella app or dependency the next lines belong to.
    Project { name: String },
}

/// Turns mix's output, fed line by line as it arrives, into diagnostics.
pub struct MixDiagnosticParser {
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
    pub fn new(project_root: &Path) -> Self {
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
pub struct AppDirs {
    /// App or dependency name → directory relative to the project root.
    dirs: HashMap<String, String>,
    dependencies: HashSet<String>,
}

impl AppDirs {
    pub fn discover(project_root: &Path) -> Self {
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

    pub fn dir(&self, name: &str) -> Option<&str> {
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
pub fn missing_deps(output: &str) -> Option<Vec<String>> {
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
pub fn hex_missing(output: &str) -> bool {
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
mod tests;
