//! A terminal's raw output as the fuzzers feed it: the screen (vt100 and drydock's flood
//! handling, OSC 7501 and the queries it answers), OSC 133 marks, and tmux's control mode.

use super::marks::MarkScanner;
use super::screen::Screen;
use super::tmux::control::{decode_octal, parse_line};

/// `output`, as a program printed it on a `rows` x `cols` terminal, in pieces cut at `cuts`
/// (escape sequences and UTF-8 split across reads, as they are).
pub fn terminal_output(rows: u16, cols: u16, cuts: &[usize], output: &[u8]) {
    let mut screen = Screen::new(rows, cols, 50);
    screen.answer_queries();
    let mut marks = MarkScanner::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([&output.len()]) {
        let piece = &output[start..cut.clamp(start, output.len())];
        screen.feed(piece);
        marks.feed(piece, |_| {});
        start += piece.len();
    }
    screen.take_replies();
    screen.program_status();
    screen.text_for_matching();
    screen.styled();
    let (line, column) = screen.cursor_line();
    screen.text_between((screen.oldest_line(), 0), (line, column));
    screen.lines(0, 200);
    screen.recent_history(20);
    // Laid out again on the transposed terminal: a resize reflows what the output left.
    screen.resize(cols.max(1), rows.max(1));
    screen.redraw();
    screen.title();
}

/// tmux's control-mode stream, one notification a line.
pub fn tmux_control(stream: &[u8]) {
    for line in stream.split(|&b| b == b'\n') {
        parse_line(line);
        decode_octal(line);
    }
}
