//! MCP sessions of the initialize-handshake era: rmcp's in-memory sessions with drydock's
//! lifetime rules on top.
//!
//! - A session with a call in flight or an open event stream never expires. rmcp's own
//!   keep-alive is off: it counts only messages, so a silent six-minute `cargo test` lost its
//!   session (and its result) at 300 s.
//! - A session with neither is closed `session_idle_timeout` after its last request or
//!   stream; its next request gets 404 and the client starts a new session.
//! - At most `max_sessions`. A new session replaces the one idle the longest: sessions
//!   without a connection are the abandoned ones (the Inspector never sends DELETE), and a
//!   replaced client that comes back gets 404 and starts over. Only when every session is in
//!   use is a new one refused (503, see `has_room`).
//! - A client that drops a call's response stream (closed its connection) cancels the call,
//!   as `notifications/cancelled` would, unless it resumes the stream with GET and
//!   `Last-Event-ID` within [`RESUME_GRACE`]; rmcp keeps the stream's recent events for that.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::RestoreOutcome;
use rmcp::transport::streamable_http_server::session::local::{
    EventId, LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
    SessionConfig, SessionError, StreamableHttpMessageReceiver,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::CancellationToken;

/// How long a call whose response stream was dropped waits for the client to resume it
/// before it is cancelled. Clients are told to reconnect after 3 s (the `retry` of the
/// stream's priming event, rmcp's default).
pub(super) const RESUME_GRACE: Duration = Duration::from_secs(5);

/// The lifetime rules, from `[http]` in the config.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub idle_timeout: Duration,
    pub max_sessions: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("Session not found: {0}")]
    NotFound(SessionId),
    #[error("all {0} MCP sessions are in use")]
    Full(usize),
}

/// rmcp's [`LocalSessionManager`] under drydock's lifetime rules (see the module docs).
#[derive(Debug)]
pub struct Sessions {
    inner: LocalSessionManager,
    registry: Arc<Registry>,
    /// Makes room and adds a session in one step, so concurrent `initialize`s cannot
    /// overshoot the cap.
    creating: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// Sessions under `limits`; idle ones are closed until `shutdown`.
    pub fn new(limits: SessionLimits, shutdown: &CancellationToken) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        inner.session_config = session_config();
        let sessions = Arc::new(Self {
            inner,
            registry: Arc::new(Registry::new(limits)),
            creating: tokio::sync::Mutex::default(),
        });
        tokio::spawn(close_idle_sessions(
            Arc::downgrade(&sessions),
            shutdown.clone(),
        ));
        sessions
    }

    /// Whether a new session can start now (there is a free place or an idle session to
    /// replace): checked before rmcp starts one, so a full server answers 503 rather than
    /// rmcp's bare 500.
    pub fn has_room(&self) -> bool {
        self.registry.has_room()
    }

    pub fn max_sessions(&self) -> usize {
        self.registry.limits.max_sessions
    }

    /// As [`SessionManager::create_stream`], with `tag` seeing the request and where its
    /// stream lives before the session gets it (the conformance fixtures need that).
    pub async fn create_stream_tagged(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
        tag: impl FnOnce(&mut ClientJsonRpcMessage, &LocalSessionHandle, u64),
    ) -> Result<TrackedStream, SessionsError> {
        let ticket = self.registry.open_stream(id)?;
        let handle = self.handle(id).await?;
        let receiver = handle.establish_request_wise_channel().await?;
        let Some(http_request_id) = receiver.http_request_id else {
            return Ok(TrackedStream::plain(receiver_stream(receiver), ticket));
        };
        tag(&mut message, &handle, http_request_id);
        let call = match &message {
            ClientJsonRpcMessage::Request(request) => Some(CallOnStream {
                session: handle.clone(),
                request_id: request.id.clone(),
                http_request_id,
                serial: next_serial(),
            }),
            _ => None,
        };
        handle.push_message(message, Some(http_request_id)).await?;
        let stream = receiver_stream(receiver);
        Ok(match call {
            Some(call) => {
                self.registry.remember_call(id, &call);
                TrackedStream::for_call(stream, ticket, call, self.registry.clone())
            }
            None => TrackedStream::plain(stream, ticket),
        })
    }

    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, SessionsError> {
        self.inner
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| SessionsError::NotFound(id.clone()))
    }

    async fn close_idle(&self) {
        for id in self.registry.take_expired(Instant::now()) {
            tracing::info!(session = %id, "closing an idle MCP session");
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::warn!(session = %id, "closing an idle MCP session: {error}");
            }
        }
    }

    /// Makes a place for one more session, replacing the longest-idle one when full.
    async fn make_room(&self) -> Result<(), SessionsError> {
        if let Some(replaced) = self.registry.evict_for_new()? {
            tracing::info!(session = %replaced, "session limit reached: closing the session idle the longest");
            self.inner.close_session(&replaced).await?;
        }
        Ok(())
    }
}

/// rmcp's defaults without its message-counting keep-alive: expiry is ours.
fn session_config() -> SessionConfig {
    let mut config = SessionConfig::default();
    config.keep_alive = None;
    config
}

async fn close_idle_sessions(sessions: Weak<Sessions>, shutdown: CancellationToken) {
    let period = match sessions.upgrade() {
        Some(sessions) => check_period(sessions.registry.limits.idle_timeout),
        None => return,
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.cancelled() => return,
        }
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        sessions.close_idle().await;
    }
}

/// A session expires at most a quarter of its idle timeout late.
fn check_period(idle_timeout: Duration) -> Duration {
    (idle_timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        self.make_room().await?;
        let (id, transport) = self.inner.create_session().await?;
        self.registry.add(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.registry.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.registry.touch(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.registry.remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.create_stream_tagged(id, message, |_, _, _| {}).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.registry.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let ticket = self.registry.open_stream(id)?;
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(TrackedStream::plain(Box::pin(stream), ticket))
    }

    /// A resumed call stream is watched like the original: dropping it again cancels the
    /// call unless it is resumed once more.
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let ticket = self.registry.open_stream(id)?;
        let event_id: EventId = last_event_id
            .parse()
            .map_err(LocalSessionManagerError::from)?;
        let call = http_request_id_of(&last_event_id).and_then(|http_request_id| {
            Some((self.registry.call(id, http_request_id)?, http_request_id))
        });
        let handle = self.handle(id).await?;
        let receiver = handle.resume(event_id).await?;
        let stream = receiver_stream(receiver);
        Ok(match call {
            Some((request_id, http_request_id)) => {
                let call = CallOnStream {
                    session: handle,
                    request_id,
                    http_request_id,
                    serial: next_serial(),
                };
                self.registry.remember_call(id, &call);
                TrackedStream::for_call(stream, ticket, call, self.registry.clone())
            }
            None => TrackedStream::plain(stream, ticket),
        })
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }
}

/// rmcp's event ids are `INDEX/HTTP_REQUEST_ID` on a call's stream, `INDEX` on the session's
/// own stream.
fn http_request_id_of(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

type BoxedEvents = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>;

fn receiver_stream(receiver: StreamableHttpMessageReceiver) -> BoxedEvents {
    let mut inner = receiver.inner;
    Box::pin(futures::stream::poll_fn(move |cx| inner.poll_recv(cx)))
}

fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The call whose response a stream carries.
#[derive(Debug, Clone)]
struct CallOnStream {
    session: LocalSessionHandle,
    request_id: RequestId,
    http_request_id: u64,
    /// Tells this stream from a later one that resumed the same call.
    serial: u64,
}

/// What drydock knows of each live session.
#[derive(Debug)]
struct Registry {
    limits: SessionLimits,
    sessions: Mutex<HashMap<SessionId, Activity>>,
}

#[derive(Debug)]
struct Activity {
    open_streams: usize,
    last_seen: Instant,
    /// The call behind each call stream that may still be resumed, by rmcp's HTTP request
    /// id, with the serial of the stream that carries it now.
    calls: HashMap<u64, (RequestId, u64)>,
}

impl Activity {
    fn new() -> Self {
        Self {
            open_streams: 0,
            last_seen: Instant::now(),
            calls: HashMap::new(),
        }
    }

    fn is_idle(&self) -> bool {
        self.open_streams == 0
    }
}

impl Registry {
    fn new(limits: SessionLimits) -> Self {
        Self {
            limits,
            sessions: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Activity>> {
        self.sessions.lock().expect("session registry lock")
    }

    fn add(&self, id: &SessionId) {
        self.lock().insert(id.clone(), Activity::new());
    }

    fn remove(&self, id: &SessionId) {
        self.lock().remove(id);
    }

    /// Records a request on the session; false when drydock does not know it (expired).
    fn touch(&self, id: &SessionId) -> bool {
        match self.lock().get_mut(id) {
            Some(activity) => {
                activity.last_seen = Instant::now();
                true
            }
            None => false,
        }
    }

    fn has_room(&self) -> bool {
        let sessions = self.lock();
        sessions.len() < self.limits.max_sessions || sessions.values().any(Activity::is_idle)
    }

    /// The session to close to make room for a new one, if the registry is full.
    fn evict_for_new(&self) -> Result<Option<SessionId>, SessionsError> {
        let mut sessions = self.lock();
        if sessions.len() < self.limits.max_sessions {
            return Ok(None);
        }
        let oldest = sessions
            .iter()
            .filter(|(_, activity)| activity.is_idle())
            .min_by_key(|(_, activity)| activity.last_seen)
            .map(|(id, _)| id.clone())
            .ok_or(SessionsError::Full(self.limits.max_sessions))?;
        sessions.remove(&oldest);
        Ok(Some(oldest))
    }

    /// Removes and returns the sessions idle for longer than the idle timeout.
    fn take_expired(&self, now: Instant) -> Vec<SessionId> {
        let idle_timeout = self.limits.idle_timeout;
        let mut sessions = self.lock();
        let expired: Vec<SessionId> = sessions
            .iter()
            .filter(|(_, activity)| {
                activity.is_idle() && now.duration_since(activity.last_seen) >= idle_timeout
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            sessions.remove(id);
        }
        expired
    }

    fn open_stream(self: &Arc<Self>, id: &SessionId) -> Result<StreamTicket, SessionsError> {
        let mut sessions = self.lock();
        let activity = sessions
            .get_mut(id)
            .ok_or_else(|| SessionsError::NotFound(id.clone()))?;
        activity.open_streams += 1;
        activity.last_seen = Instant::now();
        Ok(StreamTicket {
            registry: self.clone(),
            session: id.clone(),
        })
    }

    fn remember_call(&self, id: &SessionId, call: &CallOnStream) {
        if let Some(activity) = self.lock().get_mut(id) {
            activity
                .calls
                .insert(call.http_request_id, (call.request_id.clone(), call.serial));
        }
    }

    fn call(&self, id: &SessionId, http_request_id: u64) -> Option<RequestId> {
        let sessions = self.lock();
        let (request_id, _) = sessions.get(id)?.calls.get(&http_request_id)?;
        Some(request_id.clone())
    }

    /// Forgets a call once the stream carrying it is done with it (unless a newer stream
    /// resumed it meanwhile).
    fn forget_call(&self, id: &SessionId, call: &CallOnStream) {
        let mut sessions = self.lock();
        let Some(activity) = sessions.get_mut(id) else {
            return;
        };
        if activity
            .calls
            .get(&call.http_request_id)
            .is_some_and(|(_, serial)| *serial == call.serial)
        {
            activity.calls.remove(&call.http_request_id);
        }
    }
}

/// One open stream of a session: the session is in use while it lives.
#[derive(Debug)]
struct StreamTicket {
    registry: Arc<Registry>,
    session: SessionId,
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        if let Some(activity) = self.registry.lock().get_mut(&self.session) {
            activity.open_streams -= 1;
            activity.last_seen = Instant::now();
        }
    }
}

/// A session's event stream as the HTTP response sends it. When the client goes away
/// before a call's stream ended, the call is cancelled unless resumed (module docs).
pub struct TrackedStream {
    events: Option<BoxedEvents>,
    ended: bool,
    ticket: Option<StreamTicket>,
    call: Option<(CallOnStream, Arc<Registry>)>,
}

impl TrackedStream {
    fn plain(events: BoxedEvents, ticket: StreamTicket) -> Self {
        Self {
            events: Some(events),
            ended: false,
            ticket: Some(ticket),
            call: None,
        }
    }

    fn for_call(
        events: BoxedEvents,
        ticket: StreamTicket,
        call: CallOnStream,
        registry: Arc<Registry>,
    ) -> Self {
        Self {
            events: Some(events),
            ended: false,
            ticket: Some(ticket),
            call: Some((call, registry)),
        }
    }
}

impl Stream for TrackedStream {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = events.as_mut().poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
            if let Some((call, registry)) = &self.call {
                registry.forget_call(&call.session_id(), call);
            }
        }
        polled
    }
}

impl Drop for TrackedStream {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let (Some((call, registry)), Some(events), Some(ticket)) =
            (self.call.take(), self.events.take(), self.ticket.take())
        else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(cancel_unless_resumed(events, call, registry, ticket));
        }
    }
}

impl CallOnStream {
    fn session_id(&self) -> SessionId {
        self.session.id().clone()
    }
}

/// The client dropped the stream of a call still running: keep taking its events (rmcp
/// keeps recent ones for a resume) until the call ends, a resume takes the stream over, or
/// [`RESUME_GRACE`] passes; then cancel it. The session stays in use until then.
async fn cancel_unless_resumed(
    mut events: BoxedEvents,
    call: CallOnStream,
    registry: Arc<Registry>,
    _ticket: StreamTicket,
) {
    let deadline = tokio::time::sleep(RESUME_GRACE);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            event = events.next() => if event.is_none() {
                registry.forget_call(&call.session_id(), &call);
                return;
            },
            _ = &mut deadline => break,
        }
    }
    tracing::info!(session = %call.session.id(), request = %call.request_id, "the client went away during a call: cancelling it");
    registry.forget_call(&call.session_id(), &call);
    let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
        Some(call.request_id.clone()),
        Some("the client closed its connection".into()),
    ));
    let message =
        ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(cancelled));
    if let Err(error) = call.session.push_message(message, None).await {
        tracing::debug!("cancelling an abandoned call: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max_sessions: usize) -> Arc<Registry> {
        Arc::new(Registry::new(SessionLimits {
            idle_timeout: Duration::from_secs(60),
            max_sessions,
        }))
    }

    fn id(text: &str) -> SessionId {
        SessionId::from(text)
    }

    #[test]
    fn sessions_with_an_open_stream_never_expire() {
        let registry = registry(8);
        registry.add(&id("busy"));
        registry.add(&id("idle"));
        let ticket = registry.open_stream(&id("busy")).unwrap();
        let later = Instant::now() + Duration::from_secs(3600);

        assert_eq!(registry.take_expired(later), vec![id("idle")]);
        assert!(registry.take_expired(later).is_empty());
        drop(ticket);
        assert!(
            registry.take_expired(Instant::now()).is_empty(),
            "idle from now on"
        );
        assert_eq!(registry.take_expired(later), vec![id("busy")]);
    }

    #[test]
    fn a_full_registry_replaces_the_longest_idle_session_and_refuses_when_all_are_busy() {
        let registry = registry(2);
        registry.add(&id("first"));
        std::thread::sleep(Duration::from_millis(5));
        registry.add(&id("second"));
        assert!(registry.has_room());

        assert_eq!(registry.evict_for_new().unwrap(), Some(id("first")));
        registry.add(&id("third"));
        let _busy = [
            registry.open_stream(&id("second")).unwrap(),
            registry.open_stream(&id("third")).unwrap(),
        ];
        assert!(!registry.has_room());
        assert!(matches!(
            registry.evict_for_new(),
            Err(SessionsError::Full(2))
        ));
    }

    #[test]
    fn unknown_sessions_are_not_found() {
        let registry = registry(2);
        assert!(!registry.touch(&id("gone")));
        assert!(matches!(
            registry.open_stream(&id("gone")),
            Err(SessionsError::NotFound(_))
        ));
    }

    #[test]
    fn a_call_is_forgotten_only_by_the_stream_that_carries_it_now() {
        use rmcp::model::NumberOrString;
        use rmcp::transport::streamable_http_server::session::local::create_local_session;
        let registry = registry(2);
        registry.add(&id("s"));
        let (session, _worker) = create_local_session("s", SessionConfig::default());
        let original = CallOnStream {
            session,
            request_id: NumberOrString::Number(7),
            http_request_id: 3,
            serial: next_serial(),
        };
        let resumed = CallOnStream {
            serial: next_serial(),
            ..original.clone()
        };
        registry.remember_call(&id("s"), &original);
        registry.remember_call(&id("s"), &resumed);

        registry.forget_call(&id("s"), &original);
        assert_eq!(registry.call(&id("s"), 3), Some(NumberOrString::Number(7)));
        registry.forget_call(&id("s"), &resumed);
        assert_eq!(registry.call(&id("s"), 3), None);
    }

    #[test]
    fn call_stream_event_ids_name_their_http_request() {
        assert_eq!(http_request_id_of("3/17"), Some(17));
        assert_eq!(http_request_id_of("3"), None);
        assert_eq!(http_request_id_of("x/y"), None);
    }

    #[test]
    fn expiry_is_checked_often_enough() {
        assert_eq!(
            check_period(Duration::from_secs(3)),
            Duration::from_millis(750)
        );
        assert_eq!(
            check_period(Duration::from_secs(3600)),
            Duration::from_secs(60)
        );
    }
}
