//! How a profile answers and prompts an agent: the keys for approve, deny, choose and
//! interrupt, written in TOML with escapes, and how text is submitted.

use std::fmt;

use serde::{Deserialize, Deserializer, de};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    pub approve: KeyBytes,
    pub approve_always: Option<KeyBytes>,
    pub deny: KeyBytes,
    /// Keys that pick option `{n}` of a menu.
    pub choose: ChooseKeys,
    pub interrupt: KeyBytes,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// Text and Enter go as separate writes at least this far apart: at 0 ms Claude Code
    /// merged 3 in 120 and Codex took the Enter into the draft (agent-lab §8.1, §9).
    pub gap_ms: u64,
    #[serde(default = "default_enter")]
    pub enter: KeyBytes,
    /// Text longer than this many characters, or with a newline, goes as bracketed paste;
    /// None: never pasted.
    pub paste_above: Option<usize>,
}

fn default_enter() -> KeyBytes {
    KeyBytes(b"\r".to_vec())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitPlan {
    /// The text as typed, then Enter after the gap.
    Typed,
    /// `ESC[200~ text ESC[201~`, then Enter after the gap.
    Pasted,
}

impl Submission {
    pub fn plan(&self, text: &str) -> SubmitPlan {
        match self.paste_above {
            Some(limit) if text.contains('\n') || text.chars().count() > limit => {
                SubmitPlan::Pasted
            }
            _ => SubmitPlan::Typed,
        }
    }
}

/// Bytes for the terminal, written in TOML with escapes: `'\r'`, `'\x1b'`, `'\t'`, `'\\'`.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes(pub Vec<u8>);

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyBytes({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl<'de> Deserialize<'de> for KeyBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        decode_escapes(&text)
            .map(KeyBytes)
            .map_err(de::Error::custom)
    }
}

/// A key template with `{n}` for the option number (`'{n}'` types the digit).
#[derive(Debug, Clone)]
pub struct ChooseKeys(String);

impl ChooseKeys {
    pub fn for_option(&self, number: u32) -> Vec<u8> {
        let text = self.0.replace("{n}", &number.to_string());
        decode_escapes(&text).expect("checked when the profile was read")
    }
}

impl<'de> Deserialize<'de> for ChooseKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if !text.contains("{n}") {
            return Err(de::Error::custom("choose keys must contain {n}"));
        }
        decode_escapes(&text).map_err(de::Error::custom)?;
        Ok(ChooseKeys(text))
    }
}

/// An escape of a key sequence that is none.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad escape \\{escape} in {text:?}")]
struct BadEscape {
    escape: String,
    text: String,
}

fn decode_escapes(text: &str) -> Result<Vec<u8>, BadEscape> {
    let bad = |escape: String| BadEscape {
        escape,
        text: text.to_string(),
    };
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('r') => out.push(b'\r'),
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('e') => out.push(0x1b),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let byte = u8::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 2)
                    .ok_or_else(|| bad(format!("x{hex}")))?;
                out.push(byte);
            }
            other => return Err(bad(other.unwrap_or(' ').to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::profile::Profiles;

    #[test]
    fn keys_decode_escapes() {
        let claude = Profiles::embedded().get("claude").unwrap().clone();
        let keys = claude.keys.unwrap();
        assert_eq!(keys.approve.0, b"\r");
        assert_eq!(keys.deny.0, b"\x1b");
        assert_eq!(keys.choose.for_option(2), b"2");
        assert_eq!(decode_escapes(r"a\x1b[A\e\\").unwrap(), b"a\x1b[A\x1b\\");
        assert_eq!(
            decode_escapes(r"\x1").unwrap_err().to_string(),
            r#"bad escape \x1 in "\\x1""#
        );
        assert_eq!(
            decode_escapes(r"\q").unwrap_err().to_string(),
            r#"bad escape \q in "\\q""#
        );
    }

    #[test]
    fn submission_pastes_long_or_multi_line_text() {
        let profiles = Profiles::embedded();
        let claude = profiles.get("claude").unwrap().submit.clone().unwrap();
        assert_eq!(claude.plan("fix the build"), SubmitPlan::Typed);
        assert_eq!(claude.plan(&"x".repeat(200)), SubmitPlan::Pasted);
        assert_eq!(claude.plan("a\nb"), SubmitPlan::Pasted);
        let codex = profiles.get("codex").unwrap().submit.clone().unwrap();
        assert!(
            codex.gap_ms >= 300,
            "Codex lost Enter at 0 ms (agent-lab §9)"
        );
    }
}
