//! Fitting a screen or a page of history into a result: budgets count the bytes of the
//! JSON a client receives (`text_budget`). What does not fit keeps whole lines from its head
//! and its tail, and says how much was left out and where terminal_scrollback has it.

use crate::text_budget::json_cost;

/// The text rendering of a terminal result shows at most this much of its output (as JSON);
/// the structured result has the rest.
pub(super) const RENDER_BUDGET: usize = 16 * 1024;

/// How many lines from the head and from the tail of a list fit a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fit {
    pub head: usize,
    pub tail: usize,
}

impl Fit {
    /// The lines between head and tail: their index and count.
    pub(super) fn elided(&self, lines: usize) -> (usize, usize) {
        (self.head, lines - self.head - self.tail)
    }
}

/// Bytes a line takes in a result: its text as JSON, plus quotes and a separator.
fn cost(line: &str) -> usize {
    json_cost(line.as_bytes()) + 3
}

/// All of `lines` when they fit `budget`; else as many from the head as fit half of it,
/// and as many from the tail as fit what is left.
pub(super) fn fit_lines<S: AsRef<str>>(lines: &[S], budget: usize) -> Fit {
    if lines.iter().map(|line| cost(line.as_ref())).sum::<usize>() <= budget {
        return Fit {
            head: lines.len(),
            tail: 0,
        };
    }
    let (head, spent) = count_within(lines.iter(), budget / 2);
    let (tail, _) = count_within(lines[head..].iter().rev(), budget - spent);
    Fit { head, tail }
}

/// How many of `lines` fit `budget`, and what they cost.
fn count_within<'a, S: AsRef<str> + 'a>(
    lines: impl Iterator<Item = &'a S>,
    budget: usize,
) -> (usize, usize) {
    let mut spent = 0;
    let mut count = 0;
    for line in lines {
        let next = spent + cost(line.as_ref());
        if next > budget {
            break;
        }
        spent = next;
        count += 1;
    }
    (count, spent)
}

/// Bytes of `lines` as text, each with its newline.
pub(super) fn text_bytes<S: AsRef<str>>(lines: &[S]) -> u64 {
    lines
        .iter()
        .map(|line| line.as_ref().len() as u64 + 1)
        .sum()
}

/// The line put where `count` lines (`bytes` bytes) from line number `offset` were left out.
pub(super) fn elision_marker(bytes: u64, count: usize, offset: u64) -> String {
    format!(
        "[... {bytes} bytes, {count} lines elided: terminal_scrollback offset {offset} has them ...]"
    )
}

/// `lines`, numbered from `first_line`, as text within `budget`: whole lines from the head
/// and the tail around a marker line, when they do not all fit.
pub(super) fn lines_within(lines: &[&str], first_line: u64, budget: usize) -> String {
    let fit = fit_lines(lines, budget);
    let (elided_at, elided) = fit.elided(lines.len());
    if elided == 0 {
        return lines.join("\n");
    }
    let marker = elision_marker(
        text_bytes(&lines[elided_at..elided_at + elided]),
        elided,
        first_line + elided_at as u64,
    );
    let mut kept: Vec<&str> = lines[..fit.head].to_vec();
    kept.push(&marker);
    kept.extend_from_slice(&lines[lines.len() - fit.tail..]);
    kept.join("\n")
}

/// The last `lines` (all when None) of a screen whose top row is line number `top_line`,
/// within `budget`.
pub(super) fn last_lines_within(
    screen: &str,
    top_line: u64,
    lines: Option<usize>,
    budget: usize,
) -> String {
    let rows: Vec<&str> = screen.split('\n').collect();
    let skip = lines.map_or(0, |n| rows.len().saturating_sub(n));
    lines_within(&rows[skip..], top_line + skip as u64, budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_fit_are_kept_whole() {
        let lines = ["a", "b", "c"];
        assert_eq!(fit_lines(&lines, 12), Fit { head: 3, tail: 0 });
        assert_eq!(lines_within(&lines, 7, 12), "a\nb\nc");
    }

    #[test]
    fn the_head_and_the_tail_are_kept_and_the_marker_says_where_the_rest_is() {
        let lines: Vec<String> = (0..100).map(|n| format!("line {n:02}")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        // Each line costs 7 + 3 bytes: 5 fit half of 100, the rest of the budget 5 more.
        assert_eq!(fit_lines(&lines, 100), Fit { head: 5, tail: 5 });
        let text = lines_within(&lines, 1000, 100);
        let expected_marker =
            "[... 720 bytes, 90 lines elided: terminal_scrollback offset 1005 has them ...]";
        let kept: Vec<&str> = text.lines().collect();
        assert_eq!(kept.len(), 11);
        assert_eq!(&kept[..5], &lines[..5]);
        assert_eq!(kept[5], expected_marker);
        assert_eq!(&kept[6..], &lines[95..]);
    }

    #[test]
    fn the_last_lines_of_a_screen() {
        assert_eq!(last_lines_within("a\nb\nc", 0, Some(2), 100), "b\nc");
        assert_eq!(last_lines_within("a\nb\nc", 0, None, 100), "a\nb\nc");
    }

    #[test]
    fn escapes_count_as_json() {
        let lines = ["\t\t\t\t", "x"];
        // The tabs cost 8 + 3 as JSON, so a budget of 12 holds only the short line.
        assert_eq!(fit_lines(&lines, 12), Fit { head: 0, tail: 1 });
    }
}
