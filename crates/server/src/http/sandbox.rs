//! drydock as a task's sandbox reaches it: a unix socket bound into the sandbox, where every
//! request is the task's, whatever it says. The socket is the identity: a request without a
//! token, with drydock's own token or with another task's is still this task's, limited to
//! its task, and refused once the task's token is withdrawn. Only MCP, the hooks and the task
//! tools are there; the dashboard and the approvals are not.

use std::sync::Arc;
use std::time::Duration;

use axum::{Extension, Router};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::serve::{serve_accepted, serve_connection};

/// How many connections one sandbox may hold open to drydock at once.
const MOST_CONNECTIONS: usize = 64;

/// Who is asking, as the socket says: the task's token, and the process that connected
/// (in drydock's own process namespace: the kernel translates it).
#[derive(Debug, Clone)]
pub(super) struct SandboxCaller {
    pub token: String,
    pub pid: Option<i32>,
}

/// Serves `app` on `listener` for the sandbox of the task whose token is `token`, until
/// `stop`.
pub fn serve(
    listener: UnixListener,
    app: Router,
    token: String,
    header_read_timeout: Duration,
    stop: CancellationToken,
) -> BoxFuture<'static, ()> {
    async move {
        let accept = || async { listener.accept().await.map(|(stream, _)| stream) };
        let slots = Arc::new(Semaphore::new(MOST_CONNECTIONS));
        serve_accepted(accept, &stop, |stream: UnixStream| {
            let slot = slots.clone().try_acquire_owned().ok();
            let caller = SandboxCaller {
                token: token.clone(),
                pid: stream.peer_cred().ok().and_then(|cred| cred.pid()),
            };
            let app = app.clone().layer(Extension(caller));
            let served = serve_connection(stream, app, header_read_timeout, stop.clone());
            async move {
                // One more than the sandbox may hold is closed unserved.
                if let Some(_slot) = slot {
                    served.await;
                }
            }
        })
        .await;
    }
    .boxed()
}
