//! Claude Code hooks that log their payloads: each configured event appends its JSON payload
//! (one line) to a file, so a test can see which hooks fired, in which order, with what.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::home::AgentHome;

/// Adds to the HOME's Claude settings a hook for each of `events` that appends its payload
/// to `<scratch>/hooks.jsonl`; returns that file.
pub fn log_claude_hooks(home: &AgentHome, events: &[&str]) -> PathBuf {
    let log = home.scratch().join("hooks.jsonl");
    let quoted = format!("'{}'", log.display().to_string().replace('\'', r"'\''"));
    let command = format!("cat >> {quoted}; echo >> {quoted}");
    let entry = json!([{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]);
    let settings_path = home.claude_settings();
    let mut settings: Value = std::fs::read_to_string(&settings_path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| json!({}));
    for event in events {
        settings["hooks"][*event] = entry.clone();
    }
    std::fs::write(
        &settings_path,
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    log
}

/// The payloads logged so far, oldest first.
pub fn logged_hooks(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The `hook_event_name` of each logged payload, oldest first.
pub fn logged_events(log: &Path) -> Vec<String> {
    logged_hooks(log)
        .iter()
        .filter_map(|payload| payload["hook_event_name"].as_str().map(String::from))
        .collect()
}

/// Waits until at least `count` hooks have logged (a hook may finish just after the screen
/// it belongs to shows), then returns their event names.
pub fn wait_logged_events(log: &Path, count: usize, timeout: std::time::Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let events = logged_events(log);
        if events.len() >= count || std::time::Instant::now() >= deadline {
            return events;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
