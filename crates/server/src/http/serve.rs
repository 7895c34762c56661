//! The accept loop. `axum::serve` puts no time limit on reading a request, so a client that
//! sends half a request line and stalls held its connection forever (slow-loris). Here every
//! connection must deliver each request's headers within `header_read_timeout`; bodies are
//! held to `body_read_timeout` by the guards. Responses have no total time limit: a call's
//! event stream lasts as long as the call.

use std::io;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use futures::FutureExt;
use futures::future::BoxFuture;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::peer::Peers;

/// Serves `app` on `listener` until `shutdown`, then waits for open connections to finish
/// their responses. A connection `peers` does not serve gets a 403 for each request.
pub fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
    peers: Peers,
) -> BoxFuture<'static, ()> {
    serving(listener, app, header_read_timeout, shutdown, peers).boxed()
}

async fn serving(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
    peers: Peers,
) {
    let refused = refusing(peers.refusal());
    let accept = || async { listener.accept().await };
    serve_accepted(accept, &shutdown, |(stream, peer)| {
        // Event streams send small messages that must not wait for more to fill a packet.
        let _ = stream.set_nodelay(true);
        let served = stream
            .local_addr()
            .is_ok_and(|local| peers.serves(peer, local));
        let app = match served {
            true => app.clone(),
            false => {
                tracing::warn!("refused a connection from {peer}: its socket is another user's");
                refused.clone()
            }
        };
        serve_connection(stream, app, header_read_timeout, shutdown.clone())
    })
    .await;
}

/// Answers every request with a 403 that says why.
fn refusing(why: String) -> Router {
    Router::new().fallback(move || {
        let why = why.clone();
        async move { (StatusCode::FORBIDDEN, why) }
    })
}

/// Takes connections from `accept` until `shutdown`, each served by `serve` on a task of its
/// own, then waits for them to finish their responses.
pub(super) async fn serve_accepted<S, A, F>(
    accept: impl Fn() -> A,
    shutdown: &CancellationToken,
    serve: impl Fn(S) -> F,
) where
    A: Future<Output = io::Result<S>>,
    F: Future<Output = ()> + Send + 'static,
{
    let connections = TaskTracker::new();
    loop {
        let stream = tokio::select! {
            accepted = accept() => match accepted {
                Ok(stream) => stream,
                Err(error) => {
                    pause_after_accept_error(error).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        connections.spawn(serve(stream));
    }
    connections.close();
    connections.wait().await;
}

pub(super) async fn serve_connection(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    app: Router,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
) {
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app))
        .with_upgrades();
    tokio::pin!(connection);
    let mut shutting_down = false;
    let result = loop {
        tokio::select! {
            result = connection.as_mut() => break result,
            _ = shutdown.cancelled(), if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    };
    if let Err(error) = result {
        tracing::debug!("connection ended: {error}");
    }
}

/// A peer that gave up before being accepted is normal; anything else (out of file
/// descriptors) gets a pause, as hyper and axum do, instead of a busy loop.
async fn pause_after_accept_error(error: io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accept error: {error}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
