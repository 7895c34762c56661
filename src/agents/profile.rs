//! Agent profiles as data: how to recognise an agent CLI among a terminal's processes, how
//! to read its state, which keys answer it, how text is submitted and how it is launched.
//!
//! The profiles for claude, codex and gemini and a quiet-time-only generic one are embedded
//! (`profiles/*.toml`). A user's `<dir>/<name>.toml` replaces the embedded profile of the
//! same name when its `version` is at least the embedded one's. A broken user file is
//! reported with its file and line and leaves the embedded profile in force.
//!
//! Regexes, key strings and states are checked while the TOML is read, so every mistake
//! carries the span of the value that caused it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Deserializer, de};

const EMBEDDED: [(&str, &str); 4] = [
    ("claude", include_str!("profiles/claude.toml")),
    ("codex", include_str!("profiles/codex.toml")),
    ("gemini", include_str!("profiles/gemini.toml")),
    ("generic", include_str!("profiles/generic.toml")),
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    /// Raised whenever the profile changes; a user file below the embedded version is ignored.
    pub version: u32,
    pub recognise: Recognise,
    #[serde(default)]
    pub state: StateReading,
    #[serde(default)]
    pub prompt: PromptReading,
    /// None for programs drydock only watches (the generic profile).
    pub keys: Option<Keys>,
    /// How long a freshly drawn prompt ignores keys: agent-lab §8.2 lost Enter up to ~100 ms
    /// after the first frame and never from 150 ms on.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
    pub submit: Option<Submission>,
    pub launch: Option<Launch>,
}

fn default_settle_ms() -> u64 {
    300
}

// ---------------------------------------------------------------------------------------
// Recognising the program.

/// One process of a terminal's foreground process tree.
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo<'a> {
    /// The executable, as a path or a bare name (`/proc/PID/exe` or `comm`).
    pub executable: &'a str,
    pub argv: &'a [String],
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recognise {
    /// Base names of the executable or of argv[0].
    #[serde(default)]
    pub executables: Vec<String>,
    /// Regexes over the argv joined with single spaces (node wrappers: `node …/bin/claude`).
    #[serde(default)]
    pub argv: Vec<Pattern>,
    /// A process whose joined argv matches one of these is never this agent (Codex's
    /// `app-server` daemon outlives the TUI, agent-lab §9).
    #[serde(default)]
    pub unless_argv: Vec<Pattern>,
}

impl Recognise {
    pub fn matches(&self, process: &ProcessInfo<'_>) -> bool {
        let joined = process.argv.join(" ");
        if self.unless_argv.iter().any(|p| p.is_match(&joined)) {
            return false;
        }
        let names = [
            Some(process.executable),
            process.argv.first().map(String::as_str),
        ];
        let by_name = names
            .into_iter()
            .flatten()
            .any(|path| self.executables.iter().any(|n| n == base_name(path)));
        by_name || self.argv.iter().any(|p| p.is_match(&joined))
    }
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

// ---------------------------------------------------------------------------------------
// Reading the state.

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
pub(crate) fn last_non_blank<'a>(screen: &[&'a str], count: usize) -> Vec<&'a str> {
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
pub enum Outcome {
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

impl Outcome {
    pub fn parse(text: &str) -> Option<Outcome> {
        match text {
            "starting" => Some(Outcome::Starting),
            "idle" => Some(Outcome::Idle),
            "working" => Some(Outcome::Working),
            _ => WaitKind::parse(text.strip_prefix("waiting:")?).map(Outcome::Waiting),
        }
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Outcome::parse(&text).ok_or_else(|| {
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
    pub state: Outcome,
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
    pub state: Outcome,
}

/// A hook event (Claude Code's, posted to drydock) and the state it announces.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRule {
    pub event: String,
    /// Only when the payload's `tool_name` is this (AskUserQuestion asks through
    /// PermissionRequest too).
    pub tool: Option<String>,
    pub state: Outcome,
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

// ---------------------------------------------------------------------------------------
// Answering and submitting.

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    pub approve: KeyBytes,
    pub approve_always: Option<KeyBytes>,
    pub deny: KeyBytes,
    /// Keys that pick option `{n}` of a menu.
    pub choose: ChooseKeys,
    pub interrupt: KeyBytes,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// Text and Enter go as separate writes at least this far apart: at 0 ms Claude Code
    /// merged 3 in 120 and Codex took the Enter into the draft (agent-lab §8.1, §9).
    pub gap_ms: u64,
    #[serde(default = "default_enter")]
    pub enter: KeyBytes,
    /// Text longer than this many characters, or with a newline, goes as bracketed paste;
    /// None: never pasted.
    pub paste_above: Option<usize>,
}

fn default_enter() -> KeyBytes {
    KeyBytes(b"\r".to_vec())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitPlan {
    /// The text as typed, then Enter after the gap.
    Typed,
    /// `ESC[200~ text ESC[201~`, then Enter after the gap.
    Pasted,
}

impl Submission {
    pub fn plan(&self, text: &str) -> SubmitPlan {
        match self.paste_above {
            Some(limit) if text.contains('\n') || text.chars().count() > limit => {
                SubmitPlan::Pasted
            }
            _ => SubmitPlan::Typed,
        }
    }
}

/// Bytes for the terminal, written in TOML with escapes: `'\r'`, `'\x1b'`, `'\t'`, `'\\'`.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes(pub Vec<u8>);

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyBytes({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl<'de> Deserialize<'de> for KeyBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        decode_escapes(&text)
            .map(KeyBytes)
            .map_err(de::Error::custom)
    }
}

/// A key template with `{n}` for the option number (`'{n}'` types the digit).
#[derive(Debug, Clone)]
pub struct ChooseKeys(String);

impl ChooseKeys {
    pub fn for_option(&self, number: u32) -> Vec<u8> {
        let text = self.0.replace("{n}", &number.to_string());
        decode_escapes(&text).expect("checked when the profile was read")
    }
}

impl<'de> Deserialize<'de> for ChooseKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if !text.contains("{n}") {
            return Err(de::Error::custom("choose keys must contain {n}"));
        }
        decode_escapes(&text).map_err(de::Error::custom)?;
        Ok(ChooseKeys(text))
    }
}

fn decode_escapes(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('r') => out.push(b'\r'),
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('e') => out.push(0x1b),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let byte = u8::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 2)
                    .ok_or_else(|| format!("bad escape \\x{hex} in {text:?}"))?;
                out.push(byte);
            }
            other => return Err(format!("bad escape \\{} in {text:?}", other.unwrap_or(' '))),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Launching.

/// How to start the agent for one run. Each list is argv templates; placeholders are
/// `{prompt}`, `{drydock}` (drydock's own executable), `{hooks_file}` (a settings file
/// drydock writes with its hooks), `{mcp_file}` (an MCP client config naming drydock) and
/// `{mcp_url}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    pub command: Vec<ArgTemplate>,
    /// Appended last, when there is a first prompt.
    #[serde(default)]
    pub prompt: Vec<ArgTemplate>,
    /// Hooks for this run only, through the CLI's own flags (never the user's files).
    #[serde(default)]
    pub hooks: Vec<ArgTemplate>,
    #[serde(default)]
    pub mcp: Vec<ArgTemplate>,
}

const PLACEHOLDERS: [&str; 5] = ["prompt", "drydock", "hooks_file", "mcp_file", "mcp_url"];

#[derive(Debug, Clone)]
pub struct ArgTemplate(String);

impl<'de> Deserialize<'de> for ArgTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        for name in placeholders(&text) {
            if !PLACEHOLDERS.contains(&name) {
                return Err(de::Error::custom(format!(
                    "unknown placeholder {{{name}}}: expected one of {PLACEHOLDERS:?}"
                )));
            }
        }
        Ok(ArgTemplate(text))
    }
}

fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
}

/// What a launch fills in; a part (hooks, MCP) is added only when asked for.
#[derive(Debug, Clone, Default)]
pub struct LaunchVars<'a> {
    pub prompt: Option<&'a str>,
    pub with_hooks: bool,
    pub with_mcp: bool,
    pub drydock: Option<&'a str>,
    pub hooks_file: Option<&'a str>,
    pub mcp_file: Option<&'a str>,
    pub mcp_url: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("the {profile} profile cannot pass {part} for one run")]
    Unsupported { profile: String, part: &'static str },
    #[error("launching {profile} needs a value for {{{placeholder}}}")]
    Missing {
        profile: String,
        placeholder: String,
    },
}

impl Profile {
    /// The argv that starts this agent with `vars`.
    pub fn launch_argv(&self, vars: &LaunchVars<'_>) -> Result<Vec<String>, LaunchError> {
        let unsupported = |part| LaunchError::Unsupported {
            profile: self.name.clone(),
            part,
        };
        let launch = self.launch.as_ref().ok_or(unsupported("a launch"))?;
        let mut parts: Vec<&[ArgTemplate]> = vec![&launch.command];
        for (wanted, templates, part) in [
            (vars.with_hooks, &launch.hooks, "hooks"),
            (vars.with_mcp, &launch.mcp, "an MCP config"),
        ] {
            if wanted && templates.is_empty() {
                return Err(unsupported(part));
            }
            if wanted {
                parts.push(templates);
            }
        }
        if vars.prompt.is_some() {
            if launch.prompt.is_empty() {
                return Err(unsupported("a first prompt"));
            }
            parts.push(&launch.prompt);
        }
        parts
            .into_iter()
            .flatten()
            .map(|template| self.fill(template, vars))
            .collect()
    }

    fn fill(&self, template: &ArgTemplate, vars: &LaunchVars<'_>) -> Result<String, LaunchError> {
        let mut out = template.0.clone();
        for name in placeholders(&template.0) {
            let value = match name {
                "prompt" => vars.prompt,
                "drydock" => vars.drydock,
                "hooks_file" => vars.hooks_file,
                "mcp_file" => vars.mcp_file,
                _ => vars.mcp_url,
            };
            let value = value.ok_or_else(|| LaunchError::Missing {
                profile: self.name.clone(),
                placeholder: name.to_string(),
            })?;
            out = out.replace(&format!("{{{name}}}"), value);
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------
// Patterns.

/// A regex, compiled while the profile is read.
#[derive(Debug, Clone)]
pub struct Pattern(Regex);

impl Pattern {
    pub fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let source = String::deserialize(deserializer)?;
        Regex::new(&source)
            .map(Pattern)
            .map_err(|error| de::Error::custom(format!("bad regex: {error}")))
    }
}

// ---------------------------------------------------------------------------------------
// Loading.

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{}: cannot read: {source}", .file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}{}: {message}", .file.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error(
        "{}: version {found} is older than the built-in {name} profile (version {builtin}); \
         the built-in one stays in force",
        .file.display()
    )]
    Outdated {
        file: PathBuf,
        name: String,
        found: u32,
        builtin: u32,
    },
}

/// The profiles in force: the embedded ones, each replaced by a valid user file.
#[derive(Debug, Clone)]
pub struct Profiles {
    by_name: BTreeMap<String, Profile>,
}

impl Profiles {
    /// The embedded profiles overridden from `user_dir`, and every problem met on the way.
    pub fn load(user_dir: Option<&Path>) -> (Profiles, Vec<ProfileError>) {
        let mut profiles = Profiles::embedded();
        let mut errors = Vec::new();
        if let Some(dir) = user_dir {
            for file in user_files(dir, &mut errors) {
                match read_profile(&file).and_then(|p| profiles.accept(&file, p)) {
                    Ok(()) => {}
                    Err(error) => errors.push(error),
                }
            }
        }
        (profiles, errors)
    }

    pub fn embedded() -> Profiles {
        let by_name = EMBEDDED
            .iter()
            .map(|(name, text)| {
                let file = PathBuf::from(format!("<embedded>/{name}.toml"));
                let profile = parse_profile(&file, text).expect("embedded profiles are valid");
                (profile.name.clone(), profile)
            })
            .collect();
        Profiles { by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.by_name.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.by_name.values()
    }

    /// The quiet-time-only profile for a program named in config.
    pub fn generic(&self, program: &str) -> Profile {
        let mut profile = self.by_name["generic"].clone();
        profile.name = program.to_string();
        profile.recognise = Recognise {
            executables: vec![program.to_string()],
            ..Recognise::default()
        };
        profile
    }

    /// The first agent profile (not generic) that recognises one of `processes`, with the
    /// index of that process; the caller lists the foreground process first.
    pub fn recognise(&self, processes: &[ProcessInfo<'_>]) -> Option<(&Profile, usize)> {
        processes.iter().enumerate().find_map(|(index, process)| {
            self.iter()
                .filter(|p| p.name != "generic")
                .find(|p| p.recognise.matches(process))
                .map(|p| (p, index))
        })
    }

    fn accept(&mut self, file: &Path, profile: Profile) -> Result<(), ProfileError> {
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if profile.name != stem {
            return Err(ProfileError::Invalid {
                file: file.to_path_buf(),
                line: None,
                message: format!(
                    "the profile is named {:?} but the file {stem:?}",
                    profile.name
                ),
            });
        }
        if let Some(builtin) = self.by_name.get(&profile.name)
            && profile.version < builtin.version
        {
            return Err(ProfileError::Outdated {
                file: file.to_path_buf(),
                name: profile.name,
                found: profile.version,
                builtin: builtin.version,
            });
        }
        self.by_name.insert(profile.name.clone(), profile);
        Ok(())
    }
}

fn user_files(dir: &Path, errors: &mut Vec<ProfileError>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(source) => {
            errors.push(ProfileError::Read {
                file: dir.to_path_buf(),
                source,
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

fn read_profile(file: &Path) -> Result<Profile, ProfileError> {
    let text = std::fs::read_to_string(file).map_err(|source| ProfileError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    parse_profile(file, &text)
}

pub(crate) fn parse_profile(file: &Path, text: &str) -> Result<Profile, ProfileError> {
    let invalid = |line, message| ProfileError::Invalid {
        file: file.to_path_buf(),
        line,
        message,
    };
    let profile: Profile = toml::from_str(text).map_err(|error| {
        let line = error.span().map(|span| line_of(text, span.start));
        invalid(line, error.message().to_string())
    })?;
    let mut ids: Vec<&str> = profile.state.screen.iter().map(|r| r.id.as_str()).collect();
    ids.extend(profile.state.title.iter().map(|r| r.id.as_str()));
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
        let id = pair[0];
        let line = text
            .match_indices(&format!("\"{id}\""))
            .nth(1)
            .map(|(at, _)| line_of(text, at));
        return Err(invalid(line, format!("rule id {id:?} is used twice")));
    }
    Ok(profile)
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn embedded_profiles_load_with_their_names() {
        let profiles = Profiles::embedded();
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["claude", "codex", "gemini", "generic"]);
        assert_eq!(profiles.get("generic").unwrap().state.quiet_ms, Some(1500));
    }

    #[test]
    fn processes_are_recognised_by_executable_and_argv() {
        let profiles = Profiles::embedded();
        let which = |exe: &str, words: &[&str]| {
            let argv = argv(words);
            let process = ProcessInfo {
                executable: exe,
                argv: &argv,
            };
            profiles
                .recognise(&[process])
                .map(|(profile, _)| profile.name.clone())
        };
        let claude_exe = "/x/node_modules/@anthropic-ai/claude-code/bin/claude.exe";
        assert_eq!(which(claude_exe, &["claude"]).as_deref(), Some("claude"));
        assert_eq!(
            which("/usr/bin/node", &["node", "/x/node_modules/.bin/claude"]).as_deref(),
            Some("claude")
        );
        assert_eq!(
            which(
                "/usr/bin/node",
                &["node", "/x/lib/node_modules/@openai/codex/bin/codex.js"]
            )
            .as_deref(),
            Some("codex")
        );
        let native = "/x/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex/codex";
        assert_eq!(which(native, &[native]).as_deref(), Some("codex"));
        assert_eq!(which(native, &[native, "app-server"]), None);
        assert_eq!(
            which("/usr/bin/node", &["node", "/x/.bin/gemini"]).as_deref(),
            Some("gemini")
        );
        assert_eq!(which("/bin/bash", &["bash"]), None);
        assert_eq!(
            which("/usr/bin/node", &["node", "/x/claude-notes.js"]),
            None
        );
    }

    #[test]
    fn the_foreground_process_is_tried_first() {
        let profiles = Profiles::embedded();
        let (shell, codex) = (argv(&["bash"]), argv(&["codex"]));
        let processes = [
            ProcessInfo {
                executable: "/bin/bash",
                argv: &shell,
            },
            ProcessInfo {
                executable: "/x/codex",
                argv: &codex,
            },
        ];
        let (profile, index) = profiles.recognise(&processes).unwrap();
        assert_eq!((profile.name.as_str(), index), ("codex", 1));
    }

    #[test]
    fn generic_profiles_match_the_named_program_by_quiet_time() {
        let profile = Profiles::embedded().generic("aider");
        let args = argv(&["aider", "--model", "x"]);
        let process = ProcessInfo {
            executable: "/usr/bin/python3",
            argv: &args,
        };
        assert!(profile.recognise.matches(&process));
        assert_eq!(profile.name, "aider");
        assert!(profile.state.screen.is_empty() && profile.keys.is_none());
    }

    #[test]
    fn keys_decode_escapes() {
        let claude = Profiles::embedded().get("claude").unwrap().clone();
        let keys = claude.keys.unwrap();
        assert_eq!(keys.approve.0, b"\r");
        assert_eq!(keys.deny.0, b"\x1b");
        assert_eq!(keys.choose.for_option(2), b"2");
        assert_eq!(decode_escapes(r"a\x1b[A\e\\").unwrap(), b"a\x1b[A\x1b\\");
        assert!(decode_escapes(r"\x1").is_err());
        assert!(decode_escapes(r"\q").is_err());
    }

    #[test]
    fn submission_pastes_long_or_multi_line_text() {
        let profiles = Profiles::embedded();
        let claude = profiles.get("claude").unwrap().submit.clone().unwrap();
        assert_eq!(claude.plan("fix the build"), SubmitPlan::Typed);
        assert_eq!(claude.plan(&"x".repeat(200)), SubmitPlan::Pasted);
        assert_eq!(claude.plan("a\nb"), SubmitPlan::Pasted);
        let codex = profiles.get("codex").unwrap().submit.clone().unwrap();
        assert!(
            codex.gap_ms >= 300,
            "Codex lost Enter at 0 ms (agent-lab §9)"
        );
    }

    #[test]
    fn launch_argv_passes_hooks_and_mcp_for_one_run() {
        let profiles = Profiles::embedded();
        let vars = LaunchVars {
            prompt: Some("fix it"),
            with_hooks: true,
            with_mcp: true,
            drydock: Some("/bin/drydock"),
            hooks_file: Some("/run/h.json"),
            mcp_file: Some("/run/m.json"),
            mcp_url: Some("http://127.0.0.1:7878/mcp"),
        };
        let claude = profiles.get("claude").unwrap().launch_argv(&vars).unwrap();
        assert_eq!(
            claude,
            argv(&[
                "claude",
                "--settings",
                "/run/h.json",
                "--mcp-config",
                "/run/m.json",
                "fix it"
            ])
        );
        let codex = profiles.get("codex").unwrap().launch_argv(&vars).unwrap();
        assert_eq!(codex[0], "codex");
        assert!(codex.contains(&r#"notify=["/bin/drydock", "hook", "--agent", "codex"]"#.into()));
        assert!(codex.contains(&r#"mcp_servers.drydock.url="http://127.0.0.1:7878/mcp""#.into()));
        assert_eq!(codex.last().unwrap(), "fix it");

        let gemini = profiles.get("gemini").unwrap();
        assert!(matches!(
            gemini.launch_argv(&vars),
            Err(LaunchError::Unsupported { part: "hooks", .. })
        ));
        let missing = LaunchVars {
            with_hooks: true,
            ..LaunchVars::default()
        };
        assert_eq!(
            profiles.get("claude").unwrap().launch_argv(&missing),
            Err(LaunchError::Missing {
                profile: "claude".into(),
                placeholder: "hooks_file".into()
            })
        );
    }

    fn user_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const CODEX_V99: &str = r#"
name = "codex"
version = 99
settle_ms = 1000

[recognise]
executables = ["codex"]
"#;

    #[test]
    fn a_newer_user_profile_replaces_the_embedded_one() {
        let dir = user_dir(&[("codex.toml", CODEX_V99), ("notes.txt", "not toml")]);
        let (profiles, errors) = Profiles::load(Some(dir.path()));
        assert!(errors.is_empty(), "{errors:?}");
        let codex = profiles.get("codex").unwrap();
        assert_eq!((codex.version, codex.settle_ms), (99, 1000));
    }

    #[test]
    fn an_older_user_profile_is_reported_and_ignored() {
        let old = CODEX_V99.replace("version = 99", "version = 0");
        let dir = user_dir(&[("codex.toml", &old)]);
        let (profiles, errors) = Profiles::load(Some(dir.path()));
        assert!(matches!(
            errors[..],
            [ProfileError::Outdated { found: 0, .. }]
        ));
        assert_eq!(profiles.get("codex").unwrap().settle_ms, 300);
    }

    #[test]
    fn a_broken_user_profile_names_file_and_line_and_the_embedded_one_stays() {
        let bad_regex = CODEX_V99.replace(
            "executables = [\"codex\"]",
            "executables = [\"codex\"]\nargv = ['(unclosed']",
        );
        let bad_state = format!(
            "{CODEX_V99}\n[[state.screen]]\nid = \"x\"\nregion = \"footer\"\nregex = 'x'\n\
             state = \"waiting:forever\"\n"
        );
        let unknown_key = CODEX_V99.replace("settle_ms = 1000", "settle_ms = 1000\ncolour = 1");
        for (text, line, needle) in [
            (bad_regex, 8, "bad regex"),
            (bad_state, 13, "unknown state"),
            (unknown_key, 5, "colour"),
        ] {
            let dir = user_dir(&[("codex.toml", &text)]);
            let (profiles, errors) = Profiles::load(Some(dir.path()));
            assert_eq!(errors.len(), 1, "{errors:?}");
            let message = errors[0].to_string();
            let place = format!("codex.toml:{line}: ");
            assert!(message.contains(&place), "{message} lacks {place}");
            assert!(message.contains(needle), "{message} lacks {needle}");
            assert_eq!(profiles.get("codex").unwrap().version, 1);
        }
    }

    #[test]
    fn a_user_file_must_carry_its_own_name() {
        let dir = user_dir(&[("claude.toml", CODEX_V99)]);
        let (profiles, errors) = Profiles::load(Some(dir.path()));
        assert!(errors[0].to_string().contains("named \"codex\""));
        assert_eq!(profiles.get("codex").unwrap().version, 1);
    }

    #[test]
    fn regions_count_non_blank_lines_from_the_bottom() {
        let screen = ["a", "b", "", "c", "d", "", ""];
        assert_eq!(last_non_blank(&screen, 2), ["c", "d"]);
        assert_eq!(last_non_blank(&screen, 3), ["b", "", "c", "d"]);
        assert_eq!(last_non_blank(&screen, 99), ["a", "b", "", "c", "d"]);
        assert!(last_non_blank(&["", ""], 3).is_empty());
    }
}
