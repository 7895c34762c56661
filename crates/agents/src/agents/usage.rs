//! What an agent spent, as its own records say: the tokens of each model call, read from the
//! session files its CLI writes (Claude Code's transcript, Codex's rollout). The agent wrote
//! them, so they are read through [`crate::untrusted`], bounded, and a line that does not
//! parse is skipped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::untrusted::Tree;

/// The most of one session file read.
const MOST_PER_FILE: u64 = 256 * 1024 * 1024;
/// How deep below a usage folder session files are looked for (Codex: `sessions/Y/M/D/`).
const DEPTH: usize = 5;

pub use crate::spend::{ByModel, Tokens};

/// How a profile's agent records what it spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reader {
    /// Claude Code: each assistant message of `~/.claude/projects/*/*.jsonl` with its
    /// `usage` and `model`; a message split over several lines carries one `id`.
    ClaudeTranscript,
    /// Codex: each `token_usage_record` of `~/.codex/sessions/**/rollout-*.jsonl`, the model
    /// from the turn's `turn_context`.
    CodexRollout,
}

/// A profile's `[usage]`: its reader and where the agent writes its session files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageSource {
    pub reader: Reader,
    /// Folders of the agent's home (relative to it), or `$VAR/rest` where a variable names
    /// the folder (`$CODEX_HOME/sessions`); the first that is set is read.
    pub dirs: Vec<String>,
}

/// Why what a run spent cannot be known.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("its session files' folder is not known")]
    NoFolder,
    #[error("{}: {why}", file.display())]
    Unreadable {
        file: PathBuf,
        why: crate::untrusted::Refused,
    },
}

/// What a run of an agent spent: where its records are, and whose.
pub struct Run<'a> {
    /// The agent's home as drydock sees it (a sandbox's private home, or the person's).
    pub home: &'a Path,
    /// Where that home is as the agent sees it (the person's home path).
    pub home_inside: &'a Path,
    /// The folder it worked in: sessions elsewhere are not its.
    pub cwd: &'a Path,
    /// When the run started: records before are not its.
    pub since_ms: u64,
}

/// What `run` spent by its `source`'s records; Err says why it cannot be known.
pub fn spent(
    source: &UsageSource,
    run: &Run<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ByModel, UsageError> {
    let dir = folder(source, run, env).ok_or(UsageError::NoFolder)?;
    let mut spent = ByModel::new();
    let Ok(tree) = Tree::open(&dir) else {
        return Ok(spent);
    };
    for relative in session_files(&dir, run.since_ms) {
        let bytes = tree
            .read(&relative, MOST_PER_FILE)
            .map_err(|why| UsageError::Unreadable {
                file: dir.join(&relative),
                why,
            })?;
        let text = String::from_utf8_lossy(&bytes);
        let records = match source.reader {
            Reader::ClaudeTranscript => claude_transcript(&text, run.cwd, run.since_ms),
            Reader::CodexRollout => codex_rollout(&text, run.cwd, run.since_ms),
        };
        for (model, tokens) in records {
            spent.entry(model).or_default().add(&tokens);
        }
    }
    Ok(spent)
}

/// The usage folder as drydock sees it: the first of `dirs` that is set, a path inside the
/// agent's home moved to where drydock sees that home.
fn folder(
    source: &UsageSource,
    run: &Run<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    source.dirs.iter().find_map(|entry| {
        let inside = match entry.strip_prefix('$') {
            Some(named) => {
                let (var, rest) = named.split_once('/').unwrap_or((named, ""));
                let value = env(var).filter(|v| !v.is_empty())?;
                Path::new(&value).join(rest)
            }
            None => run.home_inside.join(entry),
        };
        match inside.strip_prefix(run.home_inside) {
            Ok(below) => Some(run.home.join(below)),
            Err(_) => Some(inside),
        }
    })
}

/// The `.jsonl` files below `dir` changed since `since_ms`, relative to it; links are not
/// followed.
fn session_files(dir: &Path, since_ms: u64) -> Vec<PathBuf> {
    let since = std::time::UNIX_EPOCH + std::time::Duration::from_millis(since_ms);
    walkdir::WalkDir::new(dir)
        .max_depth(DEPTH)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
        .filter(|entry| {
            entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .is_some_and(|modified| modified >= since)
        })
        .filter_map(|entry| entry.path().strip_prefix(dir).ok().map(Path::to_path_buf))
        .collect()
}

/// A record's time, from its `timestamp` (RFC 3339), in ms since the epoch.
fn timestamp_ms(record: &Value) -> Option<u64> {
    let text = record.get("timestamp")?.as_str()?;
    let time = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    u64::try_from(time.timestamp_millis()).ok()
}

fn count(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Whether `cwd` (as a record names it) is `within` or below it.
fn works_in(cwd: Option<&str>, within: &Path) -> bool {
    cwd.is_some_and(|cwd| Path::new(cwd).starts_with(within))
}

/// Claude Code's transcript: each assistant message's usage once (the last line of its `id`).
fn claude_transcript(text: &str, cwd: &Path, since_ms: u64) -> ByModel {
    let mut messages: HashMap<String, (String, Tokens)> = HashMap::new();
    let mut order = Vec::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if record["type"] != "assistant"
            || !works_in(record["cwd"].as_str(), cwd)
            || timestamp_ms(&record).is_none_or(|at| at < since_ms)
        {
            continue;
        }
        let message = &record["message"];
        let (Some(id), Some(model), Some(usage)) = (
            message["id"].as_str(),
            message["model"].as_str(),
            message.get("usage").filter(|u| u.is_object()),
        ) else {
            continue;
        };
        let tokens = Tokens {
            input: count(usage, "input_tokens"),
            output: count(usage, "output_tokens"),
            cache_read: count(usage, "cache_read_input_tokens"),
            cache_write: count(usage, "cache_creation_input_tokens"),
        };
        if messages
            .insert(id.to_string(), (model.to_string(), tokens))
            .is_none()
        {
            order.push(id.to_string());
        }
    }
    let mut spent = ByModel::new();
    for id in order {
        let (model, tokens) = &messages[&id];
        if tokens.total() > 0 {
            spent.entry(model.clone()).or_default().add(tokens);
        }
    }
    spent
}

/// Codex's rollout: each response's `token_usage_record` once, for the model of its turn.
/// OpenAI counts cached input inside `input_tokens`: it is taken out.
fn codex_rollout(text: &str, cwd: &Path, since_ms: u64) -> ByModel {
    let mut spent = ByModel::new();
    let mut model = String::from("unknown");
    let mut here = false;
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let payload = &record["payload"];
        match record["type"].as_str() {
            Some("session_meta") => here = works_in(payload["cwd"].as_str(), cwd),
            Some("turn_context") => {
                here = works_in(payload["cwd"].as_str(), cwd);
                if let Some(named) = payload["model"].as_str() {
                    model = named.to_string();
                }
            }
            Some("token_usage_record") if here => {
                if timestamp_ms(&record).is_none_or(|at| at < since_ms) {
                    continue;
                }
                let response = payload["response_id"].as_str().unwrap_or_default();
                if !response.is_empty() && !seen.insert(response.to_string()) {
                    continue;
                }
                let usage = &payload["usage"];
                let cached = count(usage, "cached_input_tokens");
                let tokens = Tokens {
                    input: count(usage, "input_tokens").saturating_sub(cached),
                    output: count(usage, "output_tokens"),
                    cache_read: cached,
                    cache_write: count(usage, "cache_write_input_tokens"),
                };
                spent.entry(model.clone()).or_default().add(&tokens);
            }
            _ => {}
        }
    }
    spent
}

#[cfg(test)]
mod tests;
