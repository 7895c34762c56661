//! The user's profile directory (`[agents] profile_dir`) read: each `NAME.toml` in it
//! offered to the embedded profiles (`profile`, which does no I/O itself).

use std::path::{Path, PathBuf};

use super::profile::{ProfileError, Profiles};

/// The embedded profiles overridden from `user_dir`, and every problem met on the way.
pub(super) fn load(user_dir: Option<&Path>) -> (Profiles, Vec<ProfileError>) {
    let mut profiles = Profiles::embedded();
    let mut errors = Vec::new();
    if let Some(dir) = user_dir {
        for file in user_files(dir, &mut errors) {
            let read = std::fs::read_to_string(&file).map_err(|source| ProfileError::Read {
                file: file.clone(),
                source,
            });
            if let Err(error) = read.and_then(|text| profiles.accept_text(&file, &text)) {
                errors.push(error);
            }
        }
    }
    (profiles, errors)
}

fn user_files(dir: &Path, errors: &mut Vec<ProfileError>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(source) => {
            errors.push(ProfileError::Read {
                file: dir.to_path_buf(),
                source,
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::profile::ProcessInfo;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn user_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const CODEX_V99: &str = r#"
name = "codex"
version = 99
settle_ms = 1000

[recognise]
executables = ["codex"]
"#;

    #[test]
    fn a_newer_user_profile_replaces_the_embedded_one() {
        let dir = user_dir(&[("codex.toml", CODEX_V99), ("notes.txt", "not toml")]);
        let (profiles, errors) = load(Some(dir.path()));
        assert!(errors.is_empty(), "{errors:?}");
        let codex = profiles.get("codex").unwrap();
        assert_eq!((codex.version, codex.settle_ms), (99, 1000));
    }

    #[test]
    fn a_user_profile_may_add_an_agent() {
        let aider = CODEX_V99
            .replace("\"codex\"", "\"aider\"")
            .replace("version = 99", "version = 1");
        let dir = user_dir(&[("aider.toml", &aider)]);
        let (profiles, errors) = load(Some(dir.path()));
        assert!(errors.is_empty(), "{errors:?}");
        let args = argv(&["aider"]);
        let process = ProcessInfo {
            executable: "/usr/bin/aider",
            argv: &args,
        };
        assert_eq!(profiles.recognise(&[process]).unwrap().0.name, "aider");
    }

    #[test]
    fn an_older_user_profile_is_reported_and_ignored() {
        let old = CODEX_V99.replace("version = 99", "version = 0");
        let dir = user_dir(&[("codex.toml", &old)]);
        let (profiles, errors) = load(Some(dir.path()));
        assert!(matches!(
            errors[..],
            [ProfileError::Outdated { found: 0, .. }]
        ));
        assert_eq!(profiles.get("codex").unwrap().settle_ms, 300);
    }

    #[test]
    fn a_broken_user_profile_names_file_and_line_and_the_embedded_one_stays() {
        let bad_regex = CODEX_V99.replace(
            "executables = [\"codex\"]",
            "executables = [\"codex\"]\nargv = ['(unclosed']",
        );
        let bad_state = format!(
            "{CODEX_V99}\n[[state.screen]]\nid = \"x\"\nregion = \"footer\"\nregex = 'x'\n\
             state = \"waiting:forever\"\n"
        );
        let unknown_key = CODEX_V99.replace("settle_ms = 1000", "settle_ms = 1000\ncolour = 1");
        for (text, line, needle) in [
            (bad_regex, 8, "bad regex"),
            (bad_state, 13, "unknown state"),
            (unknown_key, 5, "colour"),
        ] {
            let dir = user_dir(&[("codex.toml", &text)]);
            let (profiles, errors) = load(Some(dir.path()));
            assert_eq!(errors.len(), 1, "{errors:?}");
            let message = errors[0].to_string();
            let place = format!("codex.toml:{line}: ");
            assert!(message.contains(&place), "{message} lacks {place}");
            assert!(message.contains(needle), "{message} lacks {needle}");
            assert_eq!(profiles.get("codex").unwrap().version, 4);
        }
    }

    #[test]
    fn a_user_file_must_carry_its_own_name() {
        let dir = user_dir(&[("claude.toml", CODEX_V99)]);
        let (profiles, errors) = load(Some(dir.path()));
        assert!(errors[0].to_string().contains("named \"codex\""));
        assert_eq!(profiles.get("codex").unwrap().version, 4);
    }
}
