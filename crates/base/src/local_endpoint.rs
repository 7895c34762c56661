//! Where drydock's own commands (`drydock hook`, `drydock approve`) find the running server: a
//! file in drydock's data directory that the server writes when it starts listening (readable
//! by the user alone, since it holds the token those endpoints ask for) and removes when it
//! stops.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::private::random_hex;

const FILE_NAME: &str = "local-endpoint.json";

/// Set inside a task's sandbox: the socket there that reaches drydock as the task, for its
/// `drydock hook` and `drydock task` (the data directory is not in the sandbox).
pub const SANDBOX_SOCKET_VAR: &str = "DRYDOCK_SANDBOX_SOCKET";

/// The running server, as its local commands reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalEndpoint {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The bearer token `/hooks` and `/approvals` ask for (not the MCP token).
    pub token: String,
    /// The server's pid.
    pub pid: u32,
}

impl LocalEndpoint {
    /// A new endpoint for a server listening on `address`, with a fresh random token.
    pub fn new(address: SocketAddr) -> LocalEndpoint {
        let host = match address.ip().is_unspecified() {
            true => SocketAddr::from(([127, 0, 0, 1], address.port())),
            false => address,
        };
        LocalEndpoint {
            base: format!("http://{host}"),
            token: random_hex(24),
            pid: std::process::id(),
        }
    }

    /// The server as a sandbox reaches it: through the socket named by
    /// [`SANDBOX_SOCKET_VAR`], where the socket itself says who is asking (no token).
    pub fn in_sandbox() -> Option<LocalEndpoint> {
        let socket = std::env::var_os(SANDBOX_SOCKET_VAR).filter(|s| !s.is_empty())?;
        Some(LocalEndpoint {
            base: format!("unix:{}", Path::new(&socket).display()),
            token: String::new(),
            pid: 0,
        })
    }

    /// The socket of an endpoint [`in_sandbox`](Self::in_sandbox).
    pub fn socket(&self) -> Option<&Path> {
        self.base.strip_prefix("unix:").map(Path::new)
    }

    /// Where agents' hook events go.
    pub fn hooks_url(&self) -> String {
        format!("{}/hooks", self.base)
    }

    /// Where MCP is served.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE_NAME)
    }

    /// Writes it to `data_dir` (created if needed), replacing a stale one.
    pub fn publish(&self, data_dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(data_dir)?;
        let path = Self::path(data_dir);
        let temporary = data_dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(&serde_json::to_vec(self).expect("plain strings serialize"))?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
    }

    /// The endpoint in `data_dir`, if a server published one.
    pub fn read(data_dir: &Path) -> Option<LocalEndpoint> {
        let text = std::fs::read_to_string(Self::path(data_dir)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Removes the file if it is still this endpoint's (a newer server may have replaced it).
    pub fn withdraw(&self, data_dir: &Path) {
        if Self::read(data_dir).as_ref() == Some(self) {
            let _ = std::fs::remove_file(Self::path(data_dir));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_published_endpoint_is_private_read_back_and_withdrawn_only_by_its_server() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        assert_eq!(LocalEndpoint::read(&data_dir), None);

        let endpoint = LocalEndpoint::new("0.0.0.0:7878".parse().unwrap());
        assert_eq!(endpoint.hooks_url(), "http://127.0.0.1:7878/hooks");
        assert_eq!(endpoint.token.len(), 48);
        endpoint.publish(&data_dir).unwrap();
        let mode = std::fs::metadata(LocalEndpoint::path(&data_dir))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(LocalEndpoint::read(&data_dir), Some(endpoint.clone()));

        let newer = LocalEndpoint::new("127.0.0.1:7879".parse().unwrap());
        assert_ne!(newer.token, endpoint.token);
        newer.publish(&data_dir).unwrap();
        endpoint.withdraw(&data_dir);
        assert_eq!(LocalEndpoint::read(&data_dir), Some(newer.clone()));
        newer.withdraw(&data_dir);
        assert_eq!(LocalEndpoint::read(&data_dir), None);
    }
}
