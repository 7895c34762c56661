//! What a program asks its terminal, and the answers a real terminal gives.
//!
//! Full-screen programs probe the terminal when they start: device attributes (DA1, the
//! one every terminal answers, which they use as the end-of-probes sentinel), the
//! terminal's name and version (XTVERSION), the cursor position, which modes are set
//! (DECRQM), the default colours, and OSC 7501 program status. Unanswered, they wait for a
//! timeout or fall back to less: Claude Code reports its state over OSC 7501 only when the
//! terminal answers that probe, and only when the answer comes before the DA1 answer, as a
//! real terminal sends them (in query order). Only drydock's own PTY answers: tmux is the
//! terminal of its panes and answers for them itself.
//!
//! Answers are computed while the screen parses the output, so a cursor position is where
//! the cursor was when the question came, and answers leave in the order of the questions.

use vt100::{MouseProtocolEncoding, MouseProtocolMode};

/// The OSC number of "program status" reports (`state=idle|working|blocked…`).
pub(super) const PROGRAM_STATUS: &[u8] = b"7501";

/// The answer to a CSI query (`ESC [ i1 params i2 c`), or `None` when it is not one this
/// terminal answers (kitty's keyboard query `CSI ? u` among them: a terminal without that
/// protocol stays silent, and the program learns it from the DA1 answer that follows).
pub(super) fn csi_reply(
    screen: &vt100::Screen,
    i1: Option<u8>,
    i2: Option<u8>,
    params: &[&[u16]],
    c: char,
) -> Option<Vec<u8>> {
    let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
    let reply = match (i1, i2, c) {
        // Primary device attributes: a VT220 with ANSI colour.
        (None, None, 'c') if first == 0 => "\x1b[?62;22c".to_owned(),
        // Secondary device attributes: terminal type 1, firmware version 0.
        (Some(b'>'), None, 'c') if first == 0 => "\x1b[>1;0;0c".to_owned(),
        (Some(b'>'), None, 'q') if first == 0 => {
            format!("\x1bP>|drydock {}\x1b\\", env!("CARGO_PKG_VERSION"))
        }
        // Device status: "terminal ok", and the cursor position (1-based).
        (None, None, 'n') if first == 5 => "\x1b[0n".to_owned(),
        (None, None, 'n') if first == 6 => {
            let (row, col) = screen.cursor_position();
            format!("\x1b[{};{}R", row + 1, col + 1)
        }
        (Some(b'?'), None, 'n') if first == 6 => {
            let (row, col) = screen.cursor_position();
            format!("\x1b[?{};{}R", row + 1, col + 1)
        }
        // DECRQM for a private mode: 1 set, 2 reset, 0 not recognised.
        (Some(b'?'), Some(b'$'), 'p') => {
            let state = match private_mode(screen, first) {
                Some(true) => 1,
                Some(false) => 2,
                None => 0,
            };
            format!("\x1b[?{first};{state}$y")
        }
        // The text area's size in characters.
        (None, None, 't') if first == 18 => {
            let (rows, cols) = screen.size();
            format!("\x1b[8;{rows};{cols}t")
        }
        _ => return None,
    };
    Some(reply.into_bytes())
}

/// The answer to an OSC query (`ESC ] params ST`, split at `;`): OSC 7501's probe and the
/// default foreground, background and cursor colours (white on black).
pub(super) fn osc_reply(params: &[&[u8]]) -> Option<Vec<u8>> {
    let reply: &[u8] = match params {
        [PROGRAM_STATUS, b"?"] => b"\x1b]7501;?\x1b\\",
        [b"10", b"?"] => b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\",
        [b"11", b"?"] => b"\x1b]11;rgb:0000/0000/0000\x1b\\",
        [b"12", b"?"] => b"\x1b]12;rgb:ffff/ffff/ffff\x1b\\",
        _ => return None,
    };
    Some(reply.to_vec())
}

/// A program status report (`ESC ] 7501 ; state=…`): its text after `7501;`.
pub(super) fn program_status(params: &[&[u8]]) -> Option<String> {
    match params {
        [PROGRAM_STATUS, b"?"] => None,
        [PROGRAM_STATUS, rest @ ..] if !rest.is_empty() => {
            Some(String::from_utf8_lossy(&rest.join(&b';')).into_owned())
        }
        _ => None,
    }
}

/// Whether a DEC private mode the screen model keeps is set (`None`: one it does not keep).
fn private_mode(screen: &vt100::Screen, mode: u16) -> Option<bool> {
    let mouse = screen.mouse_protocol_mode();
    Some(match mode {
        1 => screen.application_cursor(),
        25 => !screen.hide_cursor(),
        47 | 1047 | 1049 => screen.alternate_screen(),
        9 => mouse == MouseProtocolMode::Press,
        1000 => mouse == MouseProtocolMode::PressRelease,
        1002 => mouse == MouseProtocolMode::ButtonMotion,
        1003 => mouse == MouseProtocolMode::AnyMotion,
        1006 => screen.mouse_protocol_encoding() == MouseProtocolEncoding::Sgr,
        2004 => screen.bracketed_paste(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::terminal::screen::Screen;

    fn answered(output: &[u8]) -> String {
        let mut screen = Screen::new(24, 80, 100);
        screen.answer_queries();
        screen.feed(output);
        String::from_utf8(screen.take_replies()).unwrap()
    }

    #[test]
    fn claude_codes_start_up_probes_are_answered_in_query_order() {
        // What Claude Code 2.1.330 writes at start (agent-lab.md §6.1), in one read.
        let probes = b"\x1b[>0q\x1b[?u\x1b]7501;?\x07\x1b[c";
        assert_eq!(
            answered(probes),
            format!(
                "\x1bP>|drydock {}\x1b\\\x1b]7501;?\x1b\\\x1b[?62;22c",
                env!("CARGO_PKG_VERSION")
            ),
            "XTVERSION, then OSC 7501, then DA1 last; kitty's keyboard query gets no answer"
        );
    }

    #[test]
    fn a_probe_split_across_reads_is_answered_once_whole() {
        let mut screen = Screen::new(24, 80, 100);
        screen.answer_queries();
        screen.feed(b"\x1b]75");
        assert!(screen.take_replies().is_empty());
        screen.feed(b"01;?\x1b\\");
        assert_eq!(screen.take_replies(), b"\x1b]7501;?\x1b\\");
    }

    #[test]
    fn the_cursor_position_is_where_the_cursor_was_when_asked() {
        assert_eq!(answered(b"ab\r\ncdef\x1b[6n\r\nmore"), "\x1b[2;5R");
        assert_eq!(answered(b"\x1b[10;3H\x1b[?6n"), "\x1b[?10;3R");
        assert_eq!(answered(b"\x1b[5n\x1b[18t"), "\x1b[0n\x1b[8;24;80t");
    }

    #[test]
    fn modes_are_reported_as_the_screen_keeps_them() {
        let asked = b"\x1b[?2004h\x1b[?2004$p\x1b[?1049$p\x1b[?2026$p";
        assert_eq!(
            answered(asked),
            "\x1b[?2004;1$y\x1b[?1049;2$y\x1b[?2026;0$y"
        );
    }

    #[test]
    fn colours_and_secondary_attributes_are_answered() {
        assert_eq!(
            answered(b"\x1b]11;?\x1b\\\x1b[>c"),
            "\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[>1;0;0c"
        );
    }

    #[test]
    fn a_screen_that_does_not_answer_keeps_quiet_but_still_reads_program_status() {
        let mut screen = Screen::new(24, 80, 100);
        screen.feed(b"\x1b[c\x1b]7501;?\x07\x1b]7501;state=idle:app=claude-code\x07");
        screen.feed(b"\x1b]7501;state=working;extra\x1b\\");
        assert!(screen.take_replies().is_empty());
        let reports: Vec<_> = screen
            .program_status()
            .into_iter()
            .map(|s| (s.seq, s.report))
            .collect();
        assert_eq!(
            reports,
            [
                (0, "state=idle:app=claude-code".to_owned()),
                (1, "state=working;extra".to_owned())
            ]
        );
    }

    #[test]
    fn only_the_latest_program_status_reports_are_kept() {
        let mut screen = Screen::new(24, 80, 100);
        for n in 0..100 {
            screen.feed(format!("\x1b]7501;state=working:n={n}\x07").as_bytes());
        }
        let reports = screen.program_status();
        assert_eq!(reports.len(), crate::terminal::screen::PROGRAM_STATUS_KEPT);
        assert_eq!(reports.last().unwrap().seq, 99);
        assert_eq!(reports.last().unwrap().report, "state=working:n=99");
    }
}
