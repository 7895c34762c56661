//! Content hashes: what drydock names a file's content, or a folder after a path or a URL,
//! by.

use sha2::Digest;

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `NAME-HASH`: `name` with what a folder name should not hold made `-` ("repo" for no
/// name), then the first 8 hex digits of `key`'s hash, so two keys of the same
/// name get two folders.
pub fn folder_name(name: &str, key: &str) -> String {
    let name: String = name
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '-',
            },
        )
        .collect();
    let name = match name.as_str() {
        "" => "repo",
        name => name,
    };
    format!("{name}-{}", &sha256_hex(key.as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_named_for_its_key_and_hashed() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            folder_name("my app", "/x/my app"),
            format!("my-app-{}", &sha256_hex(b"/x/my app")[..8])
        );
        assert!(folder_name("", "k").starts_with("repo-"));
        assert!(folder_name("..", "k").starts_with("---"));
    }
}
