//! The terminal screen model: a vt100 parser with bounded scrollback, read as plain text,
//! as styled (ANSI) rows, or as lines of history.
//!
//! Lines are numbered from the first line the terminal showed (0), and keep their number
//! when older lines leave the bounded history: a command's output found at lines 120-180
//! is still there, under the same numbers, after more output arrived.

use std::collections::VecDeque;
use std::num::NonZeroU16;
use std::time::Instant;

use super::queries;

/// Program status reports kept, newest last.
pub(super) const PROGRAM_STATUS_KEPT: usize = 32;

#[derive(Default)]
struct Callbacks {
    title: String,
    /// Lines that left the history (or the screen, without history) for good.
    dropped_lines: u64,
    /// Answers to the program's queries not yet sent, when this screen answers them.
    replies: Option<Vec<u8>>,
    program_status: VecDeque<ProgramStatus>,
    program_status_seen: u64,
}

/// An OSC 7501 program status report (`state=working:app=claude-code`), as the program
/// wrote it after `7501;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramStatus {
    /// Reports seen before this one in this terminal: a newer report has a larger number.
    pub seq: u64,
    pub at: Instant,
    pub report: String,
}

impl vt100::Callbacks for Callbacks {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title).into_owned();
    }

    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        if let Some(replies) = self.replies.as_mut() {
            replies.extend(queries::csi_reply(screen, i1, i2, params, c).unwrap_or_default());
        }
    }

    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        if let Some(report) = queries::program_status(params) {
            if self.program_status.len() == PROGRAM_STATUS_KEPT {
                self.program_status.pop_front();
            }
            self.program_status.push_back(ProgramStatus {
                seq: self.program_status_seen,
                at: Instant::now(),
                report,
            });
            self.program_status_seen += 1;
        } else if let Some(replies) = self.replies.as_mut() {
            replies.extend(queries::osc_reply(params).unwrap_or_default());
        }
    }

    fn on_scroll(&mut self, _: vt100::capture::RowContents<'_>, alternate_screen: bool) {
        // The alternate screen (a full-screen program) has no history: its rows are not lines.
        if !alternate_screen {
            self.dropped_lines += 1;
        }
    }
}

pub(super) struct Screen {
    parser: vt100::Parser<Callbacks>,
}

/// Lines of history and screen, as `Screen::lines` reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    pub lines: Vec<String>,
    /// The number of the first line in `lines`.
    pub offset: u64,
    /// The oldest line still kept.
    pub oldest: u64,
    /// Lines shown so far: the newest is `total - 1`.
    pub total: u64,
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

impl Screen {
    /// A screen of `rows` x `cols` (each at least 1) keeping `scrollback_lines` of history.
    pub(super) fn new(rows: u16, cols: u16, scrollback_lines: usize) -> Screen {
        Screen {
            parser: vt100::Parser::new_with_callbacks(
                nonzero(rows),
                nonzero(cols),
                scrollback_lines,
                Callbacks::default(),
            ),
        }
    }

    /// From now on, queries in the output are answered: [`Screen::take_replies`] hands out
    /// the answers, in the order of the questions.
    pub(super) fn answer_queries(&mut self) {
        self.parser
            .callbacks_mut()
            .replies
            .get_or_insert_with(Vec::new);
    }

    /// The answers to queries fed since the last call (empty when this screen answers none).
    pub(super) fn take_replies(&mut self) -> Vec<u8> {
        self.parser
            .callbacks_mut()
            .replies
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The latest program status reports (OSC 7501), oldest first.
    pub(super) fn program_status(&self) -> Vec<ProgramStatus> {
        self.parser
            .callbacks()
            .program_status
            .iter()
            .cloned()
            .collect()
    }

    /// Output from the program. A long run of short plain lines (`yes`, `seq`, a log) that
    /// scrolls out of the kept history before `bytes` ends is counted rather than laid out
    /// (vt100 allocates and trims a row for every line): see [`Screen::feed_flood`].
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let (rows, cols) = self.size();
        let enough = self.parser.screen().scrollback_capacity() + usize::from(rows) * 2 + 1;
        let mut rest = bytes;
        while let Some(run) = find_plain_lines(rest, usize::from(cols), enough) {
            self.parser.process(&rest[..run.start]);
            self.feed_flood(&rest[run.start..run.end], run.lines);
            rest = &rest[run.end..];
        }
        self.parser.process(rest);
    }

    /// Feeds `lines` plain lines (see [`find_plain_lines`]), skipping those that cannot be
    /// seen at the end. Once one of them was printed on the bottom row and scrolled the whole
    /// screen by one row into the history, the parser is in its ground state at the bottom
    /// left, and every further plain line does the same: the last `history + rows` of them
    /// replace everything the ones before left. Anything else (a scroll region, the
    /// alternate screen, an unfinished escape sequence) is fed line by line.
    fn feed_flood(&mut self, flood: &[u8], lines: usize) {
        let rows = usize::from(self.size().0);
        let kept = self.parser.screen().scrollback_capacity() + rows;
        let lead = after_lines(flood, rows);
        let probe = lead + after_lines(&flood[lead..], 1);
        self.parser.process(&flood[..lead]);
        let before = self.lines_above();
        self.parser.process(&flood[lead..probe]);
        let skipped = if self.printed_and_scrolled(&flood[lead..probe], before) {
            lines - rows - 1 - kept
        } else {
            0
        };
        self.parser.callbacks_mut().dropped_lines += skipped as u64;
        let resume = probe + after_lines(&flood[probe..], skipped);
        self.parser.process(&flood[resume..]);
    }

    /// `line` (plain, ended by `\r\n`), just fed, was printed on the bottom row and then
    /// scrolled the whole screen by one row into the history (`lines_above` was `before`).
    fn printed_and_scrolled(&self, line: &[u8], before: u64) -> bool {
        let (rows, cols) = self.size();
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        let printed = rows >= 2
            && !text.is_empty()
            && self
                .screen()
                .rows(0, cols)
                .nth(usize::from(rows) - 2)
                .is_some_and(|row| row.trim_end() == text);
        printed && self.lines_above() == before + 1 && self.cursor() == (rows - 1, 0)
    }

    /// Lines above the screen: dropped and kept in the history.
    fn lines_above(&self) -> u64 {
        self.parser.callbacks().dropped_lines + self.parser.screen().scrollback_len() as u64
    }

    /// The cursor's line number, and its column.
    pub(super) fn cursor_line(&self) -> (u64, u16) {
        let (row, col) = self.cursor();
        (self.lines_above() + u64::from(row), col)
    }

    /// The text from `start` to `end` (line numbers and columns as `cursor_line` gives them),
    /// rows the terminal wrapped joined again; None when `start` is no longer on the screen.
    pub(super) fn text_between(&self, start: (u64, u16), end: (u64, u16)) -> Option<String> {
        let above = self.lines_above();
        let row = |line: u64| u16::try_from(line.checked_sub(above)?).ok();
        let (start_row, end_row) = (row(start.0)?, row(end.0)?);
        Some(
            self.screen()
                .contents_between(start_row, start.1, end_row, end.1),
        )
    }

    /// The line number of the oldest line kept.
    pub(super) fn oldest_line(&self) -> u64 {
        self.parser.callbacks().dropped_lines
    }

    fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// The visible screen as text: trailing spaces trimmed per row, trailing empty rows
    /// dropped.
    pub(super) fn text(&self) -> String {
        let (_, cols) = self.size();
        let rows: Vec<String> = self
            .screen()
            .rows(0, cols)
            .map(|row| row.trim_end().to_string())
            .collect();
        join_dropping_trailing_empty(rows)
    }

    /// Like `text`, but the cursor's row keeps its spaces up to the cursor, so a pattern
    /// such as `>>> $` or `\$ $` matches a prompt waiting for input.
    pub(super) fn text_for_matching(&self) -> String {
        let (_, cols) = self.size();
        let (cursor_row, cursor_col) = self.cursor();
        let rows: Vec<String> = self
            .screen()
            .rows(0, cols)
            .enumerate()
            .map(|(index, row)| {
                let mut trimmed = row.trim_end().to_string();
                if index == usize::from(cursor_row) {
                    let width = trimmed.chars().count();
                    let wanted = usize::from(cursor_col);
                    if wanted > width {
                        trimmed.extend(std::iter::repeat_n(' ', wanted - width));
                    }
                }
                trimmed
            })
            .collect();
        let mut rows = rows;
        while rows.len() > usize::from(cursor_row) + 1 && rows.last().is_some_and(String::is_empty)
        {
            rows.pop();
        }
        rows.join("\n")
    }

    /// The visible rows with their ANSI styling (SGR), one row per line.
    pub(super) fn styled(&self) -> String {
        let (_, cols) = self.size();
        let rows: Vec<String> = self.screen().rows_formatted(0, cols).collect();
        let mut text = rows.join("\n");
        text.push_str("\x1b[0m");
        text
    }

    /// Escape codes that draw the screen as it is (contents, colours, cursor, input modes)
    /// on an empty terminal of the same size.
    pub(super) fn redraw(&self) -> String {
        format!("\x1b[0m\x1b[H\x1b[2J{}", self.screen().state_formatted())
    }

    /// Cursor position, 0-based (row, col).
    pub(super) fn cursor(&self) -> (u16, u16) {
        self.screen().cursor_position()
    }

    /// (rows, cols).
    pub(super) fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.screen().size();
        (rows.get(), cols.get())
    }

    pub(super) fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.set_size(nonzero(rows), nonzero(cols));
    }

    pub(super) fn title(&self) -> String {
        self.parser.callbacks().title.clone()
    }

    /// True while a full-screen program uses the alternate screen (no scrollback there).
    pub(super) fn alternate_screen(&self) -> bool {
        self.screen().alternate_screen()
    }

    /// DECCKM: cursor keys should be sent as `ESC O x`.
    pub(super) fn application_cursor(&self) -> bool {
        self.screen().application_cursor()
    }

    /// Up to `limit` lines of history followed by the visible screen, from line number
    /// `offset` (or the oldest kept, when that line is gone), trailing spaces trimmed.
    /// Trailing empty screen rows are not lines (yet).
    pub(super) fn lines(&mut self, offset: u64, limit: usize) -> Lines {
        let oldest = self.oldest_line();
        let offset = offset.max(oldest);
        let (lines, total) = self.kept_lines((offset - oldest) as usize, limit);
        Lines {
            lines,
            offset,
            oldest,
            total: oldest + total as u64,
        }
    }

    /// The newest `limit` lines of history (above the screen), oldest first, as plain text.
    pub(super) fn recent_history(&mut self, limit: usize) -> Vec<String> {
        let history = self.parser.screen().scrollback_len();
        let take = limit.min(history);
        self.kept_lines(history - take, take).0
    }

    /// Lines `offset..offset+limit` of history followed by the visible screen, counted
    /// from the oldest line kept; and the number of lines kept.
    fn kept_lines(&mut self, offset: usize, limit: usize) -> (Vec<String>, usize) {
        let history = self.parser.screen().scrollback_len();
        let (rows, cols) = self.size();
        let rows = usize::from(rows);
        let screen_rows: Vec<String> = self
            .screen()
            .rows(0, cols)
            .map(|row| row.trim_end().to_string())
            .collect();
        let used_screen_rows = screen_rows
            .iter()
            .rposition(|row| !row.is_empty())
            .map_or(0, |last| last + 1);
        let total = history + used_screen_rows;
        let end = total.min(offset.saturating_add(limit));
        let mut lines = Vec::with_capacity(end.saturating_sub(offset));
        let mut index = offset;
        while index < end.min(history) {
            // Viewing history at position p shows lines history-p .. history-p+rows.
            let position = history - index;
            self.parser.screen_mut().set_scrollback(position);
            let take = rows.min(end.min(history) - index);
            lines.extend(
                self.screen()
                    .rows(0, cols)
                    .take(take)
                    .map(|row| row.trim_end().to_string()),
            );
            index += take;
        }
        self.parser.screen_mut().set_scrollback(0);
        while index < end {
            lines.push(screen_rows[index - history].clone());
            index += 1;
        }
        (lines, total)
    }
}

/// A run of plain lines in the output: `start..end`, `lines` of them.
#[derive(Debug, PartialEq, Eq)]
struct PlainLines {
    start: usize,
    end: usize,
    lines: usize,
}

/// The first run of at least `at_least` plain lines in `bytes`: printable ASCII, shorter
/// than the screen is wide (so none wraps), each ended by `\r\n`.
fn find_plain_lines(bytes: &[u8], cols: usize, at_least: usize) -> Option<PlainLines> {
    let mut run: Option<PlainLines> = None;
    let mut line_start = 0;
    while let Some(newline) = bytes[line_start..].iter().position(|&b| b == b'\n') {
        let line_end = line_start + newline + 1;
        let text = &bytes[line_start..line_start + newline];
        let plain = text.strip_suffix(b"\r").is_some_and(|text| {
            text.len() < cols && text.iter().all(|&b| (0x20..0x7f).contains(&b))
        });
        if !plain {
            if run.as_ref().is_some_and(|run| run.lines >= at_least) {
                return run;
            }
            run = None;
        } else if let Some(run) = &mut run {
            run.end = line_end;
            run.lines += 1;
        } else {
            run = Some(PlainLines {
                start: line_start,
                end: line_end,
                lines: 1,
            });
        }
        line_start = line_end;
    }
    run.filter(|run| run.lines >= at_least)
}

/// The end of the first `lines` lines of `bytes` (all of it when it has fewer).
fn after_lines(bytes: &[u8], lines: usize) -> usize {
    if lines == 0 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines - 1)
        .map_or(bytes.len(), |(at, _)| at + 1)
}

fn join_dropping_trailing_empty(mut rows: Vec<String>) -> String {
    while rows.last().is_some_and(|row| row.is_empty()) {
        rows.pop();
    }
    rows.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_between_two_positions_joins_the_rows_the_terminal_wrapped() {
        let mut screen = Screen::new(5, 10, 100);
        screen.feed(b"$ echo hello-world-long\r\nhello");
        assert_eq!(screen.cursor_line(), (3, 5));
        assert_eq!(
            screen.text_between((0, 2), (3, 0)).as_deref(),
            Some("echo hello-world-long\n")
        );
        assert_eq!(
            screen.text_between((0, 0), (3, 5)).as_deref().map(str::len),
            Some(29)
        );
    }

    #[test]
    fn text_trims_rows_and_drops_trailing_empty_rows() {
        let mut screen = Screen::new(5, 20, 100);
        screen.feed(b"hello   \r\n\r\nworld\r\n");
        assert_eq!(screen.text(), "hello\n\nworld");
        assert_eq!(screen.cursor(), (3, 0));
        assert_eq!(screen.size(), (5, 20));
    }

    #[test]
    fn text_for_matching_keeps_the_space_before_the_cursor() {
        let mut screen = Screen::new(5, 20, 0);
        screen.feed(b"out\r\n>>> ");
        assert_eq!(screen.text(), "out\n>>>");
        assert_eq!(screen.text_for_matching(), "out\n>>> ");
    }

    #[test]
    fn styled_keeps_colors() {
        let mut screen = Screen::new(3, 20, 0);
        screen.feed(b"\x1b[31mred\x1b[0m plain");
        let styled = screen.styled();
        assert!(styled.contains("31m"), "{styled:?}");
        assert!(styled.contains("red"));
    }

    #[test]
    fn title_is_tracked() {
        let mut screen = Screen::new(3, 20, 0);
        screen.feed(b"\x1b]2;my title\x07");
        assert_eq!(screen.title(), "my title");
    }

    #[test]
    fn lines_keep_their_numbers_as_the_history_drops_old_ones() {
        let mut screen = Screen::new(4, 20, 50);
        for i in 0..100 {
            screen.feed(format!("line {i}\r\n").as_bytes());
        }
        let all = screen.lines(0, 1000);
        // 50 lines of history + 3 used screen rows (the 4th is the empty cursor row).
        assert_eq!((all.offset, all.oldest, all.total), (47, 47, 100));
        assert_eq!(all.lines.len(), 53);
        assert_eq!(all.lines[0], "line 47");
        assert_eq!(all.lines[52], "line 99");
        let page = screen.lines(57, 5);
        assert_eq!(
            page.lines,
            vec!["line 57", "line 58", "line 59", "line 60", "line 61"]
        );
        assert_eq!(
            screen.lines(96, 3).lines,
            vec!["line 96", "line 97", "line 98"]
        );
        assert_eq!(screen.cursor_line(), (100, 0));
        // Reading history does not move the visible screen.
        assert_eq!(screen.text(), "line 97\nline 98\nline 99");
    }

    /// The screen and every kept line, with their numbers.
    fn state(screen: &mut Screen) -> (String, (u64, u16), Lines) {
        (
            screen.text(),
            screen.cursor_line(),
            screen.lines(0, usize::MAX),
        )
    }

    /// Feeds `stream` whole (a flood is skipped through) and in small chunks (too short for
    /// a run of plain lines, so every line is laid out): both must end the same.
    fn assert_skipping_is_exact(setup: &[u8], stream: &[u8]) {
        let (mut whole, mut chunked) = (Screen::new(6, 30, 40), Screen::new(6, 30, 40));
        whole.feed(setup);
        chunked.feed(setup);
        whole.feed(stream);
        for chunk in stream.chunks(64) {
            chunked.feed(chunk);
        }
        assert_eq!(state(&mut whole), state(&mut chunked));
    }

    fn numbered_lines(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("{}{i}\r\n", "x".repeat(i % 25)).into_bytes())
            .collect()
    }

    #[test]
    fn a_flood_of_plain_lines_ends_as_if_every_line_was_laid_out() {
        let flood: Vec<u8> = (0..5000)
            .flat_map(|i| format!("n{i}\r\n").into_bytes())
            .collect();
        let mut mixed = b"\x1b[31mred\x1b[0m\r\n".to_vec();
        mixed.extend(&flood);
        mixed.extend(b"tail without newline\x1b[1mbold");
        mixed.extend(&flood);
        mixed.extend(numbered_lines(300));
        let cases: [(&str, &[u8]); 4] = [
            ("at the bottom", b""),
            // Old text stays under shorter lines until the screen scrolls.
            (
                "under old text",
                b"0123456789012345678901234\r\n0123456789\x1b[H",
            ),
            // Rows scroll inside a region and never reach the history.
            ("in a scroll region", b"\x1b[2;4r\x1b[3H"),
            ("on the alternate screen", b"\x1b[?1049h"),
        ];
        for (what, setup) in cases {
            eprintln!("{what}");
            assert_skipping_is_exact(setup, &mixed);
        }
        // Digits, CR and LF all continue an unfinished CSI sequence: no line is printed.
        let digits: Vec<u8> = (0..5000)
            .flat_map(|i| format!("{i}\r\n").into_bytes())
            .collect();
        assert_skipping_is_exact(b"\x1b[", &digits);
    }

    #[test]
    fn lines_as_wide_as_the_screen_are_not_plain() {
        let line = format!("{}\r\n", "w".repeat(30));
        let flood = line.repeat(200);
        assert_eq!(find_plain_lines(flood.as_bytes(), 30, 1), None);
        let narrower = format!("{}\r\n", "w".repeat(29)).repeat(200);
        let run = find_plain_lines(narrower.as_bytes(), 30, 100).unwrap();
        assert_eq!((run.start, run.end, run.lines), (0, narrower.len(), 200));
        assert_skipping_is_exact(b"", flood.as_bytes());
    }

    #[test]
    fn resize_changes_size() {
        let mut screen = Screen::new(24, 80, 10);
        screen.resize(30, 100);
        assert_eq!(screen.size(), (30, 100));
    }
}
