//! `drydock sandbox-run`: what bubblewrap starts inside a task's sandbox. It serves the
//! loopback ports that lead out (drydock, the allowed hosts) and runs the agent. It reads no
//! config and touches no data dir: it only parses its flags (see `crate::sandbox::inside`).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Args;

use crate::sandbox::inside::{self, InsideSpec, Relay, Tunnel};

#[derive(Args, Clone)]
pub(super) struct SandboxRunArgs {
    /// Serve 127.0.0.1:PORT, each connection carried to the unix socket SOCKET; repeatable.
    #[arg(long = "relay", value_name = "PORT=SOCKET")]
    relays: Vec<Relay>,
    /// Serve 127.0.0.1:PORT, each connection a CONNECT tunnel to HOST:PORT through the HTTP
    /// proxy at the unix socket SOCKET; repeatable.
    #[arg(long = "tunnel", value_name = "PORT=SOCKET=HOST:PORT")]
    tunnels: Vec<Tunnel>,
    /// The program to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

pub(super) fn run(args: SandboxRunArgs) -> ExitCode {
    inside::run(InsideSpec {
        relays: args.relays,
        tunnels: args.tunnels,
        argv: args.argv,
    })
}
