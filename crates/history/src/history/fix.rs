//! The change that fixed a problem: what changed in the project's files between the last run
//! that had the problem and the first that no longer did. The diff keeps the problem's own
//! files (and every changed file when few changed) and lists the others.

use serde::{Deserialize, Serialize};

use super::snapshot::Manifest;
use crate::text_budget;

/// A fix's diff is cut at this size.
pub const LONGEST_DIFF: usize = 16 * 1024;
/// When at most this many files changed, the diff shows them all.
const FEW_FILES: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    /// The files whose change the diff shows.
    pub files: Vec<String>,
    /// Other files that changed too, not shown.
    pub others: Vec<String>,
    /// A unified diff of `files`, cut at [`LONGEST_DIFF`].
    pub diff: String,
}

/// The fix between `before` and `after` for a problem in `own` (its file, if any): `content`
/// gives a kept content by hash.
pub fn between(
    before: &Manifest,
    after: &Manifest,
    own: &[String],
    content: impl Fn(&str) -> Option<Vec<u8>>,
) -> Fix {
    let mut changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    changed.sort();
    changed.dedup();
    let (shown, others): (Vec<&String>, Vec<&String>) = match changed.len() <= FEW_FILES {
        true => (changed, Vec::new()),
        false => changed.into_iter().partition(|path| own.contains(path)),
    };
    let mut diff = String::new();
    for path in &shown {
        let old = before.get(*path).map(|hash| text_of(hash, &content));
        let new = after.get(*path).map(|hash| text_of(hash, &content));
        diff.push_str(&file_diff(path, old, new));
        if diff.len() > LONGEST_DIFF {
            break;
        }
    }
    Fix {
        files: shown.into_iter().cloned().collect(),
        others: others.into_iter().cloned().collect(),
        diff: text_budget::head(&diff, LONGEST_DIFF, "the diff is cut here"),
    }
}

/// A file's content as diffable text, or why it is not.
enum Text {
    Lines(String),
    Binary,
    NotKept,
}

fn text_of(hash: &str, content: &impl Fn(&str) -> Option<Vec<u8>>) -> Text {
    match content(hash) {
        None => Text::NotKept,
        Some(bytes) if bytes.contains(&0) => Text::Binary,
        Some(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Text::Lines(text),
            Err(_) => Text::Binary,
        },
    }
}

fn file_diff(path: &str, old: Option<Text>, new: Option<Text>) -> String {
    let (a, b) = (format!("a/{path}"), format!("b/{path}"));
    match (old, new) {
        (Some(Text::Lines(old)), Some(Text::Lines(new))) => unified(&old, &new, &a, &b),
        (None, Some(Text::Lines(new))) => unified("", &new, "/dev/null", &b),
        (Some(Text::Lines(old)), None) => unified(&old, "", &a, "/dev/null"),
        (None, None) => String::new(),
        (old, new) => {
            let what = match (&old, &new) {
                (None, _) => "added",
                (_, None) => "deleted",
                _ => "changed",
            };
            let why = match (&old, &new) {
                (Some(Text::NotKept), _) | (_, Some(Text::NotKept)) => "too large to keep",
                _ => "binary",
            };
            format!("--- {a}\n+++ {b}\n{what} ({why})\n")
        }
    }
}

fn unified(old: &str, new: &str, a: &str, b: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(a, b)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn manifest(files: &[(&str, &str)]) -> Manifest {
        files
            .iter()
            .map(|(p, h)| (p.to_string(), h.to_string()))
            .collect()
    }

    #[test]
    fn the_fix_shows_what_changed_between_the_runs_binary_and_deleted_files_too() {
        let kept: HashMap<&str, Vec<u8>> = HashMap::from([
            ("h1", b"fn a() {\n    let x = 1;\n}\n".to_vec()),
            ("h2", b"fn a() {\n    let x = 2;\n}\n".to_vec()),
            ("bin1", vec![0, 1, 2]),
            ("bin2", vec![0, 1, 3]),
            ("gone", b"old helper\n".to_vec()),
            ("same", b"unchanged\n".to_vec()),
        ]);
        let content = |h: &str| kept.get(h).cloned();
        let before = manifest(&[
            ("src/a.rs", "h1"),
            ("logo.png", "bin1"),
            ("src/old.rs", "gone"),
            ("README.md", "same"),
        ]);
        let after = manifest(&[
            ("src/a.rs", "h2"),
            ("logo.png", "bin2"),
            ("src/new.rs", "h1"),
            ("README.md", "same"),
        ]);
        let fix = between(&before, &after, &["src/a.rs".into()], content);
        assert_eq!(
            fix.files,
            ["logo.png", "src/a.rs", "src/new.rs", "src/old.rs"]
        );
        assert!(fix.others.is_empty());
        assert!(
            fix.diff.contains("-    let x = 1;\n+    let x = 2;"),
            "{}",
            fix.diff
        );
        assert!(fix.diff.contains("changed (binary)"), "{}", fix.diff);
        assert!(fix.diff.contains("+++ /dev/null"), "{}", fix.diff);
        assert!(fix.diff.contains("--- /dev/null"), "{}", fix.diff);
    }

    #[test]
    fn a_fix_of_many_files_shows_the_problems_own_and_lists_the_rest() {
        let before: Manifest = (0..40)
            .map(|n| (format!("src/f{n}.rs"), "h1".to_string()))
            .collect();
        let after: Manifest = (0..40)
            .map(|n| (format!("src/f{n}.rs"), "h2".to_string()))
            .collect();
        let content = |h: &str| Some(format!("{h}\n").into_bytes());
        let fix = between(&before, &after, &["src/f7.rs".into()], content);
        assert_eq!(fix.files, ["src/f7.rs"]);
        assert_eq!(fix.others.len(), 39);
        assert!(fix.diff.contains("-h1\n+h2"), "{}", fix.diff);
    }
}
