//! The sandbox's only way to the network: an HTTP proxy on a unix socket outside the sandbox
//! that opens connections to the allowed destinations alone. It speaks the two forms clients
//! use with a proxy: `CONNECT host:port` (HTTPS and any other TCP) and absolute-form requests
//! (`GET http://host/path`, plain HTTP). Everything else is answered with an error, and a
//! refused destination never gets a connection, not even a DNS lookup.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

mod client_hello;
mod keyed;
mod relay;

use client_hello::Opening;
pub use keyed::{KeyedOrigin, public_tls, tls_with_roots};
use relay::Origin;

/// Why an entry of an allow list was refused, or a request or origin was not relayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetGateError {
    #[error("allowed host `{entry}`: {why}")]
    Entry { entry: String, why: EntryError },
    #[error("Host {stated:?} is not {origin}: this connection reaches that origin alone")]
    OtherHost { stated: String, origin: String },
    #[error("{target} is not {origin}: this connection reaches that origin alone")]
    OtherTarget { target: String, origin: String },
    #[error("a request without Host")]
    NoHost,
    #[error("{0}")]
    HostValue(String),
    #[error("the key drydock holds for this API is no header value")]
    KeyNotAHeaderValue,
    #[error("{host} is no server name: {why}")]
    ServerName { host: String, why: String },
    #[error("TLS with {host}: {why}")]
    Tls { host: String, why: String },
}

/// What is wrong with one allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("no port: write host:port, e.g. api.example.com:443")]
    NoPort,
    #[error("`{0}` is not a port (1 to 65535)")]
    NotAPort(String),
    #[error("a wildcard stands for DNS names, not IP addresses")]
    WildcardIp,
    #[error("`*.{0}` is too broad: a wildcard needs a domain of two labels or more")]
    TooBroad(String),
    #[error("an IPv6 address in brackets needs its closing `]`")]
    Unclosed,
    #[error("`{0}` in brackets is not an IPv6 address")]
    NotIpv6(String),
    #[error("`{0}` after `]`: expected `:port`")]
    AfterBracket(String),
    #[error("an IPv6 address goes in brackets: [::1]:443")]
    Unbracketed,
    #[error("`*` may only be a whole first label: *.example.com:443")]
    Star,
    #[error("`{0}` is neither an IP address nor a host name")]
    NotAHost(String),
}

/// The most a request head may take, request line and headers.
pub(super) const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
pub(super) const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// How long the connection to an allowed destination may take, its name lookup included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long, and for how many bytes, a connection answered with an error is read before it is
/// closed.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: u64 = 64 * 1024;

/// How many connections one sandbox may have open through its proxy at once; one more is
/// answered 503 and closed.
const MOST_CONNECTIONS: usize = 64;

/// The destinations the sandbox may reach: `host:port` each, the host an IP address, a DNS
/// name, or `*.domain` for any name under the domain (not the domain itself). A name is
/// connected to the public addresses it resolves to alone (see [`is_public`]) unless
/// [`AllowList::with_private_names`]: a name is no way to loopback or the local network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Destination>,
    private_names: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Destination {
    host: Host,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    /// Lowercase, without a trailing dot.
    Name(String),
    /// The domain under `*.`, lowercase.
    AnySubdomainOf(String),
}

impl AllowList {
    pub fn parse(entries: &[String]) -> Result<AllowList, NetGateError> {
        let entries = entries
            .iter()
            .map(|entry| {
                parse_destination(entry).map_err(|why| NetGateError::Entry {
                    entry: entry.clone(),
                    why,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowList {
            entries,
            private_names: false,
        })
    }

    /// Names may also be connected to loopback and private addresses (a model gateway on
    /// the local network, `[tasks] sandbox_private_names`).
    pub fn with_private_names(mut self, allowed: bool) -> AllowList {
        self.private_names = allowed;
        self
    }

    /// Whether `host:port` may be reached. `host` as a request names it: a name (any case,
    /// with or without a trailing dot) or an IP address (IPv6 with or without brackets).
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let Ok(host) = parse_host(
            host.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host),
        ) else {
            return false;
        };
        self.entries
            .iter()
            .any(|entry| entry.port == port && entry.host.covers(&host))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{entry}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}:{}", self.port),
            Host::Name(name) => write!(f, "{name}:{}", self.port),
            Host::AnySubdomainOf(domain) => write!(f, "*.{domain}:{}", self.port),
        }
    }
}

impl Host {
    fn covers(&self, requested: &Host) -> bool {
        match (self, requested) {
            (Host::Ip(allowed), Host::Ip(ip)) => allowed == ip,
            (Host::Name(allowed), Host::Name(name)) => allowed == name,
            (Host::AnySubdomainOf(domain), Host::Name(name)) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|label| label.len() > 1 && label.ends_with('.')),
            _ => false,
        }
    }
}

fn parse_destination(text: &str) -> Result<Destination, EntryError> {
    let (host, port) = split_host_port(text)?;
    let port = port.ok_or(EntryError::NoPort)?;
    let port = parse_port(port)?;
    let host = match host.strip_prefix("*.") {
        Some(domain) => {
            let Host::Name(domain) = parse_host(domain)? else {
                return Err(EntryError::WildcardIp);
            };
            if !domain.contains('.') {
                return Err(EntryError::TooBroad(domain));
            }
            Host::AnySubdomainOf(domain)
        }
        None => parse_host(host)?,
    };
    Ok(Destination { host, port })
}

/// `host:port`, `[v6]:port`, or either without the port. IPv6 hosts come back unbracketed.
fn split_host_port(text: &str) -> Result<(&str, Option<&str>), EntryError> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or(EntryError::Unclosed)?;
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(EntryError::NotIpv6(host.into()));
        }
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(EntryError::AfterBracket(after.into())),
            },
        };
    }
    match text.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Err(EntryError::Unbracketed),
        Some((host, port)) => Ok((host, Some(port))),
        None => Ok((text, None)),
    }
}

fn parse_port(text: &str) -> Result<u16, EntryError> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(port),
        _ => Err(EntryError::NotAPort(text.into())),
    }
}

/// An IP address or a DNS name (letters, digits and `-` in dot-separated labels).
fn parse_host(text: &str) -> Result<Host, EntryError> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if name.contains('*') {
        return Err(EntryError::Star);
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    let labels: Vec<&str> = name.split('.').collect();
    if name.is_empty() || name.len() > 253 || !labels.iter().all(|label| label_ok(label)) {
        return Err(EntryError::NotAHost(text.into()));
    }
    // A name whose last label is a number is an IP address in a form `parse` does not take
    // (`127.1`, `0177.0.0.1`); the resolver might still read it as one.
    if labels
        .last()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(EntryError::NotAHost(text.into()));
    }
    Ok(Host::Name(name))
}

/// Serves the proxy on `listener` until `stop`, each connection on its own task; `stop` also
/// ends the connections. `refused` is told every destination turned away (`host:port`). The
/// socket file is the caller's to remove.
///
/// A plain-HTTP request's connection stays with its origin after the answer: a client that
/// sends its next request there for another host only reaches the same allowed origin.
/// Plain HTTP to one of `keyed` (an allowed destination too) is spoken on by the proxy itself,
/// with the origin's keys (see [`KeyedOrigin`]).
pub fn serve(
    listener: UnixListener,
    allow: Arc<AllowList>,
    keyed: Arc<[KeyedOrigin]>,
    refused: Arc<dyn Fn(&str) + Send + Sync>,
    stop: CancellationToken,
) -> BoxFuture<'static, ()> {
    async move {
        let open = Arc::new(tokio::sync::Semaphore::new(MOST_CONNECTIONS));
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((mut client, _)) => {
                    let (allow, keyed, refused, stop) =
                        (allow.clone(), keyed.clone(), refused.clone(), stop.clone());
                    let Ok(slot) = open.clone().try_acquire_owned() else {
                        let body = format!(
                            "drydock's sandbox proxy has {MOST_CONNECTIONS} connections of this sandbox open already\n"
                        );
                        tokio::spawn(async move {
                            reply(&mut client, 503, "Service Unavailable", &body).await;
                        });
                        continue;
                    };
                    tokio::spawn(async move {
                        stop.run_until_cancelled(handle(client, &allow, &keyed, &*refused))
                            .await;
                        drop(slot);
                    });
                }
                Err(error) => {
                    tracing::debug!(%error, "net gate: accept failed");
                    // Out of file descriptors, most likely: give the connections time to end.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
}
    .boxed()
}

/// What a client asked the proxy for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: String, port: u16 },
    /// `METHOD http://host[:port]/path`: a request for an origin (its head is sent on in
    /// origin form by [`relay`]).
    Forward { host: String, port: u16 },
}

impl Request {
    fn host_port(&self) -> (&str, u16) {
        match self {
            Request::Connect { host, port } | Request::Forward { host, port } => (host, *port),
        }
    }

    fn destination(&self) -> String {
        let (host, port) = self.host_port();
        authority(host, port)
    }
}

/// `host:port`, an IPv6 host in brackets.
pub fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

async fn handle(
    mut client: UnixStream,
    allow: &AllowList,
    keyed: &[KeyedOrigin],
    refused: &(dyn Fn(&str) + Send + Sync),
) {
    let (head, early) = match tokio::time::timeout(HEAD_DEADLINE, read_head(&mut client)).await {
        Ok(Ok(Some(read))) => read,
        Ok(Ok(None)) => {
            return reply(
                &mut client,
                431,
                "Request Header Fields Too Large",
                "request head over 16 KiB\n",
            )
            .await;
        }
        Ok(Err(_)) => return,
        Err(_) => {
            return reply(
                &mut client,
                408,
                "Request Timeout",
                "no complete request head within 10 s\n",
            )
            .await;
        }
    };
    let Some(request) = parse_request(&head) else {
        return reply(
            &mut client,
            400,
            "Bad Request",
            "drydock's sandbox proxy takes CONNECT host:port or an absolute http:// request\n",
        )
        .await;
    };
    let destination = request.destination();
    let (host, port) = request.host_port();
    if !allow.allows(host, port) {
        tracing::debug!(%destination, "net gate: refused");
        refused(&destination);
        let body = format!(
            "drydock: {destination} is not reachable from this sandbox: drydock's sandbox allows \
             only the hosts listed for it ({allow})\n"
        );
        return reply(&mut client, 403, "Forbidden", &body).await;
    }
    tracing::debug!(%destination, "net gate: connecting");
    let upstream = match connect(host, port, allow.private_names).await {
        Ok(upstream) => upstream,
        Err(Unreachable::Private(why)) => {
            refused(&destination);
            let body =
                format!("drydock: {destination} is not reachable from this sandbox: {why}\n");
            return reply(&mut client, 403, "Forbidden", &body).await;
        }
        Err(Unreachable::Failed(why)) => {
            let body = format!("drydock's sandbox proxy could not reach {destination}: {why}\n");
            return reply(&mut client, 502, "Bad Gateway", &body).await;
        }
    };
    let keyed = keyed.iter().find(|k| k.is(host, port));
    let (host, port) = (host.to_string(), port);
    match request {
        Request::Connect { .. } => {
            let established = b"HTTP/1.1 200 Connection Established\r\n\r\n";
            if client.write_all(established).await.is_ok() {
                tunnel(client, upstream, &host, port, keyed, early, refused).await;
            }
        }
        // The client speaks to its proxy: each of its requests is checked, the first too.
        Request::Forward { .. } => {
            let mut prefix = head;
            prefix.extend_from_slice(&early);
            relay_http(client, prefix, upstream, &host, port, keyed).await;
        }
    }
}

/// Plain HTTP from `client` to `host:port`, request by request; a keyed origin's spoken on
/// by the proxy, in TLS where the origin speaks it.
async fn relay_http(
    client: UnixStream,
    prefix: Vec<u8>,
    upstream: TcpStream,
    host: &str,
    port: u16,
    keyed: Option<&KeyedOrigin>,
) {
    let Some(keyed) = keyed else {
        return relay::serve(client, prefix, upstream, Origin::Named(host.into(), port)).await;
    };
    let origin = Origin::Keyed(keyed.clone());
    let Some(tls) = keyed.tls.clone() else {
        return relay::serve(client, prefix, upstream, origin).await;
    };
    match keyed::tls_to(keyed, tls, upstream).await {
        Ok(upstream) => relay::serve(client, prefix, upstream, origin).await,
        Err(why) => {
            tracing::warn!("the sandbox proxy could not reach {host}:{port}: {why}");
            let mut client = client;
            let body = format!("drydock's sandbox proxy could not reach {host}:{port}: {why}\n");
            reply(&mut client, 502, "Bad Gateway", &body).await;
        }
    }
}

/// A tunnel to `host:port` once its client's first bytes say what it carries: a TLS
/// handshake goes on when it asks for `host` by name, HTTP request by request (see
/// [`relay`]), another protocol as it is (as does one whose server speaks first).
async fn tunnel(
    mut client: UnixStream,
    mut upstream: TcpStream,
    host: &str,
    port: u16,
    keyed: Option<&KeyedOrigin>,
    early: Vec<u8>,
    refused: &(dyn Fn(&str) + Send + Sync),
) {
    let destination = authority(host, port);
    let mut first = early;
    let opening = loop {
        let opening = match first.is_empty() {
            true => None,
            false => Some(client_hello::opening(&first)),
        };
        if !matches!(opening, None | Some(Opening::TlsIncomplete)) {
            break opening;
        }
        let mut chunk = [0u8; 4096];
        let read = tokio::select! {
            read = tokio::time::timeout(HEAD_DEADLINE, client.read(&mut chunk)) => read,
            // A protocol whose server speaks first carries no name of the client's.
            _ = upstream.readable(), if first.is_empty() => break None,
        };
        match read {
            Ok(Ok(n)) if n > 0 => first.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    };
    let by_name = host.parse::<IpAddr>().is_err();
    let same_name = |name: &str| {
        name.trim_end_matches('.')
            .eq_ignore_ascii_case(host.trim_end_matches('.'))
    };
    let refusal = match &opening {
        Some(Opening::Tls(Some(name))) if by_name && !same_name(name) => {
            Some(format!("its TLS server name {name:?}"))
        }
        Some(Opening::Tls(Some(name))) if !by_name => Some(format!(
            "its TLS server name {name:?} on a tunnel to an address"
        )),
        Some(Opening::Tls(None)) if by_name => Some("a TLS handshake that names no server".into()),
        Some(Opening::TlsUnreadable) => Some("a TLS handshake that does not read".to_string()),
        _ => None,
    };
    if let Some(refusal) = refusal {
        tracing::debug!(%destination, %refusal, "net gate: refused in the tunnel");
        refused(&format!("{destination} ({refusal})"));
        return;
    }
    if opening == Some(Opening::Http) {
        return relay_http(client, first, upstream, host, port, keyed).await;
    }
    if upstream.write_all(&first).await.is_ok()
        && let Err(error) = tokio::io::copy_bidirectional(&mut client, &mut upstream).await
    {
        tracing::debug!(%destination, %error, "net gate: connection ended");
    }
}

/// Why an allowed destination was not connected.
enum Unreachable {
    /// A name that resolves to loopback or private addresses alone.
    Private(String),
    Failed(String),
}

/// A connection to `host:port`; a name to its public addresses alone unless `private_names`.
async fn connect(host: &str, port: u16, private_names: bool) -> Result<TcpStream, Unreachable> {
    let attempt = async {
        let literal = host.parse::<IpAddr>().is_ok();
        let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| Unreachable::Failed(e.to_string()))?
            .collect();
        let usable: Vec<_> = resolved
            .iter()
            .copied()
            .filter(|address| literal || private_names || is_public(address.ip()))
            .collect();
        if usable.is_empty() {
            let shown: Vec<String> = resolved.iter().map(|a| a.ip().to_string()).collect();
            return Err(Unreachable::Private(format!(
                "{host} resolves to loopback or private addresses only ({}); name its address, or set [tasks] sandbox_private_names",
                shown.join(", ")
            )));
        }
        TcpStream::connect(&usable[..])
            .await
            .map_err(|e| Unreachable::Failed(e.to_string()))
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(connected) => connected,
        Err(_) => Err(Unreachable::Failed(format!(
            "no connection within {} s",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

/// An address of the internet: not loopback, private, link-local, shared (carrier NAT),
/// unique-local, unspecified, multicast or broadcast, nor an IPv4-mapped one of those.
pub(super) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80)
            }
        },
    }
}

/// The request head (through its blank line) and whatever the client sent after it; None
/// when the head is over [`MAX_HEAD`].
async fn read_head(client: &mut UnixStream) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let searched = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        match head_end(&buffer, searched) {
            Some(end) if end <= MAX_HEAD => {
                let early = buffer.split_off(end);
                return Ok(Some((buffer, early)));
            }
            Some(_) => return Ok(None),
            None if buffer.len() >= MAX_HEAD => return Ok(None),
            None => {}
        }
    }
}

/// Where the head in `buffer` ends (after its `\r\n\r\n`), looking from `from` on.
pub(super) fn head_end(buffer: &[u8], from: usize) -> Option<usize> {
    buffer[from..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| from + at + 4)
}

fn parse_request(head: &[u8]) -> Option<Request> {
    let line_end = head.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&head[..line_end]).ok()?;
    // The destination is shown to people: no control characters (escapes), no non-ASCII.
    if !line.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return None;
    }
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return None;
    }
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) || method.is_empty() {
        return None;
    }
    if method == "CONNECT" {
        let (host, port) = split_host_port(target).ok()?;
        let port = parse_port(port?).ok()?;
        return Some(Request::Connect {
            host: host.to_string(),
            port,
        });
    }
    let scheme = target.get(..7)?;
    if !scheme.eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &target[7..];
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.contains('@') || path.starts_with('#') {
        return None;
    }
    let (host, port) = split_host_port(authority).ok()?;
    let port = match port {
        None | Some("") => 80,
        Some(port) => parse_port(port).ok()?,
    };
    if host.is_empty() {
        return None;
    }
    Some(Request::Forward {
        host: host.to_string(),
        port,
    })
}

async fn reply(client: &mut UnixStream, status: u16, reason: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes()).await;
    let _ = client.shutdown().await;
    // Closing with unread input would reset the connection, and the client could lose the
    // answer before reading it: read on a little while the client has not closed.
    let (mut unread, mut sink) = (client.take(LINGER_BYTES), tokio::io::sink());
    let _ = tokio::time::timeout(LINGER, tokio::io::copy(&mut unread, &mut sink)).await;
}

#[cfg(test)]
mod tests;
