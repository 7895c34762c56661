//! `logging/setLevel`: a client that asks for log messages gets each tool step at info level.
//! (Logging is deprecated in rmcp 3.x in favour of newer mechanisms; legacy clients still use it.)
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;

#[derive(Clone, Default)]
pub(super) struct ClientLogging {
    level: Arc<Mutex<Option<LoggingLevel>>>,
}

impl ClientLogging {
    pub(super) fn set_level(&self, level: LoggingLevel) {
        *self.level.lock().expect("logging level poisoned") = Some(level);
    }

    /// Send `message` at info level if the client asked for info or more.
    pub(super) async fn info(&self, peer: &Peer<RoleServer>, message: &str) {
        let wanted = *self.level.lock().expect("logging level poisoned");
        if wanted.is_some_and(|level| rank(level) <= rank(LoggingLevel::Info)) {
            let _ = send(peer, LoggingLevel::Info, message).await;
        }
    }

    /// Send `message` at warning level unless the client asked for less (a client that never
    /// set a level gets warnings). Err when the client is gone.
    pub(super) async fn warning(&self, peer: &Peer<RoleServer>, message: &str) -> Result<(), ()> {
        let wanted = *self.level.lock().expect("logging level poisoned");
        match wanted.is_none_or(|level| rank(level) <= rank(LoggingLevel::Warning)) {
            true => send(peer, LoggingLevel::Warning, message).await,
            false => Ok(()),
        }
    }
}

async fn send(peer: &Peer<RoleServer>, level: LoggingLevel, message: &str) -> Result<(), ()> {
    let param =
        LoggingMessageNotificationParam::new(level, serde_json::Value::String(message.to_string()))
            .with_logger("drydock");
    peer.notify_logging_message(param).await.map_err(|_| ())
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
