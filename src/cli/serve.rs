//! `drydock serve`: MCP over Streamable HTTP until SIGINT or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{ConfigArgs, Exit, Failure, RootArgs, wait_for_signal};
use crate::app::{App, Mode};
use crate::catalog::Toolset;
use crate::config::Config;
use crate::dashboard::Login;
use crate::local_endpoint::LocalEndpoint;

#[derive(Args, Clone)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub roots: RootArgs,
    /// Address to listen on, e.g. 127.0.0.1:7878 (env DRYDOCK_BIND).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,
    /// Bearer token clients must send; required for a non-loopback bind (env DRYDOCK_TOKEN).
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
}

pub(super) async fn run(config: Arc<Config>) -> Exit {
    config
        .check_servable()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    raise_open_file_limit();
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot listen on {}: {e}", config.bind)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let login = Login::new(config.token.is_some());
    print!("{}", banner(&config, address, &login));
    let app = App::start(config.clone(), Mode::Server).await;
    let local_endpoint = publish_local_endpoint(&config, address);
    if let Some(endpoint) = &local_endpoint {
        app.agents().serve_at(endpoint.clone());
    }
    let stop_http = CancellationToken::new();
    let local_token = local_endpoint.as_ref().map(|e| e.token.clone());
    let routers = crate::http::router(app.clone(), &stop_http, local_token, login);
    if let Some(sandbox) = routers.sandbox {
        let timeout = config.http.header_read_timeout;
        app.tasks()
            .open_sandbox_door(Arc::new(move |listener, token, stop| {
                let served =
                    crate::http::serve_sandbox(listener, sandbox.clone(), token, timeout, stop);
                tokio::spawn(served);
            }));
    }
    let router = routers.main;
    tokio::spawn(stop_on_signal(
        app,
        stop_http.clone(),
        local_endpoint,
        config.clone(),
    ));
    // Without a token a loopback port is its user's alone (a non-loopback bind needs one).
    let peers = match &config.token {
        Some(_) => crate::http::Peers::Anyone,
        None => crate::http::Peers::own_user(),
    };
    let timeout = config.http.header_read_timeout;
    crate::http::serve(listener, router, timeout, stop_http, peers).await;
    Ok(ExitCode::SUCCESS)
}

/// Takes the open-file limit up to what the system allows for this user: every terminal,
/// sandbox, proxied connection and client holds descriptors, and the default soft limit
/// (1024) is what a busy host reaches first.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit write and read the one struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                tracing::debug!("the open-file limit stays at its soft value");
            }
        }
    }
}

/// Tells `drydock hook` where this server takes hook events; without it agents' hooks do not
/// reach drydock, and everything else works.
fn publish_local_endpoint(config: &Config, address: SocketAddr) -> Option<LocalEndpoint> {
    let endpoint = LocalEndpoint::new(address);
    match endpoint.publish(&config.data_dir) {
        Ok(()) => Some(endpoint),
        Err(error) => {
            tracing::warn!(
                "hook events will not reach drydock: cannot write {}: {error}",
                LocalEndpoint::path(&config.data_dir).display()
            );
            None
        }
    }
}

/// On SIGINT or SIGTERM: stop every tool and child process (calls in flight get their
/// cancelled results), then the HTTP server, then the process.
async fn stop_on_signal(
    app: Arc<App>,
    stop_http: CancellationToken,
    local_endpoint: Option<LocalEndpoint>,
    config: Arc<Config>,
) {
    wait_for_signal().await;
    if let Some(endpoint) = local_endpoint {
        endpoint.withdraw(&config.data_dir);
    }
    tracing::info!("shutting down: stopping running tools");
    app.shutdown().await;
    stop_http.cancel();
    // Streams that do not close by themselves must not keep the process alive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    std::process::exit(0);
}

fn banner(config: &Config, address: SocketAddr, login: &Login) -> String {
    let url = format!("http://{address}/mcp");
    let dashboard = login.url(&format!("http://{address}"));
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
         dashboard: {dashboard}\n\
         {config_note}allowed project roots: {roots}{roots_note}\n\
         {docs_note}\
         \n\
         Add it to Claude Code:\n  claude mcp add --transport http drydock {url}{header_flag}\n\
         or to a project's .mcp.json:\n  {{\"mcpServers\": {{\"drydock\": {{\"type\": \"http\", \"url\": \"{url}\"{header_json}}}}}}}\n",
        version = env!("CARGO_PKG_VERSION"),
        roots = roots.join(", "),
    )
}
