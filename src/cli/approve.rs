//! `drydock approvals`, `drydock approve ID`, `drydock decline ID`: a person's answers to the
//! requests the running server waits on (agent_spawn's consent).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use super::local_client::request;
use super::{ConfigArgs, Failure, Outcome};
use crate::agents::endpoint::LocalEndpoint;
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
pub(super) fn list(config: &Config) -> Outcome {
    let endpoint = endpoint(config)?;
    let url = format!("{}/approvals", endpoint.base);
    let answer = call(&endpoint, "GET", &url, None)?;
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
pub(super) fn decide(config: &Config, args: DecideArgs, approve: bool) -> Outcome {
    let endpoint = endpoint(config)?;
    let url = format!("{}/approvals/{}", endpoint.base, args.id);
    let body = json!({"approve": approve}).to_string();
    let answer = call(&endpoint, "POST", &url, Some(&body))?;
    let verb = if approve { "approved" } else { "declined" };
    println!("{verb} {}", describe(&answer["decided"]));
    Ok(ExitCode::SUCCESS)
}

fn endpoint(config: &Config) -> Result<LocalEndpoint, Failure> {
    LocalEndpoint::read(&config.data_dir).ok_or_else(|| {
        Failure::Runtime(format!(
            "no drydock server is running for {} (start one with `drydock serve`, or name its --data-dir)",
            config.data_dir.display()
        ))
    })
}

fn call(
    endpoint: &LocalEndpoint,
    method: &str,
    url: &str,
    body: Option<&str>,
) -> Result<Value, Failure> {
    let unreachable = || {
        Failure::Runtime(format!(
            "the drydock server at {} (pid {}) does not answer",
            endpoint.base, endpoint.pid
        ))
    };
    let (status, text) = request(endpoint, method, url, body, WAIT).ok_or_else(unreachable)?;
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    match status {
        200 => Ok(answer),
        _ => Err(Failure::Runtime(
            answer["error"]
                .as_str()
                .map_or_else(|| answer.to_string(), str::to_string),
        )),
    }
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
