//! What agents show as the fuzzers feed it: a screen, its title, an OSC 7501 report and a
//! hook event, read by every built-in profile's rules, and the prompts cut out of it.

use std::path::Path;
use std::sync::LazyLock;

use super::detect::{HookEvent, Observation, ProcessStatus, Stamped, detect};
use super::osc7501::StatusReport;
use super::profile::{Profiles, parse_profile};
use super::prompt::extract_prompt;
use super::rules::{Conclusion, WaitKind};

/// Loaded once: a profile's patterns are compiled as it loads.
static PROFILES: LazyLock<Profiles> = LazyLock::new(Profiles::embedded);

/// An agent's terminal: its title, the parameters of its last OSC 7501 report, its last hook
/// event (`name tool`), then its screen's rows.
pub fn agent_screen(title: &str, osc: &str, hook: &str, screen: &[&str]) {
    let osc = [Stamped {
        at: 1_000,
        value: StatusReport::parse(osc),
    }];
    let (name, tool_name) = hook.split_once(' ').unwrap_or((hook, ""));
    let hooks = [Stamped {
        at: 1_500,
        value: HookEvent {
            name: name.to_string(),
            tool_name: Some(tool_name.to_string()).filter(|t| !t.is_empty()),
        },
    }];
    for process in [
        ProcessStatus::Running { started_at: 0 },
        ProcessStatus::Exited {
            code: Some(1),
            at: 1_900,
        },
    ] {
        let observation = Observation {
            now: 2_000,
            process,
            screen,
            screen_at: 1_200,
            title: Some(Stamped {
                at: 900,
                value: title,
            }),
            osc: &osc,
            hooks: &hooks,
            last_output_at: Some(1_200),
        };
        for profile in PROFILES.iter() {
            detect(profile, &observation);
        }
    }
    for kind in [
        WaitKind::Permission,
        WaitKind::Choice,
        WaitKind::Question,
        WaitKind::Dialog,
    ] {
        extract_prompt(kind, screen, 3);
    }
    Conclusion::parse(title);
}

/// A user's agent profile file.
pub fn agent_profile(text: &str) {
    let _ = parse_profile(Path::new("fuzz.toml"), text);
}
