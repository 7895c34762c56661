//! Which files `mix format --check-formatted` flags, and what formatting would change in them
//! (mix prints no diff: we ask Mix for the formatted text and diff it here).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use crate::call::Call;
use crate::process::{CommandSpec, Stream};
use crate::toolchain::Project;
use crate::toolchain::endings::strip_ansi;
use crate::toolchain::results::FormatFile;
use crate::toolchain::runner::Runner;
use crate::untrusted::{self, Tree};

const SCRIPT: &str = crate::exs::FORMAT_DIFF;
const MARKER: &str = "\u{1e}DRYDOCK-FORMAT ";
const DIFF_CAP_LINES: usize = 40;
const DIFFS_TIMEOUT: Duration = Duration::from_secs(60);
/// A source file larger than this gets no diff.
const LARGEST_SOURCE: u64 = 4 * 1024 * 1024;

/// The `  * path` lines after "The following files are not formatted:", sorted.
pub(super) fn unformatted_files(stderr: &str) -> Vec<String> {
    let mut files: Vec<String> = stderr
        .lines()
        .map(strip_ansi)
        .skip_while(|l| !l.contains("The following files are not formatted"))
        .filter_map(|l| l.trim_start().strip_prefix("* ").map(str::to_string))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// One entry per file, with a short diff where Mix could format it. Every file is read and
/// diffed on a blocking thread (a project never formatted is all of its files). The list is
/// what the project's `mix.exs` let mix print: a file is read only when its path stays inside
/// the project, below it through no link, and is a regular file.
pub(super) async fn diffs(
    project: &Project,
    files: &[String],
    runner: &Runner,
    call: &Call<'_>,
) -> Vec<FormatFile> {
    let inside: Vec<String> = files
        .iter()
        .filter(|file| inside_project(&project.root, file).is_some())
        .cloned()
        .collect();
    let formatted = formatted_texts(project, &inside, runner, call).await;
    let (root, files) = (project.root.clone(), files.to_vec());
    tokio::task::spawn_blocking(move || {
        let tree = Tree::open(&root).ok();
        files
            .iter()
            .map(|file| {
                let before = tree
                    .as_ref()
                    .zip(inside_project(&root, file))
                    .and_then(|(tree, path)| tree.read_text(&path, LARGEST_SOURCE).ok());
                match (before, formatted.iter().find(|(f, _)| f == file)) {
                    (Some(before), Some((_, after))) => file_diff(file, &before, after),
                    _ => FormatFile {
                        file: file.clone(),
                        hunks: 1,
                        diff: None,
                    },
                }
            })
            .collect()
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// `printed` (relative to the project, or absolute below it) as a path below `root`.
fn inside_project(root: &Path, printed: &str) -> Option<PathBuf> {
    let relative = match Path::new(printed).strip_prefix(root) {
        Ok(below) => below.to_str()?,
        Err(_) => printed,
    };
    untrusted::printed_path(relative)
}

async fn formatted_texts(
    project: &Project,
    files: &[String],
    runner: &Runner,
    call: &Call<'_>,
) -> Vec<(String, String)> {
    let spec = CommandSpec {
        stdin: Some(files.join("\n").into_bytes()),
        env_set: vec![("TERM".into(), "dumb".into())],
        ..CommandSpec::new("elixir", ["-e", SCRIPT], &project.root)
    };
    let mut texts = Vec::new();
    let mut on_line = |stream: Stream, line: &str| {
        if stream == Stream::Stdout
            && let Some(rest) = line.strip_prefix(MARKER)
            && let Some((file, hex)) = rest.rsplit_once(' ')
            && let Some(text) = decode_hex(hex)
        {
            texts.push((file.to_string(), text));
        }
    };
    // Diffs are a courtesy: without them the report still lists the files.
    let _ = runner
        .quick(DIFFS_TIMEOUT)
        .run(spec, call, &mut on_line)
        .await;
    texts
}

fn decode_hex(hex: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Hunks under `@@ line N @@` headers (N: the first changed line in the file as it is),
/// capped at `DIFF_CAP_LINES` lines.
fn file_diff(file: &str, before: &str, after: &str) -> FormatFile {
    let diff = TextDiff::from_lines(before, after);
    let mut text = String::new();
    let mut lines = 0;
    let mut hunks = 0;
    for group in diff.grouped_ops(1) {
        hunks += 1;
        let first_old = group.first().map_or(0, |op| op.old_range().start);
        let _ = writeln!(text, "@@ line {} @@", first_old + 1);
        for op in &group {
            for change in diff.iter_changes(op) {
                lines += 1;
                if lines > DIFF_CAP_LINES {
                    continue;
                }
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let _ = writeln!(text, "{sign}{}", change.value().trim_end_matches('\n'));
            }
        }
    }
    if lines > DIFF_CAP_LINES {
        let _ = writeln!(text, "[... {} more diff lines ...]", lines - DIFF_CAP_LINES);
    }
    FormatFile {
        file: file.to_string(),
        hunks: hunks.max(1),
        diff: (!text.is_empty()).then(|| text.trim_end().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `mix format --check-formatted` on Elixir 1.14.0 (stderr), files in mix's own order.
    const CHECK_STDERR: &str = "** (Mix) mix format failed due to --check-formatted.\n\
        The following files are not formatted:\n\n  * test/exp_test.exs\n  * lib/ugly.ex\n\n";

    #[test]
    fn lists_flagged_files_sorted() {
        assert_eq!(
            unformatted_files(CHECK_STDERR),
            ["lib/ugly.ex", "test/exp_test.exs"]
        );
        assert!(unformatted_files("").is_empty());
    }

    #[test]
    fn diff_has_located_hunks() {
        let before = "defmodule Ugly do\ndef   f( x ),do: x+1\n  def g, do: 1\nend\n";
        let after = "defmodule Ugly do\n  def f(x), do: x + 1\n  def g, do: 1\nend\n";
        let file = file_diff("lib/ugly.ex", before, after);
        assert_eq!(file.hunks, 1);
        assert_eq!(
            file.diff.as_deref(),
            Some(
                "@@ line 1 @@\n defmodule Ugly do\n-def   f( x ),do: x+1\n+  def f(x), do: x + 1\n   def g, do: 1"
            )
        );
    }

    #[test]
    fn hex_round_trip_and_garbage() {
        assert_eq!(decode_hex("64C3A9").as_deref(), Some("dé"));
        assert_eq!(decode_hex("6"), None);
        assert_eq!(decode_hex("zz"), None);
    }
}
