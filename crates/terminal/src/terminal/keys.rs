//! Named keys as agents send them ("Enter", "C-c", "Up", "F5", "M-x"), turned into the
//! bytes a PTY receives (xterm sequences) or the names `tmux send-keys` accepts.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Enter,
    Tab,
    Escape,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Delete,
    Insert,
    Space,
    /// F1..F12.
    F(u8),
    /// Control + a letter: `C-a`..`C-z` (C-c interrupts, C-d is end of input).
    Ctrl(char),
    /// Alt (Meta) + a printable ASCII character: `M-x`, `M-b`, `M-.`.
    Alt(char),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown key {name:?}; valid keys: Enter, Tab, Escape, BSpace (Backspace), Up, Down, Left, \
     Right, Home, End, PageUp (PPage), PageDown (NPage), Delete (DC), Insert (IC), Space, \
     F1..F12, C-a..C-z (Ctrl+letter), M-<char> (Alt+char, e.g. M-x)"
)]
pub struct KeyError {
    pub name: String,
}

impl Key {
    pub(super) fn parse(name: &str) -> Result<Key, KeyError> {
        let error = || KeyError {
            name: name.to_string(),
        };
        let key = match name {
            "Enter" => Key::Enter,
            "Tab" => Key::Tab,
            "Escape" => Key::Escape,
            "BSpace" | "Backspace" => Key::Backspace,
            "Up" => Key::Up,
            "Down" => Key::Down,
            "Left" => Key::Left,
            "Right" => Key::Right,
            "Home" => Key::Home,
            "End" => Key::End,
            "PageUp" | "PPage" => Key::PageUp,
            "PageDown" | "NPage" => Key::PageDown,
            "Delete" | "DC" => Key::Delete,
            "Insert" | "IC" => Key::Insert,
            "Space" => Key::Space,
            _ => {
                if let Some(number) = name.strip_prefix('F') {
                    match number.parse::<u8>() {
                        Ok(n @ 1..=12) if !number.starts_with('0') => Key::F(n),
                        _ => return Err(error()),
                    }
                } else if let Some(rest) = name.strip_prefix("C-") {
                    let mut chars = rest.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) if c.is_ascii_alphabetic() => {
                            Key::Ctrl(c.to_ascii_lowercase())
                        }
                        _ => return Err(error()),
                    }
                } else if let Some(rest) = name.strip_prefix("M-") {
                    let mut chars = rest.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) if c.is_ascii_graphic() => Key::Alt(c),
                        _ => return Err(error()),
                    }
                } else {
                    return Err(error());
                }
            }
        };
        Ok(key)
    }

    /// The bytes an xterm sends for this key in normal cursor-key mode.
    pub(super) fn bytes(&self) -> Vec<u8> {
        self.bytes_for(false)
    }

    /// The bytes an xterm sends for this key; `application_cursor` is DECCKM (set by
    /// full-screen programs such as vim or less), where arrows, Home and End are `ESC O x`.
    pub(super) fn bytes_for(&self, application_cursor: bool) -> Vec<u8> {
        let cursor = |letter: u8| {
            if application_cursor {
                vec![0x1b, b'O', letter]
            } else {
                vec![0x1b, b'[', letter]
            }
        };
        match self {
            Key::Enter => b"\r".to_vec(),
            Key::Tab => b"\t".to_vec(),
            Key::Escape => vec![0x1b],
            Key::Backspace => vec![0x7f],
            Key::Space => b" ".to_vec(),
            Key::Up => cursor(b'A'),
            Key::Down => cursor(b'B'),
            Key::Right => cursor(b'C'),
            Key::Left => cursor(b'D'),
            Key::Home => cursor(b'H'),
            Key::End => cursor(b'F'),
            Key::Insert => b"\x1b[2~".to_vec(),
            Key::Delete => b"\x1b[3~".to_vec(),
            Key::PageUp => b"\x1b[5~".to_vec(),
            Key::PageDown => b"\x1b[6~".to_vec(),
            Key::F(n) => match n {
                1 => b"\x1bOP".to_vec(),
                2 => b"\x1bOQ".to_vec(),
                3 => b"\x1bOR".to_vec(),
                4 => b"\x1bOS".to_vec(),
                5 => b"\x1b[15~".to_vec(),
                6 => b"\x1b[17~".to_vec(),
                7 => b"\x1b[18~".to_vec(),
                8 => b"\x1b[19~".to_vec(),
                9 => b"\x1b[20~".to_vec(),
                10 => b"\x1b[21~".to_vec(),
                11 => b"\x1b[23~".to_vec(),
                _ => b"\x1b[24~".to_vec(),
            },
            Key::Ctrl(c) => vec![(*c as u8).to_ascii_lowercase() & 0x1f],
            Key::Alt(c) => vec![0x1b, *c as u8],
        }
    }

    /// The key name `tmux send-keys` understands.
    pub(super) fn tmux_name(&self) -> String {
        match self {
            Key::Enter => "Enter".into(),
            Key::Tab => "Tab".into(),
            Key::Escape => "Escape".into(),
            Key::Backspace => "BSpace".into(),
            Key::Up => "Up".into(),
            Key::Down => "Down".into(),
            Key::Left => "Left".into(),
            Key::Right => "Right".into(),
            Key::Home => "Home".into(),
            Key::End => "End".into(),
            Key::PageUp => "PPage".into(),
            Key::PageDown => "NPage".into(),
            Key::Delete => "DC".into(),
            Key::Insert => "IC".into(),
            Key::Space => "Space".into(),
            Key::F(n) => format!("F{n}"),
            Key::Ctrl(c) => format!("C-{c}"),
            Key::Alt(c) => format!("M-{c}"),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tmux_name())
    }
}

impl std::str::FromStr for Key {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Key::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_aliases() {
        assert_eq!(Key::parse("Enter").unwrap(), Key::Enter);
        assert_eq!(Key::parse("BSpace").unwrap(), Key::Backspace);
        assert_eq!(Key::parse("Backspace").unwrap(), Key::Backspace);
        assert_eq!(Key::parse("PPage").unwrap(), Key::PageUp);
        assert_eq!(Key::parse("NPage").unwrap(), Key::PageDown);
        assert_eq!(Key::parse("DC").unwrap(), Key::Delete);
        assert_eq!(Key::parse("IC").unwrap(), Key::Insert);
        assert_eq!(Key::parse("F12").unwrap(), Key::F(12));
        assert_eq!(Key::parse("C-c").unwrap(), Key::Ctrl('c'));
        assert_eq!(Key::parse("C-Z").unwrap(), Key::Ctrl('z'));
        assert_eq!(Key::parse("M-x").unwrap(), Key::Alt('x'));
    }

    #[test]
    fn rejects_unknown_names_with_the_valid_list() {
        for bad in [
            "enter", "F0", "F13", "F01", "C-", "C-cc", "C-1", "M-", "Foo", "",
        ] {
            let error = Key::parse(bad).unwrap_err();
            assert!(error.to_string().contains("valid keys"), "{bad}: {error}");
        }
    }

    #[test]
    fn bytes_are_xterm_sequences() {
        assert_eq!(Key::Ctrl('c').bytes(), vec![0x03]);
        assert_eq!(Key::Ctrl('d').bytes(), vec![0x04]);
        assert_eq!(Key::Ctrl('z').bytes(), vec![0x1a]);
        assert_eq!(Key::Ctrl('a').bytes(), vec![0x01]);
        assert_eq!(Key::Enter.bytes(), b"\r");
        assert_eq!(Key::Up.bytes(), b"\x1b[A");
        assert_eq!(Key::Up.bytes_for(true), b"\x1bOA");
        assert_eq!(Key::F(5).bytes(), b"\x1b[15~");
        assert_eq!(Key::Alt('x').bytes(), b"\x1bx");
        assert_eq!(Key::Backspace.bytes(), vec![0x7f]);
    }

    #[test]
    fn tmux_names_round_trip() {
        for name in [
            "C-c", "Enter", "BSpace", "Up", "F5", "M-x", "PPage", "DC", "Space",
        ] {
            assert_eq!(Key::parse(name).unwrap().tmux_name(), name);
        }
    }
}
