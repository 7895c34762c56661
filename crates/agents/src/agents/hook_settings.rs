//! drydock's entries in a Claude Code settings file (`hooks` → event → groups of commands):
//! merged in next to whatever is there, recognised again by their command (`… drydock hook`),
//! and removed without touching anything else.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::process::shell_quote::shell_word;

/// The events drydock listens to (agent-lab §5.1).
pub const EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
    "SessionEnd",
];
/// The events whose groups take a matcher (tool names).
const TOOL_EVENTS: [&str; 3] = ["PreToolUse", "PermissionRequest", "PostToolUse"];
/// Seconds Claude Code gives the hook; `drydock hook` itself gives up much sooner.
const TIMEOUT_S: u64 = 10;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not JSON (line {line}, column {column}): {message}; nothing was changed")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {what} is not {expected}; nothing was changed")]
    Shape {
        path: PathBuf,
        what: String,
        expected: &'static str,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What an install or uninstall did, per event.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    /// Entries of another drydock (another path or flags) replaced by this one's.
    pub replaced: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl Changes {
    pub fn changed(&self) -> bool {
        !(self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty())
    }
}

/// The settings file of `path`, parsed; an absent file is an empty object.
pub fn read(path: &Path) -> Result<Value, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({})),
        Err(source) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|e| SettingsError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Writes `settings` to `path` through a temporary file, keeping the file's permissions.
pub fn write(path: &Path, settings: &Value) -> Result<(), SettingsError> {
    let failed = |source| SettingsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut text = serde_json::to_string_pretty(settings).expect("JSON values serialize");
    text.push('\n');
    let temporary = dir.join(format!(
        ".{}.drydock-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("settings"),
        std::process::id()
    ));
    std::fs::write(&temporary, text).map_err(failed)?;
    if let Ok(metadata) = std::fs::metadata(path) {
        std::fs::set_permissions(&temporary, metadata.permissions()).map_err(failed)?;
    }
    std::fs::rename(&temporary, path).map_err(failed)
}

/// Adds a group running `command` to each of [`EVENTS`], unless it is there; replaces the
/// groups of another drydock hook command.
pub fn install(settings: &mut Value, path: &Path, command: &str) -> Result<Changes, SettingsError> {
    let hooks = hooks_of(settings, path)?;
    let mut changes = Changes::default();
    for event in EVENTS {
        let groups = groups_of(hooks, event, path)?;
        let mine = group(event, command);
        let ours: Vec<usize> = (0..groups.len()).filter(|&i| is_ours(&groups[i])).collect();
        match ours.as_slice() {
            [only] if groups[*only] == mine => changes.unchanged.push(event.to_string()),
            [] => {
                groups.push(mine);
                changes.added.push(event.to_string());
            }
            [first, ..] => {
                groups[*first] = mine;
                let mut index = 0;
                groups.retain(|g| {
                    index += 1;
                    index - 1 == *first || !is_ours(g)
                });
                changes.replaced.push(event.to_string());
            }
        }
    }
    Ok(changes)
}

/// The events of [`EVENTS`] that have a drydock hook in `settings`.
pub fn installed_events(settings: &Value) -> Vec<&'static str> {
    let has_ours = |event: &str| {
        settings["hooks"][event]
            .as_array()
            .is_some_and(|groups| groups.iter().any(is_ours))
    };
    EVENTS.into_iter().filter(|e| has_ours(e)).collect()
}

/// Removes every group that runs only a drydock hook command, and what became empty.
pub fn uninstall(settings: &mut Value, path: &Path) -> Result<Changes, SettingsError> {
    let mut changes = Changes::default();
    let Some(hooks) = settings.get_mut("hooks") else {
        return Ok(changes);
    };
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(shape(path, "hooks", "an object"));
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        let Some(groups) = hooks[&event].as_array_mut() else {
            return Err(shape(path, &format!("hooks.{event}"), "an array"));
        };
        let before = groups.len();
        groups.retain(|g| !is_ours(g));
        if groups.len() < before {
            changes.removed.push(event.clone());
            if groups.is_empty() {
                hooks.remove(&event);
            }
        }
    }
    if hooks.is_empty() && changes.changed() {
        settings.as_object_mut().expect("has hooks").remove("hooks");
    }
    Ok(changes)
}

/// The command a hook entry runs: drydock's executable, `hook`, and its data directory when
/// that is not the default.
pub fn hook_command(drydock: &Path, data_dir: Option<&Path>) -> String {
    let mut words = vec![shell_word(&drydock.display().to_string()), "hook".into()];
    if let Some(dir) = data_dir {
        words.push("--data-dir".into());
        words.push(shell_word(&dir.display().to_string()));
    }
    words.join(" ")
}

fn group(event: &str, command: &str) -> Value {
    let hook = json!([{"type": "command", "command": command, "timeout": TIMEOUT_S}]);
    match TOOL_EVENTS.contains(&event) {
        true => json!({"matcher": "*", "hooks": hook}),
        false => json!({"hooks": hook}),
    }
}

/// A group whose every command is a drydock hook command.
fn is_ours(group: &Value) -> bool {
    let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
        return false;
    };
    !hooks.is_empty()
        && hooks.iter().all(|hook| {
            hook.get("command")
                .and_then(Value::as_str)
                .is_some_and(is_drydock_hook)
        })
}

/// `…/drydock hook …`, the executable's path quoted or not.
fn is_drydock_hook(command: &str) -> bool {
    let Some((program, rest)) = split_program(command.trim()) else {
        return false;
    };
    let name = Path::new(&program).file_name().and_then(|n| n.to_str());
    name == Some("drydock")
        && (rest.trim_start() == "hook" || rest.trim_start().starts_with("hook "))
}

fn split_program(command: &str) -> Option<(String, &str)> {
    match command.strip_prefix('\'') {
        Some(quoted) => {
            let mut program = String::new();
            let mut rest = quoted;
            loop {
                let end = rest.find('\'')?;
                program.push_str(&rest[..end]);
                rest = &rest[end + 1..];
                match rest.strip_prefix(r"\''") {
                    Some(after) => {
                        program.push('\'');
                        rest = after;
                    }
                    None => return Some((program, rest)),
                }
            }
        }
        None => {
            let (program, rest) = command.split_once(' ').unwrap_or((command, ""));
            Some((program.to_string(), rest))
        }
    }
}

fn hooks_of<'a>(
    settings: &'a mut Value,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, SettingsError> {
    let Some(settings) = settings.as_object_mut() else {
        return Err(shape(path, "the file", "a JSON object"));
    };
    settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| shape(path, "hooks", "an object"))
}

fn groups_of<'a>(
    hooks: &'a mut Map<String, Value>,
    event: &str,
    path: &Path,
) -> Result<&'a mut Vec<Value>, SettingsError> {
    hooks
        .entry(event)
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| shape(path, &format!("hooks.{event}"), "an array"))
}

fn shape(path: &Path, what: &str, expected: &'static str) -> SettingsError {
    SettingsError::Shape {
        path: path.to_path_buf(),
        what: what.to_string(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users_settings() -> Value {
        serde_json::from_str(
            r#"{
              "permissions": {"defaultMode": "default", "allow": ["Bash(ls:*)"]},
              "model": "opus",
              "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
              },
              "env": {"FOO": "1"}
            }"#,
        )
        .unwrap()
    }

    #[test]
    fn install_adds_one_group_per_event_beside_the_users_own_and_is_idempotent() {
        let path = Path::new("settings.json");
        let command = hook_command(Path::new("/opt/my tools/drydock"), None);
        assert_eq!(command, "'/opt/my tools/drydock' hook");
        let mut settings = users_settings();

        let first = install(&mut settings, path, &command).unwrap();
        assert_eq!(first.added.len(), EVENTS.len());
        let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "the user's Bash hook stays first");
        assert_eq!(pre[0]["matcher"], "Bash");
        assert_eq!(pre[1]["matcher"], "*");
        assert_eq!(pre[1]["hooks"][0]["command"], json!(command));
        assert!(settings["hooks"]["Stop"][1].get("matcher").is_none());
        let keys: Vec<&String> = settings.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["permissions", "model", "hooks", "env"], "order kept");

        let installed = settings.clone();
        let again = install(&mut settings, path, &command).unwrap();
        assert!(!again.changed(), "{again:?}");
        assert_eq!(settings, installed);
    }

    #[test]
    fn another_drydocks_entries_are_replaced_not_doubled() {
        let path = Path::new("settings.json");
        let mut settings = users_settings();
        install(&mut settings, path, "/old/drydock hook").unwrap();
        let new = hook_command(Path::new("/new/drydock"), Some(Path::new("/data")));
        assert_eq!(new, "/new/drydock hook --data-dir /data");

        let changes = install(&mut settings, path, &new).unwrap();

        assert_eq!(changes.replaced.len(), EVENTS.len());
        let stop = settings["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[1]["hooks"][0]["command"], json!(new));
    }

    #[test]
    fn uninstall_removes_exactly_what_install_added() {
        let path = Path::new("settings.json");
        let original = users_settings();
        let mut settings = original.clone();
        install(&mut settings, path, "'/a b/drydock' hook").unwrap();

        let changes = uninstall(&mut settings, path).unwrap();

        assert_eq!(changes.removed.len(), EVENTS.len());
        assert_eq!(settings, original);
        assert_eq!(
            serde_json::to_string(&settings).unwrap(),
            serde_json::to_string(&original).unwrap(),
            "same keys in the same order"
        );
        let nothing = uninstall(&mut settings, path).unwrap();
        assert!(!nothing.changed());

        let mut fresh = json!({});
        install(&mut fresh, path, "drydock hook").unwrap();
        uninstall(&mut fresh, path).unwrap();
        assert_eq!(fresh, json!({}), "a hooks object drydock created goes too");
    }

    #[test]
    fn a_group_that_mixes_the_users_command_with_drydocks_is_the_users() {
        let path = Path::new("settings.json");
        let mut settings = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "drydock hook"},
            {"type": "command", "command": "say done"}
        ]}]}});
        let before = settings.clone();
        uninstall(&mut settings, path).unwrap();
        assert_eq!(settings, before);
        assert!(!is_drydock_hook("drydockx hook"));
        assert!(!is_drydock_hook("/bin/drydock hooks install"));
        assert!(is_drydock_hook("/bin/drydock hook --data-dir /x"));
        assert!(is_drydock_hook(r"'/it'\''s/drydock' hook"));
    }

    #[test]
    fn a_file_of_another_shape_is_an_error_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\n  \"hooks\": [\n").unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(error.contains("is not JSON (line 3"), "{error}");

        let mut array = json!({"hooks": []});
        let error = install(&mut array, &path, "drydock hook").unwrap_err();
        assert!(
            error.to_string().contains("hooks is not an object"),
            "{error}"
        );
        let mut list = json!({"hooks": {"Stop": {}}});
        let error = install(&mut list, &path, "drydock hook").unwrap_err();
        assert!(
            error.to_string().contains("hooks.Stop is not an array"),
            "{error}"
        );

        assert_eq!(read(&dir.path().join("absent.json")).unwrap(), json!({}));
    }
}
