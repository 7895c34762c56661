//! `drydock call TOOL [ARGUMENTS]`: run one tool and print its result.

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{ConfigArgs, Exit, Failure, RootArgs};
use crate::app::{App, Mode};
use crate::call::Call;
use crate::call::Logged;
use crate::config::Config;
use crate::tool_call::{CallError, call_tool, served_tool};

#[derive(Args, Clone)]
pub(super) struct CallArgs {
    /// Tool name, e.g. compile.
    tool: String,
    /// Arguments as a JSON object; `-` reads them from stdin. Default: {}.
    arguments: Option<String>,
    /// Print the short text rendering instead of JSON.
    #[arg(long)]
    text: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub roots: RootArgs,
}

pub(super) async fn run(config: Arc<Config>, args: CallArgs) -> Exit {
    let tool = served_tool(&config, &args.tool).map_err(|e| Failure::Usage(e.to_string()))?;
    let arguments =
        read_arguments(args.arguments.as_deref()).map_err(|e| Failure::Usage(e.to_string()))?;
    let app = App::start(config, Mode::OneCall(tool)).await;
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        on_interrupt.cancel();
    });
    let call = Call::new(&Logged, cancel).by(Some("drydock call".into()));
    let result = call_tool(&app, tool, arguments, &call).await;
    app.shutdown().await;
    match result {
        Ok(outcome) if args.text => println!("{}", outcome.text),
        Ok(outcome) => println!(
            "{}",
            serde_json::to_string_pretty(&outcome.structured).expect("JSON")
        ),
        Err(error @ CallError::InvalidArguments { .. }) => {
            return Err(Failure::Usage(error.to_string()));
        }
        Err(error) => return Err(Failure::Runtime(format!("{tool}: {error}"))),
    }
    Ok(ExitCode::SUCCESS)
}

/// Why `--arguments` is no tool's arguments.
#[derive(Debug, thiserror::Error)]
enum ArgumentsError {
    #[error("cannot read arguments from stdin: {0}")]
    Stdin(std::io::Error),
    #[error("arguments are not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("arguments must be a JSON object, e.g. '{{\"project_path\": \".\"}}'")]
    NotAnObject,
}

fn read_arguments(arguments: Option<&str>) -> Result<serde_json::Value, ArgumentsError> {
    let text = match arguments {
        None => return Ok(serde_json::json!({})),
        Some("-") => {
            let mut buffer = String::new();
            std::io::stdin()
                .read_to_string(&mut buffer)
                .map_err(ArgumentsError::Stdin)?;
            buffer
        }
        Some(text) => text.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(ArgumentsError::NotJson)?;
    if !value.is_object() {
        return Err(ArgumentsError::NotAnObject);
    }
    Ok(value)
}
