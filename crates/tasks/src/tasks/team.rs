//! This drydock as one host of a queue. On a machine's own queue (SQLite) it is the only
//! host: every task is its own and it may always claim. On a shared queue (PostgreSQL) it
//! registers under a fresh session, renews its lease on a heartbeat, claims only while its
//! lease is current (and stops claiming when another process takes its name over), rescues
//! the running tasks of hosts whose lease ran out, wakes when another host changes the
//! queue (`LISTEN`, with a poll as the backstop), and stops the agents of tasks it no longer
//! holds: cancelled elsewhere, or taken over while it was away.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use futures::future::BoxFuture;

use super::error::TaskError;
use super::ledger::Ledger;
use super::state::TaskState;
use super::store::{Heartbeat, HostEntry, StoreLocation};
use crate::agents::Agents;
use crate::config::Config;
use crate::events::{EventKind, Events};
use crate::supervise::{spawn_supervised, supervised};

/// How often a host looks at the queue when nothing woke it.
const POLL_EVERY: Duration = Duration::from_secs(2);

/// What the host's queue loop does on every wake-up or poll, after a rescue when one is
/// due: the monitor's part (the claims it no longer holds stopped, its sessions checked, what
/// it can start started).
pub(super) type Round = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// This drydock as a host of its queue: its registration, lease and rescues.
pub(super) struct TeamHost {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    agents: Arc<Agents>,
    events: Arc<Events>,
}

impl TeamHost {
    pub(super) fn new(
        ledger: Arc<Ledger>,
        config: Arc<Config>,
        agents: Arc<Agents>,
        events: Arc<Events>,
    ) -> TeamHost {
        TeamHost {
            ledger,
            config,
            agents,
            events,
        }
    }

    /// How this host announces itself to a shared queue.
    fn entry(&self) -> HostEntry {
        let url = self
            .config
            .tasks
            .host
            .url
            .clone()
            .or_else(|| self.agents.base_url().map(str::to_string))
            .unwrap_or_else(|| format!("http://{}", self.config.bind));
        HostEntry {
            name: self.ledger.host().name.clone(),
            url,
            roots: self
                .config
                .allowed_roots
                .iter()
                .map(|root| root.display().to_string())
                .collect(),
            agents: self.agents.startable_kinds(),
            cap: self.config.tasks.host.cap,
        }
    }

    /// On a shared queue: registers this host, then keeps its lease, rescues lost tasks,
    /// follows the queue's changes and runs `round` on each, until `stop`. Returns once the
    /// host is registered (or its first attempt failed: the loop keeps trying).
    pub(super) async fn serve(self: &Arc<Self>, stop: CancellationToken, round: Round) {
        let location = StoreLocation::configured(&self.config);
        if !location.is_shared() {
            return;
        }
        let poke = self.ledger.host().poke.clone();
        let stopped = Arc::new(AtomicBool::new(false));
        let wake = move || poke.notify_one();
        if let Err(error) = location.follow(wake, stopped.clone()) {
            tracing::warn!("listening for the queue's changes: {error}; polling only");
        }
        self.register().await;
        let (this, beating) = (self.clone(), stop.clone());
        spawn_supervised("the host's heartbeat", stop.clone(), move || {
            let (this, stop) = (this.clone(), beating.clone());
            async move { this.beat_until(stop).await }
        });
        let (this, looking) = (self.clone(), stop.clone());
        tokio::spawn(async move {
            supervised("the host's queue loop", &stop, move || {
                let (this, stop) = (this.clone(), looking.clone());
                let round = round.clone();
                async move { this.keep_lease(stop, round).await }
            })
            .await;
            stopped.store(true, Ordering::Relaxed);
        });
    }

    async fn register(&self) {
        let lease_ms = crate::millis::millis(self.ledger.host().lease);
        let registered = async {
            let (entry, session) = (self.entry(), self.ledger.host().session.clone());
            self.ledger
                .store()
                .await?
                .call(move |q| q.register_host(&entry, &session, lease_ms))
                .await
        }
        .await;
        match registered {
            Ok(()) => {
                self.ledger.host().registered.store(true, Ordering::Relaxed);
                self.ledger.host().set_renewed(Some(Instant::now()));
                self.ledger.host().set_back_at(Instant::now());
            }
            Err(error) => tracing::warn!("registering host {}: {error}", self.ledger.host().name),
        }
    }

    /// The host's queue loop (its heartbeat is [`Self::beat_until`], on a task of its own:
    /// a busy host's other work never delays it): on every wake-up or poll, a rescue every
    /// third of the lease (not within a lease of its own return: the others need the time to
    /// renew theirs too), then the round.
    async fn keep_lease(self: &Arc<Self>, stop: CancellationToken, round: Round) {
        let lease = self.ledger.host().lease;
        let mut rescue_at = Instant::now() + lease;
        loop {
            tokio::select! {
                () = self.ledger.host().poke.notified() => {
                    self.events.publish(EventKind::QueueChanged);
                }
                () = tokio::time::sleep(POLL_EVERY.min(lease / 5)) => {}
                () = stop.cancelled() => return,
            }
            let settled = self
                .ledger
                .host()
                .back_at()
                .is_some_and(|at| at.elapsed() >= lease);
            if settled && self.ledger.host().may_claim() && Instant::now() >= rescue_at {
                rescue_at = Instant::now() + lease / 3;
                self.rescue().await;
            }
            round().await;
        }
    }

    /// Renews the lease every fifth of it until `stop`, noting when the queue is reachable
    /// again after it was not.
    async fn beat_until(self: &Arc<Self>, stop: CancellationToken) {
        let mut was_up = self.ledger.host().renewed().is_some();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.ledger.host().lease / 5) => {}
                () = stop.cancelled() => return,
            }
            let up = self.beat().await;
            if up && !was_up {
                self.ledger.host().set_back_at(Instant::now());
                tracing::info!(
                    "host {}: the shared queue is reachable again",
                    self.ledger.host().name
                );
            }
            was_up = up;
        }
    }

    /// Renews the lease; true when it is current.
    async fn beat(&self) -> bool {
        let lease_ms = crate::millis::millis(self.ledger.host().lease);
        let renewed = async {
            let (name, session) = (
                self.ledger.host().name.clone(),
                self.ledger.host().session.clone(),
            );
            self.ledger
                .store()
                .await?
                .call(move |q| q.heartbeat(&name, &session, lease_ms))
                .await
        }
        .await;
        match renewed {
            Ok(Heartbeat::Renewed) => {
                self.ledger.host().set_renewed(Some(Instant::now()));
                true
            }
            // Not registered yet (the database was away at its start): now.
            Ok(Heartbeat::Superseded) if !self.ledger.host().registered.load(Ordering::Relaxed) => {
                self.register().await;
                self.ledger.host().may_claim()
            }
            Ok(Heartbeat::Superseded) => {
                if self.ledger.host().renewed().is_some() {
                    tracing::error!(
                        "host {}: another drydock registered under this name; this one starts no more tasks",
                        self.ledger.host().name
                    );
                }
                self.ledger.host().set_renewed(None);
                false
            }
            Err(error) => {
                tracing::debug!(
                    "host {}: renewing its lease: {error}",
                    self.ledger.host().name
                );
                self.ledger.host().may_claim()
            }
        }
    }

    /// Takes back the running tasks of hosts whose lease ran out.
    async fn rescue(&self) {
        let requeue = self.config.tasks.host.requeue_lost;
        let rescued = async {
            self.ledger
                .store()
                .await?
                .call(move |q| q.rescue_lost(requeue))
                .await
        };
        let rescued = rescued.await;
        match rescued {
            Ok(rescued) => {
                for task in rescued {
                    tracing::warn!(
                        "task {}: {}",
                        task.id,
                        task.failure.as_deref().unwrap_or("lost")
                    );
                    self.ledger.publish(&task, Some(TaskState::Running));
                }
            }
            Err(error) => tracing::debug!("rescuing lost tasks: {error}"),
        }
    }

    /// Where a person who may see this host's dashboard opens host `name`'s: its URL, with a
    /// one-time login code when it is another host of the shared queue.
    pub(super) async fn viewer_link(&self, name: &str) -> Result<String, TaskError> {
        let store = self.ledger.store().await?;
        let hosts = store.call(|q| q.hosts()).await?;
        let Some(host) = hosts.iter().find(|h| h.entry.name == name) else {
            return Err(TaskError::InvalidArgument(format!(
                "no host {name:?} shares this queue; its hosts: {}",
                hosts
                    .iter()
                    .map(|h| h.entry.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if name == self.ledger.host().name {
            return Ok("/".into());
        }
        if !host.up {
            return Err(TaskError::NotAllowed(format!(
                "host {name} is down (last seen {} s ago)",
                host.last_seen_ms_ago / 1000
            )));
        }
        let url = host.entry.url.trim_end_matches('/');
        let host = name.to_string();
        Ok(
            match store.call(move |q| q.issue_viewer_code(&host)).await? {
                Some(code) => format!("{url}/login?code={code}"),
                None => format!("{url}/"),
            },
        )
    }

    /// Whether `code` is a one-time code another host of the queue issued for this one.
    pub(super) async fn admits_viewer(&self, code: &str) -> bool {
        match self.ledger.store().await {
            Ok(store) => {
                let (host, code) = (self.ledger.host().name.clone(), code.to_string());
                let taken = store.call(move |q| q.take_viewer_code(&host, &code));
                taken.await.unwrap_or(false)
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Events;
    use crate::tasks::parts_for_tests::Setting;

    /// Built alone, on a machine's own queue: it is the only host, serves no team, and a
    /// link to a host that does not share the queue is refused with the hosts that do.
    #[tokio::test]
    async fn a_machines_own_queue_has_one_host_and_no_team_to_serve() {
        let setting = Setting::new("[tasks]\nhost = \"here\"\n");
        let ledger = setting.ledger();
        let team = Arc::new(TeamHost::new(
            ledger.clone(),
            setting.config.clone(),
            setting.agents(),
            Arc::new(Events::default()),
        ));
        let round: Round = Arc::new(|| -> BoxFuture<'static, ()> {
            Box::pin(async { panic!("no round on a machine's own queue") })
        });
        team.serve(CancellationToken::new(), round).await;
        assert!(ledger.host().may_claim());
        let refused = team.viewer_link("elsewhere").await.unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("no host \"elsewhere\" shares this queue"),
            "{refused}"
        );
        assert!(!team.admits_viewer("0123").await);
    }
}
