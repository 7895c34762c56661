//! What the terminal tools take.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounded::{Bounded, JSON_SAFE_MAX, SignedBounded};
use crate::config::{TERMINAL_OUTPUT_CAP_MAX, TERMINAL_OUTPUT_CAP_MIN};

/// A terminal's height in rows.
pub type Rows = Bounded<2, 500>;
/// A terminal's width in columns.
pub type Cols = Bounded<10, 1000>;
/// How long a call waits at most, in milliseconds (0: not at all): an hour at most.
pub type WaitMs = Bounded<0, 3_600_000>;
/// The bytes of JSON a result's output may take.
pub type OutputBytes =
    Bounded<{ TERMINAL_OUTPUT_CAP_MIN as u64 }, { TERMINAL_OUTPUT_CAP_MAX as u64 }>;

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
    /// Height (default 40, 2-500).
    #[serde(default)]
    pub rows: Option<Rows>,
    /// Width (default 120, 10-1000).
    #[serde(default)]
    pub cols: Option<Cols>,
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
    /// For resize: the height (2-500).
    #[serde(default)]
    pub rows: Option<Rows>,
    /// For resize: the width (10-1000).
    #[serde(default)]
    pub cols: Option<Cols>,
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
    pub lines: Option<Bounded<0, 10_000>>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<OutputBytes>,
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
    pub offset: Option<SignedBounded<{ -(JSON_SAFE_MAX as i64) }, { JSON_SAFE_MAX as i64 }>>,
    /// Lines at most (default 200, at most 10000).
    #[serde(default)]
    pub limit: Option<Bounded<1, 10_000>>,
    /// Only `text`: scrollback is kept as plain text.
    #[serde(default)]
    pub format: ScreenFormat,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<OutputBytes>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitRequest {
    pub session: String,
    /// Return after this long without output.
    #[serde(default)]
    pub quiet_ms: Option<WaitMs>,
    /// Return when the screen matches this regex (e.g. "\\$ $" or ">>> $").
    #[serde(default)]
    pub pattern: Option<String>,
    /// Return on the first change after this generation (from an earlier result), so no
    /// change is missed between calls.
    #[serde(default)]
    pub after_generation: Option<Bounded<0, JSON_SAFE_MAX>>,
    /// Give up after this long (default 30000, at most 3600000).
    #[serde(default)]
    pub max_wait_ms: Option<WaitMs>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<OutputBytes>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRequest {
    pub session: String,
    /// A command line for the session's shell.
    pub command: String,
    /// Default 30000, at most 3600000. At timeout the command keeps running: what it
    /// printed so far comes back with completed=false.
    #[serde(default)]
    pub timeout_ms: Option<WaitMs>,
    /// Without shell-integration marks (a REPL, a pane drydock did not start): the command
    /// is done after this long without output (default 1000)...
    #[serde(default)]
    pub quiet_ms: Option<WaitMs>,
    /// ...or when its output matches this regex (e.g. ">>> $").
    #[serde(default)]
    pub pattern: Option<String>,
    /// How large the output in the result may be, in bytes of JSON (default
    /// terminal.output_cap_bytes, 65536; 1024-262144). Beyond it whole lines from the head
    /// and the tail are kept around a line saying what was left out.
    #[serde(default)]
    pub max_output_bytes: Option<OutputBytes>,
}
