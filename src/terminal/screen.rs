//! The terminal screen model: a vt100 parser with bounded scrollback, read as plain text,
//! as styled (ANSI) rows, or as lines of history.

use std::num::NonZeroU16;

pub const DEFAULT_SCROLLBACK_LINES: usize = 10_000;

#[derive(Default)]
struct TitleCallbacks {
    title: String,
}

impl vt100::Callbacks for TitleCallbacks {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = String::from_utf8_lossy(title).into_owned();
    }
}

pub struct Screen {
    parser: vt100::Parser<TitleCallbacks>,
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

impl Screen {
    /// A screen of `rows` x `cols` (each at least 1) keeping `scrollback_lines` of history.
    pub fn new(rows: u16, cols: u16, scrollback_lines: usize) -> Screen {
        Screen {
            parser: vt100::Parser::new_with_callbacks(
                nonzero(rows),
                nonzero(cols),
                scrollback_lines,
                TitleCallbacks::default(),
            ),
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    /// The visible screen as text: trailing spaces trimmed per row, trailing empty rows
    /// dropped.
    pub fn text(&self) -> String {
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
    pub fn text_for_matching(&self) -> String {
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
    pub fn styled(&self) -> String {
        let (_, cols) = self.size();
        let rows: Vec<String> = self.screen().rows_formatted(0, cols).collect();
        let mut text = rows.join("\n");
        text.push_str("\x1b[0m");
        text
    }

    /// Cursor position, 0-based (row, col).
    pub fn cursor(&self) -> (u16, u16) {
        self.screen().cursor_position()
    }

    /// (rows, cols).
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.screen().size();
        (rows.get(), cols.get())
    }

    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.set_size(nonzero(rows), nonzero(cols));
    }

    pub fn title(&self) -> String {
        self.parser.callbacks().title.clone()
    }

    /// True while a full-screen program uses the alternate screen (no scrollback there).
    pub fn alternate_screen(&self) -> bool {
        self.screen().alternate_screen()
    }

    /// DECCKM: cursor keys should be sent as `ESC O x`.
    pub fn application_cursor(&self) -> bool {
        self.screen().application_cursor()
    }

    /// Lines `offset..offset+limit` of history followed by the visible screen, counted
    /// from the oldest line kept, trailing spaces trimmed; and the total number of lines.
    /// Trailing empty screen rows are not counted.
    pub fn scrollback(&mut self, offset: usize, limit: usize) -> (Vec<String>, usize) {
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
    fn scrollback_reads_history_then_screen_and_is_bounded() {
        let mut screen = Screen::new(4, 20, 50);
        for i in 0..100 {
            screen.feed(format!("line {i}\r\n").as_bytes());
        }
        let (lines, total) = screen.scrollback(0, 1000);
        // 50 lines of history + 3 used screen rows (the 4th is the empty cursor row).
        assert_eq!(total, 53);
        assert_eq!(lines.len(), 53);
        assert_eq!(lines[0], "line 47");
        assert_eq!(lines[52], "line 99");
        let (page, _) = screen.scrollback(10, 5);
        assert_eq!(
            page,
            vec!["line 57", "line 58", "line 59", "line 60", "line 61"]
        );
        let (tail, _) = screen.scrollback(49, 3);
        assert_eq!(tail, vec!["line 96", "line 97", "line 98"]);
        // Reading history does not move the visible screen.
        assert_eq!(screen.text(), "line 97\nline 98\nline 99");
    }

    #[test]
    fn resize_changes_size() {
        let mut screen = Screen::new(24, 80, 10);
        screen.resize(30, 100);
        assert_eq!(screen.size(), (30, 100));
    }
}
