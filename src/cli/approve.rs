//! `drydock approvals`, `drydock approve ID`, `drydock decline ID`: a person's answers to the
//! requests the running server waits on (agent_spawn's consent).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use super::local_client::{call, endpoint};
use super::{ConfigArgs, Exit};
use crate::config::Config;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Args, Clone)]
pub(super) struct DecideArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The request's id, as `drydock approvals` and drydock://approvals show it.
    id: String,
}

#[derive(Args, Clone)]
pub(super) struct ListArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Prints the pending requests.
pub(super) fn list(config: &Config) -> Exit {
    let endpoint = endpoint(config)?;
    let url = format!("{}/approvals", endpoint.base);
    let answer = call(&endpoint, "GET", &url, None, WAIT)?;
    let pending = answer["pending"].as_array().cloned().unwrap_or_default();
    if pending.is_empty() {
        println!("nothing waits for an answer");
    }
    for approval in pending {
        println!("{}", describe(&approval));
    }
    Ok(ExitCode::SUCCESS)
}

/// Answers request `args.id`.
pub(super) fn decide(config: &Config, args: DecideArgs, approve: bool) -> Exit {
    let endpoint = endpoint(config)?;
    let url = format!("{}/approvals/{}", endpoint.base, args.id);
    let body = json!({"approve": approve}).to_string();
    let answer = call(&endpoint, "POST", &url, Some(&body), WAIT)?;
    let verb = if approve { "approved" } else { "declined" };
    println!("{verb} {}", describe(&answer["decided"]));
    Ok(ExitCode::SUCCESS)
}

fn describe(approval: &Value) -> String {
    let text = |key: &str| approval[key].as_str().unwrap_or("?").to_string();
    let prompt = text("prompt");
    let prompt = match prompt.chars().count() > 200 {
        true => format!("{}…", prompt.chars().take(200).collect::<String>()),
        false => prompt,
    };
    format!(
        "{}: start {} in {} (session {}): {prompt}",
        text("id"),
        text("kind"),
        text("cwd"),
        text("name")
    )
}
