//! The one shape of the streaming parsers of a tool's output (cargo's JSON messages,
//! libtest, mix's compiler, drydock's ExUnit formatter): fed every line as the tool prints
//! it, on the stream it came on, a parser may say at once what the line meant (progress);
//! `finish` hands over everything it gathered.

use crate::process::Stream;

pub trait LineParser {
    /// What a single line meant, reported while the tool still runs.
    type Event;
    /// What the whole output meant.
    type Output;

    fn line(&mut self, stream: Stream, line: &str) -> Option<Self::Event>;

    fn finish(self) -> Self::Output;

    /// Feeds every line of `text`, as printed on `stream`, and returns what they meant.
    #[cfg(test)]
    fn feed(&mut self, stream: Stream, text: &str) -> Vec<Self::Event> {
        text.lines()
            .filter_map(|line| self.line(stream, line))
            .collect()
    }
}
