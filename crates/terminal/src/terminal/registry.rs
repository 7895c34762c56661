//! The sessions drydock serves, by name: the map, the names sessions may take (and the one
//! a session gets when given none), lookups, and the reaper that ends idle sessions. Every
//! session served, renamed or ended is told to the event feed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::TerminalError;
use super::core::ExitStatus;
use super::session::Session;
use crate::events::{EventKind, Events};

pub(super) struct Registry {
    events: Arc<Events>,
    sessions: Mutex<BTreeMap<String, Served>>,
    next_id: Mutex<u64>,
}

/// A session in the map, and its name as its exit will be told (it follows renames).
struct Served {
    session: Arc<Session>,
    name: Arc<Mutex<String>>,
}

impl Registry {
    pub(super) fn new(events: Arc<Events>) -> Registry {
        Registry {
            events,
            sessions: Mutex::default(),
            next_id: Mutex::new(1),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, BTreeMap<String, Served>> {
        self.sessions.lock().expect("sessions lock")
    }

    /// Serves `session` as `name`, and tells the event feed when it starts and ends.
    pub(super) fn insert(&self, name: &str, session: Arc<Session>) {
        self.events.publish(EventKind::TerminalSessionCreated {
            session: name.to_string(),
            backend: session.backend.kind(),
        });
        let current_name = Arc::new(Mutex::new(name.to_string()));
        let (events, command_name) = (self.events.clone(), current_name.clone());
        let cwd = session.cwd.as_ref().map(|dir| dir.display().to_string());
        session.core.on_command(move |finished| {
            let session = command_name.lock().expect("name lock").clone();
            events.publish(EventKind::TerminalCommandFinished {
                session,
                cwd: cwd.clone(),
                command: finished.command,
                exit_code: finished.exit_code,
                output: finished.output,
                duration_ms: crate::millis::millis(finished.duration),
            });
        });
        let exit = session.core.exit();
        let events = self.events.clone();
        let exit_name = current_name.clone();
        tokio::spawn(async move {
            let exit_code = exit.await.and_then(ExitStatus::code);
            let session = exit_name.lock().expect("name lock").clone();
            events.publish(EventKind::TerminalSessionExited { session, exit_code });
        });
        let served = Served {
            session,
            name: current_name,
        };
        self.sessions().insert(name.to_string(), served);
    }

    /// The session called `name` (not marked as used: the caller decides whether it uses it).
    pub(super) fn get(&self, name: &str) -> Option<Arc<Session>> {
        Some(self.sessions().get(name)?.session.clone())
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.sessions().contains_key(name)
    }

    /// How many sessions drydock started (the user's panes do not count).
    pub(super) fn count_ours(&self) -> usize {
        self.sessions()
            .values()
            .filter(|served| !served.session.is_users())
            .count()
    }

    /// Every session, by name.
    pub(super) fn all(&self) -> Vec<(String, Arc<Session>)> {
        self.sessions()
            .iter()
            .map(|(name, served)| (name.clone(), served.session.clone()))
            .collect()
    }

    pub(super) fn names(&self) -> Vec<String> {
        self.sessions().keys().cloned().collect()
    }

    /// The name a session gets when it is given none: t1, t2, ... (the first free).
    pub(super) fn fresh_name(&self) -> String {
        let sessions = self.sessions();
        let mut next = self.next_id.lock().expect("id lock");
        loop {
            let name = format!("t{}", *next);
            *next += 1;
            if !sessions.contains_key(&name) {
                return name;
            }
        }
    }

    /// The error for a name no session has, listing those that are.
    pub(super) fn unknown(&self, name: &str) -> TerminalError {
        let names = self.names();
        let known = if names.is_empty() {
            "none (create one with terminal_create, or address a tmux pane as tmux:SESSION:WINDOW.PANE)".into()
        } else {
            names.join(", ")
        };
        TerminalError::UnknownSession {
            name: name.to_string(),
            known,
        }
    }

    /// Serves the session called `from` as `to` from now on.
    pub(super) fn rename(&self, from: &str, to: &str) {
        {
            let mut sessions = self.sessions();
            let Some(served) = sessions.remove(from) else {
                return;
            };
            *served.name.lock().expect("name lock") = to.to_string();
            sessions.insert(to.to_string(), served);
        }
        self.events.publish(EventKind::TerminalSessionRenamed {
            from: from.to_string(),
            to: to.to_string(),
        });
    }

    /// Stops serving the session called `name` and ends it (see `Backend::end`).
    pub(super) async fn end(&self, name: &str) -> Result<(), TerminalError> {
        let served = self.sessions().remove(name);
        let Some(served) = served else {
            return Err(self.unknown(name));
        };
        served.session.backend.end().await
    }

    /// Stops serving every session, and hands them over.
    pub(super) fn take_all(&self) -> Vec<Arc<Session>> {
        std::mem::take(&mut *self.sessions())
            .into_values()
            .map(|served| served.session)
            .collect()
    }

    /// Ends sessions idle for more than `idle_timeout` now and then, until `shutdown`.
    pub(super) fn start_reaper(
        self: &Arc<Self>,
        idle_timeout: Duration,
        shutdown: CancellationToken,
    ) {
        let registry = Arc::downgrade(self);
        let period = (idle_timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(registry) = registry.upgrade() else {
                    return;
                };
                registry.reap_idle(idle_timeout).await;
            }
        });
    }

    /// Ends the sessions neither used nor printing for more than `limit`.
    async fn reap_idle(&self, limit: Duration) {
        let idle: Vec<String> = self
            .sessions()
            .iter()
            .filter(|(_, served)| {
                served.session.unused_for() > limit && served.session.core.idle_for() > limit
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in idle {
            tracing::info!("killing terminal session {name}: idle for more than {limit:?}");
            let _ = self.end(&name).await;
        }
    }
}

/// `name` if a session may take it: 1-64 letters, digits, `-`, `_` or `.`, not starting
/// with `.`.
pub(super) fn valid_name(name: String) -> Result<String, TerminalError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !name.starts_with('.');
    if ok {
        Ok(name)
    } else {
        Err(TerminalError::InvalidName(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(valid_name("build-1.x_y".into()).is_ok());
        for bad in ["", ".hidden", "a b", "tmux:x:0.0", &"x".repeat(65)] {
            assert!(valid_name(bad.to_string()).is_err(), "{bad}");
        }
    }
}
