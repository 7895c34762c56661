//! Agent states: precision and recall per state of the detector on the screen corpus
//! (`tests/fixtures/agents/`: screens recorded from the real Claude Code and Codex by the
//! tests' driver, and screens transcribed from agent-lab.md), each with the state it shows.
//! Three detectors on the same screens: drydock's with every signal the case carries (OSC
//! 7501 reports, hooks, title), drydock's from the screen alone (a tmux pane with no hooks),
//! and a 1.5 s quiet-time detector (ccmanager's), for which every still screen is idle.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use drydock::agents::{
    HookEvent, Observation, ProcessStatus, Profiles, Stamped, StatusReport, detect,
};
use serde::Deserialize;

/// The corpus's fixed times (see the header of `transcribed/expected.toml`).
const FIRST_SIGNAL_AT: u64 = 1000;
const SCREEN_AT: u64 = 9000;
const NOW: u64 = 10_000;
const STATES: [&str; 6] = [
    "starting", "idle", "working", "waiting", "exited", "unknown",
];

#[derive(Deserialize)]
struct Expected {
    screen: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    file: String,
    profile: String,
    state: String,
    title: Option<String>,
    #[serde(default)]
    osc: Vec<String>,
    #[serde(default)]
    hooks: Vec<String>,
    exit_code: Option<i32>,
}

#[derive(Clone, Copy)]
enum Detector {
    AllSignals,
    ScreenOnly,
    QuietTime,
}

impl Detector {
    fn name(self) -> &'static str {
        match self {
            Detector::AllSignals => "drydock, every signal",
            Detector::ScreenOnly => "drydock, screen only",
            Detector::QuietTime => "quiet time (1.5 s)",
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    let profiles = Profiles::embedded();
    let cases: Vec<(PathBuf, Case)> = ["transcribed", "recorded"]
        .iter()
        .map(|name| root.join(name))
        .flat_map(|dir| {
            let text = std::fs::read_to_string(dir.join("expected.toml")).unwrap();
            let expected: Expected = toml::from_str(&text).unwrap();
            expected
                .screen
                .into_iter()
                .map(move |case| (dir.clone(), case))
        })
        .collect();
    println!("agent states: {} screens of the corpus", cases.len());
    for detector in [
        Detector::AllSignals,
        Detector::ScreenOnly,
        Detector::QuietTime,
    ] {
        let pairs: Vec<(String, String)> = cases
            .iter()
            .map(|(dir, case)| (case.state.clone(), detected(&profiles, dir, case, detector)))
            .collect();
        report(detector, &pairs);
    }
}

fn detected(profiles: &Profiles, dir: &Path, case: &Case, detector: Detector) -> String {
    if let (Detector::QuietTime, None) = (detector, case.exit_code) {
        return "idle".into();
    }
    let profile = profiles.get(&case.profile).expect("a known profile");
    let text = std::fs::read_to_string(dir.join(&case.file)).unwrap();
    let screen: Vec<&str> = text.lines().collect();
    let signals = matches!(detector, Detector::AllSignals);
    let at = |index: usize| FIRST_SIGNAL_AT + 100 * index as u64;
    let osc: Vec<_> = case
        .osc
        .iter()
        .enumerate()
        .filter(|_| signals)
        .map(|(i, report)| Stamped {
            at: at(i),
            value: StatusReport::parse(report),
        })
        .collect();
    let hooks: Vec<_> = case
        .hooks
        .iter()
        .enumerate()
        .filter(|_| signals)
        .map(|(i, name)| Stamped {
            at: at(i),
            value: HookEvent {
                name: name.clone(),
                tool_name: None,
            },
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
        title: case
            .title
            .as_deref()
            .filter(|_| signals)
            .map(|title| Stamped {
                at: SCREEN_AT,
                value: title,
            }),
        osc: &osc,
        hooks: &hooks,
        last_output_at: Some(SCREEN_AT),
    };
    detect(profile, &observation).state.name().to_string()
}

/// Precision and recall per state, from (expected, detected) pairs.
fn report(detector: Detector, pairs: &[(String, String)]) {
    let right = pairs.iter().filter(|(want, got)| want == got).count();
    println!(
        "  {:<22} {right}/{} right ({:.0}%)",
        detector.name(),
        pairs.len(),
        100.0 * right as f64 / pairs.len() as f64
    );
    let mut rows = BTreeMap::new();
    for state in STATES {
        let truth = pairs.iter().filter(|(want, _)| want == state).count();
        let said = pairs.iter().filter(|(_, got)| got == state).count();
        let hits = pairs
            .iter()
            .filter(|(want, got)| want == state && got == state)
            .count();
        if truth + said > 0 {
            rows.insert(state, (truth, said, hits));
        }
    }
    for (state, (truth, said, hits)) in rows {
        let ratio = |part: usize, whole: usize| match whole {
            0 => "   -".to_string(),
            _ => format!("{:.2}", part as f64 / whole as f64),
        };
        println!(
            "    {state:<9} precision {}  recall {}  ({truth} screens)",
            ratio(hits, said),
            ratio(hits, truth)
        );
    }
}
