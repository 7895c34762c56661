//! OSC 7501 "program status" reports (agent-lab §6): `state=…[:app=…][:kind=…][:msg=<base64>]`,
//! e.g. `state=blocked:kind=permission:msg=…` (Claude Code, once its terminal answered
//! the probe) or `state=working:app=codex` (Codex, unasked). The terminal reads them out of
//! the program's output and keeps the text after `7501;` (`terminal::core::ProgramStatus`);
//! here that text becomes a report.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

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

impl StatusReport {
    /// The report in `text`, the sequence's parameters after `7501;`.
    pub fn parse(text: &str) -> StatusReport {
        let mut report = StatusReport {
            state: ReportedState::Other(String::new()),
            app: None,
            kind: None,
            message: None,
            other: Vec::new(),
        };
        for field in text.split(':').filter(|f| !f.is_empty()) {
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
        report
    }
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
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let standard = GeneralPurpose::new(&base64::alphabet::STANDARD, config);
    let url_safe = GeneralPurpose::new(&base64::alphabet::URL_SAFE, config);
    standard
        .decode(text)
        .or_else(|_| url_safe.decode(text))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::core::TerminalCore;

    fn report(state: ReportedState) -> StatusReport {
        StatusReport {
            state,
            app: None,
            kind: None,
            message: None,
            other: Vec::new(),
        }
    }

    /// The reports a terminal kept from `chunks` of output.
    fn reports(chunks: &[&[u8]]) -> Vec<StatusReport> {
        let core = TerminalCore::new(24, 80, 100);
        for chunk in chunks {
            core.feed(chunk);
        }
        core.program_status()
            .iter()
            .map(|status| StatusReport::parse(&status.report))
            .collect()
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

    fn claude_reports() -> Vec<StatusReport> {
        let with_app = |state| StatusReport {
            app: Some("claude-code".into()),
            ..report(state)
        };
        vec![
            with_app(ReportedState::Idle),
            report(ReportedState::Working),
            StatusReport {
                message: Some("Writing hi to a file".into()),
                ..report(ReportedState::Working)
            },
            StatusReport {
                kind: Some("permission".into()),
                message: Some("approve Bash: echo hi > $LAB/x".into()),
                ..report(ReportedState::Blocked)
            },
            report(ReportedState::Working),
            with_app(ReportedState::Done),
            report(ReportedState::Clear),
            report(ReportedState::Clear),
        ]
    }

    #[test]
    fn a_terminal_keeps_claude_codes_reports_in_one_chunk_or_split_anywhere() {
        let stream = claude_stream();
        assert_eq!(reports(&[&stream]), claude_reports());
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(reports(&bytes), claude_reports());
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(reports(&[a, b]), claude_reports(), "split at {cut}");
        }
    }

    #[test]
    fn reads_codex_reports_with_app_and_kind() {
        let stream = b"\x1b]0;\xe2\xa0\x8b Lab session | work-codex\x07\
            \x1b]7501;state=working:app=codex\x07\x1b]10;?\x1b\\\
            \x1b]7501;state=blocked:app=codex:kind=permission\x07\x1b]7501;state=done\x07";
        let codex = |state| StatusReport {
            app: Some("codex".into()),
            ..report(state)
        };
        assert_eq!(
            reports(&[stream]),
            vec![
                codex(ReportedState::Working),
                StatusReport {
                    kind: Some("permission".into()),
                    ..codex(ReportedState::Blocked)
                },
                report(ReportedState::Done),
            ]
        );
    }

    #[test]
    fn other_oscs_and_unknown_fields_are_not_mistaken_for_states() {
        let stream: &[u8] = b"\x1b]75010;state=idle\x07\x1b]7501state=idle\x07\
            \x1b]7501;future=1:state=napping:odd\x07";
        assert_eq!(
            reports(&[stream]),
            vec![StatusReport {
                other: vec![("future".into(), "1".into()), ("odd".into(), String::new())],
                ..report(ReportedState::Other("napping".into()))
            }]
        );
    }

    #[test]
    fn a_message_that_is_not_base64_is_kept_raw() {
        let report = StatusReport::parse("state=working:msg=not*base64");
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
