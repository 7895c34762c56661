//! A streaming scanner for OSC 133 shell-integration marks in raw terminal output:
//! `ESC ] 133 ; A` (prompt start), `B` (command line start), `C` (command output start),
//! `D [; exit]` (command finished), each ended by BEL or ST (`ESC \`).
//!
//! Sequences may be split across `feed` calls. The scanner yields the plain bytes between
//! marks and the marks, in order, so a caller can keep exactly the bytes a command printed
//! between its C and D marks.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    PromptStart,
    CommandStart,
    OutputStart,
    CommandFinished { exit_code: Option<i32> },
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum MarkEvent<'a> {
    Text(&'a [u8]),
    Mark(Mark),
}

const PREFIX: &[u8] = b"\x1b]133;";
/// Longer parameter strings are not marks we understand; they pass through as text.
const MAX_PARAMS: usize = 256;

#[derive(Debug, Default)]
pub(super) struct MarkScanner {
    /// Bytes of a possible mark seen so far (a prefix of PREFIX, then parameters).
    pending: Vec<u8>,
    /// Inside the parameters, an ESC was seen: expecting `\`.
    escape_in_params: bool,
}

impl MarkScanner {
    pub(super) fn new() -> MarkScanner {
        MarkScanner::default()
    }

    /// Scans `bytes`, calling `emit` with text runs and marks in order. Bytes that may
    /// begin a mark are held back until the mark completes or proves not to be one.
    pub(super) fn feed(&mut self, bytes: &[u8], mut emit: impl FnMut(MarkEvent<'_>)) {
        let mut i = 0;
        let mut text_start = 0;
        while i < bytes.len() {
            if self.pending.is_empty() {
                match bytes[i..].iter().position(|&b| b == 0x1b) {
                    None => break,
                    Some(found) => {
                        i += found;
                        if i > text_start {
                            emit(MarkEvent::Text(&bytes[text_start..i]));
                        }
                        self.pending.push(0x1b);
                        i += 1;
                        text_start = i;
                        continue;
                    }
                }
            }
            let byte = bytes[i];
            if self.pending.len() < PREFIX.len() {
                if byte == PREFIX[self.pending.len()] {
                    self.pending.push(byte);
                    i += 1;
                    text_start = i;
                } else {
                    // Not a mark: give back what was held; reconsider this byte.
                    self.flush_pending(&mut emit);
                    text_start = i;
                }
                continue;
            }
            // In the parameters.
            if self.escape_in_params {
                self.escape_in_params = false;
                if byte == b'\\' {
                    i += 1;
                    text_start = i;
                    self.finish(&mut emit);
                } else {
                    // ESC followed by something else: not a mark; the ESC starts anew.
                    self.pending.pop();
                    self.flush_pending(&mut emit);
                    self.pending.push(0x1b);
                    text_start = i;
                }
                continue;
            }
            match byte {
                0x07 => {
                    i += 1;
                    text_start = i;
                    self.finish(&mut emit);
                }
                0x1b => {
                    self.escape_in_params = true;
                    self.pending.push(byte);
                    i += 1;
                    text_start = i;
                }
                _ if self.pending.len() >= PREFIX.len() + MAX_PARAMS => {
                    self.flush_pending(&mut emit);
                    text_start = i;
                }
                _ => {
                    self.pending.push(byte);
                    i += 1;
                    text_start = i;
                }
            }
        }
        if self.pending.is_empty() && text_start < bytes.len() {
            emit(MarkEvent::Text(&bytes[text_start..]));
        }
    }

    fn flush_pending(&mut self, emit: &mut impl FnMut(MarkEvent<'_>)) {
        self.escape_in_params = false;
        let pending = std::mem::take(&mut self.pending);
        emit(MarkEvent::Text(&pending));
        // Keep the allocation for the next candidate.
        self.pending = pending;
        self.pending.clear();
    }

    fn finish(&mut self, emit: &mut impl FnMut(MarkEvent<'_>)) {
        let params = &self.pending[PREFIX.len()..];
        let params = params.strip_suffix(b"\x1b").unwrap_or(params);
        match parse_mark(params) {
            Some(mark) => {
                emit(MarkEvent::Mark(mark));
                self.pending.clear();
                self.escape_in_params = false;
            }
            // An OSC 133 we do not know (e.g. `P`): it is not output either; drop it.
            None => {
                self.pending.clear();
                self.escape_in_params = false;
            }
        }
    }
}

fn parse_mark(params: &[u8]) -> Option<Mark> {
    let mut fields = params.split(|&b| b == b';');
    let kind = fields.next()?;
    match kind {
        b"A" => Some(Mark::PromptStart),
        b"B" => Some(Mark::CommandStart),
        b"C" => Some(Mark::OutputStart),
        b"D" => {
            let exit_code = fields
                .next()
                .and_then(|field| std::str::from_utf8(field).ok())
                .and_then(|field| field.trim().parse::<i32>().ok());
            Some(Mark::CommandFinished { exit_code })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Owned {
        Text(Vec<u8>),
        Mark(Mark),
    }

    /// Feeds the chunks and merges adjacent text events.
    fn scan(chunks: &[&[u8]]) -> Vec<Owned> {
        let mut scanner = MarkScanner::new();
        let mut out: Vec<Owned> = Vec::new();
        for chunk in chunks {
            scanner.feed(chunk, |event| match event {
                MarkEvent::Text(text) => {
                    if let Some(Owned::Text(last)) = out.last_mut() {
                        last.extend_from_slice(text);
                    } else {
                        out.push(Owned::Text(text.to_vec()));
                    }
                }
                MarkEvent::Mark(mark) => out.push(Owned::Mark(mark)),
            });
        }
        out
    }

    const STREAM: &[u8] = b"\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x1b\\echo hi\r\n\
        \x1b]133;C\x07hi\r\n\x1b[1mbold\x1b[0m\x1b]2;title\x07\r\n\x1b]133;D;42\x1b\\";

    fn expected() -> Vec<Owned> {
        vec![
            Owned::Mark(Mark::CommandFinished { exit_code: Some(0) }),
            Owned::Mark(Mark::PromptStart),
            Owned::Text(b"$ ".to_vec()),
            Owned::Mark(Mark::CommandStart),
            Owned::Text(b"echo hi\r\n".to_vec()),
            Owned::Mark(Mark::OutputStart),
            Owned::Text(b"hi\r\n\x1b[1mbold\x1b[0m\x1b]2;title\x07\r\n".to_vec()),
            Owned::Mark(Mark::CommandFinished {
                exit_code: Some(42),
            }),
        ]
    }

    #[test]
    fn whole_stream() {
        assert_eq!(scan(&[STREAM]), expected());
    }

    #[test]
    fn split_at_every_position() {
        for split in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(split);
            assert_eq!(scan(&[a, b]), expected(), "split at {split}");
        }
    }

    #[test]
    fn byte_by_byte() {
        let chunks: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(scan(&chunks), expected());
    }

    #[test]
    fn near_misses_are_text() {
        let input: &[u8] = b"a\x1b]13x\x1b[31m\x1b\x1b]133;Zq\x07b\x1b]133;D\x07";
        assert_eq!(
            scan(&[input]),
            vec![
                // The unknown 133;Z mark is dropped.
                Owned::Text(b"a\x1b]13x\x1b[31m\x1bb".to_vec()),
                Owned::Mark(Mark::CommandFinished { exit_code: None }),
            ]
        );
    }

    #[test]
    fn overlong_params_are_text() {
        let mut input = b"\x1b]133;".to_vec();
        input.extend(std::iter::repeat_n(b'x', 1000));
        input.push(0x07);
        let out = scan(&[&input]);
        assert_eq!(out, vec![Owned::Text(input.clone())]);
    }
}
