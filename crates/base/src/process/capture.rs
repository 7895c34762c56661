//! A child's output as it arrives: split into lines for the caller, and captured head and
//! tail within a cap for the result.

use std::borrow::Cow;
use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::time::sleep;

use super::{CapturedOutput, MAX_LINE_BYTES, OnLine, Stream};
use crate::text_budget::{elision_marker, json_cost, prefix_within, suffix_within};

const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Reads stdout and stderr as data arrives, feeding lines to the callback and the capture.
pub(super) struct Pump {
    stdout: OutputReader,
    stderr: OutputReader,
}

impl Pump {
    pub(super) fn new(child: &mut Child, output_cap: usize) -> Self {
        let stdout = child.stdout.take().map(|pipe| Box::new(pipe) as Pipe);
        let stderr = child.stderr.take().map(|pipe| Box::new(pipe) as Pipe);
        Self {
            stdout: OutputReader::new(Stream::Stdout, stdout, output_cap),
            stderr: OutputReader::new(Stream::Stderr, stderr, output_cap),
        }
    }

    pub(super) fn is_open(&self) -> bool {
        self.stdout.is_open() || self.stderr.is_open()
    }

    /// Reads from whichever stream is ready first and processes what was read. Cancel-safe:
    /// nothing is lost if dropped while waiting. Never completes when both streams are closed.
    pub(super) async fn step(&mut self, on_line: &mut OnLine<'_>) {
        let (reader, result) = tokio::select! {
            result = self.stdout.read() => (&mut self.stdout, result),
            result = self.stderr.read() => (&mut self.stderr, result),
        };
        match result {
            Ok(0) => reader.close(on_line),
            Ok(len) => reader.consume(len, on_line),
            Err(error) => {
                tracing::warn!(stream = ?reader.stream, "could not read the child's output: {error}");
                reader.close(on_line);
            }
        }
    }

    /// Reads until both streams are closed or `limit` has passed.
    pub(super) async fn drain(&mut self, limit: Duration, on_line: &mut OnLine<'_>) {
        let give_up = sleep(limit);
        tokio::pin!(give_up);
        while self.is_open() {
            tokio::select! {
                () = &mut give_up => return,
                () = self.step(on_line) => {}
            }
        }
    }

    pub(super) fn finish(self, on_line: &mut OnLine<'_>) -> (CapturedOutput, CapturedOutput) {
        (self.stdout.finish(on_line), self.stderr.finish(on_line))
    }
}

type Pipe = Box<dyn AsyncRead + Unpin + Send>;

struct OutputReader {
    stream: Stream,
    pipe: Option<Pipe>,
    buf: Vec<u8>,
    lines: LineSplitter,
    capture: Capture,
}

impl OutputReader {
    fn new(stream: Stream, pipe: Option<Pipe>, output_cap: usize) -> Self {
        Self {
            stream,
            pipe,
            buf: vec![0; READ_CHUNK_BYTES],
            lines: LineSplitter::new(MAX_LINE_BYTES),
            capture: Capture::new(output_cap),
        }
    }

    fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    async fn read(&mut self) -> io::Result<usize> {
        match &mut self.pipe {
            Some(pipe) => pipe.read(&mut self.buf).await,
            None => std::future::pending().await,
        }
    }

    fn consume(&mut self, len: usize, on_line: &mut OnLine<'_>) {
        let data = &self.buf[..len];
        let stream = self.stream;
        self.capture.push(data);
        self.lines.feed(data, &mut |line| on_line(stream, line));
    }

    fn close(&mut self, on_line: &mut OnLine<'_>) {
        self.pipe = None;
        let stream = self.stream;
        self.lines.finish(&mut |line| on_line(stream, line));
    }

    fn finish(mut self, on_line: &mut OnLine<'_>) -> CapturedOutput {
        self.close(on_line);
        self.capture.finish()
    }
}

/// Splits a byte stream into lines without a trailing `\n` or `\r\n`; a line longer than
/// `max_line` bytes is cut there and ends with the elision marker.
struct LineSplitter {
    pending: Vec<u8>,
    overflow: u64,
    max_line: usize,
}

impl LineSplitter {
    fn new(max_line: usize) -> Self {
        Self {
            pending: Vec::new(),
            overflow: 0,
            max_line,
        }
    }

    fn feed(&mut self, mut data: &[u8], emit: &mut dyn FnMut(&str)) {
        while let Some(newline) = data.iter().position(|&b| b == b'\n') {
            self.append(&data[..newline]);
            self.emit_pending(emit);
            data = &data[newline + 1..];
        }
        self.append(data);
    }

    /// Emits the last line if the stream did not end with a newline.
    fn finish(&mut self, emit: &mut dyn FnMut(&str)) {
        if !self.pending.is_empty() || self.overflow > 0 {
            self.emit_pending(emit);
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.max_line - self.pending.len();
        let kept = bytes.len().min(room);
        self.pending.extend_from_slice(&bytes[..kept]);
        self.overflow += (bytes.len() - kept) as u64;
    }

    fn emit_pending(&mut self, emit: &mut dyn FnMut(&str)) {
        emit(&render_line(&self.pending, self.overflow));
        self.pending.clear();
        self.overflow = 0;
    }
}

fn render_line(bytes: &[u8], overflow: u64) -> Cow<'_, str> {
    if overflow == 0 {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        return String::from_utf8_lossy(bytes);
    }
    let kept = without_partial_char_at_end(bytes);
    let elided = overflow + (bytes.len() - kept.len()) as u64;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(kept),
        elision_marker(elided)
    );
    Cow::Owned(text)
}

/// Keeps the first `cap / 2` and the last `cap - cap / 2` bytes of a stream.
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let into_head = data.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&data[..into_head]);
        self.push_tail(&data[into_head..]);
    }

    fn push_tail(&mut self, data: &[u8]) {
        let data = &data[data.len().saturating_sub(self.tail_cap)..];
        self.tail.extend_from_slice(data);
        // Trimming only at twice the cap moves each byte a bounded number of times.
        if self.tail.len() > self.tail_cap.saturating_mul(2) {
            let excess = self.tail.len() - self.tail_cap;
            self.tail.drain(..excess);
        }
    }

    /// The kept text, within the cap counted as JSON (a control character costs up to six
    /// bytes there), cut between characters.
    fn finish(self) -> CapturedOutput {
        let tail = &self.tail[self.tail.len().saturating_sub(self.tail_cap)..];
        if (self.head.len() + tail.len()) as u64 == self.total {
            let whole = [self.head.as_slice(), tail].concat();
            if json_cost(&whole) <= self.head_cap + self.tail_cap {
                return CapturedOutput {
                    text: String::from_utf8_lossy(&whole).into_owned(),
                    total_bytes: self.total,
                    elided_bytes: 0,
                };
            }
        }
        let head = prefix_within(without_partial_char_at_end(&self.head), self.head_cap);
        let tail = suffix_within(without_partial_char_at_start(tail), self.tail_cap);
        let elided = self.total - (head.len() + tail.len()) as u64;
        CapturedOutput {
            text: format!(
                "{}\n{}\n{}",
                String::from_utf8_lossy(head),
                elision_marker(elided),
                String::from_utf8_lossy(tail)
            ),
            total_bytes: self.total,
            elided_bytes: elided,
        }
    }
}

/// Drops a UTF-8 sequence cut short at the end.
fn without_partial_char_at_end(bytes: &[u8]) -> &[u8] {
    let last_three = bytes.len().saturating_sub(3)..bytes.len();
    for start in last_three.rev() {
        match utf8_sequence_len(bytes[start]) {
            None => continue,
            Some(len) if start + len > bytes.len() => return &bytes[..start],
            Some(_) => return bytes,
        }
    }
    bytes
}

/// Drops continuation bytes whose lead byte was cut off at the start.
fn without_partial_char_at_start(bytes: &[u8]) -> &[u8] {
    let orphans = bytes
        .iter()
        .take(3)
        .take_while(|&&b| utf8_sequence_len(b).is_none())
        .count();
    &bytes[orphans..]
}

/// The length of the UTF-8 sequence a byte starts, or `None` for a continuation byte.
fn utf8_sequence_len(byte: u8) -> Option<usize> {
    match byte {
        0x80..=0xBF => None,
        0xC0..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF7 => Some(4),
        _ => Some(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_does_not_split_utf8_characters() {
        let mut capture = Capture::new(5);
        capture.push("aéééé".as_bytes());

        let output = capture.finish();
        assert_eq!(output.text, "a\n[... 6 bytes elided ...]\né");
        assert_eq!(output.total_bytes, 9);
        assert_eq!(output.elided_bytes, 6);
    }

    #[test]
    fn the_tail_follows_many_small_pushes() {
        let mut capture = Capture::new(4);
        for byte in b"0123456789" {
            capture.push(&[*byte]);
        }

        let output = capture.finish();
        assert_eq!(output.text, "01\n[... 6 bytes elided ...]\n89");
        assert!(capture_tail_bounded(4));
    }

    fn capture_tail_bounded(cap: usize) -> bool {
        let mut capture = Capture::new(cap);
        (0..10_000).all(|_| {
            capture.push(b"xyz");
            capture.tail.len() <= 2 * cap
        })
    }

    #[test]
    fn a_zero_cap_keeps_only_the_marker() {
        let mut capture = Capture::new(0);
        capture.push(b"hello");

        let output = capture.finish();
        assert_eq!(output.text, "\n[... 5 bytes elided ...]\n");
        assert_eq!(output.elided_bytes, 5);
    }

    #[test]
    fn lines_split_across_chunks_are_joined() {
        let mut splitter = LineSplitter::new(100);
        let mut lines = Vec::new();
        for chunk in [&b"ab"[..], b"c\nd", b"e\r", b"\n", b"\nlast"] {
            splitter.feed(chunk, &mut |line| lines.push(line.to_owned()));
        }
        splitter.finish(&mut |line| lines.push(line.to_owned()));

        assert_eq!(lines, ["abc", "de", "", "last"]);
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let mut splitter = LineSplitter::new(4);
        let mut lines = Vec::new();
        splitter.feed("abcé-rest\nok\n".as_bytes(), &mut |line| {
            lines.push(line.to_owned())
        });

        assert_eq!(lines, ["abc[... 7 bytes elided ...]", "ok"]);
    }
}
