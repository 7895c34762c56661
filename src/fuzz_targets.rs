//! The fuzz targets: every parser of text drydock did not write, each reached as drydock
//! reaches it, from one input of bytes. `fuzz/` drives them under libFuzzer
//! (`scripts/fuzz.sh`); the unit tests replay their seeds and past crashes on every test run.
//!
//! Built only for the tests and for fuzzing (`--cfg fuzzing`, which `scripts/fuzz-rustc`
//! adds): drydock itself carries none of it.

use std::path::Path;

use crate::{agents, config, docs, http, tasks, terminal, toolchain};

pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "cargo_output",
        run: cargo_output,
    },
    Target {
        name: "mix_output",
        run: mix_output,
    },
    Target {
        name: "terminal_output",
        run: terminal_output,
    },
    Target {
        name: "tmux_control",
        run: terminal::fuzzing::tmux_control,
    },
    Target {
        name: "agent_screen",
        run: agent_screen,
    },
    Target {
        name: "agent_profile",
        run: |data| agents::fuzzing::agent_profile(&String::from_utf8_lossy(data)),
    },
    Target {
        name: "config_file",
        run: config_file,
    },
    Target {
        name: "remote_url",
        run: remote_url,
    },
    Target {
        name: "docs_html",
        run: |data| with_question(data, docs::fuzzing::html_page),
    },
    Target {
        name: "docs_markdown",
        run: |data| with_question(data, docs::fuzzing::markdown_page),
    },
    Target {
        name: "docs_mdx",
        run: |data| with_question(data, docs::fuzzing::mdx_page),
    },
    Target {
        name: "docs_rst",
        run: |data| with_question(data, docs::fuzzing::rst_page),
    },
    Target {
        name: "docs_asciidoc",
        run: |data| with_question(data, docs::fuzzing::asciidoc_page),
    },
    Target {
        name: "docs_rust_source",
        run: |data| with_question(data, docs::fuzzing::rust_source),
    },
    Target {
        name: "docs_elixir",
        run: |data| with_question(data, docs::fuzzing::elixir_docs),
    },
    Target {
        name: "json_rpc",
        run: json_rpc,
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}

/// Where the tools ran: a path with a space and non-ASCII, like the ones people have.
const PROJECT: &str = "/fuzz/odd päth/project";

/// The text before the first `sep`, and the rest (empty when there is no `sep`).
fn split_once(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `stdout NUL stderr`.
fn cargo_output(data: &[u8]) {
    let (stdout, stderr) = split_once(data, 0);
    toolchain::fuzzing::cargo_output(Path::new(PROJECT), &text(stdout), &text(stderr));
}

/// `stdout NUL stderr`.
fn mix_output(data: &[u8]) {
    let (stdout, stderr) = split_once(data, 0);
    toolchain::fuzzing::mix_output(Path::new(PROJECT), &text(stdout), &text(stderr));
}

/// Rows, columns and the size of the reads (a byte each), then the output.
fn terminal_output(data: &[u8]) {
    let [rows, cols, read, output @ ..] = data else {
        return;
    };
    let read = usize::from(*read) + 1;
    let cuts: Vec<usize> = (read..output.len()).step_by(read).collect();
    terminal::fuzzing::terminal_output(u16::from(*rows), u16::from(*cols), &cuts, output);
}

/// The title, the OSC 7501 report, the hook event, then the screen's rows, a line each.
fn agent_screen(data: &[u8]) {
    let text = text(data);
    let mut lines = text.split('\n');
    let (title, osc, hook) = (
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
    );
    let screen: Vec<&str> = lines.collect();
    agents::fuzzing::agent_screen(title, osc, hook, &screen);
}

fn config_file(data: &[u8]) {
    let _ = config::resolve_file_text(&text(data), &std::env::temp_dir());
}

/// The `[tasks] repositories` globs (a line, split at white space), then the URL.
fn remote_url(data: &[u8]) {
    let (patterns, url) = split_once(data, b'\n');
    let patterns = text(patterns)
        .split_whitespace()
        .take(8)
        .map(String::from)
        .collect();
    tasks::fuzzing::remote_url(patterns, &text(url));
}

/// The question (a line), then the page.
fn with_question(data: &[u8], chunk: fn(&str, &str)) {
    let (question, page) = split_once(data, b'\n');
    chunk(&text(question), &text(page));
}

/// The `Origin` header (a line), then the body.
fn json_rpc(data: &[u8]) {
    let (origin, body) = split_once(data, b'\n');
    http::fuzzing::json_rpc(origin, body);
}

#[cfg(test)]
mod tests;
