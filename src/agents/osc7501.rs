//! A streaming scanner for OSC 7501 "program status" in raw terminal output (agent-lab §6):
//!
//! - the probe `ESC ] 7501 ; ? ST`, which Claude Code sends at start-up and which a
//!   terminal must answer (in query order) before Claude Code reports anything;
//! - reports `ESC ] 7501 ; state=…[:app=…][:kind=…][:msg=<base64>] ST`, e.g.
//!   `state=blocked:kind=permission:msg=…` (Claude Code) or `state=working:app=codex`.
//!
//! ST is BEL or `ESC \`. Sequences may be split anywhere across `feed` calls; everything
//! else in the stream is skipped (the screen emulator reads the same bytes).

const INTRODUCER: &[u8] = b"]7501;";
/// Longer parameter strings are not reports; they are dropped.
const MAX_PARAMS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OscEvent {
    /// `ESC]7501;?`: the program asks whether the terminal takes status reports.
    Probe,
    Report(StatusReport),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReport {
    pub state: ReportedState,
    /// `app=`: `claude-code`, `codex`.
    pub app: Option<String>,
    /// `kind=` of a blocked state: `permission`.
    pub kind: Option<String>,
    /// `msg=`, base64-decoded: "approve Bash: echo hi > x".
    pub message: Option<String>,
    /// Every other `key=value` field, in order (a field without `=` has an empty value).
    pub other: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportedState {
    Idle,
    Working,
    Blocked,
    Done,
    /// The program withdraws its status (at exit).
    Clear,
    /// A state this version does not know, or none given.
    Other(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Ground,
    /// After ESC, `matched` bytes of INTRODUCER matched.
    Introducer {
        matched: usize,
    },
    Params,
    /// After ESC inside the parameters: `\` ends the sequence.
    ParamsEscape,
}

#[derive(Debug)]
pub struct Osc7501Scanner {
    phase: Phase,
    params: Vec<u8>,
}

impl Default for Osc7501Scanner {
    fn default() -> Self {
        Osc7501Scanner {
            phase: Phase::Ground,
            params: Vec::new(),
        }
    }
}

impl Osc7501Scanner {
    pub fn new() -> Osc7501Scanner {
        Osc7501Scanner::default()
    }

    /// The OSC 7501 events completed by `bytes`, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<OscEvent> {
        self.feed_located(bytes)
            .into_iter()
            .map(|(_, event)| event)
            .collect()
    }

    /// The same, each with the offset in `bytes` just past its terminator: a terminal
    /// answers probes in query order, so it must know where the probe sat among the DA1
    /// and XTVERSION queries of the same chunk (agent-lab §6.3).
    pub fn feed_located(&mut self, bytes: &[u8]) -> Vec<(usize, OscEvent)> {
        let mut events = Vec::new();
        for (index, &byte) in bytes.iter().enumerate() {
            if let Some(event) = self.step(byte) {
                events.push((index + 1, event));
            }
        }
        events
    }

    fn step(&mut self, byte: u8) -> Option<OscEvent> {
        match self.phase {
            Phase::Ground => {
                if byte == 0x1b {
                    self.phase = Phase::Introducer { matched: 0 };
                }
                None
            }
            Phase::Introducer { matched } => {
                self.phase = if byte == INTRODUCER[matched] {
                    match matched + 1 {
                        done if done == INTRODUCER.len() => {
                            self.params.clear();
                            Phase::Params
                        }
                        next => Phase::Introducer { matched: next },
                    }
                } else {
                    Self::restart(byte)
                };
                None
            }
            Phase::Params => match byte {
                0x07 => self.finish(),
                0x1b => {
                    self.phase = Phase::ParamsEscape;
                    None
                }
                // CAN and SUB cancel a control sequence.
                0x18 | 0x1a => {
                    self.phase = Phase::Ground;
                    None
                }
                _ if self.params.len() >= MAX_PARAMS => {
                    self.phase = Phase::Ground;
                    None
                }
                _ => {
                    self.params.push(byte);
                    None
                }
            },
            Phase::ParamsEscape => {
                if byte == b'\\' {
                    self.finish()
                } else {
                    // An ESC that is not ST aborts the OSC and starts a new sequence.
                    self.phase = Phase::Introducer { matched: 0 };
                    self.step(byte)
                }
            }
        }
    }

    /// After a byte that broke an introducer: an ESC starts a new candidate.
    fn restart(byte: u8) -> Phase {
        match byte {
            0x1b => Phase::Introducer { matched: 0 },
            _ => Phase::Ground,
        }
    }

    fn finish(&mut self) -> Option<OscEvent> {
        self.phase = Phase::Ground;
        let params = String::from_utf8_lossy(&self.params);
        parse_params(&params)
    }
}

fn parse_params(params: &str) -> Option<OscEvent> {
    if params == "?" {
        return Some(OscEvent::Probe);
    }
    let mut report = StatusReport {
        state: ReportedState::Other(String::new()),
        app: None,
        kind: None,
        message: None,
        other: Vec::new(),
    };
    for field in params.split(':').filter(|f| !f.is_empty()) {
        let (key, value) = field.split_once('=').unwrap_or((field, ""));
        match key {
            "state" => report.state = ReportedState::parse(value),
            "app" => report.app = Some(value.to_string()),
            "kind" => report.kind = Some(value.to_string()),
            "msg" => match decode_base64(value).map(String::from_utf8) {
                Some(Ok(text)) => report.message = Some(text),
                _ => report.other.push((key.to_string(), value.to_string())),
            },
            _ => report.other.push((key.to_string(), value.to_string())),
        }
    }
    Some(OscEvent::Report(report))
}

impl ReportedState {
    fn parse(value: &str) -> ReportedState {
        match value {
            "idle" => ReportedState::Idle,
            "working" => ReportedState::Working,
            "blocked" => ReportedState::Blocked,
            "done" => ReportedState::Done,
            "clear" => ReportedState::Clear,
            other => ReportedState::Other(other.to_string()),
        }
    }
}

/// Standard or URL-safe base64, padding optional.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some((c - b'A') as u32),
            b'a'..=b'z' => Some((c - b'a' + 26) as u32),
            b'0'..=b'9' => Some((c - b'0' + 52) as u32),
            b'+' | b'-' => Some(62),
            b'/' | b'_' => Some(63),
            _ => None,
        }
    };
    let text = text.trim_end_matches('=').as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut bits = 0u32;
        for &c in chunk {
            bits = (bits << 6) | digit(c)?;
        }
        bits <<= 6 * (4 - chunk.len() as u32);
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> Vec<OscEvent> {
        let mut scanner = Osc7501Scanner::new();
        chunks.iter().flat_map(|c| scanner.feed(c)).collect()
    }

    fn report(state: ReportedState) -> StatusReport {
        StatusReport {
            state,
            app: None,
            kind: None,
            message: None,
            other: Vec::new(),
        }
    }

    /// base64("approve Bash: echo hi > $LAB/x"), as Claude Code sends it (§6.3).
    const APPROVE_B64: &str = "YXBwcm92ZSBCYXNoOiBlY2hvIGhpID4gJExBQi94";

    /// Claude Code's run from agent-lab §6.3, with the screen's other output between.
    fn claude_stream() -> Vec<u8> {
        let mut s = Vec::new();
        s.extend_from_slice(b"\x1b[>0q\x1b[?u\x1b]7501;?\x1b\\\x1b[c\x1b[?2026$p");
        s.extend_from_slice(b"\x1b]0;Claude Code\x07\x1b]7501;state=idle:app=claude-code\x07");
        s.extend_from_slice("\x1b[2J❯\u{a0}hello\r\n".as_bytes());
        s.extend_from_slice(b"\x1b]7501;state=working\x1b\\");
        s.extend_from_slice(b"\x1b]7501;state=working:msg=V3JpdGluZyBoaSB0byBhIGZpbGU=\x07");
        s.extend_from_slice(
            format!("\x1b]7501;state=blocked:kind=permission:msg={APPROVE_B64}\x07").as_bytes(),
        );
        s.extend_from_slice(b"\x1b]7501;state=working\x07\x1b]7501;state=done:app=claude-code\x07");
        s.extend_from_slice(b"\x1b]7501;state=clear\x07\x1b]7501;state=clear\x07\x1b]0;\x07");
        s
    }

    fn claude_events() -> Vec<OscEvent> {
        let with_app = |state| StatusReport {
            app: Some("claude-code".into()),
            ..report(state)
        };
        vec![
            OscEvent::Probe,
            OscEvent::Report(with_app(ReportedState::Idle)),
            OscEvent::Report(report(ReportedState::Working)),
            OscEvent::Report(StatusReport {
                message: Some("Writing hi to a file".into()),
                ..report(ReportedState::Working)
            }),
            OscEvent::Report(StatusReport {
                kind: Some("permission".into()),
                message: Some("approve Bash: echo hi > $LAB/x".into()),
                ..report(ReportedState::Blocked)
            }),
            OscEvent::Report(report(ReportedState::Working)),
            OscEvent::Report(with_app(ReportedState::Done)),
            OscEvent::Report(report(ReportedState::Clear)),
            OscEvent::Report(report(ReportedState::Clear)),
        ]
    }

    #[test]
    fn reads_claude_codes_reports_in_one_chunk() {
        assert_eq!(scan(&[&claude_stream()]), claude_events());
    }

    #[test]
    fn reads_them_split_at_every_byte_and_at_every_point() {
        let stream = claude_stream();
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(scan(&bytes), claude_events());
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(scan(&[a, b]), claude_events(), "split at {cut}");
        }
    }

    #[test]
    fn says_where_the_probe_ends_among_the_other_queries() {
        let start = b"\x1b[>0q\x1b[?u\x1b]7501;?\x1b\\\x1b[c\x1b[?2026$p";
        let located = Osc7501Scanner::new().feed_located(start);
        let probe_end = b"\x1b[>0q\x1b[?u\x1b]7501;?\x1b\\".len();
        assert_eq!(located, vec![(probe_end, OscEvent::Probe)]);
        assert_eq!(&start[probe_end..probe_end + 3], b"\x1b[c");
        let mut split = Osc7501Scanner::new();
        assert!(split.feed_located(&start[..12]).is_empty());
        assert_eq!(
            split.feed_located(&start[12..]),
            vec![(probe_end - 12, OscEvent::Probe)]
        );
    }

    #[test]
    fn reads_codex_reports_with_app_and_kind() {
        let stream = b"\x1b]0;\xe2\xa0\x8b Lab session | work-codex\x07\
            \x1b]7501;state=working:app=codex\x07\x1b]10;?\x1b\\\
            \x1b]7501;state=blocked:app=codex:kind=permission\x07\x1b]7501;state=done\x07";
        let events = scan(&[stream]);
        let codex = |state| StatusReport {
            app: Some("codex".into()),
            ..report(state)
        };
        assert_eq!(
            events,
            vec![
                OscEvent::Report(codex(ReportedState::Working)),
                OscEvent::Report(StatusReport {
                    kind: Some("permission".into()),
                    ..codex(ReportedState::Blocked)
                }),
                OscEvent::Report(report(ReportedState::Done)),
            ]
        );
    }

    #[test]
    fn skips_junk_other_oscs_and_broken_sequences() {
        let stream: &[u8] = b"\x1b]75010;state=idle\x07\x1b]7501state=idle\x07\
            \x1b]7501;state=working\x1b[31m\x1b]7501;state=idle\x07\
            \x1b]7501;state=working\x18\x1b\x1b]7501;future=1:state=napping:odd\x07";
        let expected = vec![
            OscEvent::Report(report(ReportedState::Idle)),
            OscEvent::Report(StatusReport {
                other: vec![("future".into(), "1".into()), ("odd".into(), String::new())],
                ..report(ReportedState::Other("napping".into()))
            }),
        ];
        assert_eq!(scan(&[stream]), expected);
    }

    #[test]
    fn a_message_that_is_not_base64_is_kept_raw() {
        let events = scan(&[b"\x1b]7501;state=working:msg=not*base64\x07"]);
        let OscEvent::Report(report) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(report.message, None);
        assert_eq!(
            report.other,
            [("msg".to_string(), "not*base64".to_string())]
        );
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert_eq!(decode_base64("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert!(decode_base64("a").is_none());
    }
}
