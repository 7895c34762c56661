//! The `drydock` command line: parses the arguments, reads the config once, starts the
//! runtime and hands over to the subcommand. Usage errors (bad arguments, a config that
//! cannot be used) exit 2, failures at run time (cannot listen, a tool that could not run,
//! an unreadable index) exit 1.

mod approve;
mod call;
mod doctor;
mod history;
mod hook;
mod hooks;
mod index;
mod local_client;
mod sandbox_run;
mod serve;
mod stdio;
mod task;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::{Config, Overrides};
use crate::process::env_policy;

#[derive(Parser)]
#[command(
    name = "drydock",
    version,
    about = "A developer toolbox for coding agents, served over MCP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over Streamable HTTP (default http://127.0.0.1:7878/mcp).
    Serve(serve::ServeArgs),
    /// Serve MCP over stdin/stdout (logs go to stderr).
    Mcp(stdio::StdioArgs),
    /// Run one tool and print its structured result as JSON.
    Call(call::CallArgs),
    /// Index documentation for docs_lookup. Incremental: unchanged files are skipped, changed
    /// ones replaced, deleted ones removed; Ctrl-C keeps what was committed.
    Index(index::IndexArgs),
    /// Put drydock's hooks into Claude Code's settings, or take them out: the agents' hook
    /// events then reach the running server.
    Hooks(hooks::HooksArgs),
    /// The requests the running server waits on a person for (agent_spawn's consent).
    Approvals(approve::ListArgs),
    /// Approve a pending request: `drydock approve ID`.
    Approve(approve::DecideArgs),
    /// Decline a pending request: `drydock decline ID`.
    Decline(approve::DecideArgs),
    /// The task queue of the running server: add, list, show, start, cancel, retry, complete.
    Task(task::TaskArgs),
    /// Set the running server's task queue: `drydock queue --mode auto --max 3`, or `--clear`.
    Queue(task::QueueArgs),
    /// Check everything drydock uses (ONNX Runtime, the model, the index, tmux, shells, cargo,
    /// mix, dialyzer, the agent CLIs, the hooks) and say how to fix what is missing; exits 1
    /// when a switched-on toolset lacks something it needs.
    Doctor(doctor::DoctorArgs),
    /// Relay an agent's hook event to the running server (what the installed hooks run;
    /// exits 0 at once when no server runs).
    Hook(hook::HookArgs),
    /// The project memory: the errors and failing tests the build tools reported and the
    /// changes that fixed them: search, show a project's, forget.
    History(history::HistoryArgs),
    /// Inside a task's sandbox: serve the loopback ports that lead out, then run the agent.
    #[command(hide = true)]
    SandboxRun(sandbox_run::SandboxRunArgs),
}

/// Where the config comes from and the docs index: every command reads them.
#[derive(Args, Clone)]
struct ConfigArgs {
    /// Config file (default: ./drydock.toml, then the user config dir).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The docs index directory (default ./index; env DRYDOCK_INDEX, config docs.index_dir).
    #[arg(long, value_name = "DIR")]
    index: Option<PathBuf>,
    /// drydock's data directory (default ~/.local/share/drydock; env DRYDOCK_DATA_DIR, config
    /// data_dir).
    #[arg(long = "data-dir", value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// The directories projects may live in: for the commands that run tools.
#[derive(Args, Clone)]
struct RootArgs {
    /// A directory projects may live in; repeat for several (env DRYDOCK_ALLOW_ROOTS).
    #[arg(long = "allow-root", value_name = "DIR")]
    allow_roots: Vec<PathBuf>,
}

/// Why a command failed, and so its exit status.
#[derive(Debug)]
enum Failure {
    /// The command cannot run as given: exit 2.
    Usage(String),
    /// It ran and failed: exit 1.
    Runtime(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) => ExitCode::from(2),
            Failure::Runtime(_) => ExitCode::FAILURE,
        }
    }

    fn message(&self) -> &str {
        match self {
            Failure::Usage(message) | Failure::Runtime(message) => message,
        }
    }
}

type Exit = Result<ExitCode, Failure>;

impl Command {
    fn overrides(&self) -> Overrides {
        let (config, roots) = match self {
            Command::Serve(args) => (&args.config, Some(&args.roots)),
            Command::Mcp(args) => (&args.config, Some(&args.roots)),
            Command::Call(args) => (&args.config, Some(&args.roots)),
            Command::Index(args) => (&args.config, None),
            Command::Hooks(args) => (args.action.config(), None),
            Command::Approvals(args) => (&args.config, None),
            Command::Approve(args) | Command::Decline(args) => (&args.config, None),
            Command::Task(args) => (args.action.config(), None),
            Command::Queue(args) => (&args.config, None),
            Command::Doctor(args) => (&args.config, None),
            Command::History(args) => {
                let (config, roots) = args.action.config();
                (config, Some(roots))
            }
            Command::Hook(_) | Command::SandboxRun(_) => return Overrides::default(),
        };
        let (bind, token) = match self {
            Command::Serve(args) => (args.bind.clone(), args.token.clone()),
            _ => (None, None),
        };
        Overrides {
            config_file: config.config.clone(),
            bind,
            token,
            allow_roots: roots.map(|r| r.allow_roots.clone()).unwrap_or_default(),
            index_dir: config.index.clone(),
            data_dir: config.data_dir.clone(),
        }
    }
}

/// Whether drydock's command line takes `args` (`drydock` first), without running anything:
/// the README's examples are tested with it.
pub fn accepts<I, T>(args: I) -> Result<(), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map(|_| ())
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Hook(args) => return hook::run(args),
        Command::SandboxRun(args) => return sandbox_run::run(args),
        _ => {}
    }
    let config = Config::load(&cli.command.overrides())
        .map_err(|e| e.to_string())
        .and_then(|config| match crate::toolchain::check_config(&config) {
            Ok(()) => Ok(config),
            Err(unknown) => Err(unknown.to_string()),
        })
        .map(Arc::new)
        .map_err(Failure::Usage);
    if let Ok(config) = &config {
        // SAFETY: no other thread exists yet: the runtime is built below.
        unsafe { env_policy::remove_from_own_environment(&config.env_remove) };
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let exporting = init_logging(&cli.command, config.as_deref().ok(), runtime.handle());
    let result = runtime.block_on(async move {
        let config = config?;
        match cli.command {
            Command::Serve(_) => serve::run(config).await,
            Command::Mcp(_) => stdio::run(config).await,
            Command::Call(args) => call::run(config, args).await,
            Command::Index(args) => index::run(config, args).await,
            Command::Hooks(args) => hooks::run(&config, args),
            Command::Approvals(_) => approve::list(&config),
            Command::Approve(args) => approve::decide(&config, args, true),
            Command::Decline(args) => approve::decide(&config, args, false),
            Command::Task(args) => task::run(&config, args),
            Command::Queue(args) => task::queue(&config, args),
            Command::Doctor(args) => doctor::run(&config, args).await,
            Command::History(args) => history::run(config, args).await,
            Command::Hook(_) | Command::SandboxRun(_) => {
                unreachable!("run before the config is read")
            }
        }
    });
    // The last traces are sent while the runtime that sends them still runs.
    drop(exporting);
    // Do not wait for blocking tasks (e.g. a stdin reader) at exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.unwrap_or_else(|failure| {
        eprintln!("drydock: {}", failure.message());
        failure.exit_code()
    })
}

/// drydock's log on stderr and, for the servers when `[telemetry]` names a collector, its
/// traces; the traces' exporter is returned, to be dropped (its last spans sent) at exit.
fn init_logging(
    command: &Command,
    config: Option<&Config>,
    runtime: &tokio::runtime::Handle,
) -> Option<crate::telemetry::Exporting> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let (default_log, serves) = match command {
        Command::Serve(_) => ("drydock=info", true),
        Command::Mcp(_) => ("drydock=warn", true),
        _ => ("drydock=warn", false),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_log.into())
        // The traces' spans are not log lines.
        .add_directive(
            format!("{}=off", crate::telemetry::TARGET)
                .parse()
                .expect("a valid directive"),
        );
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let exporting = match config.filter(|_| serves) {
        Some(config) => crate::telemetry::Exporting::start(&config.telemetry, runtime.clone())
            .unwrap_or_else(|error| {
                eprintln!("drydock: traces are not exported: {error}");
                None
            }),
        None => None,
    };
    let traces = exporting.as_ref().map(|exporting| exporting.layer());
    tracing_subscriber::registry().with(log).with(traces).init();
    exporting
}

/// SIGINT or SIGTERM.
async fn wait_for_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
