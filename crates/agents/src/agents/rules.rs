//! How a profile reads an agent's state: OSC 7501 support, the screen regions, title,
//! screen and hook rules and what they conclude, and where a prompt's context ends.

use serde::{Deserialize, Deserializer, de};

use super::profile::Pattern;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateReading {
    #[serde(default)]
    pub osc7501: Osc7501Support,
    /// An event signal (OSC 7501, hook, title) that a fresher screen contradicts is stale
    /// once it is this old: no Stop hook follows an Escape-interrupt (agent-lab §5.1).
    #[serde(default = "default_stale_ms")]
    pub stale_ms: u64,
    /// With no signal yet, the agent counts as starting for this long (Codex's splash
    /// lasts ~4.6 s).
    #[serde(default = "default_startup_ms")]
    pub startup_ms: u64,
    /// Quiet-time detection: output within this many ms means working, else idle. Used
    /// only when nothing else decides.
    pub quiet_ms: Option<u64>,
    #[serde(default)]
    pub regions: Regions,
    #[serde(default)]
    pub title: Vec<TitleRule>,
    #[serde(default)]
    pub screen: Vec<ScreenRule>,
    #[serde(default)]
    pub hooks: Vec<HookRule>,
}

impl Default for StateReading {
    fn default() -> Self {
        StateReading {
            osc7501: Osc7501Support::default(),
            stale_ms: default_stale_ms(),
            startup_ms: default_startup_ms(),
            quiet_ms: None,
            regions: Regions::default(),
            title: Vec::new(),
            screen: Vec::new(),
            hooks: Vec::new(),
        }
    }
}

fn default_stale_ms() -> u64 {
    600
}

fn default_startup_ms() -> u64 {
    10_000
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Osc7501Support {
    #[default]
    Never,
    /// Only when the terminal answers its `ESC]7501;?` probe (Claude Code, agent-lab §6.3).
    WhenProbed,
    /// Unasked, also inside tmux (Codex, agent-lab §9).
    Always,
}

/// The sizes, in non-blank lines from the bottom of the screen, of the named regions.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regions {
    pub footer: usize,
    pub prompt: usize,
}

impl Default for Regions {
    fn default() -> Self {
        Regions {
            footer: 3,
            prompt: 30,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Region {
    Footer,
    Prompt,
    Screen,
}

impl Regions {
    /// The last non-blank lines of `screen` that make up `region`, joined with newlines.
    pub fn text(&self, region: Region, screen: &[&str]) -> String {
        let size = match region {
            Region::Footer => self.footer,
            Region::Prompt => self.prompt,
            Region::Screen => usize::MAX,
        };
        last_non_blank(screen, size).join("\n")
    }
}

/// The last `count` lines of `screen`, counting only non-blank ones; blank lines between
/// them are kept so a region reads like the screen.
pub fn last_non_blank<'a>(screen: &[&'a str], count: usize) -> Vec<&'a str> {
    let mut seen = 0;
    let mut start = screen.len();
    for (index, line) in screen.iter().enumerate().rev() {
        if seen == count {
            break;
        }
        if !line.trim().is_empty() {
            seen += 1;
            start = index;
        }
    }
    let end = screen
        .iter()
        .rposition(|line| !line.trim().is_empty())
        .map_or(0, |i| i + 1);
    screen[start.min(end)..end].to_vec()
}

/// What a rule concludes; in TOML `"idle"`, `"working"`, `"starting"` or
/// `"waiting:KIND"` with KIND one of permission, choice, question, dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    Starting,
    Idle,
    Working,
    Waiting(WaitKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitKind {
    Permission,
    Choice,
    Question,
    Dialog,
}

impl WaitKind {
    pub fn parse(name: &str) -> Option<WaitKind> {
        match name {
            "permission" => Some(WaitKind::Permission),
            "choice" => Some(WaitKind::Choice),
            "question" => Some(WaitKind::Question),
            "dialog" => Some(WaitKind::Dialog),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Permission => "permission",
            WaitKind::Choice => "choice",
            WaitKind::Question => "question",
            WaitKind::Dialog => "dialog",
        }
    }
}

impl Conclusion {
    pub fn parse(text: &str) -> Option<Conclusion> {
        match text {
            "starting" => Some(Conclusion::Starting),
            "idle" => Some(Conclusion::Idle),
            "working" => Some(Conclusion::Working),
            _ => WaitKind::parse(text.strip_prefix("waiting:")?).map(Conclusion::Waiting),
        }
    }
}

impl<'de> Deserialize<'de> for Conclusion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Conclusion::parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown state {text:?}: expected starting, idle, working or \
                 waiting:permission|choice|question|dialog"
            ))
        })
    }
}

/// When a screen rule's conclusion may contradict an event signal (OSC 7501, hook, title)
/// that is older than the screen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overrides {
    /// At once: what it sees cannot be drawn in any other state (a permission prompt).
    AtOnce,
    /// Once the event is `stale_ms` old: the screen lags a fresh event by a frame or two.
    #[default]
    WhenStale,
    /// Never: the screen looks like this in other states too (Codex streams text under an
    /// idle-looking composer, agent-lab §9).
    Never,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenRule {
    pub id: String,
    pub region: Region,
    pub regex: Pattern,
    /// The rule does not apply when this matches the same region.
    pub unless: Option<Pattern>,
    pub state: Conclusion,
    /// Among matching rules the highest priority wins; ties go to the earlier rule.
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub overrides: Overrides,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TitleRule {
    pub id: String,
    pub regex: Pattern,
    pub state: Conclusion,
}

/// A hook event (Claude Code's, posted to drydock) and the state it announces.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRule {
    pub event: String,
    /// Only when the payload's `tool_name` is this (AskUserQuestion asks through
    /// PermissionRequest too).
    pub tool: Option<String>,
    pub state: Conclusion,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptReading {
    /// Lines above a prompt's question kept as its context (the command to approve), up to
    /// a full-width `─` rule. Zero where the lines above are a live transcript.
    #[serde(default = "default_context_above")]
    pub context_above: usize,
}

impl Default for PromptReading {
    fn default() -> Self {
        PromptReading {
            context_above: default_context_above(),
        }
    }
}

fn default_context_above() -> usize {
    8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_count_non_blank_lines_from_the_bottom() {
        let screen = ["a", "b", "", "c", "d", "", ""];
        assert_eq!(last_non_blank(&screen, 2), ["c", "d"]);
        assert_eq!(last_non_blank(&screen, 3), ["b", "", "c", "d"]);
        assert_eq!(last_non_blank(&screen, 99), ["a", "b", "", "c", "d"]);
        assert!(last_non_blank(&["", ""], 3).is_empty());
    }
}
