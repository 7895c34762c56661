//! Running the `tmux` command line: commands joined into one invocation, its output read
//! line by line, and its failures told apart ([`TmuxError`]).

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::{Result, TmuxError};

pub(super) fn socket_suffix(socket: &Option<String>) -> String {
    socket
        .as_ref()
        .map(|s| format!(" on {s}"))
        .unwrap_or_default()
}

/// Separates commands in one tmux invocation: turned into a bare `;` argument when tmux is
/// run. (A NUL cannot be in an argument, so no user argument can be mistaken for it.)
pub(super) const SEPARATOR: &str = "\0;";

/// tmux reads an argument ending in `;` as the end of a command (and strips the `;`), even
/// when it arrives as its own argv element; `\;` at the end stands for a literal `;`. So a
/// trailing `;` gets a backslash; nothing else in an argument is special (no quoting,
/// no `~` or `#{}` expansion: all verified on 3.3a).
pub(super) fn escape_arg(arg: &str) -> String {
    match arg.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => arg.to_string(),
    }
}

pub(super) fn cmd<const N: usize>(args: [&str; N]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

pub(super) fn first_line<'a>(out: &'a str, command: &str) -> Result<&'a str> {
    out.lines()
        .next()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| TmuxError::UnexpectedOutput {
            command: command.into(),
            output: out.into(),
        })
}

pub(super) fn parse_lines<T>(
    out: &str,
    parse: impl Fn(&str) -> Option<T>,
    command: &str,
) -> Result<Vec<T>> {
    out.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            parse(l).ok_or_else(|| TmuxError::UnexpectedOutput {
                command: command.into(),
                output: l.into(),
            })
        })
        .collect()
}

pub(super) fn parse_one<T>(
    out: &str,
    parse: impl Fn(&str) -> Option<T>,
    command: &str,
) -> Result<T> {
    parse_lines(out, parse, command)?
        .into_iter()
        .next()
        .ok_or_else(|| TmuxError::UnexpectedOutput {
            command: command.into(),
            output: out.into(),
        })
}

/// Runs `command` (a `tmux` with its socket arguments) with `args` and stdin at /dev/null;
/// maps failures to [`TmuxError`]. `socket` is `Some(description)` for commands that talk to
/// a server.
pub(super) async fn run_tmux(
    mut command: Command,
    args: Vec<String>,
    timeout: Duration,
    socket: Option<Option<String>>,
) -> Result<String> {
    let name = args.first().cloned().unwrap_or_default();
    command
        .args(args.iter().map(|a| {
            if a == SEPARATOR {
                ";".to_string()
            } else {
                escape_arg(a)
            }
        }))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The client only, not its group or descendants: a client that starts drydock's
        // server forks it off, and the server outlives every client.
        .kill_on_drop(true);
    let child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TmuxError::NotInstalled,
        _ => TmuxError::Io(e),
    })?;
    let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(output) => output?,
        Err(_) => {
            return Err(TmuxError::Timeout {
                command: name,
                timeout,
            });
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    let message = if stderr.is_empty() {
        stdout.trim().to_string()
    } else {
        stderr
    };
    Err(classify_error(name, message, socket.flatten()))
}

pub(super) fn classify_error(
    command: String,
    message: String,
    socket: Option<String>,
) -> TmuxError {
    // "error connecting to SOCKET (No such file or directory)" for a socket that is not
    // there, "(Connection refused)" for a server that just exited.
    if [
        "no server running",
        "error connecting to",
        "server exited",
        "lost server",
    ]
    .iter()
    .any(|m| message.starts_with(m))
    {
        return TmuxError::NoServer { socket };
    }
    if message == "no sessions" || message == "no current target" {
        return TmuxError::UnknownTarget {
            target: "session".into(),
            message: "the server has no sessions".into(),
        };
    }
    for (needle, target) in [
        ("can't find session", "session"),
        ("no such session", "session"),
        ("session not found", "session"),
        ("can't find window", "window"),
        ("no such window", "window"),
        ("can't find pane", "pane"),
        ("no such pane", "pane"),
    ] {
        if message.contains(needle) {
            return TmuxError::UnknownTarget {
                target: target.to_string(),
                message,
            };
        }
    }
    if let Some(name) = message.strip_prefix("duplicate session: ") {
        return TmuxError::DuplicateSession(name.to_string());
    }
    TmuxError::Command { command, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_ending_in_a_semicolon_are_escaped() {
        assert_eq!(escape_arg("ls;"), "ls\\;");
        assert_eq!(escape_arg(";"), "\\;");
        assert_eq!(escape_arg("a\\;"), "a\\\\;");
        assert_eq!(escape_arg("a;b"), "a;b");
    }
}
