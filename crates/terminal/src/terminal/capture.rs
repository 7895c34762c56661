//! What `TerminalCore::run` keeps of a command's output: the text between its marks (or
//! after it was typed), ANSI stripped, as a head and a tail within a budget counted in JSON
//! bytes, with how much was left out and where the command's lines are on the terminal.

use std::collections::VecDeque;
use std::time::Instant;

use super::marks::Mark;
use crate::text_budget::{json_cost, prefix_within, suffix_within};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The shell was busy when the command was typed: the running command's D comes first.
    AwaitPreviousEnd,
    AwaitOutputStart,
    Capturing,
    Done(Option<i32>),
    /// No marks: everything after the command was sent is kept.
    Raw,
}

/// The terminal's cursor as a line number (see `Screen::cursor_line`) and column.
pub(super) type CursorLine = (u64, u16);

pub(super) struct Capture {
    pub phase: Phase,
    stripper: AnsiStripper,
    pub text: CappedText,
    pub started: Instant,
    pub last_output: Option<Instant>,
    scratch: Vec<u8>,
    /// The line the output starts on, once it started.
    pub first_line: Option<u64>,
    /// The line after the output's last, once it ended.
    pub end_line: Option<u64>,
}

impl Capture {
    /// `cursor` is where the terminal stands now: without marks the output starts there.
    pub(super) fn new(phase: Phase, cap: usize, cursor: CursorLine) -> Capture {
        Capture {
            phase,
            stripper: AnsiStripper::default(),
            text: CappedText::new(cap),
            started: Instant::now(),
            last_output: None,
            scratch: Vec::new(),
            first_line: (phase == Phase::Raw).then_some(cursor.0),
            end_line: None,
        }
    }

    pub(super) fn on_text(&mut self, bytes: &[u8]) {
        if matches!(self.phase, Phase::Capturing | Phase::Raw) {
            self.last_output = Some(Instant::now());
            self.scratch.clear();
            self.stripper.strip(bytes, &mut self.scratch);
            self.text.push(&self.scratch);
        }
    }

    /// A mark, seen with the cursor at `cursor`.
    pub(super) fn on_mark(&mut self, mark: Mark, cursor: CursorLine) {
        self.phase = match (self.phase, mark) {
            (Phase::AwaitPreviousEnd, Mark::CommandFinished { .. }) => Phase::AwaitOutputStart,
            (Phase::AwaitOutputStart, Mark::OutputStart) => {
                self.first_line = Some(cursor.0);
                Phase::Capturing
            }
            // No C: an empty command line.
            (Phase::AwaitOutputStart | Phase::Capturing, Mark::CommandFinished { exit_code }) => {
                self.end_line = Some(line_after(cursor));
                Phase::Done(exit_code)
            }
            (phase, _) => phase,
        };
    }
}

/// The line after the one the cursor is on, unless the cursor is at its start.
pub(super) fn line_after((line, column): CursorLine) -> u64 {
    line + u64::from(column > 0)
}

/// Output text kept as a head and a tail of at most `cap / 2` bytes each, counting lines.
pub(super) struct CappedText {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    /// Bytes pushed in all.
    pub total: u64,
    /// Newlines pushed in all.
    newlines: u64,
}

/// What is left of a `CappedText`: the head and tail kept, and what lies between them.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Kept {
    pub head: String,
    pub tail: String,
    pub elided_bytes: u64,
    pub elided_lines: u64,
}

impl CappedText {
    /// `cap` is the budget of the finished text as JSON.
    pub(super) fn new(cap: usize) -> CappedText {
        CappedText {
            head: Vec::new(),
            tail: VecDeque::new(),
            half: cap / 2,
            total: 0,
            newlines: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.newlines += newlines(bytes);
        if self.head.len() < self.half {
            let take = bytes.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.half {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    fn elided(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The last (up to) `n` bytes kept, and their offset in the whole stream.
    pub(super) fn recent(&self, n: u64) -> (u64, Vec<u8>) {
        let n = n.min(self.head.len() as u64 + self.tail.len() as u64) as usize;
        let from_tail = n.min(self.tail.len());
        let from_head = if self.elided() == 0 { n - from_tail } else { 0 };
        let mut bytes = Vec::with_capacity(from_head + from_tail);
        bytes.extend_from_slice(&self.head[self.head.len() - from_head..]);
        bytes.extend(self.tail.range(self.tail.len() - from_tail..));
        (self.total - bytes.len() as u64, bytes)
    }

    /// Cuts the stream at offset `at` (a pattern matched there): what follows is not output.
    /// `at` lies in the bytes kept: a match is looked for in `recent` bytes.
    fn cut(&mut self, at: u64) {
        if at <= self.head.len() as u64 {
            self.head.truncate(at as usize);
            self.tail.clear();
            self.newlines = newlines(&self.head);
        } else {
            let drop = (self.total - at).min(self.tail.len() as u64) as usize;
            let dropped: Vec<u8> = self.tail.drain(self.tail.len() - drop..).collect();
            self.newlines -= newlines(&dropped);
        }
        self.total = at;
    }

    /// The text cut at stream offset `cut_at` when given, its head and tail within the
    /// budget as JSON.
    pub(super) fn finish(mut self, cut_at: Option<u64>) -> Kept {
        if let Some(at) = cut_at {
            self.cut(at);
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let budget = self.half * 2;
        let whole = self.total == (self.head.len() + tail.len()) as u64
            && json_cost(&self.head) + json_cost(&tail) <= budget;
        let (head, tail) = if whole {
            (&self.head[..], &tail[..])
        } else {
            (
                prefix_within(&self.head, self.half),
                suffix_within(&tail, self.half),
            )
        };
        let kept = (head.len() + tail.len()) as u64;
        Kept {
            head: String::from_utf8_lossy(head).into_owned(),
            tail: String::from_utf8_lossy(tail).into_owned(),
            elided_bytes: self.total - kept,
            elided_lines: self.newlines - newlines(head) - newlines(tail),
        }
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Removes escape sequences and turns `\r\n` into `\n`, across chunk boundaries.
#[derive(Default)]
pub(super) struct AnsiStripper {
    state: StripState,
    pending_cr: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum StripState {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    Csi,
    /// OSC, DCS, SOS, PM, APC: until BEL or ST.
    String,
    StringEscape,
}

impl AnsiStripper {
    pub(super) fn strip(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            match self.state {
                StripState::Ground => {
                    // Fast path: a run of plain bytes.
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| b < 0x20 || b == 0x7f)
                        .unwrap_or(bytes.len() - i);
                    if run > 0 {
                        if self.pending_cr {
                            out.push(b'\r');
                            self.pending_cr = false;
                        }
                        out.extend_from_slice(&bytes[i..i + run]);
                        i += run;
                        continue;
                    }
                    match byte {
                        b'\n' => {
                            self.pending_cr = false;
                            out.push(b'\n');
                        }
                        b'\r' => {
                            if self.pending_cr {
                                out.push(b'\r');
                            }
                            self.pending_cr = true;
                        }
                        0x1b => self.state = StripState::Escape,
                        b'\t' => {
                            if std::mem::take(&mut self.pending_cr) {
                                out.push(b'\r');
                            }
                            out.push(b'\t');
                        }
                        _ => {} // BEL, BS and other controls
                    }
                }
                StripState::Escape => {
                    self.state = match byte {
                        b'[' => StripState::Csi,
                        b']' | b'P' | b'X' | b'^' | b'_' => StripState::String,
                        0x20..=0x2f => StripState::EscapeIntermediate,
                        _ => StripState::Ground,
                    }
                }
                StripState::EscapeIntermediate => {
                    if !(0x20..=0x2f).contains(&byte) {
                        self.state = StripState::Ground;
                    }
                }
                StripState::Csi => {
                    if (0x40..=0x7e).contains(&byte) {
                        self.state = StripState::Ground;
                    }
                }
                StripState::String => match byte {
                    0x07 => self.state = StripState::Ground,
                    0x1b => self.state = StripState::StringEscape,
                    _ => {}
                },
                StripState::StringEscape => {
                    if byte == b'\\' {
                        self.state = StripState::Ground;
                    } else {
                        self.state = StripState::Escape;
                        continue;
                    }
                }
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(chunks: &[&[u8]]) -> String {
        let mut stripper = AnsiStripper::default();
        let mut out = Vec::new();
        for chunk in chunks {
            stripper.strip(chunk, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strips_ansi_and_crlf_across_chunks() {
        let input: &[u8] = b"\x1b[1;31mred\x1b[0m\r\nnext\x1b]0;t\x07 line\r\n\x1b(Bok\rover\r\n";
        assert_eq!(strip(&[input]), "red\nnext line\nok\rover\n");
        for split in 0..input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(
                strip(&[a, b]),
                "red\nnext line\nok\rover\n",
                "split {split}"
            );
        }
    }

    #[test]
    fn capped_text_keeps_head_and_tail_and_counts_what_is_left_out() {
        let mut text = CappedText::new(10);
        for chunk in [&b"0123"[..], b"4567", b"8\nab\nd\nf", b"ghij"] {
            text.push(chunk);
        }
        assert_eq!(text.total, 20);
        let (recent_at, recent) = text.recent(3);
        assert_eq!((recent_at, recent.as_slice()), (17, &b"hij"[..]));
        let kept = text.finish(None);
        assert_eq!(
            kept,
            Kept {
                head: "01234".into(),
                tail: "fghij".into(),
                elided_bytes: 10,
                elided_lines: 3,
            }
        );
    }

    #[test]
    fn the_budget_counts_json_bytes() {
        // Tabs take two bytes each as JSON: 8 of them fit a budget of 16 bytes, not 16.
        let mut text = CappedText::new(16);
        text.push(&[b'\t'; 16]);
        let kept = text.finish(None);
        assert_eq!((kept.head.len(), kept.tail.len()), (4, 4));
        assert_eq!(kept.elided_bytes, 8);
        let mut small = CappedText::new(16);
        small.push(b"\t\t\tab");
        assert_eq!(small.finish(None).head, "\t\t\tab");
    }

    #[test]
    fn capped_text_cut_at_a_match() {
        let mut text = CappedText::new(100);
        text.push(b"2\n>>> ");
        let kept = text.finish(Some(2));
        assert_eq!((kept.head.as_str(), kept.elided_bytes), ("2\n", 0));
        let mut long = CappedText::new(12);
        long.push(b"a\nb\nc\nd\ne\nf\n>>> ");
        let kept = long.finish(Some(12));
        assert_eq!((kept.head.as_str(), kept.tail.as_str()), ("a\nb\n", "f\n"));
        assert_eq!((kept.elided_bytes, kept.elided_lines), (6, 3));
    }

    #[test]
    fn output_lines_come_from_the_marks() {
        let mut capture = Capture::new(Phase::AwaitOutputStart, 100, (3, 2));
        assert_eq!(capture.first_line, None);
        capture.on_mark(Mark::OutputStart, (4, 0));
        capture.on_mark(Mark::CommandFinished { exit_code: Some(0) }, (9, 5));
        assert_eq!((capture.first_line, capture.end_line), (Some(4), Some(10)));
        assert_eq!(capture.phase, Phase::Done(Some(0)));
        let raw = Capture::new(Phase::Raw, 100, (7, 4));
        assert_eq!(raw.first_line, Some(7));
    }
}
