//! `drydock hook`: what an agent's hook runs. Relays the hook's input to the running server
//! and prints the server's answer for the agent, if it has one. It never slows or breaks the
//! agent: no config is read, and with no server (or a slow one) it exits 0 at once.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use super::local_client::request;
use crate::config::resolve_data_dir;
use crate::local_endpoint::LocalEndpoint;

/// A hook's input is a JSON object of a few kB; a transcript is never inlined.
const MAX_INPUT: u64 = 4 * 1024 * 1024;

#[derive(Args, Clone)]
pub(super) struct HookArgs {
    /// The data directory of the server to tell (default: env DRYDOCK_DATA_DIR, else
    /// ~/.local/share/drydock).
    #[arg(long = "data-dir", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The agent kind that runs the hook (informational; the server finds the agent by its
    /// process).
    #[arg(long, value_name = "KIND")]
    agent: Option<String>,
    /// How long to wait for the server's answer, in seconds.
    #[arg(long = "wait-s", value_name = "S", default_value_t = 5)]
    wait_s: u64,
    /// The payload, for agents that pass it as an argument (Codex's notify); else stdin.
    payload: Option<String>,
}

pub(super) fn run(args: HookArgs) -> ExitCode {
    if let Some(output) = relay(&args) {
        println!("{output}");
    }
    ExitCode::SUCCESS
}

/// The server's output for the agent, if any; None on every failure.
fn relay(args: &HookArgs) -> Option<Value> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let env = |name: &str| std::env::var(name).ok();
    let endpoint = match LocalEndpoint::in_sandbox() {
        Some(sandboxed) => sandboxed,
        None => {
            let data_dir = resolve_data_dir(args.data_dir.as_deref(), None, &env, &cwd);
            LocalEndpoint::read(&data_dir)?
        }
    };
    let payload = match &args.payload {
        Some(text) => text.clone(),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .take(MAX_INPUT)
                .read_to_string(&mut text)
                .ok()?;
            text
        }
    };
    let mut payload: Value = serde_json::from_str(&payload).unwrap_or(Value::String(payload));
    if let (Some(kind), Some(object)) = (&args.agent, payload.as_object_mut()) {
        object.entry("drydock_agent").or_insert_with(|| json!(kind));
    }
    let body = json!({"pid": std::process::id(), "payload": payload}).to_string();
    let url = endpoint.hooks_url();
    let (status, response) = request(
        &endpoint,
        "POST",
        &url,
        Some(&body),
        Duration::from_secs(args.wait_s),
    )?;
    if status != 200 {
        return None;
    }
    let answer: Value = serde_json::from_str(&response).ok()?;
    answer.get("output").filter(|o| !o.is_null()).cloned()
}
