//! The `drydock` command: serve MCP over HTTP or stdio, or run one tool from the shell.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use drydock::build::progress::Logged;
use drydock::build::reports::Render;
use drydock::build::{BuildTools, Call};
use drydock::config::{Config, Overrides, Toolset};
use drydock::docs::ingest::{IngestProgress, human_duration};
use drydock::docs::service::{Docs, IndexRequest};
use drydock::mcp::DrydockServer;
use drydock::process::env_policy;
use drydock::terminal::registry::Terminals;
use drydock::tool_call::{CallError, call_tool};

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
    Serve(CommonArgs),
    /// Serve MCP over stdin/stdout (logs go to stderr).
    Mcp(CommonArgs),
    /// Run one tool and print its structured result as JSON.
    Call {
        /// Tool name, e.g. compile.
        tool: String,
        /// Arguments as a JSON object; `-` reads them from stdin. Default: {}.
        arguments: Option<String>,
        /// Print the short text rendering instead of JSON.
        #[arg(long)]
        text: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Index documentation for docs_lookup. Incremental: unchanged files are skipped, changed
    /// ones replaced, deleted ones removed; Ctrl-C keeps what was committed.
    Index {
        /// Files or directories of Markdown, text, HTML, Rust or Elixir sources.
        paths: Vec<PathBuf>,
        /// A cargo or mix project: its own docs and its dependencies' at their locked versions.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// With --project: every package in Cargo.lock, not only the direct dependencies.
        #[arg(long, requires = "project")]
        transitive: bool,
        /// The Rust docs rustup installed and Elixir's standard library.
        #[arg(long)]
        toolchain_docs: bool,
        /// Library name for PATHS (default: each path's directory name).
        #[arg(long, value_name = "NAME")]
        library: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
}

#[derive(Args, Clone)]
struct CommonArgs {
    /// Config file (default: ./drydock.toml, then the user config dir).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:7878 (env DRYDOCK_BIND).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// A directory projects may live in; repeat for several (env DRYDOCK_ALLOW_ROOTS).
    #[arg(long = "allow-root", value_name = "DIR")]
    allow_roots: Vec<PathBuf>,
    /// Bearer token clients must send; required for a non-loopback bind (env DRYDOCK_TOKEN).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// The docs index directory (default ./index; env DRYDOCK_INDEX, config docs.index_dir).
    #[arg(long, value_name = "DIR")]
    index: Option<PathBuf>,
}

impl Command {
    fn common(&self) -> &CommonArgs {
        match self {
            Command::Serve(common) | Command::Mcp(common) => common,
            Command::Call { common, .. } | Command::Index { common, .. } => common,
        }
    }
}

impl CommonArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            config_file: self.config.clone(),
            bind: self.bind.clone(),
            token: self.token.clone(),
            allow_roots: self.allow_roots.clone(),
            index_dir: self.index.clone(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_log = match cli.command {
        Command::Serve(_) => "drydock=info",
        _ => "drydock=warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_log.into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let config = read_config(cli.command.common());
    if let Ok(config) = &config {
        // SAFETY: no other thread exists yet: the runtime is built below.
        unsafe { env_policy::remove_from_own_environment(&config.env_remove) };
    }
    CONFIG.set(config).expect("the config is read once");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(&args).await,
            Command::Mcp(args) => serve_stdio(&args).await,
            Command::Call {
                tool,
                arguments,
                text,
                common,
            } => call(&common, &tool, arguments.as_deref(), text).await,
            Command::Index {
                paths,
                project,
                transitive,
                toolchain_docs,
                library,
                common,
            } => {
                let request = IndexRequest {
                    paths: Some(absolute_all(&paths)?),
                    project_path: project.as_deref().map(absolute).transpose()?,
                    transitive: transitive.then_some(true),
                    toolchain_docs: toolchain_docs.then_some(true),
                    library,
                };
                index(&common, request).await
            }
        }
    });
    // Do not wait for blocking tasks (e.g. a stdin reader) at exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("drydock: {message}");
            ExitCode::from(2)
        }
    }
}

/// The config of this run, read once in `main` before the runtime starts.
static CONFIG: OnceLock<Result<Arc<Config>, String>> = OnceLock::new();

fn load(args: &CommonArgs) -> Result<Arc<Config>, String> {
    CONFIG.get_or_init(|| read_config(args)).clone()
}

fn read_config(args: &CommonArgs) -> Result<Arc<Config>, String> {
    Config::load(&args.overrides())
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

async fn serve(args: &CommonArgs) -> Result<ExitCode, String> {
    let config = load(args)?;
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.bind))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    print!("{}", banner(&config, address));
    let shutdown = CancellationToken::new();
    let kill_grace = config.limits.kill_grace;
    let header_read_timeout = config.http.header_read_timeout;
    let terminals = Terminals::new(config.clone());
    if config.toolsets.contains(&Toolset::Terminal) {
        let adopted = terminals.reconcile().await;
        if adopted > 0 {
            tracing::info!("serving {adopted} tmux session(s) left by an earlier drydock");
        }
        terminals.start_reaper(shutdown.clone());
    }
    let docs = Docs::new(config.clone());
    if config.toolsets.contains(&Toolset::Docs) {
        let docs = docs.clone();
        tokio::spawn(async move { docs.warm_up().await });
    }
    let tools = BuildTools::new(config);
    let app = drydock::http::router(tools.clone(), terminals.clone(), docs, &shutdown);
    let stop = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down: stopping running tools");
        // PTY sessions end with the server; tmux sessions stay for the next one.
        tokio::task::spawn_blocking(move || terminals.shutdown())
            .await
            .ok();
        let children_gone =
            tokio::time::timeout(kill_grace * 2 + Duration::from_secs(2), tools.shutdown());
        if children_gone.await.is_err() {
            tracing::warn!("some child processes did not stop in time");
        }
        stop.cancel();
        // Streams that do not close by themselves must not keep the process alive.
        tokio::time::sleep(Duration::from_secs(2)).await;
        std::process::exit(0);
    });
    drydock::http::serve(listener, app, header_read_timeout, shutdown).await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn banner(config: &Config, address: std::net::SocketAddr) -> String {
    let url = format!("http://{address}/mcp");
    let roots: Vec<String> = config
        .allowed_roots
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    let roots_note = if config.roots_defaulted {
        " (the directory drydock was started in; add roots with --allow-root or drydock.toml)"
    } else {
        ""
    };
    let (header_flag, header_json) = match &config.token {
        Some(token) => (
            format!(" --header \"Authorization: Bearer {token}\""),
            format!(", \"headers\": {{\"Authorization\": \"Bearer {token}\"}}"),
        ),
        None => (String::new(), String::new()),
    };
    let config_note = config
        .source
        .as_ref()
        .map(|p| format!("config: {}\n", p.display()))
        .unwrap_or_default();
    let docs_note = if config.toolsets.contains(&Toolset::Docs) {
        format!(
            "docs index: {} (fill it with `drydock index --toolchain-docs` or `--project DIR`)\n",
            config.docs.index_dir.display()
        )
    } else {
        String::new()
    };
    format!(
        "drydock {version} serving MCP at {url}\n\
         {config_note}allowed project roots: {roots}{roots_note}\n\
         {docs_note}\
         \n\
         Add it to Claude Code:\n  claude mcp add --transport http drydock {url}{header_flag}\n\
         or to a project's .mcp.json:\n  {{\"mcpServers\": {{\"drydock\": {{\"type\": \"http\", \"url\": \"{url}\"{header_json}}}}}}}\n",
        version = env!("CARGO_PKG_VERSION"),
        roots = roots.join(", "),
    )
}

async fn serve_stdio(args: &CommonArgs) -> Result<ExitCode, String> {
    let config = load(args)?;
    tracing::info!(roots = ?config.allowed_roots, "serving MCP on stdio");
    let terminals = Terminals::new(config.clone());
    if config.toolsets.contains(&Toolset::Terminal) {
        terminals.reconcile().await;
    }
    let docs = Docs::new(config.clone());
    let server = DrydockServer::new(BuildTools::new(config), terminals.clone(), docs);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP over stdio failed to start: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("MCP over stdio stopped: {e}"))?;
    tokio::task::spawn_blocking(move || terminals.shutdown())
        .await
        .ok();
    Ok(ExitCode::SUCCESS)
}

async fn call(
    args: &CommonArgs,
    tool: &str,
    arguments: Option<&str>,
    text: bool,
) -> Result<ExitCode, String> {
    let config = load(args)?;
    let arguments = read_arguments(arguments)?;
    let terminals = Terminals::new(config.clone());
    if tool.starts_with("terminal_") {
        terminals.reconcile().await;
    }
    let docs = Docs::new(config.clone());
    let tools = BuildTools::new(config);
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        on_interrupt.cancel();
    });
    let call = Call {
        progress: &Logged,
        cancel,
    };
    let result = call_tool(&tools, &terminals, &docs, tool, arguments, &call).await;
    tokio::task::spawn_blocking(move || terminals.shutdown())
        .await
        .ok();
    match result {
        Ok(outcome) if text => {
            println!("{}", outcome.text);
            Ok(ExitCode::SUCCESS)
        }
        Ok(outcome) => {
            let json = serde_json::to_string_pretty(&outcome.structured).expect("JSON");
            println!("{json}");
            Ok(ExitCode::SUCCESS)
        }
        Err(error @ (CallError::Tool(_) | CallError::Terminal(_) | CallError::Docs(_))) => {
            eprintln!("drydock: {tool}: {error}");
            Ok(ExitCode::FAILURE)
        }
        Err(other) => Err(other.to_string()),
    }
}

fn absolute(path: &std::path::Path) -> Result<String, String> {
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn absolute_all(paths: &[PathBuf]) -> Result<Vec<String>, String> {
    paths.iter().map(|p| absolute(p)).collect()
}

/// `drydock index`: progress bars on a terminal, a log line every 10 s otherwise; the first
/// Ctrl-C stops after the current batch (what was committed stays), a second one at once.
async fn index(args: &CommonArgs, request: IndexRequest) -> Result<ExitCode, String> {
    let config = load(args)?;
    let docs = Docs::for_command_line(config);
    let roots = docs.roots_of(&request).await.map_err(|e| e.to_string())?;
    eprintln!(
        "indexing into {} ({} roots)",
        docs.index_dir().display(),
        roots.len()
    );
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("\nstopping after the current batch (Ctrl-C again to quit now)");
        on_interrupt.cancel();
        let _ = tokio::signal::ctrl_c().await;
        std::process::exit(130);
    });
    let progress = Arc::new(IngestProgress::default());
    let display = tokio::spawn(show_progress(Arc::clone(&progress)));
    let result = docs.ingest_roots(roots, progress, &cancel).await;
    display.abort();
    let _ = display.await;
    let report = result.map_err(|e| e.to_string())?;
    println!("{}", report.render());
    Ok(if report.cancelled {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

async fn show_progress(progress: Arc<IngestProgress>) {
    if !std::io::stderr().is_terminal() {
        let mut ticker = tokio::time::interval(Duration::from_secs(10));
        ticker.tick().await;
        loop {
            ticker.tick().await;
            eprintln!("{}", progress.snapshot().line());
        }
    }
    let bars = indicatif::MultiProgress::new();
    let style = |template: &str| {
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> ")
    };
    let files = bars.add(
        indicatif::ProgressBar::new(0).with_style(style("files  [{bar:40}] {pos}/{len} {msg}")),
    );
    let chunks = bars.add(
        indicatif::ProgressBar::new(0).with_style(style("chunks [{bar:40}] {pos}/~{len} {msg}")),
    );
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    // Dropping the bars (when this task is aborted) clears them.
    let _guard = BarsGuard(files.clone(), chunks.clone());
    loop {
        ticker.tick().await;
        let now = progress.snapshot();
        files.set_length(now.files_total);
        files.set_position(now.files_done);
        files.set_message(format!("({} changed)", now.files_changed));
        let done = now.chunks_embedded + now.chunks_reused;
        chunks.set_length(now.chunks_expected().max(done));
        chunks.set_position(done);
        let eta = now
            .eta()
            .map(|eta| format!(" · ETA {}", human_duration(eta)))
            .unwrap_or_default();
        chunks.set_message(format!(
            "· {} embedded, {} reused · {:.1}/s{eta}",
            now.chunks_embedded,
            now.chunks_reused,
            now.embeddings_per_second()
        ));
    }
}

struct BarsGuard(indicatif::ProgressBar, indicatif::ProgressBar);

impl Drop for BarsGuard {
    fn drop(&mut self) {
        self.0.finish_and_clear();
        self.1.finish_and_clear();
    }
}

fn read_arguments(arguments: Option<&str>) -> Result<serde_json::Value, String> {
    let text = match arguments {
        None => return Ok(serde_json::json!({})),
        Some("-") => {
            let mut buffer = String::new();
            std::io::stdin()
                .read_to_string(&mut buffer)
                .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
            buffer
        }
        Some(text) => text.to_string(),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("arguments are not valid JSON: {e}"))?;
    if !value.is_object() {
        return Err("arguments must be a JSON object, e.g. '{\"project_path\": \".\"}'".into());
    }
    Ok(value)
}
