//! Agent profiles as data: how to recognise an agent CLI among a terminal's processes, how
//! to read its state ([`super::rules`]), which keys answer it and how text is submitted
//! ([`super::keys`]), and how it is launched ([`super::launch`]).
//!
//! The profiles for claude, codex and gemini and a quiet-time-only generic one are embedded
//! (`profiles/*.toml`). A user's `<dir>/<name>.toml` replaces the embedded profile of the
//! same name when its `version` is at least the embedded one's (`profile_dir` reads them). A
//! broken user file is reported with its file and line and leaves the embedded profile in
//! force.
//!
//! Regexes, key strings and states are checked while the TOML is read, so every mistake
//! carries the span of the value that caused it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Deserializer, de};

use super::keys::{Keys, Submission};
use super::launch::Launch;
use super::rules::{PromptReading, StateReading};

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
    #[serde(default)]
    pub sandbox: SandboxNeeds,
    /// Where its CLI records the tokens it spends; None: its usage is unknown.
    pub usage: Option<super::usage::UsageSource>,
}

/// What the agent's CLI needs in a sandbox: files of the person's home, and the hosts of its
/// model API.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxNeeds {
    /// Files of the person's home (relative to it) copied into the agent's private home at
    /// each start: its settings.
    #[serde(default)]
    pub home: Vec<String>,
    /// Of `home`, JSON files that hold the person's settings for every project (Claude Code's
    /// `.claude.json`): copied with the entries of `projects` for the task's folders alone,
    /// and no `mcpServers` at any level (other servers' addresses and tokens).
    #[serde(default)]
    pub scoped: Vec<String>,
    /// Files of the person's home shown read-only in the private home: its credentials.
    #[serde(default)]
    pub credentials: Vec<String>,
    /// `host:port` of its model API.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Variables that point it at another API: their URL's host is reached instead.
    #[serde(default)]
    pub base_url_env: Vec<String>,
    /// Its API's URL where no `base_url_env` is set.
    pub base_url: Option<String>,
    /// drydock's variables that hold its API's key: the sandbox gets a placeholder in each
    /// and its API's URL at a stand-in of the proxy, which adds the key.
    #[serde(default)]
    pub keys: Vec<String>,
    /// drydock's variables it reads (names, or `PREFIX_*`): its API's address and its own
    /// settings. Its sandbox starts with these and the basics alone.
    #[serde(default)]
    pub env: Vec<String>,
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

    /// Watches `program` with the quiet-time profile, unless a profile of that name exists.
    pub fn add_generic(&mut self, program: &str) {
        if !self.by_name.contains_key(program) {
            let profile = self.generic(program);
            self.by_name.insert(program.to_string(), profile);
        }
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

    /// Puts the profile a user's `file` holds (`text`) in force, unless it is broken, is not
    /// named after its file or is older than the embedded profile of its name.
    pub fn accept_text(&mut self, file: &Path, text: &str) -> Result<(), ProfileError> {
        let profile = parse_profile(file, text)?;
        self.accept(file, profile)
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

pub fn parse_profile(file: &Path, text: &str) -> Result<Profile, ProfileError> {
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
}
