//! `drydock hook`: what an agent's hook runs. Relays the hook's input to the running server
//! and prints the server's answer for the agent, if it has one. It never slows or breaks the
//! agent: no config is read, and with no server (or a slow one) it exits 0 at once.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use crate::agents::hook_endpoint::HookEndpoint;
use crate::config::resolve_data_dir;

/// A hook's input is a JSON object of a few kB; a transcript is never inlined.
const MAX_INPUT: u64 = 4 * 1024 * 1024;
const CONNECT: Duration = Duration::from_millis(300);

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
    let data_dir = resolve_data_dir(args.data_dir.as_deref(), None, &env, &cwd);
    let endpoint = HookEndpoint::read(&data_dir)?;
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
    let response = post(&endpoint, &body, Duration::from_secs(args.wait_s))?;
    let answer: Value = serde_json::from_str(&response).ok()?;
    answer.get("output").filter(|o| !o.is_null()).cloned()
}

/// One HTTP/1.1 POST to the loopback endpoint; the response body on 200.
fn post(endpoint: &HookEndpoint, body: &str, wait: Duration) -> Option<String> {
    let rest = endpoint.url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let address: SocketAddr = host.parse().ok()?;
    let mut stream = TcpStream::connect_timeout(&address, CONNECT).ok()?;
    stream.set_write_timeout(Some(CONNECT)).ok()?;
    stream.set_read_timeout(Some(wait)).ok()?;
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{body}",
        token = endpoint.token,
        length = body.len(),
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.take(MAX_INPUT).read_to_end(&mut response).ok()?;
    let response = String::from_utf8(response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status_ok = head.lines().next()?.split(' ').nth(1) == Some("200");
    let chunked = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    match (status_ok, chunked) {
        (false, _) => None,
        (true, false) => Some(body.to_string()),
        (true, true) => dechunk(body),
    }
}

fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_joined() {
        assert_eq!(
            dechunk("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n").as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(dechunk("zz\r\n"), None);
    }
}
