//! What tmux lists, read: the `-F` formats drydock prints sessions and panes with, the
//! parsed panes and sessions, pane addresses (`tmux:SESSION:WINDOW.PANE`) and session names.

use std::path::PathBuf;

use super::socket::valid_socket_name;
use super::{Result, TmuxError};

/// Separates fields in `-F` formats. tmux escapes control characters in names (a window
/// named `a\x1fb` is printed as `a\037b`), so this byte cannot come from a name.
pub(super) const FIELD_SEPARATOR: char = '\u{1f}';

/// A `-F` format printing `fields` separated by `FIELD_SEPARATOR`.
pub(super) fn format_of(fields: &[&str]) -> String {
    fields
        .iter()
        .map(|f| format!("#{{{f}}}"))
        .collect::<Vec<_>>()
        .join(&FIELD_SEPARATOR.to_string())
}

/// A line printed with `format_of`, split into exactly `count` fields (the last keeps any
/// separator it contains).
pub(super) fn fields_of(line: &str, count: usize) -> Option<Vec<&str>> {
    let fields: Vec<&str> = line.splitn(count, FIELD_SEPARATOR).collect();
    (fields.len() == count).then_some(fields)
}

/// A pane as `list-panes` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::terminal) struct PaneInfo {
    /// tmux's unique pane id, e.g. "%3": the most robust target.
    pub id: String,
    pub session: String,
    pub window_index: u32,
    pub window_name: String,
    pub pane_index: u32,
    /// `pane_current_command`: the foreground process's name.
    pub command: String,
    /// `pane_current_path`.
    pub path: PathBuf,
    /// The process the pane runs (its session leader).
    pub pid: u32,
    pub width: u16,
    pub height: u16,
    pub active: bool,
    /// The pane's process has exited (only visible with `remain-on-exit`).
    pub dead: bool,
    /// Exit status of a dead pane's process, when it exited normally. tmux marks a pane dead
    /// when its pty closes and learns the status a moment later, so briefly `dead` with `None`.
    pub dead_status: Option<i32>,
    /// The signal that killed a dead pane's process.
    pub dead_signal: Option<i32>,
    /// The socket name of a server of the user's other than the default one.
    pub socket: Option<String>,
}

impl PaneInfo {
    /// `tmux:SESSION:WINDOW.PANE`, with `@SOCKET` for a server other than the default one.
    pub(in crate::terminal) fn address(&self) -> String {
        PaneAddress {
            session: self.session.clone(),
            window_index: self.window_index,
            pane_index: self.pane_index,
            socket: self.socket.clone(),
        }
        .to_string()
    }

    /// Dead, but tmux has not (yet) learnt how the process ended.
    pub(super) fn exit_unknown(&self) -> bool {
        self.dead && self.dead_status.is_none() && self.dead_signal.is_none()
    }

    const FORMAT_FIELDS: [&'static str; 14] = [
        "pane_id",
        "session_name",
        "window_index",
        "pane_index",
        "pane_pid",
        "pane_width",
        "pane_height",
        "pane_active",
        "pane_dead",
        "pane_dead_status",
        "pane_dead_signal",
        "window_name",
        "pane_current_command",
        // Last: a path is printed as it is and could hold any byte.
        "pane_current_path",
    ];

    pub(super) fn format() -> String {
        format_of(&Self::FORMAT_FIELDS)
    }

    pub(super) fn parse(line: &str) -> Option<PaneInfo> {
        let f = fields_of(line, Self::FORMAT_FIELDS.len())?;
        Some(PaneInfo {
            id: f[0].to_string(),
            session: f[1].to_string(),
            window_index: f[2].parse().ok()?,
            pane_index: f[3].parse().ok()?,
            pid: f[4].parse().ok()?,
            width: f[5].parse().ok()?,
            height: f[6].parse().ok()?,
            active: f[7] == "1",
            dead: f[8] == "1",
            dead_status: f[9].parse().ok(),
            dead_signal: f[10].parse().ok(),
            window_name: f[11].to_string(),
            command: f[12].to_string(),
            path: PathBuf::from(f[13]),
            socket: None,
        })
    }
}

/// A session as `list-sessions` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::terminal) struct SessionInfo {
    /// e.g. "$2".
    pub id: String,
    pub name: String,
    pub windows: u32,
    /// Number of clients attached (a drydock control client counts).
    pub attached: u32,
    /// Unix time the session was created.
    pub created: u64,
    /// The drydock that created the session (`@drydock OWNER`); None for others' sessions.
    pub owner: Option<String>,
}

impl SessionInfo {
    const FORMAT_FIELDS: [&'static str; 6] = [
        "session_id",
        "session_windows",
        "session_attached",
        "session_created",
        "@drydock",
        "session_name",
    ];

    pub(super) fn format() -> String {
        format_of(&Self::FORMAT_FIELDS)
    }

    pub(super) fn parse(line: &str) -> Option<SessionInfo> {
        let f = fields_of(line, Self::FORMAT_FIELDS.len())?;
        Some(SessionInfo {
            id: f[0].to_string(),
            windows: f[1].parse().ok()?,
            attached: f[2].parse().ok()?,
            created: f[3].parse().ok()?,
            owner: (!f[4].is_empty()).then(|| f[4].to_string()),
            name: f[5].to_string(),
        })
    }
}

/// A parsed `tmux:SESSION:WINDOW.PANE[@SOCKET]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::terminal) struct PaneAddress {
    pub session: String,
    pub window_index: u32,
    pub pane_index: u32,
    /// The user's server by socket name (`tmux -L SOCKET`); None for the default one.
    pub socket: Option<String>,
}

impl PaneAddress {
    /// The exact-match tmux target, `=SESSION:WINDOW.PANE`.
    pub(in crate::terminal) fn target(&self) -> String {
        format!(
            "={}:{}.{}",
            self.session, self.window_index, self.pane_index
        )
    }
}

impl std::fmt::Display for PaneAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tmux:{}:{}.{}",
            self.session, self.window_index, self.pane_index
        )?;
        match &self.socket {
            Some(socket) => write!(f, "@{socket}"),
            None => Ok(()),
        }
    }
}

/// Parses `tmux:SESSION:WINDOW.PANE`. tmux itself turns `:` and `.` in session names into
/// `_`, so a session name here never holds them, and the address splits unambiguously.
pub(in crate::terminal) fn parse_address(address: &str) -> Result<PaneAddress> {
    let bad = |reason: &str| TmuxError::InvalidAddress {
        address: address.to_string(),
        reason: reason.to_string(),
    };
    let rest = address
        .strip_prefix("tmux:")
        .ok_or_else(|| bad("expected tmux:SESSION:WINDOW.PANE (it must start with \"tmux:\")"))?;
    let (session, window_pane) = rest
        .rsplit_once(':')
        .ok_or_else(|| bad("expected tmux:SESSION:WINDOW.PANE (no \":\" after the session)"))?;
    validate_session_name(session).map_err(|e| match e {
        TmuxError::InvalidSessionName { reason, .. } => bad(reason),
        other => other,
    })?;
    // WINDOW.PANE are digits: an `@` after them starts the socket's name.
    let (window_pane, socket) = match window_pane.split_once('@') {
        Some((window_pane, socket)) if valid_socket_name(socket) => {
            (window_pane, Some(socket.to_string()))
        }
        Some(_) => {
            return Err(bad(
                "the socket name after `@` may hold letters, digits, `-`, `_` and `.`",
            ));
        }
        None => (window_pane, None),
    };
    let (window, pane) = window_pane
        .split_once('.')
        .ok_or_else(|| bad("expected WINDOW.PANE after the session, e.g. 0.1"))?;
    let number = |s: &str, what: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!(
                "the {what} index {s:?} is not a non-negative number"
            )));
        }
        s.parse::<u32>()
            .map_err(|_| bad(&format!("the {what} index {s:?} is too large")))
    };
    Ok(PaneAddress {
        session: session.to_string(),
        window_index: number(window, "window")?,
        pane_index: number(pane, "pane")?,
        socket,
    })
}

/// tmux's rules for session names, made strict: tmux silently replaces `:` and `.` with `_`
/// (so the created session would not have the asked-for name) and rejects an empty name;
/// control characters are escaped in its output. All of these are refused here.
pub(in crate::terminal) fn validate_session_name(name: &str) -> Result<()> {
    let invalid = |reason| TmuxError::InvalidSessionName {
        name: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name.contains([':', '.']) {
        return Err(invalid("tmux does not allow ':' or '.' in session names"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid("it contains control characters"));
    }
    if name.starts_with(['=', '$', '%', '@']) {
        return Err(invalid(
            "a leading '=', '$', '%' or '@' is read by tmux as a target prefix",
        ));
    }
    Ok(())
}

/// The exact-match target of a session: `=NAME:` (the trailing colon makes it a session
/// target for commands that take a pane target, such as `set-option`).
pub(in crate::terminal) fn session_target(session: &str) -> String {
    format!("={session}:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_parsing() {
        assert_eq!(
            parse_address("tmux:my session:2.13").unwrap(),
            PaneAddress {
                session: "my session".into(),
                window_index: 2,
                pane_index: 13,
                socket: None,
            }
        );
        assert_eq!(parse_address("tmux:a:0.1").unwrap().target(), "=a:0.1");
        let other = parse_address("tmux:a@b:0.1@work-2").unwrap();
        assert_eq!(
            other.session, "a@b",
            "an @ in the session name is the session's"
        );
        assert_eq!(other.socket.as_deref(), Some("work-2"));
        assert_eq!(other.to_string(), "tmux:a@b:0.1@work-2");
        for (bad, why) in [
            ("a:0.1", "must start with"),
            ("tmux:", "no \":\""),
            ("tmux:a", "no \":\""),
            ("tmux::0.1", "empty"),
            ("tmux:a:0", "WINDOW.PANE"),
            ("tmux:a:x.1", "window index"),
            ("tmux:a:1.-1", "pane index"),
            ("tmux:a:1.", "pane index"),
            ("tmux:a:99999999999.0", "too large"),
            ("tmux:a.b:0.1", "':' or '.'"),
            ("tmux:a:b:0.1", "':' or '.'"),
            ("tmux:=a:0.1", "target prefix"),
            ("tmux:a:0.1@", "socket name"),
            ("tmux:a:0.1@../x", "socket name"),
        ] {
            let err = parse_address(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn pane_lines_parse_with_odd_names() {
        let line = [
            "%3",
            "my session",
            "1",
            "0",
            "4242",
            "80",
            "24",
            "1",
            "1",
            "130",
            "",
            "a\\037b",
            "vim",
            "/tmp/a\u{1f}b c",
        ]
        .join("\u{1f}");
        let pane = PaneInfo::parse(&line).unwrap();
        assert_eq!(pane.path, std::path::Path::new("/tmp/a\u{1f}b c"));
        assert_eq!((pane.dead_status, pane.dead_signal), (Some(130), None));
        assert_eq!(pane.address(), "tmux:my session:1.0");
        assert!(PaneInfo::parse("%3\u{1f}x").is_none());
    }
}
