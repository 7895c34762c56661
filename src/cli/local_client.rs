//! The one HTTP client drydock's local commands need: a request to the running server's
//! loopback endpoint, bounded in time at every step, with its bearer token.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde_json::Value;

use super::Failure;
use crate::config::Config;
use crate::local_endpoint::LocalEndpoint;

const CONNECT: Duration = Duration::from_millis(300);
const MAX_RESPONSE: u64 = 4 * 1024 * 1024;

/// `method url` with `body` (JSON); the status and body of the response, None when the server
/// cannot be reached or does not answer within `wait`.
pub(super) fn request(
    endpoint: &LocalEndpoint,
    method: &str,
    url: &str,
    body: Option<&str>,
    wait: Duration,
) -> Option<(u16, String)> {
    let (host, path, mut stream) = match endpoint.socket() {
        Some(socket) => {
            let path = url
                .strip_prefix(endpoint.base.as_str())?
                .strip_prefix('/')?;
            let stream = UnixStream::connect(socket).ok()?;
            stream.set_write_timeout(Some(CONNECT)).ok()?;
            stream.set_read_timeout(Some(wait)).ok()?;
            ("drydock", path, Box::new(stream) as Box<dyn Duplex>)
        }
        None => {
            let rest = url.strip_prefix("http://")?;
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let address: SocketAddr = host.parse().ok()?;
            let stream = TcpStream::connect_timeout(&address, CONNECT).ok()?;
            stream.set_write_timeout(Some(CONNECT)).ok()?;
            stream.set_read_timeout(Some(wait)).ok()?;
            (host, path, Box::new(stream) as Box<dyn Duplex>)
        }
    };
    let body = body.unwrap_or("");
    let request = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{body}",
        token = endpoint.token,
        length = body.len(),
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.take(MAX_RESPONSE).read_to_end(&mut response).ok()?;
    let response = String::from_utf8(response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.split(' ').nth(1)?.parse().ok()?;
    let chunked = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = match chunked {
        true => dechunk(body)?,
        false => body.to_string(),
    };
    Some((status, body))
}

/// The server's TCP port, or a sandbox's socket.
trait Duplex: Read + Write {}
impl<T: Read + Write> Duplex for T {}

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

/// The running server's local endpoint (its socket, inside a task's sandbox), or why there
/// is none.
pub(super) fn endpoint(config: &Config) -> Result<LocalEndpoint, Failure> {
    if let Some(sandboxed) = LocalEndpoint::in_sandbox() {
        return Ok(sandboxed);
    }
    LocalEndpoint::read(&config.data_dir).ok_or_else(|| {
        Failure::Runtime(format!(
            "no drydock server is running for {} (start one with `drydock serve`, or name its --data-dir)",
            config.data_dir.display()
        ))
    })
}

/// `method url` with `body`, its JSON answer; a status other than 200 is the answer's
/// `error`.
pub(super) fn call(
    endpoint: &LocalEndpoint,
    method: &str,
    url: &str,
    body: Option<&str>,
    wait: Duration,
) -> Result<Value, Failure> {
    let unreachable = || {
        Failure::Runtime(format!(
            "the drydock server at {} (pid {}) does not answer",
            endpoint.base, endpoint.pid
        ))
    };
    let (status, text) = request(endpoint, method, url, body, wait).ok_or_else(unreachable)?;
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
