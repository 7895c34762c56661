//! Which tmux server drydock talks to: its own (by socket path or `-L` name) or one of the
//! user's, and where their sockets are.

use std::ffi::OsString;
use std::path::PathBuf;

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::terminal) enum SocketSpec {
    /// drydock's own server at this socket path (`tmux -S PATH`): the tests' private servers.
    #[cfg(test)]
    Path(PathBuf),
    /// drydock's own server by name (`tmux -L NAME`, under `$TMUX_TMPDIR/tmux-UID/`).
    Name(String),
    /// The user's server: the one this process runs inside (`$TMUX`) or else the default.
    UserDefault,
    /// Another server of the user's, by socket name (`tmux -L NAME`).
    UserNamed(String),
}

impl SocketSpec {
    /// Whether drydock owns this server (and may set global options on it).
    pub(in crate::terminal) fn is_owned(&self) -> bool {
        !matches!(self, SocketSpec::UserDefault | SocketSpec::UserNamed(_))
    }

    /// The socket name a pane address carries: only another server of the user's has one.
    pub(super) fn address_name(&self) -> Option<String> {
        match self {
            SocketSpec::UserNamed(name) => Some(name.clone()),
            _ => None,
        }
    }

    pub(super) fn args(&self) -> Vec<OsString> {
        match self {
            #[cfg(test)]
            SocketSpec::Path(path) => vec!["-S".into(), path.clone().into()],
            SocketSpec::Name(name) | SocketSpec::UserNamed(name) => {
                vec!["-L".into(), name.into()]
            }
            // `$TMUX` is "SOCKET,PID,SESSION"; made explicit because `TMUX` is removed from
            // the environment of every tmux drydock runs.
            SocketSpec::UserDefault => match tmux_env_socket() {
                Some(path) => vec!["-S".into(), path.into()],
                None => Vec::new(),
            },
        }
    }

    /// Where this server's socket is.
    pub(super) fn path(&self) -> Option<PathBuf> {
        match self {
            #[cfg(test)]
            SocketSpec::Path(path) => Some(path.clone()),
            SocketSpec::Name(name) | SocketSpec::UserNamed(name) => {
                Some(tmux_socket_dir()?.join(name))
            }
            SocketSpec::UserDefault => match tmux_env_socket() {
                Some(path) => Some(PathBuf::from(path)),
                None => Some(tmux_socket_dir()?.join("default")),
            },
        }
    }

    /// The file every drydock that changes this server's sessions or attaches to it locks
    /// first (see `changes`): beside its socket.
    pub(super) fn lock_file(&self) -> Option<PathBuf> {
        let mut name = self.path()?.into_os_string();
        name.push(".drydock-lock");
        Some(PathBuf::from(name))
    }

    pub(super) fn describe(&self) -> Option<String> {
        match self {
            #[cfg(test)]
            SocketSpec::Path(path) => Some(path.display().to_string()),
            SocketSpec::Name(name) | SocketSpec::UserNamed(name) => Some(format!("-L {name}")),
            SocketSpec::UserDefault => tmux_env_socket(),
        }
    }
}

pub(super) fn tmux_env_socket() -> Option<String> {
    let value = std::env::var("TMUX").ok()?;
    let socket = value.split(',').next()?;
    (!socket.is_empty()).then(|| socket.to_string())
}

/// Whether this process runs inside a tmux pane (`$TMUX` is set).
pub(in crate::terminal) fn inside_tmux() -> bool {
    std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
}

/// A tmux socket name as `-L` takes it (a file name under `$TMUX_TMPDIR/tmux-UID/`).
pub(in crate::terminal) fn valid_socket_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The sockets of the user's other tmux servers (`tmux -L NAME`): every socket in
/// `$TMUX_TMPDIR/tmux-UID/` (default /tmp) but the default one and drydock's own (`drydock*`).
pub(in crate::terminal) fn user_socket_names() -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let Some(dir) = tmux_socket_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name != "default" && !name.starts_with("drydock"))
        .filter(|name| valid_socket_name(name))
        .collect();
    names.sort();
    names
}

/// Where tmux keeps the user's sockets: `$TMUX_TMPDIR/tmux-UID/` (default /tmp).
pub(super) fn tmux_socket_dir() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let base = std::env::var_os("TMUX_TMPDIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    Some(base.join(format!("tmux-{uid}")))
}
