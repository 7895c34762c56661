//! cargo's and rustc's output as the fuzzers feed it: every parser of it, on text nobody
//! checked.

use std::path::Path;

use super::libtest::LibtestParser;
use super::messages::CargoMessageParser;
use super::run::built_binary;
use super::rustfmt::parse_fmt_check;
use super::{RunningBinary, missing_component, output_tail};
use crate::process::Stream;
use crate::toolchain::line_parser::LineParser;

/// `cargo build|test --message-format=json`: its JSON messages and libtest's text on stdout,
/// cargo's own lines on stderr, fed as a run feeds them.
pub fn cargo_output(root: &Path, stdout: &str, stderr: &str) {
    let mut messages = CargoMessageParser::new(root, root, true);
    let mut libtest = LibtestParser::new(root, root, 4096);
    let mut running = RunningBinary::default();
    for line in stdout.lines() {
        messages.line(Stream::Stdout, line);
        libtest.line(Stream::Stdout, line);
        built_binary(line);
    }
    for line in stderr.lines() {
        libtest.line(Stream::Stderr, line);
        running.observe_stderr(line, root);
    }
    messages.finish();
    libtest.finish();
    let _ = missing_component(stderr);
    output_tail(stderr);
    parse_fmt_check(stdout, root, 40);
}
