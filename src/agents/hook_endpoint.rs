//! Where `drydock hook` finds the running server: a file in drydock's data directory that
//! the server writes when it starts listening (readable by the user alone, since it holds the
//! token the hook endpoint asks for) and removes when it stops.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const FILE_NAME: &str = "hook-endpoint.json";

/// The running server's hook endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookEndpoint {
    /// `http://127.0.0.1:PORT/hooks`
    pub url: String,
    /// The bearer token the endpoint asks for.
    pub token: String,
    /// The server's pid.
    pub pid: u32,
}

impl HookEndpoint {
    /// A new endpoint for a server listening on `address`, with a fresh random token.
    pub fn new(address: SocketAddr) -> std::io::Result<HookEndpoint> {
        let host = match address.ip().is_unspecified() {
            true => SocketAddr::from(([127, 0, 0, 1], address.port())),
            false => address,
        };
        Ok(HookEndpoint {
            url: format!("http://{host}/hooks"),
            token: random_token()?,
            pid: std::process::id(),
        })
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
    pub fn read(data_dir: &Path) -> Option<HookEndpoint> {
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

fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_published_endpoint_is_private_read_back_and_withdrawn_only_by_its_server() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        assert_eq!(HookEndpoint::read(&data_dir), None);

        let endpoint = HookEndpoint::new("0.0.0.0:7878".parse().unwrap()).unwrap();
        assert_eq!(endpoint.url, "http://127.0.0.1:7878/hooks");
        assert_eq!(endpoint.token.len(), 48);
        endpoint.publish(&data_dir).unwrap();
        let mode = std::fs::metadata(HookEndpoint::path(&data_dir))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(HookEndpoint::read(&data_dir), Some(endpoint.clone()));

        let newer = HookEndpoint::new("127.0.0.1:7879".parse().unwrap()).unwrap();
        assert_ne!(newer.token, endpoint.token);
        newer.publish(&data_dir).unwrap();
        endpoint.withdraw(&data_dir);
        assert_eq!(HookEndpoint::read(&data_dir), Some(newer.clone()));
        newer.withdraw(&data_dir);
        assert_eq!(HookEndpoint::read(&data_dir), None);
    }
}
