//! The screen corpus under `tests/fixtures/agents/`: every screen an `expected.toml` lists
//! is detected as it says, its prompt read with exactly the options offered, and no screen
//! file lies there unlisted.
//!
//! Each screen is checked as written and as a 120-column vt100 screen shows it.
//!
//! `transcribed/` holds screens rebuilt from the strings agent-lab.md quotes. Recordings
//! made by the integration tests' driver from the real CLIs will go to `recorded/` with an
//! `expected.toml` of the same shape; this test reads every corpus that exists.

use std::collections::BTreeSet;
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::detect::{AgentState, HookEvent, Observation, ProcessStatus, Stamped, Waiting, detect};
use super::osc7501::StatusReport;
use super::profile::Profiles;
use super::prompt::extract_prompt;
use super::rules::{Region, WaitKind};

const CORPORA: [&str; 2] = ["transcribed", "recorded"];
/// The fixed times of every case: see the header of `transcribed/expected.toml`.
const FIRST_SIGNAL_AT: u64 = 1000;
const SCREEN_AT: u64 = 9000;
const NOW: u64 = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    screen: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    file: String,
    profile: String,
    state: String,
    kind: Option<String>,
    question: Option<String>,
    options: Option<Vec<ExpectedOption>>,
    signal: Option<String>,
    title: Option<String>,
    #[serde(default)]
    osc: Vec<String>,
    #[serde(default)]
    hooks: Vec<String>,
    /// The agent's process had exited with this code; it runs when absent.
    exit_code: Option<i32>,
}

#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedOption {
    number: u32,
    label: String,
    selected: bool,
}

fn corpus_dirs() -> Vec<PathBuf> {
    let root =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/agents");
    CORPORA
        .iter()
        .map(|name| root.join(name))
        .filter(|dir| dir.join("expected.toml").exists())
        .collect()
}

fn expected(dir: &Path) -> Expected {
    let text = std::fs::read_to_string(dir.join("expected.toml")).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

fn stamped<T>(index: usize, value: T) -> Stamped<T> {
    Stamped {
        at: FIRST_SIGNAL_AT + 100 * index as u64,
        value,
    }
}

/// The rows a 120-column vt100 screen shows after printing `text`: what the terminal
/// layer will pass in.
fn through_vt100(text: &str) -> Vec<String> {
    let rows = NonZeroU16::new(text.lines().count().max(40) as u16).unwrap();
    let mut parser = vt100::Parser::new(rows, NonZeroU16::new(120).unwrap(), 0);
    parser.process(text.replace('\n', "\r\n").as_bytes());
    let mut screen: Vec<String> = parser.screen().rows(0, 120).collect();
    while screen.last().is_some_and(|row| row.is_empty()) {
        screen.pop();
    }
    screen
}

/// What is wrong with `case` (empty when it holds), read from the file as it is or as a
/// vt100 screen shows it.
fn check(dir: &Path, case: &Case, profiles: &Profiles, via_vt100: bool) -> Vec<String> {
    let profile = profiles.get(&case.profile).expect("a known profile");
    let text = std::fs::read_to_string(dir.join(&case.file)).unwrap();
    let rows = match via_vt100 {
        true => through_vt100(&text),
        false => text.lines().map(str::to_string).collect(),
    };
    let screen: Vec<&str> = rows.iter().map(String::as_str).collect();
    let osc: Vec<_> = case
        .osc
        .iter()
        .enumerate()
        .map(|(i, p)| stamped(i, StatusReport::parse(p)))
        .collect();
    let hooks: Vec<_> = case
        .hooks
        .iter()
        .enumerate()
        .map(|(i, name)| {
            stamped(
                i,
                HookEvent {
                    name: name.clone(),
                    tool_name: None,
                },
            )
        })
        .collect();
    let observation = Observation {
        now: NOW,
        process: match case.exit_code {
            Some(code) => ProcessStatus::Exited {
                code: Some(code),
                at: SCREEN_AT,
            },
            None => ProcessStatus::Running { started_at: 0 },
        },
        screen: &screen,
        screen_at: SCREEN_AT,
        title: case.title.as_deref().map(|title| Stamped {
            at: SCREEN_AT,
            value: title,
        }),
        osc: &osc,
        hooks: &hooks,
        last_output_at: Some(SCREEN_AT),
    };
    let detection = detect(profile, &observation);
    let mut wrong = Vec::new();
    let mut expect = |what: &str, want: Option<&str>, got: Option<&str>| {
        if want != got {
            wrong.push(format!("{what}: expected {want:?}, got {got:?}"));
        }
    };
    expect("state", Some(&case.state), Some(detection.state.name()));
    if let Some(signal) = &case.signal {
        expect("signal", Some(signal), Some(&detection.signal.to_string()));
    }
    let waiting = match &detection.state {
        AgentState::Waiting(waiting) => Some(waiting),
        _ => None,
    };
    expect(
        "kind",
        case.kind.as_deref(),
        waiting.map(|w| w.kind().name()),
    );
    let prompt = match waiting {
        Some(Waiting::OnScreen(prompt)) => Some(prompt),
        _ => None,
    };
    expect(
        "question",
        case.question.as_deref(),
        prompt.map(|p| p.question.as_str()),
    );
    let options = |options: &[super::prompt::PromptOption]| -> Vec<ExpectedOption> {
        options
            .iter()
            .map(|o| ExpectedOption {
                number: o.number,
                label: o.label.clone(),
                selected: o.selected,
            })
            .collect()
    };
    let got_options = prompt
        .map(|p| options(&p.options))
        .filter(|o| !o.is_empty());
    if case.options != got_options {
        wrong.push(format!(
            "options: expected {:?}, got {got_options:?}",
            case.options
        ));
    }
    // prompt.rs on its own reads the same menu off the prompt region.
    if let (Some(kind), Some(want)) = (prompt.map(|p| p.kind), &case.options) {
        let region = profile.state.regions.text(Region::Prompt, &screen);
        let lines: Vec<&str> = region.lines().collect();
        let alone = extract_prompt(kind, &lines, profile.prompt.context_above);
        if alone.map(|p| options(&p.options)).as_ref() != Some(want) {
            wrong.push("extract_prompt alone reads other options".to_string());
        }
    }
    wrong
}

#[test]
fn every_listed_screen_is_detected_as_expected() {
    let profiles = Profiles::embedded();
    let mut failures = Vec::new();
    let mut cases = 0;
    for dir in corpus_dirs() {
        for case in expected(&dir).screen {
            cases += 1;
            for via_vt100 in [false, true] {
                let wrong = check(&dir, &case, &profiles, via_vt100);
                if !wrong.is_empty() {
                    let how = if via_vt100 { " (through vt100)" } else { "" };
                    failures.push(format!(
                        "{}/{}{how}:\n  {}",
                        dir.display(),
                        case.file,
                        wrong.join("\n  ")
                    ));
                }
            }
        }
    }
    assert!(
        cases >= 29,
        "the transcribed corpus went missing: {cases} cases"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_screen_file_is_listed() {
    for dir in corpus_dirs() {
        let listed: BTreeSet<String> = expected(&dir).screen.into_iter().map(|c| c.file).collect();
        let mut present = BTreeSet::new();
        collect_files(&dir, &dir, &mut present);
        present.remove("expected.toml");
        let unlisted: Vec<_> = present.difference(&listed).collect();
        let missing: Vec<_> = listed.difference(&present).collect();
        assert!(
            unlisted.is_empty(),
            "{}: not in expected.toml: {unlisted:?}",
            dir.display()
        );
        assert!(
            missing.is_empty(),
            "{}: listed but absent: {missing:?}",
            dir.display()
        );
    }
}

fn collect_files(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(root, &path, out);
        } else {
            let relative = path.strip_prefix(root).unwrap();
            out.insert(relative.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn moving_the_highlight_keeps_the_prompt_id() {
    let dir = &corpus_dirs()[0];
    let profile = Profiles::embedded().get("claude").unwrap().clone();
    let id = |file: &str| {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let kind = WaitKind::Choice;
        extract_prompt(kind, &lines, profile.prompt.context_above)
            .unwrap()
            .id
    };
    assert_eq!(
        id("claude/choice-ask.txt"),
        id("claude/choice-ask-down.txt")
    );
}
