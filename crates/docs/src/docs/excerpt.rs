//! The few sentences of a passage that best match a query: what docs_lookup shows of the
//! results after the first ones, so a model reader sees why each was found without paying for
//! every passage whole (docs_read gives the whole passage by its id).

use std::collections::HashSet;

/// Sentences kept at most.
const SENTENCES: usize = 3;
/// Characters kept at most, whole sentences first.
const MAX_CHARS: usize = 320;

/// Words that say nothing about what a question is about.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "my", "of", "on", "or", "so", "that", "the",
    "this", "to", "what", "when", "where", "which", "why", "with", "without", "you", "your",
];

/// Up to three sentences of `passage` that share the most query words (ties: the earlier),
/// in the passage's order, joined with " … " where sentences were skipped; at most
/// `MAX_CHARS` characters. Code blocks count as one sentence each.
pub fn excerpt(passage: &str, query: &str) -> String {
    let words = query_words(query);
    let sentences = sentences(passage);
    let mut ranked: Vec<(usize, usize)> = sentences
        .iter()
        .enumerate()
        .map(|(index, sentence)| (index, overlap(sentence, &words)))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut length = 0;
    for (index, score) in ranked {
        if chosen.len() == SENTENCES || (score == 0 && !chosen.is_empty()) {
            break;
        }
        let cost = sentences[index].chars().count();
        if !chosen.is_empty() && length + cost > MAX_CHARS {
            continue;
        }
        chosen.push(index);
        length += cost;
    }
    chosen.sort_unstable();
    let mut out = String::new();
    let mut previous: Option<usize> = None;
    for index in chosen {
        match previous {
            None if index > 0 => out.push_str("… "),
            Some(p) if index > p + 1 => out.push_str(" … "),
            Some(_) => out.push(' '),
            None => {}
        }
        out.push_str(&sentences[index]);
        previous = Some(index);
    }
    truncate(&out, MAX_CHARS)
}

fn query_words(query: &str) -> HashSet<String> {
    words(query)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// Lowercased words and identifiers (`Enum.chunk_every` stays one word, and its parts count).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == ':'))
        .flat_map(|w| {
            let w = w.trim_matches(|c: char| c == '.' || c == ':');
            let parts = w.split(['.', ':']).filter(move |p| p.len() > 1 && *p != w);
            std::iter::once(w).chain(parts)
        })
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn overlap(sentence: &str, query: &HashSet<String>) -> usize {
    let found: HashSet<String> = words(sentence).filter(|w| query.contains(w)).collect();
    found.len()
}

/// The passage's sentences, with whitespace collapsed; a fenced code block is one sentence.
fn sentences(passage: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut prose = String::new();
    let mut code: Option<String> = None;
    for line in passage.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut code, fence) {
            (Some(block), true) => {
                block.push_str("\n```");
                sentences.push(std::mem::take(block));
                code = None;
            }
            (Some(block), false) => {
                block.push('\n');
                block.push_str(line);
            }
            (None, true) => {
                split_prose(&std::mem::take(&mut prose), &mut sentences);
                code = Some(line.trim().to_string());
            }
            (None, false) if line.trim().is_empty() => {
                split_prose(&std::mem::take(&mut prose), &mut sentences);
            }
            (None, false) => {
                prose.push(' ');
                prose.push_str(line.trim());
            }
        }
    }
    if let Some(block) = code {
        sentences.push(block);
    }
    split_prose(&prose, &mut sentences);
    sentences
}

/// Splits prose at ". ", "? " and "! " (not inside `code`).
fn split_prose(prose: &str, sentences: &mut Vec<String>) {
    let mut current = String::new();
    let mut in_code = false;
    let mut chars = prose.trim().chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if c == '`' {
            in_code = !in_code;
        }
        let ends = matches!(c, '.' | '?' | '!') && !in_code;
        if ends && chars.peek().is_none_or(|next| next.is_whitespace()) {
            let sentence = current.trim().to_string();
            if !sentence.is_empty() {
                sentences.push(sentence);
            }
            current.clear();
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        sentences.push(rest.to_string());
    }
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MUTEX: &str = "Mutexes have a reputation for being difficult to use. You must \
        attempt to acquire the lock before using the data.\n\nWhen you're done with the data \
        that the mutex guards, you must unlock the data so that other threads can acquire \
        the lock. The type system helps here.\n\n```rust\nlet m = Mutex::new(5);\n```\n\n\
        Thanks to Rust's type system and ownership rules, you can't get locking wrong.";

    #[test]
    fn the_sentences_that_share_the_most_query_words_are_kept_in_order() {
        let got = excerpt(MUTEX, "how do other threads acquire the lock of a mutex");
        assert_eq!(
            got,
            "… You must attempt to acquire the lock before using the data. When you're done \
             with the data that the mutex guards, you must unlock the data so that other \
             threads can acquire the lock. … ```rust\nlet m = Mutex::new(5);\n```"
        );
    }

    #[test]
    fn code_counts_as_one_sentence_and_identifiers_match_by_their_parts() {
        let got = excerpt(MUTEX, "Mutex::new example");
        assert!(
            got.contains("```rust\nlet m = Mutex::new(5);\n```"),
            "{got}"
        );
    }

    #[test]
    fn a_query_that_matches_nothing_gets_the_opening_and_length_is_capped() {
        assert_eq!(
            excerpt(MUTEX, "serde derive"),
            "Mutexes have a reputation for being difficult to use."
        );
        let long = "word ".repeat(200);
        let got = excerpt(&long, "word");
        assert!(
            got.chars().count() <= MAX_CHARS + 1 && got.ends_with('…'),
            "{got}"
        );
        assert_eq!(excerpt("", "anything"), "");
    }

    #[test]
    fn sentences_do_not_end_inside_inline_code_or_abbreviated_paths() {
        let got = sentences("Call `Enum.map/2. ok` then stop. Use std::fs::read.rs files? Yes!");
        assert_eq!(
            got,
            [
                "Call `Enum.map/2. ok` then stop.",
                "Use std::fs::read.rs files?",
                "Yes!"
            ]
        );
    }
}
