//! The second stage of a hybrid search: the fused candidates of both halves (about fifty)
//! are re-scored with evidence the two halves do not weigh, then the best are kept.
//!
//! - **The question's ecosystem.** A question that says Elixir, names `Enum`, `GenServer`,
//!   ExUnit or mix, or pipes with `|>`, is about Elixir; one that says Rust or cargo, names a
//!   crate path (`std::fs`) or an error code (`E0502`), about Rust. Passages of the other
//!   ecosystem are demoted (not dropped: a question about both still finds both).
//! - **Identifiers.** A name in the question written as code (`HashMap::entry`,
//!   `Enum.reduce_while`, `parse::<i32>()`, `split_once`) that is the passage's item
//!   (the last part of its heading path, or its page's item path) promotes it.
//! - **Titles.** The share of the question's words found in the passage's heading path
//!   (page, section, item) promotes it: a section titled with the words asked about beats a
//!   sibling section that merely mentions them.
//! - **One section, one result.** Fragments of one section (a long section is cut into
//!   several chunks) count once, at the best fragment's place, and one page takes at most
//!   [`PER_PAGE`] of the results, so the top ten offer more than one place.
//!
//! The weights were chosen on the development questions (`tests/fixtures/docs-eval/
//! questions.json`); the held-out set (`toolchain-questions.json`) measures them.

use std::collections::{HashMap, HashSet};

use super::search::Hit;

/// Results one page may take, at most (more only when nothing else is left).
pub const PER_PAGE: usize = 2;
/// Score factor of a passage from the other ecosystem than the question's.
const OTHER_ECOSYSTEM: f32 = 0.5;
/// Score factor of a passage whose item is a name the question writes as code.
const NAMED_ITEM: f32 = 1.6;
/// Score factor per share of the question's words in the passage's headings (all of them:
/// 1 + TITLE_WEIGHT).
const TITLE_WEIGHT: f32 = 0.5;

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
/// Elixir's own apps) or Rust's docs and sources.
pub fn passage_ecosystem(hit: &Hit) -> Option<Ecosystem> {
    let path = hit.file_path.as_str();
    if path.ends_with(".ex") || path.ends_with(".exs") {
        return Some(Ecosystem::Elixir);
    }
    if path.ends_with(".html") || path.ends_with(".rs") || path.ends_with("Cargo.toml") {
        return Some(Ecosystem::Rust);
    }
    None
}

/// Names the question writes as code: the parts of `a::b`, `A.b`, `f()`, `x::<T>` and
/// snake_case or CamelCase words, lowercased.
pub fn code_names(query: &str) -> HashSet<String> {
    let mut names = HashSet::new();
    for token in
        query.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '?' | '`' | '"' | '\''))
    {
        let code_like = token.contains("::")
            || token.contains("()")
            || token.contains('(')
            || (token.contains('.') && token.chars().next().is_some_and(char::is_uppercase))
            || token.contains('_')
            || is_camel(token);
        if !code_like {
            continue;
        }
        for part in
            token.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!' || c == '?'))
        {
            let part = part.trim_end_matches(['!', '?']);
            if part.len() >= 2
                && part
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
            {
                names.insert(part.to_lowercase());
            }
        }
    }
    names
}

/// `HashMap`, `GenServer`, `parseInt`: an upper-case letter after the first character.
fn is_camel(token: &str) -> bool {
    let letters: Vec<char> = token.chars().filter(|c| c.is_alphanumeric()).collect();
    letters.len() >= 3
        && letters.iter().all(|c| c.is_ascii_alphanumeric())
        && letters[1..].iter().any(char::is_ascii_uppercase)
        && letters.iter().any(char::is_ascii_lowercase)
}

/// The name a passage is about: its item, the heading path's last part, without its path
/// or an Elixir arity (`std::collections::HashMap` → `hashmap`, `reduce_while/3` →
/// `reduce_while`, `any?/2` → `any`).
fn item_name(hit: &Hit) -> String {
    let last = hit.heading.rsplit(" > ").next().unwrap_or_default();
    let item = last.split('/').next().unwrap_or(last);
    let item = item.rsplit(['.', ':']).next().unwrap_or(item);
    item.trim().trim_end_matches(['?', '!']).to_lowercase()
}

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "is", "are", "be", "do",
    "does", "how", "what", "why", "when", "which", "can", "i", "my", "me", "it", "its", "this",
    "that", "from", "by", "as", "at", "into", "if", "so", "not", "no", "way", "use", "using",
    "get", "want", "there", "should", "would", "will", "you", "your", "we", "but", "than", "then",
    "out", "up", "like", "make", "all", "one", "some", "any", "still", "just",
];

/// The question's words that say what it is about: lowercased, without stopwords, crudely
/// singular ("iterators" → "iterator").
fn content_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.len() > 1 && !STOPWORDS.contains(&w.as_str()))
        .map(|w| singular(&w))
        .collect()
}

fn singular(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_string(),
        _ => word.to_string(),
    }
}

/// Re-scores `candidates` (fused, best first) for `query` and returns the best `limit`.
pub fn rerank(query: &str, candidates: Vec<Hit>, limit: usize) -> Vec<Hit> {
    let ecosystem = question_ecosystem(query);
    let names = code_names(query);
    let words = content_words(query);
    let mut scored: Vec<Hit> = candidates
        .into_iter()
        .map(|mut hit| {
            let mut factor = 1.0;
            if let (Some(asked), Some(found)) = (ecosystem, passage_ecosystem(&hit))
                && asked != found
            {
                factor *= OTHER_ECOSYSTEM;
            }
            if names.contains(&item_name(&hit)) {
                factor *= NAMED_ITEM;
            }
            if !words.is_empty() {
                let heading = content_words(&hit.heading);
                let shared = words.iter().filter(|w| heading.contains(*w)).count();
                factor *= 1.0 + TITLE_WEIGHT * shared as f32 / words.len() as f32;
            }
            hit.score *= factor;
            hit
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    diversify(scored, limit)
}

/// One result per section (its best fragment), at most [`PER_PAGE`] per page while other
/// pages have results to give; then the best `limit`.
fn diversify(scored: Vec<Hit>, limit: usize) -> Vec<Hit> {
    let mut sections = HashSet::new();
    let mut per_page: HashMap<String, usize> = HashMap::new();
    let (mut kept, mut later) = (Vec::new(), Vec::new());
    for hit in scored {
        if !sections.insert((hit.file_path.clone(), hit.heading.clone())) {
            continue;
        }
        let on_page = per_page.entry(hit.file_path.clone()).or_default();
        *on_page += 1;
        if *on_page <= PER_PAGE {
            kept.push(hit);
        } else {
            later.push(hit);
        }
    }
    kept.extend(later);
    kept.truncate(limit);
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
            url: None,
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
    fn names_written_as_code_are_picked_out() {
        let names = code_names(
            "why does `parse::<i32>()` fail, and HashMap::entry vs Enum.reduce_while? plain words",
        );
        for name in ["parse", "i32", "hashmap", "entry", "enum", "reduce_while"] {
            assert!(names.contains(name), "{name} in {names:?}");
        }
        assert!(
            !names.contains("plain") && !names.contains("words"),
            "{names:?}"
        );
    }

    #[test]
    fn the_other_ecosystem_the_named_item_and_the_titles_move_passages() {
        let candidates = vec![
            hit(
                "std/iter/trait.Iterator.html",
                "std::iter::Iterator > fold",
                1.0,
            ),
            hit("lib/elixir/lib/enum.ex", "Enum > reduce_while/3", 0.7),
        ];
        let ranked = rerank("stop a reduce early in Elixir", candidates.clone(), 2);
        assert_eq!(ranked[0].file_path, "lib/elixir/lib/enum.ex");

        let candidates = vec![
            hit(
                "std/process/struct.Command.html",
                "std::process::Command > status",
                1.0,
            ),
            hit(
                "std/process/struct.Command.html",
                "std::process::Command > output",
                0.8,
            ),
        ];
        let ranked = rerank("capture what Command::output() printed", candidates, 2);
        assert!(ranked[0].heading.ends_with("output"), "{ranked:?}");

        let candidates = vec![
            hit(
                "cargo/reference/specifying-dependencies.html",
                "Specifying Dependencies > Overview",
                1.0,
            ),
            hit(
                "cargo/reference/specifying-dependencies.html",
                "Specifying Dependencies > Specifying dependencies from git repositories",
                0.9,
            ),
        ];
        let ranked = rerank("add a dependency from a git repository", candidates, 2);
        assert!(ranked[0].heading.contains("git"), "{ranked:?}");
    }

    #[test]
    fn a_section_counts_once_and_a_page_takes_two_places_while_others_wait() {
        let candidates = vec![
            hit("a.html", "A > one", 1.0),
            hit("a.html", "A > one", 0.95),
            hit("a.html", "A > two", 0.9),
            hit("a.html", "A > three", 0.8),
            hit("b.html", "B", 0.5),
        ];
        let ranked: Vec<String> = rerank("q", candidates, 4)
            .into_iter()
            .map(|h| h.heading)
            .collect();
        assert_eq!(ranked, ["A > one", "A > two", "B", "A > three"]);
    }
}
