//! Secrets drydock makes and keeps: random tokens and ids, and files only the user can read.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `bytes` random bytes from the kernel, as hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buffer))
        .expect("/dev/urandom is readable");
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the file at `relative` (a project's path) is one that holds secrets by its name:
/// `.env` files, keys and certificates' private halves, credential files. drydock neither
/// copies nor remembers one.
pub fn holds_secrets(relative: &Path) -> bool {
    relative.components().any(|part| {
        let name = part.as_os_str().to_string_lossy();
        let name = name.as_ref();
        name == ".env"
            || name.starts_with(".env.")
            || matches!(
                name,
                ".netrc"
                    | ".npmrc"
                    | ".pypirc"
                    | "credentials"
                    | "credentials.toml"
                    | "credentials.json"
            )
            || name.ends_with(".pem")
            || name.ends_with(".key")
            || (name.starts_with("id_")
                && ["rsa", "dsa", "ecdsa", "ed25519"]
                    .iter()
                    .any(|k| name == format!("id_{k}")))
    })
}

/// Writes `bytes` to a file only the user can read (it may hold the MCP token).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

/// Makes the SQLite database at `path` (created empty if missing) and its journal files
/// readable by the user alone, before SQLite opens it with the umask's mode.
pub fn make_private_database(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    let name = path.as_os_str().to_string_lossy();
    for file in [
        name.to_string(),
        format!("{name}-wal"),
        format!("{name}-shm"),
        format!("{name}-journal"),
    ] {
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_that_hold_secrets_are_known_by_name() {
        for secret in [
            ".env",
            "app/.env.local",
            ".netrc",
            "certs/server.key",
            "tls/key.pem",
            "keys/id_ed25519",
            ".cargo/credentials.toml",
        ] {
            assert!(holds_secrets(Path::new(secret)), "{secret}");
        }
        for plain in [
            "src/env.rs",
            "environment.md",
            "keys/id_ed25519.pub",
            "src/keyboard.rs",
            "lib/credential_store.ex",
        ] {
            assert!(!holds_secrets(Path::new(plain)), "{plain}");
        }
    }

    #[test]
    fn tokens_are_random_hex_and_private_files_are_the_users_alone() {
        let (a, b) = (random_hex(16), random_hex(16));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        write_private(&path, b"secret").unwrap();
        write_private(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
