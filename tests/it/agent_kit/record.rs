//! Recording screens as fixtures, when `DRYDOCK_RECORD_AGENTS=1`: the plain screen goes to
//! `tests/fixtures/agents/recorded/<cli>-<version>/<scenario>.txt` (trailing spaces trimmed)
//! and the scenario's row, what a detector should say of that screen, into `expected.toml`
//! beside them (the shape src/agents/fixtures.rs reads; every file of that directory must be
//! listed there). The raw pane bytes of a few scenarios go to
//! `tests/fixtures/agents/recorded-raw/<cli>-<version>/<scenario>.raw` (capped).

use std::path::PathBuf;
use std::sync::Mutex;

use super::home::Cli;
use super::menu::MenuOption;
use super::tmux::Tmux;

const RAW_CAP: usize = 64 * 1024;

/// The expected detection of one recorded screen (one `[[screen]]` of expected.toml).
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// starting | idle | working | waiting | exited | unknown
    pub state: &'static str,
    /// Only when waiting: permission | choice | question | dialog
    pub kind: Option<&'static str>,
    /// Only when waiting: the question as shown.
    pub question: Option<String>,
    /// Only when waiting: the options exactly as offered.
    pub options: Vec<MenuOption>,
    /// The window title at capture, when it has one.
    pub title: Option<String>,
}

impl Row {
    pub fn state(state: &'static str) -> Row {
        Row {
            state,
            ..Row::default()
        }
    }

    pub fn waiting(kind: &'static str, question: &str, options: Vec<MenuOption>) -> Row {
        Row {
            state: "waiting",
            kind: Some(kind),
            question: Some(question.to_string()),
            options,
            title: None,
        }
    }

    /// Waiting at a prompt whose menu has no numbers to read (a dialog's choices).
    pub fn waiting_unread(kind: &'static str) -> Row {
        Row {
            state: "waiting",
            kind: Some(kind),
            ..Row::default()
        }
    }

    pub fn titled(mut self, title: String) -> Row {
        self.title = (!title.trim().is_empty()).then_some(title);
        self
    }
}

pub fn recording() -> bool {
    std::env::var("DRYDOCK_RECORD_AGENTS").as_deref() == Ok("1")
}

pub fn recorded_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/recorded")
}

/// Writes `<scenario>.txt` and its row, with the pane's title now, when recording.
pub fn record_screen(cli: &Cli, tmux: &Tmux, scenario: &str, screen: &str, row: Row) {
    if !recording() {
        return;
    }
    let row = row.titled(program_title(tmux));
    let file = format!("{}/{scenario}.txt", cli.label());
    let path = recorded_dir().join(&file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, trim_lines(screen)).unwrap();
    upsert_row(&file, cli.name, &row);
}

/// Writes `<scenario>.raw`, the first 64 KiB of the pane's output, when recording.
pub fn record_raw(cli: &Cli, scenario: &str, raw: &[u8]) {
    if !recording() {
        return;
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents/recorded-raw")
        .join(format!("{}/{scenario}.raw", cli.label()));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &raw[..raw.len().min(RAW_CAP)]).unwrap();
}

/// The pane's title, unless it is still tmux's default (the host name): not the CLI's.
fn program_title(tmux: &Tmux) -> String {
    let title = tmux.title();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    if title == host.trim() {
        String::new()
    } else {
        title
    }
}

fn trim_lines(screen: &str) -> String {
    let mut text: String = screen
        .lines()
        .map(|line| format!("{}\n", line.trim_end()))
        .collect();
    if text.is_empty() {
        text.push('\n');
    }
    text
}

const HEADER: &str = "\
# What a detector should say of each screen in this directory: screens RECORDED from the real
# Claude Code 2.1.330 and Codex 0.169.0 TUIs (tmux, 120x40, `capture-pane -p`, trailing spaces
# trimmed) by tests/it/agent_screens.rs against the fake model APIs of tests/it/agent_kit/.
# Re-record with `DRYDOCK_RECORD_AGENTS=1 cargo test --test it agent_screens::` (needs
# scripts/agent-clis.sh and tmux); the raw pane bytes of two sessions go to ../recorded-raw/.
# The screens name the tests' temporary directories, which differ from run to run.
#
# Each [[screen]] (the shape of ../transcribed/expected.toml):
#   file      the screen
#   profile   claude | codex
#   state     starting | idle | working | waiting | exited | unknown
#   kind      waiting only: permission | choice | question | dialog
#   question  waiting only, when the screen shows a numbered menu: the question as shown
#   options   that menu exactly as offered: number, label (without a description column),
#             selected (the cursor is on it); the test checked both against the screen
#   title     the pane's title at capture, when the CLI had set one
";

/// Replaces (or adds) the row of `file` in expected.toml; rows stay sorted by file.
fn upsert_row(file: &str, profile: &str, row: &Row) {
    static EXPECTED: Mutex<()> = Mutex::new(());
    let _turn = EXPECTED.lock().unwrap_or_else(|e| e.into_inner());
    let path = recorded_dir().join("expected.toml");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let mut blocks: Vec<String> = old
        .split("[[screen]]\n")
        .skip(1)
        .map(|block| format!("[[screen]]\n{}", block.trim_end()))
        .filter(|block| !block.contains(&format!("file = {}\n", quote(file))))
        .collect();
    blocks.push(render_row(file, profile, row));
    blocks.sort_by_key(|block| block.lines().nth(1).unwrap_or_default().to_string());
    std::fs::write(&path, format!("{HEADER}\n{}\n", blocks.join("\n\n"))).unwrap();
}

fn render_row(file: &str, profile: &str, row: &Row) -> String {
    let mut lines = vec![
        "[[screen]]".to_string(),
        format!("file = {}", quote(file)),
        format!("profile = {}", quote(profile)),
        format!("state = {}", quote(row.state)),
    ];
    if let Some(kind) = row.kind {
        lines.push(format!("kind = {}", quote(kind)));
    }
    if let Some(question) = &row.question {
        lines.push(format!("question = {}", quote(question)));
    }
    if !row.options.is_empty() {
        lines.push("options = [".to_string());
        for option in &row.options {
            lines.push(format!(
                "  {{ number = {}, label = {}, selected = {} }},",
                option.number,
                quote(&option.label),
                option.selected
            ));
        }
        lines.push("]".to_string());
    }
    if let Some(title) = &row.title {
        lines.push(format!("title = {}", quote(title)));
    }
    lines.join("\n")
}

/// A TOML basic string (JSON's escapes are valid TOML).
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}
