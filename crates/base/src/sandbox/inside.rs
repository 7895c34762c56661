//! What runs inside the sandbox (`drydock sandbox-run`): it listens on loopback ports and
//! carries each connection to a unix socket bound in from outside, then runs the agent as its
//! child and exits as the child did. Plain threads and blocking sockets, no runtime: it
//! starts in a few milliseconds and stays out of the agent's way.
//!
//! It writes nothing to the terminal once the child runs (the terminal is the agent's): a
//! connection that cannot be carried is closed, and the client sees that.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::net_gate::{HEAD_DEADLINE, MAX_HEAD, authority, head_end};

mod signals;

/// The exit code when a port cannot be listened on (the child is not run).
pub const EXIT_CANNOT_LISTEN: u8 = 125;
/// The exit code when the child cannot be run, as env(1) has it.
pub const EXIT_CANNOT_RUN: u8 = 127;

/// What `drydock sandbox-run` does: the ports it serves, then the program it runs.
#[derive(Debug, Clone, Default)]
pub struct InsideSpec {
    pub relays: Vec<Relay>,
    pub tunnels: Vec<Tunnel>,
    /// The program and its arguments; it inherits the environment and working directory.
    pub argv: Vec<OsString>,
}

/// Loopback `port` carried to the unix socket `socket` as it is: `PORT=SOCKET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    pub port: u16,
    pub socket: PathBuf,
}

/// Loopback `port` carried through the HTTP proxy at `socket` to `host:target_port`, with
/// `CONNECT`: `PORT=SOCKET=HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub port: u16,
    pub socket: PathBuf,
    /// A name or an IP address, an IPv6 address without brackets.
    pub host: String,
    pub target_port: u16,
}

/// Why a `--relay` or `--tunnel` flag was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("`{0}`: expected PORT=SOCKET")]
    NotARelay(String),
    #[error("`{0}`: expected PORT=SOCKET=HOST:PORT")]
    NotATunnel(String),
    #[error("`{0}`: IPv6 goes in brackets")]
    Unbracketed(String),
    #[error("`{text}`: `{host}` is not a host name or address")]
    NotAHost { text: String, host: String },
    #[error("`{0}` is not a port (0 to 65535)")]
    NotAPort(String),
    #[error("the socket path is empty")]
    NoSocket,
}

impl FromStr for Relay {
    type Err = FlagError;

    fn from_str(text: &str) -> Result<Relay, FlagError> {
        let (port, socket) = text
            .split_once('=')
            .ok_or_else(|| FlagError::NotARelay(text.into()))?;
        Ok(Relay {
            port: parse_port(port)?,
            socket: parse_socket(socket)?,
        })
    }
}

impl FromStr for Tunnel {
    type Err = FlagError;

    fn from_str(text: &str) -> Result<Tunnel, FlagError> {
        let expected = || FlagError::NotATunnel(text.into());
        let (port, rest) = text.split_once('=').ok_or_else(expected)?;
        let (socket, target) = rest.rsplit_once('=').ok_or_else(expected)?;
        let (host, target_port) = target.rsplit_once(':').ok_or_else(expected)?;
        let host = match host.strip_prefix('[') {
            Some(bracketed) => bracketed.strip_suffix(']').ok_or_else(expected)?,
            None if host.contains(':') => return Err(FlagError::Unbracketed(text.into())),
            None => host,
        };
        let host_ok = |b: u8| b.is_ascii_alphanumeric() || b".-_:".contains(&b);
        if host.is_empty() || !host.bytes().all(host_ok) {
            return Err(FlagError::NotAHost {
                text: text.into(),
                host: host.into(),
            });
        }
        Ok(Tunnel {
            port: parse_port(port)?,
            socket: parse_socket(socket)?,
            host: host.to_string(),
            target_port: parse_port(target_port)?,
        })
    }
}

impl Tunnel {
    /// `host:port` as the CONNECT request names it.
    fn authority(&self) -> String {
        authority(&self.host, self.target_port)
    }
}

fn parse_port(text: &str) -> Result<u16, FlagError> {
    text.parse().map_err(|_| FlagError::NotAPort(text.into()))
}

fn parse_socket(text: &str) -> Result<PathBuf, FlagError> {
    match text {
        "" => Err(FlagError::NoSocket),
        path => Ok(PathBuf::from(path)),
    }
}

/// Serves the ports, runs the child, and exits as it did: its exit code, 128 + the signal
/// that killed it, [`EXIT_CANNOT_LISTEN`] or [`EXIT_CANNOT_RUN`].
pub fn run(spec: InsideSpec) -> ExitCode {
    ExitCode::from(exit_code(&spec))
}

fn exit_code(spec: &InsideSpec) -> u8 {
    let _forwards = match Forwards::start(spec) {
        Ok(forwards) => forwards,
        Err(error) => {
            eprintln!("drydock sandbox-run: {error}");
            return EXIT_CANNOT_LISTEN;
        }
    };
    run_child(&spec.argv)
}

fn run_child(argv: &[OsString]) -> u8 {
    let Some((program, args)) = argv.split_first() else {
        eprintln!("drydock sandbox-run: no program to run");
        return EXIT_CANNOT_RUN;
    };
    let forwarding = signals::Forwarding::install();
    let child = match Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!(
                "drydock sandbox-run: cannot run {}: {error}",
                program.to_string_lossy()
            );
            return EXIT_CANNOT_RUN;
        }
    };
    let status = forwarding.wait(child);
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => 1,
    }
}

/// A loopback port that could not be listened on.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on 127.0.0.1:{port}: {source}")]
pub struct ListenError {
    port: u16,
    source: io::Error,
}

/// Where a port's connections go.
enum Route {
    Relay(PathBuf),
    Tunnel { socket: PathBuf, authority: String },
}

/// The ports being served, each by a thread that lives as long as the process.
#[derive(Debug)]
pub struct Forwards {
    addrs: Vec<SocketAddr>,
}

impl Forwards {
    /// Listens on every port of `spec` (all of them, or none is served), then serves them.
    pub fn start(spec: &InsideSpec) -> Result<Forwards, ListenError> {
        let relays = spec
            .relays
            .iter()
            .map(|r| (r.port, Route::Relay(r.socket.clone())));
        let tunnels = spec.tunnels.iter().map(|t| {
            let route = Route::Tunnel {
                socket: t.socket.clone(),
                authority: t.authority(),
            };
            (t.port, route)
        });
        let bound = relays
            .chain(tunnels)
            .map(
                |(port, route)| match TcpListener::bind(("127.0.0.1", port)) {
                    Ok(listener) => Ok((listener, route)),
                    Err(source) => Err(ListenError { port, source }),
                },
            )
            .collect::<Result<Vec<_>, _>>()?;
        let mut addrs = Vec::with_capacity(bound.len());
        for (listener, route) in bound {
            addrs.push(
                listener
                    .local_addr()
                    .map_err(|source| ListenError { port: 0, source })?,
            );
            let route = Arc::new(route);
            std::thread::spawn(move || accept_loop(listener, route));
        }
        Ok(Forwards { addrs })
    }

    /// The addresses listened on: the relays', then the tunnels', in the spec's order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }
}

fn accept_loop(listener: TcpListener, route: Arc<Route>) {
    loop {
        match listener.accept() {
            Ok((client, _)) => {
                let route = route.clone();
                std::thread::spawn(move || {
                    if let Err(error) = carry(client, &route) {
                        tracing::debug!(%error, "sandbox-run: connection closed");
                    }
                });
            }
            // Out of file descriptors, most likely: give the connections time to end.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Carries one client connection to its route; an error drops (closes) the client.
fn carry(client: TcpStream, route: &Route) -> io::Result<()> {
    let (upstream, early) = match route {
        Route::Relay(socket) => (UnixStream::connect(socket)?, Vec::new()),
        Route::Tunnel { socket, authority } => open_tunnel(socket, authority)?,
    };
    (&client).write_all(&early)?;
    splice(client, upstream)
}

/// Asks the proxy at `socket` for a tunnel to `authority`: the stream, and whatever the
/// destination already sent after the proxy's answer.
fn open_tunnel(socket: &PathBuf, authority: &str) -> io::Result<(UnixStream, Vec<u8>)> {
    let mut proxy = UnixStream::connect(socket)?;
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    proxy.write_all(request.as_bytes())?;
    let (head, early) = read_response_head(&mut proxy)?;
    proxy.set_read_timeout(None)?;
    if !is_success(&head) {
        let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        return Err(io::Error::other(format!("the proxy answered {line}")));
    }
    Ok((proxy, early))
}

fn read_response_head(proxy: &mut UnixStream) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        proxy.set_read_timeout(Some(left))?;
        let n = proxy.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let searched = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        match head_end(&buffer, searched) {
            Some(end) if end <= MAX_HEAD => {
                let early = buffer.split_off(end);
                return Ok((buffer, early));
            }
            None if buffer.len() < MAX_HEAD => {}
            _ => return Err(io::Error::other("the proxy's answer is over 16 KiB")),
        }
    }
}

/// Whether a response head's status is 2xx.
fn is_success(head: &[u8]) -> bool {
    let mut words = head.split(|&b| b == b' ');
    let version = words.next().unwrap_or_default();
    let status = words.next().unwrap_or_default();
    version.starts_with(b"HTTP/1.")
        && status.len() == 3
        && status[0] == b'2'
        && status.iter().all(u8::is_ascii_digit)
}

/// A socket that can be half-closed.
trait Stream: Read + Write + Send {
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

impl Stream for TcpStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        TcpStream::shutdown(self, how)
    }
}

impl Stream for UnixStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        UnixStream::shutdown(self, how)
    }
}

/// Copies both ways, a thread each, until both sides are done.
fn splice(client: TcpStream, upstream: UnixStream) -> io::Result<()> {
    let (client_in, upstream_out) = (client.try_clone()?, upstream.try_clone()?);
    let upward = std::thread::spawn(move || pump(client_in, upstream_out));
    pump(upstream, client);
    let _ = upward.join();
    Ok(())
}

/// Copies `from` to `to`. At the end of `from`, `to` is half-closed so its reader sees the
/// end too (an HTTP client may wait for the answer with its sending side closed); on an
/// error both are closed, which ends the other direction as well.
fn pump(mut from: impl Stream, mut to: impl Stream) {
    match io::copy(&mut from, &mut to) {
        Ok(_) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests;
