//! mix's output as the fuzzers feed it: the compiler's diagnostics, ExUnit (mix's own text
//! and drydock's formatter's events), dialyzer, credo and `mix format --check-formatted`.

use std::path::Path;

use super::compiler::{MixDiagnosticParser, hex_missing, missing_deps};
use super::dialyzer::parse_dialyzer_output;
use super::exunit::parse_exunit_output;
use super::exunit_events::ExUnitEvents;
use super::{credo, format_diff};
use crate::process::Stream;
use crate::toolchain::line_parser::LineParser;

/// Any mix command's stdout and stderr, through every parser that reads one.
pub fn mix_output(root: &Path, stdout: &str, stderr: &str) {
    let mut compiler = MixDiagnosticParser::new(root);
    let mut events = ExUnitEvents::new(root);
    for (stream, text) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
        for line in text.lines() {
            compiler.line(stream, line);
            events.line(stream, line);
        }
    }
    compiler.finish();
    events.finish();
    parse_exunit_output(stdout, root, 4096);
    parse_dialyzer_output(stdout, root);
    credo::parse(stdout, root);
    format_diff::unformatted_files(stderr);
    missing_deps(stderr);
    hex_missing(stderr);
}
