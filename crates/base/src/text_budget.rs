//! Text that has to fit what a client can read. Results travel as JSON (often in one
//! server-sent event, which the official Python SDK caps at 1 MiB), where a NUL byte costs six
//! bytes and a quote two: budgets here count the bytes of the JSON string, not of the text.
//! What does not fit keeps its head and its tail, with a marker that says how much was left out.

/// The marker put where bytes were left out.
pub fn elision_marker(elided: u64) -> String {
    format!("[... {elided} bytes elided ...]")
}

/// Bytes `c` takes inside a JSON string, as serde_json writes it.
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Where the characters of `bytes` (read as UTF-8, an invalid sequence becoming U+FFFD) start
/// and what each costs in a JSON string.
fn characters(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut units = Vec::new();
    let mut offset = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            units.push((offset, json_len(c)));
            offset += c.len_utf8();
        }
        if !chunk.invalid().is_empty() {
            units.push((offset, '\u{FFFD}'.len_utf8()));
            offset += chunk.invalid().len();
        }
    }
    units
}

/// The bytes `bytes` take as a JSON string (without its quotes).
pub fn json_cost(bytes: &[u8]) -> usize {
    characters(bytes).iter().map(|&(_, cost)| cost).sum()
}

/// The longest prefix of `bytes`, cut between characters, that costs at most `budget`.
pub fn prefix_within(bytes: &[u8], budget: usize) -> &[u8] {
    let mut spent = 0;
    for (offset, cost) in characters(bytes) {
        spent += cost;
        if spent > budget {
            return &bytes[..offset];
        }
    }
    bytes
}

/// The longest suffix of `bytes`, cut between characters, that costs at most `budget`.
pub fn suffix_within(bytes: &[u8], budget: usize) -> &[u8] {
    let mut spent = 0;
    let mut start = bytes.len();
    for (offset, cost) in characters(bytes).into_iter().rev() {
        spent += cost;
        if spent > budget {
            break;
        }
        start = offset;
    }
    &bytes[start..]
}

/// `text` itself when it costs at most `budget` as JSON; else its head and tail with a line
/// between them saying how many bytes were left out and `why`.
pub fn fit(text: &str, budget: usize, why: &str) -> String {
    if json_cost(text.as_bytes()) <= budget {
        return text.to_string();
    }
    let half = budget / 2;
    let head = prefix_within(text.as_bytes(), half);
    let tail = suffix_within(text.as_bytes(), budget - half);
    let elided = (text.len() - head.len() - tail.len()) as u64;
    format!(
        "{}\n[... {elided} bytes elided: {why} ...]\n{}",
        String::from_utf8_lossy(head),
        String::from_utf8_lossy(tail)
    )
}

/// `text` itself when it costs at most `budget` as JSON; else its head within the budget,
/// then a line saying `why` the rest is not there.
pub fn head(text: &str, budget: usize, why: &str) -> String {
    if json_cost(text.as_bytes()) <= budget {
        return text.to_string();
    }
    let head = prefix_within(text.as_bytes(), budget);
    format!("{}\n… ({why})\n", String::from_utf8_lossy(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialized_len(text: &str) -> usize {
        serde_json::to_string(text).unwrap().len() - 2
    }

    #[test]
    fn costs_are_what_serde_json_writes() {
        let samples = [
            "plain",
            "quote \" and backslash \\",
            "lines\n\r\ttabs",
            "\0\u{1}\u{1f} controls",
            "ünïcödé 日本語 🦀",
            "\u{7f} del is not escaped",
        ];
        for sample in samples {
            assert_eq!(
                json_cost(sample.as_bytes()),
                serialized_len(sample),
                "{sample:?}"
            );
        }
        let invalid = b"ok\xff\xfe then \xe6\x97";
        let lossy = String::from_utf8_lossy(invalid);
        assert_eq!(json_cost(invalid), serialized_len(&lossy));
    }

    #[test]
    fn prefixes_and_suffixes_stay_within_the_budget_on_character_boundaries() {
        let text = "aé\0日本🦀\"b".as_bytes();
        for budget in 0..=json_cost(text) + 2 {
            let head = prefix_within(text, budget);
            let tail = suffix_within(text, budget);
            assert!(json_cost(head) <= budget, "head {budget}");
            assert!(json_cost(tail) <= budget, "tail {budget}");
            assert!(std::str::from_utf8(head).is_ok(), "head {budget}: {head:?}");
            assert!(std::str::from_utf8(tail).is_ok(), "tail {budget}: {tail:?}");
            assert!(text.starts_with(head) && text.ends_with(tail));
        }
        assert_eq!(prefix_within(text, 2), "a".as_bytes(), "é would make 3");
        assert_eq!(suffix_within(text, 7), "🦀\"b".as_bytes());
    }

    #[test]
    fn text_within_the_budget_is_kept_whole() {
        assert_eq!(fit("hello", 5, "why"), "hello");
    }

    #[test]
    fn text_over_the_budget_keeps_head_and_tail_with_a_counted_marker() {
        let text = format!("{}{}", "a".repeat(100), "z".repeat(100));

        let fitted = fit(&text, 20, "see structuredContent");

        assert_eq!(
            fitted,
            format!(
                "{}\n[... 180 bytes elided: see structuredContent ...]\n{}",
                "a".repeat(10),
                "z".repeat(10)
            )
        );
    }

    #[test]
    fn a_flood_of_nul_bytes_fits_its_json_budget() {
        let text = "\0".repeat(1_000_000);

        let fitted = fit(&text, 64 * 1024, "cut");

        assert!(serialized_len(&fitted) <= 64 * 1024 + 100);
    }
}
