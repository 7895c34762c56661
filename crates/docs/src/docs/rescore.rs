//! The second stage of a hybrid search: the fused candidates of both halves (fifty of
//! each) are re-scored with evidence the two halves do not weigh, then the best are kept.
//!
//! - **The question's ecosystem.** A question that says Elixir, names `Enum`, `GenServer`,
//!   ExUnit or mix, or pipes with `|>`, is about Elixir; one that says Rust or cargo, names a
//!   crate path (`std::fs`) or an error code (`E0502`), about Rust. Passages of the other
//!   ecosystem are demoted (not dropped: a question about both still finds both).
//! - **One section, one result.** Fragments of one section (a long section is cut into
//!   several chunks) count once, at the best fragment's place, so the top ten offer ten
//!   places.
//! - **One passage, one result.** rustdoc publishes a re-exported item's page on each of its
//!   paths (`std::collections::HashSet` and `std::collections::hash_set::HashSet`: 3,182
//!   chunks of the toolchain index are such copies), and cargo's command pages repeat whole
//!   sections (Manifest Options, Package Selection); a passage found word for word under the
//!   same heading on several pages is shown once, from the shortest path. Measured with copies accepted as answers, it changes the
//!   scores by at most 0.003 (std MRR@10 0.250 → 0.253): it gives the reader ten
//!   different passages rather than a better first one.
//!
//! Measured on the whole toolchain index (`benches/docs_quality.rs`, 235 held-out and 62
//! development questions; Hit@5 / MRR@10): fusion alone 0.626 / 0.465 held out, 0.726 / 0.484
//! development; with this stage 0.638 / 0.477 and 0.758 / 0.489. Tried and left out because
//! they lost on the held-out set: promoting a passage whose item is a name the question
//! writes as code (×1.6: 0.613 / 0.458), promoting by the share of the question's words in
//! the heading path (+50 %: 0.587 / 0.419, though the development set gained), at most two
//! or three results per page (0.604 / 0.452, 0.630 / 0.459 held out but the development set
//! lost 0.03), weighting the vector list 0.7 or 1.3 in the fusion (within ±0.01).

use std::collections::{HashMap, HashSet};

use super::search::Hit;

/// Score factor of a passage from the other ecosystem than the question's.
const OTHER_ECOSYSTEM: f32 = 0.5;
/// Where rustup installs the Rust docs (`sources::rust_toolchain_root`), in their URLs.
const RUST_DOCS: &str = "/share/doc/rust/html/";
/// Which documentation a question or a passage belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Rust,
    Elixir,
}

/// The ecosystem a question is about, when it says.
pub fn question_ecosystem(query: &str) -> Option<Ecosystem> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |word: &str| words.contains(&word);
    const ELIXIR_WORDS: &[&str] = &[
        "elixir",
        "genserver",
        "exunit",
        "ex_unit",
        "iex",
        "otp",
        "beam",
        "erlang",
        "supervisor",
        "defmodule",
        "mix",
        "exs",
        "eex",
        "doctest",
        "ecto",
        "phoenix",
    ];
    const RUST_WORDS: &[&str] = &[
        "rust",
        "cargo",
        "crate",
        "crates",
        "rustc",
        "clippy",
        "rustdoc",
        "rustup",
        "borrow",
        "borrowed",
        "lifetime",
        "lifetimes",
        "trait",
        "traits",
        "impl",
        "unsafe",
        "struct",
        "enum",
        "vec",
        "std",
        "toml",
        "rustfmt",
        "macro_rules",
    ];
    const ELIXIR_MODULES: &[&str] = &[
        "Enum.",
        "Map.",
        "String.",
        "Keyword.",
        "List.",
        "Stream.",
        "Task.",
        "Agent.",
        "Process.",
        "Kernel.",
        "GenServer.",
        "Supervisor.",
        "Registry.",
        "ExUnit",
        "Mix.",
        "Logger.",
        "File.",
        "Path.",
        "System.",
        "Regex.",
        "IO.",
    ];
    let elixir_code = query.contains("|>")
        || query.contains("%{")
        || ELIXIR_MODULES.iter().any(|m| query.contains(m));
    let rust_code = query.contains("::")
        || query.contains("&mut ")
        || query.contains("Cargo.toml")
        || error_code(query);
    let elixir = elixir_code || ELIXIR_WORDS.iter().any(|w| has(w));
    let rust = rust_code || RUST_WORDS.iter().any(|w| has(w));
    match (rust, elixir) {
        (true, false) => Some(Ecosystem::Rust),
        (false, true) => Some(Ecosystem::Elixir),
        // Both: the code decides, else the named language.
        (true, true) if elixir_code && !rust_code => Some(Ecosystem::Elixir),
        (true, true) if rust_code && !elixir_code => Some(Ecosystem::Rust),
        (true, true) if has("elixir") && !has("rust") => Some(Ecosystem::Elixir),
        (true, true) if has("rust") && !has("elixir") => Some(Ecosystem::Rust),
        _ => None,
    }
}

/// Whether `text` holds a rustc error code, `E` and four digits.
fn error_code(text: &str) -> bool {
    text.as_bytes()
        .windows(5)
        .any(|w| w[0] == b'E' && w[1..].iter().all(u8::is_ascii_digit))
}

/// The ecosystem a passage belongs to, from its file: Elixir sources (and the modules of
/// Elixir's own apps), Rust sources, or the Rust docs rustup installs. Other pages (the
/// Python docs, a project's HTML) belong to neither, and no question demotes them.
pub fn passage_ecosystem(hit: &Hit) -> Option<Ecosystem> {
    let path = hit.file_path.as_str();
    if path.ends_with(".ex") || path.ends_with(".exs") {
        return Some(Ecosystem::Elixir);
    }
    if path.ends_with(".rs") || path.ends_with("Cargo.toml") {
        return Some(Ecosystem::Rust);
    }
    let in_rust_docs = hit
        .url
        .as_deref()
        .is_some_and(|url| url.contains(RUST_DOCS));
    (path.ends_with(".html") && in_rust_docs).then_some(Ecosystem::Rust)
}

/// Re-scores `candidates` (fused, best first) for `query` and returns the best `limit`,
/// one per section.
pub fn rescore(query: &str, candidates: Vec<Hit>, limit: usize) -> Vec<Hit> {
    let ecosystem = question_ecosystem(query);
    let mut scored: Vec<Hit> = candidates
        .into_iter()
        .map(|mut hit| {
            if let (Some(asked), Some(found)) = (ecosystem, passage_ecosystem(&hit))
                && asked != found
            {
                hit.score *= OTHER_ECOSYSTEM;
            }
            hit
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut sections = HashSet::new();
    scored.retain(|hit| sections.insert((hit.file_path.clone(), hit.heading.clone())));
    let mut kept = collapse_copies(scored);
    kept.truncate(limit);
    kept
}

/// What a passage says, wherever it is published: its own heading (the last of its path)
/// and its text.
fn content_key(hit: &Hit) -> (&str, &str) {
    (own_heading(&hit.heading), hit.content.as_str())
}

/// A passage's own heading: the last of its heading path (the page's title and the path to
/// it differ between the copies of a passage).
pub fn own_heading(heading: &str) -> &str {
    heading.rsplit(" > ").next().unwrap_or(heading)
}

/// Keeps one copy of a passage published under several paths (rustdoc documents a
/// re-exported item on each path: `std::collections::HashSet` and
/// `std::collections::hash_set::HashSet`, `std::sync::Mutex` and `std::sync::poison::Mutex`;
/// cargo's command pages repeat their Manifest Options),
/// at the place of its best-ranked copy, shown from the shortest path (the one people write).
/// The other copies stay in the index: a lookup that retrieves only one copy returns it.
fn collapse_copies(ranked: Vec<Hit>) -> Vec<Hit> {
    let mut shown_from: HashMap<(&str, &str), &Hit> = HashMap::new();
    for hit in &ranked {
        let copy = shown_from.entry(content_key(hit)).or_insert(hit);
        if (hit.file_path.len(), &hit.file_path) < (copy.file_path.len(), &copy.file_path) {
            *copy = hit;
        }
    }
    let mut taken = HashSet::new();
    let mut kept = Vec::new();
    for hit in &ranked {
        let key = content_key(hit);
        if taken.insert(key) {
            kept.push(Hit {
                score: hit.score,
                ..shown_from[&key].clone()
            });
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(file: &str, heading: &str, score: f32) -> Hit {
        Hit {
            id: format!("{file}#{heading}"),
            content: String::new(),
            library: String::new(),
            version: None,
            source_type: "api".into(),
            file_path: file.into(),
            heading: heading.into(),
            anchor: None,
            line_start: 1,
            line_end: 1,
            url: Some(format!(
                "file:///root/.rustup/toolchains/stable/share/doc/rust/html/{file}"
            )),
            score,
        }
    }

    #[test]
    fn the_question_says_its_ecosystem() {
        use Ecosystem::*;
        for (question, expected) in [
            ("how do I stop a reduce early in Elixir", Some(Elixir)),
            ("Enum.reduce_while with an accumulator", Some(Elixir)),
            ("pipe a list |> into a function", Some(Elixir)),
            ("GenServer call timeout", Some(Elixir)),
            ("mix test only one file", Some(Elixir)),
            ("error[E0502]: cannot borrow as mutable", Some(Rust)),
            ("std::fs::read_to_string returns an error", Some(Rust)),
            ("add a dependency from git in Cargo.toml", Some(Rust)),
            ("how do I split a string on whitespace", None),
            ("rust vs elixir pattern matching", None),
        ] {
            assert_eq!(question_ecosystem(question), expected, "{question}");
        }
    }

    #[test]
    fn the_other_ecosystem_is_demoted_and_a_section_counts_once() {
        let candidates = vec![
            hit(
                "std/iter/trait.Iterator.html",
                "std::iter::Iterator > fold",
                1.0,
            ),
            hit(
                "std/iter/trait.Iterator.html",
                "std::iter::Iterator > fold",
                0.95,
            ),
            hit("lib/elixir/lib/enum.ex", "Enum > reduce_while/3", 0.7),
            hit(
                "std/ops/enum.ControlFlow.html",
                "std::ops::ControlFlow",
                0.6,
            ),
        ];
        let ranked: Vec<String> = rescore("stop a reduce early in Elixir", candidates.clone(), 3)
            .into_iter()
            .map(|h| h.heading)
            .collect();
        assert_eq!(
            ranked,
            [
                "Enum > reduce_while/3",
                "std::iter::Iterator > fold",
                "std::ops::ControlFlow"
            ]
        );
        let ranked = rescore("stop a fold early", candidates, 3);
        assert_eq!(ranked[0].heading, "std::iter::Iterator > fold");
        assert_eq!(ranked[1].heading, "Enum > reduce_while/3");
    }

    #[test]
    fn only_the_rust_docs_pages_are_rusts() {
        let std_page = hit("std/fs/fn.read.html", "std::fs::read", 1.0);
        assert_eq!(passage_ecosystem(&std_page), Some(Ecosystem::Rust));
        let python_page = Hit {
            url: Some("file:///usr/share/doc/python3/html/library/enum.html".into()),
            ..hit(
                "library/enum.html",
                "`enum` — Support for enumerations",
                1.0,
            )
        };
        assert_eq!(passage_ecosystem(&python_page), None);
        // "Enum" makes the question Elixir's; the Python page is not demoted as Rust's.
        let ranked = rescore(
            "Enum members with auto values",
            vec![
                python_page,
                hit("lib/elixir/lib/enum.ex", "Enum > map/2", 0.9),
            ],
            2,
        );
        assert_eq!(ranked[0].file_path, "library/enum.html");
        let source = hit("src/lib.rs", "mycrate > parse", 1.0);
        assert_eq!(passage_ecosystem(&source), Some(Ecosystem::Rust));
    }

    #[test]
    fn a_passage_published_under_two_paths_is_shown_once_from_the_shorter() {
        let copy = |file: &str, item: &str, score: f32| Hit {
            content: "Visits the values representing the intersection".into(),
            ..hit(file, &format!("{item} > intersection"), score)
        };
        let candidates = vec![
            copy(
                "std/collections/hash_set/struct.HashSet.html",
                "std::collections::hash_set::HashSet",
                0.9,
            ),
            hit(
                "std/collections/struct.BTreeSet.html",
                "BTreeSet > union",
                0.8,
            ),
            copy(
                "std/collections/struct.HashSet.html",
                "std::collections::HashSet",
                0.7,
            ),
        ];
        let ranked: Vec<(String, f32)> = rescore("values in both sets", candidates, 10)
            .into_iter()
            .map(|h| (h.file_path, h.score))
            .collect();
        assert_eq!(
            ranked,
            [
                ("std/collections/struct.HashSet.html".to_string(), 0.9),
                ("std/collections/struct.BTreeSet.html".to_string(), 0.8),
            ]
        );
    }
}
