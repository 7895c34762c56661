//! What the terminal tools return, and the text each result shows.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;

use super::budget::{RENDER_BUDGET, elision_marker};
use super::core::{RunOutcome, WaitOutcome};
use crate::render::Render;
use crate::text_budget::fit;

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
pub struct CommandReport {
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

impl Render for CommandReport {
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
