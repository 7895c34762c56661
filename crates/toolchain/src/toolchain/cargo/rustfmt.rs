//! Files `cargo fmt --check` would change, parsed from its diff output.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use crate::toolchain::endings::strip_ansi;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::FormatFile;

/// Parses the stdout of `cargo fmt --check -- --color never`: `Diff in /abs/file.rs:9:`
/// headers, each followed by the hunk's lines. One entry per file, sorted by path.
pub fn parse_fmt_check(
    stdout: &str,
    project_root: &Path,
    diff_cap_lines: usize,
) -> Vec<FormatFile> {
    let paths = PathMapper::new(project_root, project_root);
    let mut files: BTreeMap<String, FileDiff> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in stdout.lines() {
        let line = strip_ansi(line.trim_end_matches('\r'));
        if let Some((file, line_number)) = parse_diff_header(&line) {
            let file = paths.map(file);
            let diff = files.entry(file.clone()).or_default();
            diff.hunks += 1;
            diff.push(format!("@@ line {line_number} @@"), diff_cap_lines);
            current = Some(file);
        } else if let Some(diff) = current.as_ref().and_then(|file| files.get_mut(file)) {
            diff.push(line.into_owned(), diff_cap_lines);
        }
    }
    files
        .into_iter()
        .map(|(file, diff)| diff.into_format_file(file))
        .collect()
}

#[derive(Default)]
struct FileDiff {
    hunks: u32,
    lines: Vec<String>,
    omitted: usize,
}

impl FileDiff {
    fn push(&mut self, line: String, cap: usize) {
        if self.lines.len() < cap {
            self.lines.push(line);
        } else {
            self.omitted += 1;
        }
    }

    fn into_format_file(mut self, file: String) -> FormatFile {
        while self.lines.last().is_some_and(|line| line.trim().is_empty()) {
            self.lines.pop();
        }
        if self.omitted > 0 {
            self.lines.push(format!("... {} more lines", self.omitted));
        }
        FormatFile {
            file,
            hunks: self.hunks,
            diff: (!self.lines.is_empty()).then(|| self.lines.join("\n")),
        }
    }
}

/// `Diff in /abs/path.rs:9:` (rustfmt 1.5+) or `Diff in /abs/path.rs at line 9:` (older).
fn parse_diff_header(line: &str) -> Option<(&str, u32)> {
    static HEADER: OnceLock<Regex> = OnceLock::new();
    let header = HEADER.get_or_init(|| {
        Regex::new(r"^Diff in (.+?)(?::(\d+)| at line (\d+)):$").expect("valid regex")
    });
    if !line.starts_with("Diff in ") {
        return None;
    }
    let caps = header.captures(line)?;
    let number = caps.get(2).or_else(|| caps.get(3))?.as_str().parse().ok()?;
    Some((caps.get(1)?.as_str(), number))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::recorded;

    const SHAPES_DIFF: &str = "@@ line 1 @@
 /// The area of a rectangle.
-pub fn area(width: u32, height: u32) -> u32 { width * height }
+pub fn area(width: u32, height: u32) -> u32 {
+    width * height
+}
 
 /// The perimeter of a rectangle.
 pub fn perimeter(width: u32, height: u32) -> u32 {
@@ line 11 @@
     #[test]
     fn measures_a_rectangle() {
         assert_eq!(super::area(3, 4), 12);
-        assert_eq!(super::perimeter(3,4), 14);
+        assert_eq!(super::perimeter(3, 4), 14);
     }
 }";

    #[test]
    fn workspace_check_lists_the_file_with_both_hunks() {
        let root = recorded::cargo("fmt-check-workspace").root();
        let files = parse_fmt_check(&recorded::cargo("fmt-check-workspace").stdout(), &root, 100);
        assert_eq!(
            files,
            [FormatFile {
                file: "crates/core/src/shapes.rs".into(),
                hunks: 2,
                diff: Some(SHAPES_DIFF.into()),
            }]
        );
    }

    #[test]
    fn member_root_gives_member_relative_paths() {
        let root = recorded::cargo("fmt-check-workspace")
            .root()
            .join("crates/core");
        let files = parse_fmt_check(&recorded::cargo("fmt-check-workspace").stdout(), &root, 100);
        assert_eq!(files[0].file, "src/shapes.rs");
    }

    #[test]
    fn long_diffs_are_capped_with_a_marker() {
        let root = recorded::cargo("fmt-check-workspace").root();
        let files = parse_fmt_check(&recorded::cargo("fmt-check-workspace").stdout(), &root, 3);
        let expected = "@@ line 1 @@
 /// The area of a rectangle.
-pub fn area(width: u32, height: u32) -> u32 { width * height }
... 15 more lines";
        assert_eq!(files[0].diff.as_deref(), Some(expected));
    }

    #[test]
    fn files_are_sorted_and_odd_paths_and_colours_handled() {
        let stdout = "\
Diff in /p/src/zeta.rs:3:
-a
+b
Diff in /p/odd päths/módulo con espacio.rs at line 7:
\x1b[31m-x\x1b(B\x1b[m
\x1b[32m+y\x1b(B\x1b[m
Diff in /elsewhere/lib.rs:1:
-c
+d
";
        let files = parse_fmt_check(stdout, Path::new("/p"), 50);
        let summary: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.file.as_str(),
                    f.hunks,
                    f.diff.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("/elsewhere/lib.rs", 1, "@@ line 1 @@\n-c\n+d"),
                ("odd päths/módulo con espacio.rs", 1, "@@ line 7 @@\n-x\n+y"),
                ("src/zeta.rs", 1, "@@ line 3 @@\n-a\n+b"),
            ]
        );
    }

    #[test]
    fn formatted_project_has_no_files() {
        assert!(parse_fmt_check("", Path::new("/p"), 10).is_empty());
        assert!(parse_fmt_check("Warning: some rustfmt notice\n", Path::new("/p"), 10).is_empty());
    }
}
