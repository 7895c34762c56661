//! What the terminal tools take and return.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::{RENDER_BUDGET, elision_marker};
use super::core::{RunOutcome, WaitOutcome};
use crate::render::Render;
use crate::text_budget::fit;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// drydock's own pseudo-terminal: ends with the server.
    #[default]
    Pty,
    /// A session on drydock's tmux server: survives a restart, `tmux -L drydock attach` to watch.
    Tmux,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    /// A name to address the session by (letters, digits, `-`, `_`, `.`); default t1, t2, ...
    #[serde(default)]
    pub name: Option<String>,
    /// A command to send to the session's shell once it starts (the shell stays, so its
    /// output remains readable after it exits).
    #[serde(default)]
    pub command: Option<String>,
    /// Working directory (absolute, `~/...`, or relative to the first allowed root); must
    /// lie inside an allowed root.
    pub cwd: String,
    #[serde(default)]
    pub rows: Option<u16>,
    #[serde(default)]
    pub cols: Option<u16>,
    /// Extra environment variables, e.g. {"RUST_LOG": "debug"}.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub backend: Option<BackendKind>,
    /// tmux: open the session as a new window, or a split pane, of an existing tmux
    /// session (drydock's, or one of the user's panes `tmux:SESSION:WINDOW.PANE`) instead
    /// of a tmux session of its own. Implies backend tmux.
    #[serde(default)]
    pub place: Option<Placement>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Placement {
    /// A new window in the tmux session that holds `of`.
    Window { of: String },
    /// `of`'s pane split in two: `vertical` puts the new pane below, else to the right.
    Split {
        of: String,
        #[serde(default)]
        vertical: bool,
    },
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    /// Only this session (a name, or `tmux:SESSION:WINDOW.PANE`).
    #[serde(default)]
    pub session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManageAction {
    /// End the session and every process in it.
    Kill,
    /// Give the session `new_name`.
    Rename,
    /// Change the terminal size to `rows` x `cols`.
    Resize,
    /// Send Ctrl-C (as a key).
    Interrupt,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManageRequest {
    pub session: String,
    pub action: ManageAction,
    #[serde(default)]
    pub new_name: Option<String>,
    #[serde(default)]
    pub rows: Option<u16>,
    #[serde(default)]
    pub cols: Option<u16>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextEncoding {
    /// `text` is sent as it is.
    #[default]
    Utf8,
    /// `text` is hexadecimal bytes, e.g. "1b5b41" (for raw escape sequences).
    Hex,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    pub session: String,
    /// Text typed into the terminal (literally: "C-c" in text is three characters).
    #[serde(default)]
    pub text: Option<String>,
    /// Keys pressed after the text, e.g. ["Enter"], ["C-c"], ["Escape", ":", "q"]. Names:
    /// Enter, Tab, Escape, BSpace, Up, Down, Left, Right, Home, End, PageUp, PageDown,
    /// Delete, Insert, Space, F1-F12, C-a..C-z, M-x.
    #[serde(default)]
    pub keys: Vec<String>,
    #[serde(default)]
    pub encoding: TextEncoding,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenFormat {
    /// Plain text, trailing spaces trimmed.
    #[default]
    Text,
    /// With ANSI colours and styles.
    Styled,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenRequest {
    pub session: String,
    #[serde(default)]
    pub format: ScreenFormat,
    /// Only the last N lines of the screen.
    #[serde(default)]
    pub lines: Option<usize>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrollbackRequest {
    pub session: String,
    /// First line: lines are numbered from the first line the session showed (0), and keep
    /// their number when older ones leave the scrollback (a line before the oldest kept reads
    /// from the oldest). Negative counts back from the newest: -100 is the last 100 lines.
    /// Default 0.
    #[serde(default)]
    pub offset: Option<i64>,
    /// Lines at most (default 200, at most 10000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only `text`: scrollback is kept as plain text.
    #[serde(default)]
    pub format: ScreenFormat,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitRequestArgs {
    pub session: String,
    /// Return after this long without output.
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    /// Return when the screen matches this regex (e.g. "\\$ $" or ">>> $").
    #[serde(default)]
    pub pattern: Option<String>,
    /// Return on the first change after this generation (from an earlier result), so no
    /// change is missed between calls.
    #[serde(default)]
    pub after_generation: Option<u64>,
    /// Give up after this long (default 30000).
    #[serde(default)]
    pub max_wait_ms: Option<u64>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    pub session: String,
    /// A command line for the session's shell.
    pub command: String,
    /// Default 30000. At timeout the command keeps running: what it printed so far comes
    /// back with completed=false.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Without shell-integration marks (a REPL, a pane drydock did not start): the command
    /// is done after this long without output (default 1000)...
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    /// ...or when its output matches this regex (e.g. ">>> $").
    #[serde(default)]
    pub pattern: Option<String>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

/// One session, as terminal_list shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionInfo {
    /// The name tools address it by (`tmux:SESSION:WINDOW.PANE` for the user's panes).
    pub name: String,
    /// pty, tmux, or user_tmux (a pane of the user's own tmux server).
    pub backend: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The program running in it (tmux panes) or the command it was created with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub rows: u16,
    pub cols: u16,
    pub alive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether its shell reports command boundaries (terminal_run knows exactly when a
    /// command is done); false for REPLs and panes drydock did not start.
    pub marks: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// For tmux sessions: how to watch it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Environment {
    /// Whether drydock itself runs inside tmux.
    pub inside_tmux: bool,
    /// e.g. "3.3a"; absent when tmux is not installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_version: Option<String>,
    /// The shell new sessions start.
    pub shell: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListReport {
    pub environment: Environment,
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScreenReport {
    pub session: String,
    pub text: String,
    pub rows: u16,
    pub cols: u16,
    pub cursor_row: u16,
    pub cursor_col: u16,
    /// Pass to terminal_wait as after_generation to wait for the next change.
    pub generation: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// A full-screen program (vim, less, a TUI) is showing.
    pub alternate_screen: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScrollbackReport {
    pub session: String,
    /// The lines from `offset` on. When they did not all fit the result, the ones from the
    /// head and from the tail, and `elided` says which are left out between them.
    pub lines: Vec<String>,
    /// The number of the first line (0 is the first line the session showed).
    pub offset: u64,
    /// The oldest line still kept: lines before it have left the scrollback.
    pub oldest: u64,
    /// Lines shown so far: the newest is `total - 1`.
    pub total: u64,
    /// Lines left out of `lines` to fit the result: read them with their `offset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elided: Option<ElidedLines>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ElidedLines {
    /// The number of the first line left out.
    pub offset: u64,
    pub lines: usize,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SendReport {
    pub session: String,
    pub bytes: usize,
    /// Whether the screen changed after the keys were sent.
    pub screen_changed: bool,
    /// Times a key was sent again because the screen did not react (bounded).
    pub retries: u32,
    pub generation: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WaitReport {
    pub session: String,
    #[serde(flatten)]
    pub outcome: WaitOutcome,
    /// The last lines of the screen when the wait ended.
    pub screen_tail: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunReport {
    pub session: String,
    #[serde(flatten)]
    pub outcome: RunOutcome,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ManageReport {
    pub session: String,
    pub done: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CreateReport {
    #[serde(flatten)]
    pub session: SessionInfo,
    /// The screen once the shell was ready.
    pub screen: String,
}

impl Render for CreateReport {
    fn render(&self) -> String {
        let s = &self.session;
        let attach = s
            .attach
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        format!(
            "session {} ({}, {}x{}){attach}\n{}",
            s.name, s.backend, s.rows, s.cols, self.screen
        )
    }
}

impl Render for ListReport {
    fn render(&self) -> String {
        let env = &self.environment;
        let mut out = format!(
            "shell {}; tmux {}; {}inside tmux",
            env.shell,
            env.tmux_version.as_deref().unwrap_or("not installed"),
            if env.inside_tmux { "" } else { "not " }
        );
        for s in &self.sessions {
            let _ = write!(
                out,
                "\n{} [{}] {}x{} {}{}",
                s.name,
                s.backend,
                s.rows,
                s.cols,
                s.command.as_deref().unwrap_or(""),
                if s.alive { "" } else { " (exited)" }
            );
        }
        out
    }
}

impl Render for ManageReport {
    fn render(&self) -> String {
        format!("{}: {}", self.session, self.done)
    }
}

impl Render for SendReport {
    fn render(&self) -> String {
        format!(
            "sent {} bytes to {}; screen {}changed{}",
            self.bytes,
            self.session,
            if self.screen_changed { "" } else { "not " },
            if self.retries > 0 {
                format!(" (Enter resent {} time(s))", self.retries)
            } else {
                String::new()
            }
        )
    }
}

impl Render for ScreenReport {
    fn render(&self) -> String {
        fit(&self.text, RENDER_BUDGET, "the text field has the screen")
    }
}

impl Render for ScrollbackReport {
    fn render(&self) -> String {
        let mut lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let marker = self.elided.map(|elided| {
            let at = usize::try_from(elided.offset - self.offset).unwrap_or(lines.len());
            (
                at,
                elision_marker(elided.bytes, elided.lines, elided.offset),
            )
        });
        if let Some((at, marker)) = &marker {
            lines.insert((*at).min(lines.len()), marker);
        }
        fit(&lines.join("\n"), RENDER_BUDGET, "the lines field has them")
    }
}

impl Render for WaitReport {
    fn render(&self) -> String {
        let o = &self.outcome;
        format!(
            "{} by {:?} at generation {}\n{}",
            if o.completed { "done" } else { "timed out" },
            o.method,
            o.generation,
            fit(&self.screen_tail, RENDER_BUDGET, "screen_tail has it")
        )
    }
}

impl Render for RunReport {
    fn render(&self) -> String {
        let o = &self.outcome;
        let exit = o
            .exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default();
        let state = if o.completed {
            "done"
        } else {
            "still running at timeout"
        };
        format!(
            "{state} in {} ms{exit} ({:?})\n{}",
            o.duration_ms,
            o.method,
            fit(&o.output, RENDER_BUDGET, "the output field has more of it")
        )
    }
}
