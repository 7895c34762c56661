//! Elixir docs → chunks, from compiled modules and from `.ex` sources.
//!
//! Compiled modules: [`exs::FETCH_DOCS`](crate::exs::FETCH_DOCS) runs under `elixir` and calls `Code.fetch_docs`
//! on every `.beam` of the given ebin directories (Debian's Elixir ships no `.ex` sources,
//! and compiled deps carry their docs too), printing one JSON line per documented module,
//! function, macro, type and callback with the source path and line the beam records.
//! [`parse_fetch_docs_output`] turns those lines into chunks: library = the OTP app, version
//! = the app's `vsn`, file path = the recorded source made relative (`lib/elixir/lib/enum.ex`),
//! lines = the doc's line, heading path `[Module, "any?/2"]` (types `t:name/arity`, callbacks
//! `c:name/arity`, as ExDoc writes them), anchor the same, URL the hexdocs location.
//!
//! Sources: [`chunk_elixir_source`] reads `@moduledoc`, `@doc` and `@typedoc` (heredocs,
//! `~S`/`~s` sigils or one-line strings) with the `def`/`defmacro`/`@type`… they document,
//! by regex, with exact line ranges.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::chunk::{Chunk, FileMeta, Section, SourceLine, SourceType, chunk_sections};
use super::markdown::doc_sections;
use crate::process::{CommandSpec, Limits, Policy, RunError, Stream, Termination};

use crate::exs;

#[derive(Debug, thiserror::Error)]
pub enum ElixirDocsError {
    #[error("could not read Elixir docs: {0}")]
    Spawn(#[from] RunError),
    #[error("`elixir` failed reading docs from {dirs}: {stderr}")]
    Failed { dirs: String, stderr: String },
    #[error(
        "`elixir` did not finish reading docs from {dirs} within {seconds} s (the limit is \
         `timeouts.docs_index_ms`)"
    )]
    TimedOut { dirs: String, seconds: u64 },
    #[error("reading docs from {dirs} was cancelled")]
    Cancelled { dirs: String },
}

/// The policy of the docs helper when no config says otherwise: the secrets drydock's own
/// environment still holds are the caller's business; the token is always removed.
pub fn default_policy() -> Policy {
    Policy {
        limits: Limits {
            timeout: Duration::from_secs(10 * 60),
            output_cap: 64 * 1024,
            kill_grace: Duration::from_secs(2),
        },
        env_remove: Vec::new(),
    }
}

/// Runs the fetch-docs script with `elixir` (a path or a name on PATH) over `ebin_dirs`
/// under `policy` and returns its output; `cancel` stops it. Blocking.
pub fn fetch_docs_output(
    policy: &Policy,
    elixir: &Path,
    ebin_dirs: &[PathBuf],
    cancel: &CancellationToken,
) -> Result<String, ElixirDocsError> {
    let mut args = vec!["-e".to_string(), exs::FETCH_DOCS.to_string(), "--".into()];
    args.extend(ebin_dirs.iter().map(|d| d.display().to_string()));
    // Any existing directory does: the script reads only the paths it is given.
    let cwd = ebin_dirs
        .first()
        .cloned()
        .unwrap_or_else(std::env::temp_dir);
    let spec = CommandSpec::new(elixir.display().to_string(), args, cwd);
    let mut stdout = String::new();
    let mut keep_stdout = |stream: Stream, line: &str| {
        if stream == Stream::Stdout {
            stdout.push_str(line);
            stdout.push('\n');
        }
    };
    let output = policy.run_blocking(spec, cancel, &mut keep_stdout)?;
    let dirs = || {
        ebin_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match output.termination {
        Termination::Exited(0) => Ok(stdout),
        Termination::TimedOut => Err(ElixirDocsError::TimedOut {
            dirs: dirs(),
            seconds: policy.limits.timeout.as_secs(),
        }),
        Termination::Cancelled => Err(ElixirDocsError::Cancelled { dirs: dirs() }),
        Termination::Exited(_) | Termination::Signaled(_) => Err(ElixirDocsError::Failed {
            dirs: dirs(),
            stderr: output.stderr.text.trim().to_string(),
        }),
    }
}

/// Chunks of every doc in the beams of `ebin_dirs` (see [`fetch_docs_output`]).
pub fn chunk_beams_with(
    policy: &Policy,
    elixir: &Path,
    ebin_dirs: &[PathBuf],
    cancel: &CancellationToken,
) -> Result<Vec<Chunk>, ElixirDocsError> {
    let output = fetch_docs_output(policy, elixir, ebin_dirs, cancel)?;
    Ok(parse_fetch_docs_output(&output))
}

/// [`chunk_beams_with`] under the [`default_policy`], not cancellable.
pub fn chunk_elixir_beams(
    elixir: &Path,
    ebin_dirs: &[PathBuf],
) -> Result<Vec<Chunk>, ElixirDocsError> {
    chunk_beams_with(
        &default_policy(),
        elixir,
        ebin_dirs,
        &CancellationToken::new(),
    )
}

/// One line of the script's output.
#[derive(Debug, Clone, Deserialize)]
pub struct DocEntry {
    pub app: Option<String>,
    pub vsn: Option<String>,
    pub module: String,
    /// `module`, `function`, `macro`, `type`, `callback`, `macrocallback`.
    pub kind: String,
    pub name: Option<String>,
    pub arity: Option<u32>,
    #[serde(default)]
    pub signature: Vec<String>,
    pub line: Option<u32>,
    pub doc: String,
    pub source: Option<String>,
    pub deprecated: Option<String>,
}

/// Parses the script's output into chunks; lines that are not entries are ignored.
pub fn parse_fetch_docs_output(output: &str) -> Vec<Chunk> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<DocEntry>(line).ok())
        .flat_map(|entry| entry_chunks(&entry))
        .collect()
}

/// The ExDoc name of an entry: `any?/2`, `t:t/0`, `c:init/1`; None for a moduledoc.
fn entry_name(entry: &DocEntry) -> Option<String> {
    let name = entry.name.as_deref()?;
    let arity = entry.arity.unwrap_or(0);
    let prefix = match entry.kind.as_str() {
        "type" => "t:",
        "callback" | "macrocallback" => "c:",
        _ => "",
    };
    Some(format!("{prefix}{name}/{arity}"))
}

fn entry_chunks(entry: &DocEntry) -> Vec<Chunk> {
    let library = entry.app.clone().unwrap_or_else(|| "elixir".to_string());
    let file_path = entry
        .source
        .as_deref()
        .map(|s| relative_source(s, &library))
        .unwrap_or_else(|| format!("{}.beam", entry.module));
    let line = entry.line.unwrap_or(1).max(1);
    let name = entry_name(entry);
    let mut lines = Vec::new();
    let definition = match entry.kind.as_str() {
        "function" => Some("def"),
        "macro" => Some("defmacro"),
        "type" => Some("@type"),
        "callback" => Some("@callback"),
        "macrocallback" => Some("@macrocallback"),
        _ => None,
    };
    if let Some(definition) = definition {
        let signatures: Vec<String> = if entry.signature.is_empty() {
            name.iter()
                .map(|n| {
                    n.trim_start_matches("t:")
                        .trim_start_matches("c:")
                        .to_string()
                })
                .collect()
        } else {
            entry.signature.clone()
        };
        lines.push(SourceLine::new("```elixir", line));
        for signature in signatures {
            lines.push(SourceLine::new(format!("{definition} {signature}"), line));
        }
        lines.push(SourceLine::new("```", line));
        lines.push(SourceLine::new("", line));
    }
    if let Some(deprecated) = &entry.deprecated {
        lines.push(SourceLine::new(format!("Deprecated: {deprecated}"), line));
        lines.push(SourceLine::new("", line));
    }
    lines.extend(entry.doc.lines().map(|l| SourceLine::new(l, line)));
    let sections = match &name {
        None => moduledoc_sections(&entry.module, lines, line),
        Some(name) => vec![Section {
            heading_path: vec![entry.module.clone(), name.clone()],
            anchor: Some(name.clone()),
            heading_line: Some(line),
            lines,
            mergeable: false,
        }],
    };
    let url = entry
        .vsn
        .as_ref()
        .map(|vsn| format!("https://hexdocs.pm/{library}/{vsn}/{}.html", entry.module));
    let meta = FileMeta {
        library,
        version: entry.vsn.clone(),
        source_type: SourceType::Api,
        file_path,
        url,
    };
    chunk_sections(sections, &meta)
}

/// A module doc cut at its own Markdown headings, so sibling sections (`Supervisor >
/// Strategies`, `Supervisor > Child specification`) are told apart, with ExDoc's anchors
/// (`module-strategies`).
fn moduledoc_sections(module: &str, lines: Vec<SourceLine>, doc_line: u32) -> Vec<Section> {
    doc_sections(&[module.to_string()], lines, doc_line, |slug| {
        format!("module-{slug}")
    })
}

/// `/build/…/elixir-1.14.0/lib/elixir/lib/enum.ex` → `lib/elixir/lib/enum.ex`;
/// `/home/me/app/deps/jason/lib/jason.ex` → `lib/jason.ex`; otherwise from the last `/lib/`.
pub fn relative_source(source: &str, app: &str) -> String {
    let monorepo = format!("/lib/{app}/lib/");
    if let Some(i) = source.rfind(&monorepo) {
        return source[i + 1..].to_string();
    }
    let dep = format!("/deps/{app}/");
    if let Some(i) = source.rfind(&dep) {
        return source[i + dep.len()..].to_string();
    }
    if let Some(i) = source.rfind("/lib/") {
        return source[i + 1..].to_string();
    }
    source.to_string()
}

static DEFMODULE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\s*)defmodule\s+([A-Za-z0-9_.]+)\s+do\b").expect("valid regex")
});
static DOC_ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*@(moduledoc|doc|typedoc)\s+(?:~[Ss])?("""|'''|"((?:[^"\\]|\\.)*)")"#)
        .expect("valid regex")
});
static DEF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(defmacrop?|defp?|defguardp?|defdelegate)\s+([a-zA-Z_][a-zA-Z0-9_?!]*|[^\s(,]+)\s*(\()?")
        .expect("valid regex")
});
static TYPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*@(typep?|opaque|callback|macrocallback)\s+([a-zA-Z_][a-zA-Z0-9_?!]*)\s*(\()?")
        .expect("valid regex")
});

/// Chunks the `@moduledoc`, `@doc` and `@typedoc` of an Elixir source file.
pub fn chunk_elixir_source(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(elixir_doc_sections(source), meta)
}

/// The doc sections of an Elixir source file, with exact lines.
pub fn elixir_doc_sections(source: &str) -> Vec<Section> {
    let lines: Vec<&str> = source.lines().collect();
    let mut modules: Vec<(usize, String)> = Vec::new();
    let mut sections = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(caps) = DEFMODULE.captures(line) {
            let indent = caps[1].len();
            while modules.last().is_some_and(|(d, _)| *d >= indent) {
                modules.pop();
            }
            let name = match modules.last() {
                Some((_, parent)) if !caps[2].contains('.') || indent > 0 => {
                    format!("{parent}.{}", &caps[2])
                }
                _ => caps[2].to_string(),
            };
            modules.push((indent, name));
            i += 1;
            continue;
        }
        let Some(caps) = DOC_ATTR.captures(line) else {
            i += 1;
            continue;
        };
        let kind = caps[1].to_string();
        let doc_start = i;
        let mut doc = Vec::new();
        if let Some(one_line) = caps.get(3) {
            doc.push(SourceLine::new(
                one_line.as_str().replace("\\\"", "\"").replace("\\n", "\n"),
                i as u32 + 1,
            ));
            i += 1;
        } else {
            let delimiter = &caps[2];
            let body_start = i + 1;
            let mut end = body_start;
            while end < lines.len() && lines[end].trim() != delimiter {
                end += 1;
            }
            let indent = lines.get(end).map_or(0, |l| indentation(l).chars().count());
            for (j, l) in lines[body_start..end.min(lines.len())].iter().enumerate() {
                doc.push(SourceLine::new(
                    dedent(l, indent),
                    (body_start + j) as u32 + 1,
                ));
            }
            i = end + 1;
        }
        let module = modules.last().map(|(_, m)| m.clone()).unwrap_or_default();
        let mut heading_path = vec![module];
        let mut body = Vec::new();
        if kind != "moduledoc" {
            // The documented definition: the next def (for @doc) or type (for @typedoc).
            let mut j = i;
            while j < lines.len() && j < i + 40 {
                let l = lines[j];
                let found = if kind == "doc" {
                    DEF.captures(l)
                } else {
                    TYPE.captures(l)
                };
                if let Some(def) = found {
                    let arity = if def.get(3).is_some() {
                        arity_of(&lines[j..])
                    } else {
                        0
                    };
                    let prefix = if kind == "typedoc" { "t:" } else { "" };
                    heading_path.push(format!("{prefix}{}/{arity}", &def[2]));
                    let signature = l.trim().trim_end_matches(" do").trim_end_matches(", do:");
                    body.push(SourceLine::new("```elixir", j as u32 + 1));
                    body.push(SourceLine::new(signature, j as u32 + 1));
                    body.push(SourceLine::new("```", j as u32 + 1));
                    body.push(SourceLine::new("", j as u32 + 1));
                    break;
                }
                if DOC_ATTR.is_match(l) || DEFMODULE.is_match(l) {
                    break;
                }
                j += 1;
            }
        }
        if kind == "moduledoc" {
            sections.extend(moduledoc_sections(
                &heading_path[0],
                doc,
                doc_start as u32 + 1,
            ));
            continue;
        }
        body.extend(doc);
        sections.push(Section {
            anchor: heading_path.get(1).cloned(),
            heading_path,
            heading_line: Some(doc_start as u32 + 1),
            lines: body,
            mergeable: false,
        });
    }
    sections
}

/// The whitespace `line` starts with.
fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `line` without up to `chars` characters of its indentation. Counted in characters, not
/// bytes: a heredoc line indented with a no-break space (two bytes) deeper than its closing
/// delimiter was cut inside that space.
fn dedent(line: &str, chars: usize) -> &str {
    let cut = indentation(line)
        .char_indices()
        .nth(chars)
        .map_or(indentation(line).len(), |(at, _)| at);
    &line[cut..]
}

/// Arity of the call starting at the first `(` of `lines[0]`: top-level commas + 1.
fn arity_of(lines: &[&str]) -> usize {
    let mut depth = 0i32;
    let mut commas = 0;
    let mut any = false;
    for line in lines.iter().take(10) {
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => {
                    depth += 1;
                    continue;
                }
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return if any { commas + 1 } else { 0 };
                    }
                }
                ',' if depth == 1 => commas += 1,
                c if depth >= 1 && !c.is_whitespace() => any = true,
                _ => {}
            }
        }
    }
    if any { commas + 1 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::checks::{assert_well_formed, outline};
    use std::time::Instant;

    /// Elixir's own ebin directory, as the installed Elixir reports it; the tests need Elixir
    /// (CI installs it) and say so rather than pass without it.
    fn elixir_ebin() -> PathBuf {
        let output = std::process::Command::new("elixir")
            .args(["-e", "IO.puts(:code.lib_dir(:elixir))"])
            .output()
            .expect("Elixir is needed for this test: sudo apt-get install elixir");
        assert!(output.status.success(), "elixir -e failed: {output:?}");
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim()).join("ebin")
    }

    #[test]
    fn the_elixir_stdlib_from_its_beams() {
        let ebin = elixir_ebin();
        let elixir = PathBuf::from("elixir");
        let started = Instant::now();
        let output = fetch_docs_output(
            &default_policy(),
            &elixir,
            std::slice::from_ref(&ebin),
            &CancellationToken::new(),
        )
        .unwrap();
        let fetched = started.elapsed();
        let chunks = parse_fetch_docs_output(&output);
        eprintln!(
            "elixir stdlib ({}): {} doc entries -> {} chunks; elixir script {:?}, total {:?}",
            ebin.display(),
            output.lines().count(),
            chunks.len(),
            fetched,
            started.elapsed()
        );
        assert_well_formed(&chunks);
        let any = chunks
            .iter()
            .find(|c| c.heading_path == ["Enum", "any?/2"])
            .expect("Enum.any?/2");
        assert_eq!(any.file_path, "lib/elixir/lib/enum.ex");
        assert_eq!(any.library, "elixir");
        assert!(any.version.as_deref().is_some_and(|v| v.starts_with("1.")));
        assert!((300..600).contains(&any.line_start), "{}", any.line_start);
        assert!(
            any.text
                .starts_with("```elixir\ndef any?(enumerable, fun)\n```"),
            "{}",
            any.text
        );
        assert!(any.url.as_deref().unwrap().ends_with("/Enum.html#any?/2"));
        let moduledoc = chunks.iter().find(|c| c.heading_path == ["Enum"]).unwrap();
        assert!(moduledoc.text.contains("enumerables"));
        assert!(
            chunks
                .iter()
                .any(|c| c.heading_path == ["Agent", "t:on_start/0"])
        );
        assert!(
            chunks
                .iter()
                .any(|c| c.heading_path == ["GenServer", "c:init/1"])
        );
        assert!(chunks.len() > 1500);
    }

    /// A stand-in for `elixir` that starts a `sleep` in its group, writes the sleep's pid to
    /// `pid_file` and waits forever.
    fn hung_elixir(dir: &Path) -> (PathBuf, PathBuf) {
        let pid_file = dir.join("sleep.pid");
        let program = dir.join("elixir");
        let script = format!(
            "#!/bin/sh\nsleep 1000 &\necho $! > {}\nwait\n",
            pid_file.display()
        );
        std::fs::write(&program, script).unwrap();
        let mut permissions = std::fs::metadata(&program).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&program, permissions).unwrap();
        (program, pid_file)
    }

    fn is_running(pid_file: &Path) -> bool {
        let pid: i32 = std::fs::read_to_string(pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        crate::process::procfs::ProcStat::read(pid).is_some_and(|p| !p.is_gone())
    }

    fn short_policy(timeout: Duration) -> Policy {
        let mut policy = default_policy();
        policy.limits.timeout = timeout;
        policy.limits.kill_grace = Duration::from_millis(200);
        policy
    }

    #[test]
    fn a_hung_elixir_times_out_and_takes_its_group_along() {
        let dir = tempfile::tempdir().unwrap();
        let (elixir, pid_file) = hung_elixir(dir.path());
        let policy = short_policy(Duration::from_secs(1));

        let result = fetch_docs_output(&policy, &elixir, &[dir.path().into()], &Default::default());

        assert!(
            matches!(result, Err(ElixirDocsError::TimedOut { seconds: 1, .. })),
            "{result:?}"
        );
        assert!(!is_running(&pid_file), "the helper's child survived");
    }

    #[test]
    fn cancelling_stops_a_hung_elixir_and_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let (elixir, pid_file) = hung_elixir(dir.path());
        let policy = short_policy(Duration::from_secs(600));
        let cancel = CancellationToken::new();
        let canceller = {
            let cancel = cancel.clone();
            let pid_file = pid_file.clone();
            std::thread::spawn(move || {
                while !pid_file.exists() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                cancel.cancel();
            })
        };

        let result = fetch_docs_output(&policy, &elixir, &[dir.path().into()], &cancel);
        canceller.join().unwrap();

        assert!(
            matches!(result, Err(ElixirDocsError::Cancelled { .. })),
            "{result:?}"
        );
        assert!(!is_running(&pid_file), "the helper's child survived");
    }

    #[test]
    fn relative_sources() {
        assert_eq!(
            relative_source(
                "/build/x/elixir-1.14.0.dfsg/lib/elixir/lib/enum.ex",
                "elixir"
            ),
            "lib/elixir/lib/enum.ex"
        );
        assert_eq!(
            relative_source("/home/me/app/deps/jason/lib/jason.ex", "jason"),
            "lib/jason.ex"
        );
        assert_eq!(
            relative_source("/home/me/app/lib/app/thing.ex", "other"),
            "lib/app/thing.ex"
        );
    }

    const SOURCE: &str = r#"defmodule MyApp.Greeter do
  @moduledoc """
  Greets people.

      iex> MyApp.Greeter.hello("Ann")
      "Hello, Ann"
  """

  @typedoc "A name."
  @type name :: String.t()

  @doc """
  Says hello to `name`.
  """
  @spec hello(name, keyword) :: String.t()
  def hello(name, opts \\ []) do
    "Hello, #{name}"
  end

  @doc ~S"""
  Says bye; see `hello/2`.
  """
  defmacro bye(name), do: name

  defmodule Inner do
    @moduledoc "Inner module."
  end
end
"#;

    #[test]
    fn a_module_doc_is_cut_at_its_own_headings_from_source_and_from_beams() {
        let source = "defmodule Sup do\n  @moduledoc \"\"\"\n  Supervises.\n\n  ## Strategies\n\n  One for one.\n\n  ### Details\n\n  More.\n\n  ## Child specification\n\n  A map.\n  \"\"\"\nend\n";
        let meta = FileMeta::new("my_app", SourceType::Api, "lib/sup.ex");
        let chunks = chunk_elixir_source(source, &meta);
        assert_well_formed(&chunks);
        assert_eq!(
            outline(&chunks),
            [
                ("Sup".to_string(), None, 2),
                ("Sup > Strategies".to_string(), Some("module-strategies"), 5),
                (
                    "Sup > Strategies > Details".to_string(),
                    Some("module-details"),
                    9
                ),
                (
                    "Sup > Child specification".to_string(),
                    Some("module-child-specification"),
                    13
                ),
            ]
        );
        assert!(
            chunks[1].text.contains("One for one."),
            "{}",
            chunks[1].text
        );
        assert!(!chunks[1].text.contains("A map."));

        let doc = "Supervises.\n\n## Strategies\n\nOne for one.\n";
        let line = serde_json::json!({"module": "Sup", "kind": "module", "app": "my_app",
            "vsn": "1.0.0", "source": "/x/lib/sup.ex", "line": 1, "doc": doc, "signature": []});
        let chunks = parse_fetch_docs_output(&line.to_string());
        let paths: Vec<String> = chunks.iter().map(|c| c.heading_path.join(" > ")).collect();
        assert_eq!(paths, ["Sup", "Sup > Strategies"]);
        assert_eq!(chunks[1].anchor.as_deref(), Some("module-strategies"));
    }

    #[test]
    fn a_heredoc_line_indented_with_wider_spaces_than_its_delimiter_keeps_its_text() {
        // The delimiter is indented two bytes; " \u{a0}" is three, and byte 2 is inside the
        // no-break space.
        let source = "defmodule A do\n  @doc \"\"\"\n  Adds.\n \u{a0}Twice.\n  \"\"\"\n  def add(a), do: a\nend\n";
        let sections = elixir_doc_sections(source);
        let texts: Vec<&str> = sections[0].lines.iter().map(|l| l.text.as_str()).collect();
        assert!(
            texts.contains(&"Adds.") && texts.contains(&"Twice."),
            "{texts:?}"
        );
        assert_eq!(dedent("\u{3000}\u{3000}x", 1), "\u{3000}x");
        assert_eq!(dedent("    x", 2), "  x");
    }

    #[test]
    fn ex_source_docs_with_their_definitions() {
        let meta = FileMeta::new("my_app", SourceType::Api, "lib/my_app/greeter.ex");
        let chunks = chunk_elixir_source(SOURCE, &meta);
        assert_well_formed(&chunks);
        let paths: Vec<String> = chunks.iter().map(|c| c.heading_path.join(" > ")).collect();
        assert_eq!(
            paths,
            [
                "MyApp.Greeter",
                "MyApp.Greeter > t:name/0",
                "MyApp.Greeter > hello/2",
                "MyApp.Greeter > bye/1",
                "MyApp.Greeter.Inner",
            ]
        );
        assert!(
            chunks[0].text.starts_with("Greets people.\n\n    iex>"),
            "{}",
            chunks[0].text
        );
        assert_eq!((chunks[0].line_start, chunks[0].line_end), (2, 6));
        assert_eq!(
            chunks[2].text,
            "```elixir\ndef hello(name, opts \\\\ [])\n```\n\nSays hello to `name`."
        );
        assert_eq!((chunks[2].line_start, chunks[2].line_end), (12, 16));
        assert_eq!(chunks[3].anchor.as_deref(), Some("bye/1"));
        assert_eq!(chunks[4].text, "Inner module.");
    }
}
