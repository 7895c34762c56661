//! `[terminal]`: the terminal sessions' limits.

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::values::{SECOND, duration, positive};

/// The range of `terminal.output_cap_bytes` and of a terminal call's `max_output_bytes`: a
/// result with its text rendering stays well under the 1 MiB a client reads.
pub const TERMINAL_OUTPUT_CAP_MIN: usize = 1024;
pub const TERMINAL_OUTPUT_CAP_MAX: usize = 256 * 1024;

/// Limits of the terminal sessions.
#[derive(Debug, Clone)]
pub struct TerminalConfig {
    /// Live sessions at most (drydock's PTY and tmux sessions; the user's panes do not count).
    pub max_sessions: usize,
    /// How large the output of a terminal result may be as JSON, unless the call asks for
    /// another size (`max_output_bytes`); head and tail are kept.
    pub output_cap: usize,
    /// Sessions nobody has used for this long are killed.
    pub idle_timeout: Duration,
    /// Lines of scrollback each session keeps.
    pub scrollback_lines: usize,
    /// The tmux server drydock owns (`tmux -L NAME`); the user's own server is never changed.
    pub tmux_socket: String,
    /// The shell new sessions start (then given the command); default: $SHELL, else bash.
    pub shell: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTerminal {
    max_sessions: Option<usize>,
    output_cap_bytes: Option<usize>,
    idle_timeout_s: Option<u64>,
    scrollback_lines: Option<usize>,
    tmux_socket: Option<String>,
    shell: Option<String>,
}

pub(super) fn resolve(file: FileTerminal) -> Result<TerminalConfig, ConfigError> {
    Ok(TerminalConfig {
        max_sessions: positive(file.max_sessions.unwrap_or(16), "terminal.max_sessions")?,
        output_cap: terminal_output_cap(file.output_cap_bytes.unwrap_or(64 * 1024))?,
        idle_timeout: duration(
            file.idle_timeout_s.unwrap_or(4 * 3600),
            SECOND,
            "terminal.idle_timeout_s",
        )?,
        scrollback_lines: file.scrollback_lines.unwrap_or(10_000),
        tmux_socket: file.tmux_socket.unwrap_or_else(|| "drydock".into()),
        shell: file.shell,
    })
}

fn terminal_output_cap(bytes: usize) -> Result<usize, ConfigError> {
    match (TERMINAL_OUTPUT_CAP_MIN..=TERMINAL_OUTPUT_CAP_MAX).contains(&bytes) {
        true => Ok(bytes),
        false => Err(ConfigError::TerminalOutputCap(bytes)),
    }
}
