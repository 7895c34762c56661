//! Plain HTTP through the proxy, request by request: a connection to an allowed origin carries
//! requests for that origin alone. Every request's `Host` (and its absolute-form target, as a
//! client sends its proxy) must name the origin the connection was opened to; one that names
//! another site gets a 403 and never reaches the origin, however many came before it on the
//! same kept-alive connection.
//!
//! A keyed origin's connection (see [`super::keyed`]) is the proxy's own: every request on it
//! goes to that origin whatever it names, its `Host` set and its placeholders filled.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::NetGateError;
use super::keyed::KeyedOrigin;

type Body = BoxBody<Bytes, hyper::Error>;

/// Whom the requests on a connection go to.
#[derive(Clone)]
pub(super) enum Origin {
    /// `host:port`: each request must name it.
    Named(String, u16),
    /// A keyed origin: each request goes there, filled.
    Keyed(KeyedOrigin),
}

/// Serves the HTTP requests of `client` (whose first bytes, already read, are `prefix`) to
/// `origin` over `upstream`.
pub(super) async fn serve<S, U>(client: S, prefix: Vec<u8>, upstream: U, origin: Origin)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    U: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(error) => {
                tracing::debug!(%error, "net gate: origin handshake failed");
                return;
            }
        };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let sender = std::sync::Arc::new(tokio::sync::Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (sender, origin) = (sender.clone(), origin.clone());
        async move { Ok::<_, Infallible>(forward(request, &sender, &origin).await) }
    });
    let client = Prefixed {
        prefix,
        read: 0,
        inner: client,
    };
    let served = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(client), service)
        .await;
    if let Err(error) = served {
        tracing::debug!(%error, "net gate: HTTP connection ended");
    }
}

async fn forward(
    mut request: Request<Incoming>,
    sender: &tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Incoming>>,
    origin: &Origin,
) -> Response<Body> {
    let checked = match origin {
        Origin::Named(host, port) => for_origin(&request, host, *port),
        Origin::Keyed(keyed) => keyed.fill(request.headers_mut()),
    };
    if let Err(why) = checked {
        return refusal(StatusCode::FORBIDDEN, &why.to_string());
    }
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    *request.uri_mut() = match path.parse() {
        Ok(uri) => uri,
        Err(_) => return refusal(StatusCode::BAD_REQUEST, "a target that is not a path"),
    };
    for name in ["proxy-authorization", "proxy-connection"] {
        request.headers_mut().remove(name);
    }
    let mut sender = sender.lock().await;
    if sender.ready().await.is_err() {
        return refusal(StatusCode::BAD_GATEWAY, "the origin closed the connection");
    }
    match sender.send_request(request).await {
        Ok(response) => response.map(BodyExt::boxed),
        Err(error) => refusal(StatusCode::BAD_GATEWAY, &format!("the origin: {error}")),
    }
}

/// Whether `request` names the origin `host:port`: its `Host`, and its target's authority when
/// it is in absolute form. A port is optional where it is HTTP's default.
pub(super) fn for_origin<B>(
    request: &Request<B>,
    host: &str,
    port: u16,
) -> Result<(), NetGateError> {
    let names = |authority: &str| names_origin(authority, host, port);
    let stated = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    match stated {
        Some(stated) if names(stated) => {}
        Some(stated) => {
            return Err(NetGateError::OtherHost {
                stated: stated.into(),
                origin: super::authority(host, port),
            });
        }
        None => return Err(NetGateError::NoHost),
    }
    match request.uri().authority() {
        Some(authority) if !names(authority.as_str()) => Err(NetGateError::OtherTarget {
            target: authority.to_string(),
            origin: super::authority(host, port),
        }),
        _ => Ok(()),
    }
}

/// Whether `authority` (`name[:port]`, `[v6][:port]`) names `host:port`.
fn names_origin(authority: &str, host: &str, port: u16) -> bool {
    let (named, named_port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, "")) => (ip, None),
            Some((ip, tail)) => match tail.strip_prefix(':') {
                Some(port) => (ip, Some(port)),
                None => return false,
            },
            None => return false,
        },
        None => match authority.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        },
    };
    let same_host = named
        .trim_end_matches('.')
        .eq_ignore_ascii_case(host.trim_end_matches('.'));
    let same_port = match named_port {
        None => port == 80,
        Some(text) => text.parse::<u16>().ok() == Some(port),
    };
    same_host && same_port
}

fn refusal(status: StatusCode, why: &str) -> Response<Body> {
    let body = format!("drydock's sandbox proxy: {why}\n");
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A stream whose first bytes were read already: they are read again first.
struct Prefixed<S> {
    prefix: Vec<u8>,
    read: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.read < self.prefix.len() {
            let rest = &self.prefix[self.read..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.read += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authority_names_its_origin_with_or_without_the_default_port() {
        assert!(names_origin("api.example.com", "api.example.com", 80));
        assert!(names_origin("API.example.com.:80", "api.example.com", 80));
        assert!(names_origin("127.0.0.1:8080", "127.0.0.1", 8080));
        assert!(names_origin("[::1]:8080", "::1", 8080));
        assert!(!names_origin("127.0.0.1", "127.0.0.1", 8080));
        assert!(!names_origin("evil.example:8080", "127.0.0.1", 8080));
        assert!(!names_origin(
            "api.example.com.evil:80",
            "api.example.com",
            80
        ));
        assert!(!names_origin("[::1]x", "::1", 80));
    }
}
