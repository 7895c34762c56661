//! Test-only: the real WordPiece count of the embedding model's tokenizer (BERT uncased:
//! lowercase, strip accents, split on whitespace and punctuation, greedy longest-match
//! pieces), to check that [`super::chunk::estimate_tokens`] keeps chunks inside the window.

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

/// The model's tokenizer in the shared folder that sits beside the project (as in CI).
pub const TOKENIZER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/models/all-MiniLM-L6-v2-onnx/tokenizer.json"
);

/// The model's vocabulary; the tests that count word pieces need it, so it must be there.
fn vocab() -> Option<&'static HashSet<String>> {
    static VOCAB: OnceLock<HashSet<String>> = OnceLock::new();
    Some(VOCAB.get_or_init(|| {
        let text = std::fs::read_to_string(Path::new(TOKENIZER))
            .unwrap_or_else(|e| panic!("the model's tokenizer at {TOKENIZER}: {e}"));
        let json: serde_json::Value = serde_json::from_str(&text).expect("tokenizer.json is JSON");
        let vocab = json["model"]["vocab"]
            .as_object()
            .expect("a WordPiece vocabulary");
        vocab.keys().cloned().collect()
    }))
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0xF900..=0xFAFF)
}

/// Word pieces of `text` without `[CLS]`/`[SEP]`, or None when the tokenizer is missing.
pub fn count(text: &str) -> Option<usize> {
    let vocab = vocab()?;
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else if is_punctuation(c) || is_cjk(c) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            words.push(c.to_lowercase().collect());
        } else {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut total = 0;
    for word in words {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > 100 {
            total += 1;
            continue;
        }
        let mut start = 0;
        let mut pieces = 0;
        let mut unknown = false;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = false;
            while end > start {
                let mut piece: String = chars[start..end].iter().collect();
                if start > 0 {
                    piece.insert_str(0, "##");
                }
                if vocab.contains(&piece) {
                    found = true;
                    break;
                }
                end -= 1;
            }
            if !found {
                unknown = true;
                break;
            }
            pieces += 1;
            start = end;
        }
        total += if unknown { 1 } else { pieces };
    }
    Some(total)
}

#[test]
fn counts_like_bert() {
    assert_eq!(count("Hello, world!"), Some(4));
    assert_eq!(count("unaffable"), Some(3));
}

/// Real and estimated counts summed over many texts, and the largest real count.
pub fn compare<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<(usize, usize, usize)> {
    let (mut real, mut estimated, mut max) = (0, 0, 0);
    for text in texts {
        let n = count(text)?;
        real += n;
        max = max.max(n);
        estimated += super::chunk::estimate_tokens(text);
    }
    Some((real, estimated, max))
}
