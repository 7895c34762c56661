//! The session manager rmcp is given: drydock's [`Sessions`], or, when built with the
//! test-only `conformance-fixtures` feature, a wrapper of it that tells each request where its
//! SSE stream lives (so the conformance suite's `test_reconnection` can close its own stream).

#[cfg(not(feature = "conformance-fixtures"))]
pub(super) type SessionManager = super::Sessions;

#[cfg(not(feature = "conformance-fixtures"))]
pub(super) fn session_manager(
    sessions: std::sync::Arc<super::Sessions>,
) -> std::sync::Arc<SessionManager> {
    sessions
}

#[cfg(feature = "conformance-fixtures")]
pub(super) use fixtures::{FixtureSessions as SessionManager, session_manager};

#[cfg(feature = "conformance-fixtures")]
mod fixtures {
    use std::sync::Arc;

    use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
    use rmcp::transport::WorkerTransport;
    use rmcp::transport::streamable_http_server::RestoreOutcome;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionWorker;
    use rmcp::transport::streamable_http_server::session::{
        ServerSseMessage, SessionId, SessionManager as ManagesSessions,
    };

    use crate::http::{Sessions, SessionsError};
    use crate::mcp::fixtures::RequestStream;

    pub(crate) fn session_manager(sessions: Arc<Sessions>) -> Arc<FixtureSessions> {
        Arc::new(FixtureSessions { inner: sessions })
    }

    /// drydock's [`Sessions`], plus a [`RequestStream`] in the extensions of every request that
    /// gets a stream of its own. Use it in place of `Sessions` under the `conformance-fixtures`
    /// feature.
    #[derive(Debug)]
    pub(crate) struct FixtureSessions {
        inner: Arc<Sessions>,
    }

    impl ManagesSessions for FixtureSessions {
        type Error = SessionsError;
        type Transport = WorkerTransport<LocalSessionWorker>;

        async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
            self.inner.create_session().await
        }

        async fn initialize_session(
            &self,
            id: &SessionId,
            message: ClientJsonRpcMessage,
        ) -> Result<ServerJsonRpcMessage, Self::Error> {
            self.inner.initialize_session(id, message).await
        }

        async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
            self.inner.has_session(id).await
        }

        async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
            self.inner.close_session(id).await
        }

        /// As `Sessions::create_stream`, recording the stream in the request.
        async fn create_stream(
            &self,
            id: &SessionId,
            message: ClientJsonRpcMessage,
        ) -> Result<
            impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        > {
            self.inner
                .create_stream_tagged(id, message, |message, session, http_request_id| {
                    if let ClientJsonRpcMessage::Request(request) = message {
                        request.request.extensions_mut().insert(RequestStream {
                            session: session.clone(),
                            http_request_id,
                        });
                    }
                })
                .await
        }

        async fn accept_message(
            &self,
            id: &SessionId,
            message: ClientJsonRpcMessage,
        ) -> Result<(), Self::Error> {
            self.inner.accept_message(id, message).await
        }

        async fn create_standalone_stream(
            &self,
            id: &SessionId,
        ) -> Result<
            impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        > {
            self.inner.create_standalone_stream(id).await
        }

        async fn resume(
            &self,
            id: &SessionId,
            last_event_id: String,
        ) -> Result<
            impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        > {
            self.inner.resume(id, last_event_id).await
        }

        async fn restore_session(
            &self,
            id: SessionId,
        ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
            self.inner.restore_session(id).await
        }
    }
}
