//! The queue as every part of the task system reads and writes it: the store, opened on
//! first use, this drydock's standing among the hosts of the queue, and the event feed its
//! changes go out on. Every part below [`super::Tasks`] reaches the queue through it, and
//! it reaches nothing of theirs.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::error::TaskError;
use super::state::{TaskState, Transition};
use super::store::{
    self, Claimer, Health, LazyStore, Lease, Record, StoreError, StoreLocation, Task, TaskStore,
};
use crate::config::TasksConfig;
use crate::events::{EventKind, Events, TaskChange};

/// How long a write that must not be lost waits for the queue's database to come back.
const STORE_OUTAGE: Duration = Duration::from_secs(60);

/// The queue, this host's standing in it, and the feed its changes are published on.
pub(super) struct Ledger {
    /// Opened on first use (a one-shot `drydock call` of another tool never touches it);
    /// a failed opening is tried again at the next use (a database that was away).
    store: LazyStore,
    host: Host,
    events: Arc<Events>,
    /// Whether this drydock runs tasks (`drydock serve`: agents need its HTTP endpoint).
    runs: OnceLock<CancellationToken>,
}

impl Ledger {
    pub(super) fn new(
        location: StoreLocation,
        config: &TasksConfig,
        events: Arc<Events>,
    ) -> Ledger {
        Ledger {
            host: Host::new(config, location.is_shared()),
            store: LazyStore::new(location),
            events,
            runs: OnceLock::new(),
        }
    }

    /// This drydock as a host of the queue.
    pub(super) fn host(&self) -> &Host {
        &self.host
    }

    /// From now on this drydock runs tasks, until `stop`.
    pub(super) fn run_until(&self, stop: CancellationToken) {
        let _ = self.runs.set(stop);
    }

    /// Cancelled when this drydock stops; None when it does not run tasks.
    pub(super) fn running_until(&self) -> Option<&CancellationToken> {
        self.runs.get()
    }

    /// The queue, opened on its first use; every call on it answers within its deadline.
    pub(super) async fn store(&self) -> Result<&TaskStore, StoreError> {
        self.store.get().await
    }

    /// Follows whether the queue's database answers.
    pub(super) fn health(&self) -> watch::Receiver<Health> {
        self.store.health()
    }

    /// `work` on the store, tried again while its database cannot be reached (a shared
    /// queue's server restarting), for up to a minute: an agent's word on its task, or its
    /// failure, outlasts a short outage instead of being lost to it.
    pub(super) async fn persistently<T: Send + 'static>(
        &self,
        work: impl Fn(&dyn store::Queue) -> Result<T, StoreError> + Send + Sync + 'static,
    ) -> Result<T, TaskError> {
        let deadline = tokio::time::Instant::now() + STORE_OUTAGE;
        let work = Arc::new(work);
        loop {
            let work = work.clone();
            let result = async { self.store().await?.call(move |q| work(q)).await }.await;
            match result {
                Err(error) if error.is_unavailable() && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                result => return Ok(result?),
            }
        }
    }

    /// Task `id` as stored.
    pub(super) async fn task(&self, id: &str) -> Result<Task, TaskError> {
        let id = id.to_string();
        Ok(self.store().await?.call(move |q| q.get(&id)).await?)
    }

    /// Every task (none when the store cannot be read).
    pub(super) async fn all_tasks(&self) -> Vec<Task> {
        async { self.store().await?.call(|q| q.list(None)).await }
            .await
            .unwrap_or_default()
    }

    /// The tasks running on this host (none when the store cannot be read: nothing runs
    /// then).
    pub(super) async fn running_tasks(&self) -> Vec<Task> {
        let running = async {
            let running = self.store().await?;
            running.call(|q| q.list(Some(TaskState::Running))).await
        };
        running
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|t| self.is_mine(t))
            .collect()
    }

    /// Moves task `id` through `transition`, held by `lease`, through a short outage of the
    /// queue too.
    pub(super) async fn change(
        &self,
        id: &str,
        transition: Transition,
        record: Record,
        lease: Option<Lease>,
    ) -> Result<Task, TaskError> {
        let id = id.to_string();
        self.persistently(move |q| q.transition(&id, transition, record.clone(), lease.as_ref()))
            .await
    }

    /// Keeps `text` as task `id`'s transcript.
    pub(super) async fn keep_transcript(&self, id: &str, text: &str) -> Result<(), StoreError> {
        let (id, text) = (id.to_string(), text.to_string());
        self.store()
            .await?
            .call(move |q| q.set_transcript(&id, &text))
            .await
    }

    /// Tells the event feed about `task`, which was in state `from` before.
    pub(super) fn publish(&self, task: &Task, from: Option<TaskState>) {
        self.events.publish(EventKind::TaskChanged(TaskChange {
            task_id: task.id.clone(),
            title: task.title.clone(),
            project_path: task.project_path.clone(),
            state: task.state.name().to_string(),
            from: from.map(|s| s.name().to_string()),
            attention: task.attention.clone(),
            session: task.session.clone(),
        }));
    }

    /// Whether `task` is (or was last) run by this host. On a machine's own queue, all are.
    pub(super) fn is_mine(&self, task: &Task) -> bool {
        !self.host.shared || task.host.as_deref() == Some(self.host.name.as_str())
    }

    /// The claim a write about running `task` is made under: none on a machine's own queue;
    /// on a shared one this host's, refused when the task runs elsewhere or not at all.
    pub(super) fn lease_here(&self, task: &Task) -> Result<Option<Lease>, TaskError> {
        if !self.host.shared {
            return Ok(None);
        }
        match task.lease() {
            Some(lease) if lease.host == self.host.name => Ok(Some(lease)),
            Some(lease) => Err(TaskError::NotAllowed(format!(
                "task {} runs on host {}, not on this one ({})",
                task.id, lease.host, self.host.name
            ))),
            None => Err(TaskError::NotAllowed(format!(
                "task {} is {}, not running",
                task.id, task.state
            ))),
        }
    }
}

/// This drydock's identity and standing among the hosts of its queue.
pub(super) struct Host {
    pub(super) name: String,
    /// Its registration: a claim is refused once another process registers under its name.
    pub(super) session: String,
    pub(super) shared: bool,
    pub(super) lease: Duration,
    /// When its lease was last renewed (None: not registered, or superseded).
    renewed: Mutex<Option<Instant>>,
    /// It registered once (a database that was away at its start may delay that).
    pub(super) registered: AtomicBool,
    /// When it last became reachable to the queue (registered, or back after an outage).
    back_at: Mutex<Option<Instant>>,
    /// It took up what an earlier drydock of this host left running: it claims nothing
    /// new, and judges none of its running tasks' sessions, before that.
    adopted: AtomicBool,
    /// Wakes its loop: another host changed the queue.
    pub(super) poke: Arc<Notify>,
}

impl Host {
    pub(super) fn new(config: &TasksConfig, shared: bool) -> Host {
        Host {
            name: config.host.name.clone(),
            session: crate::private::random_hex(8),
            shared,
            lease: config.host.lease,
            renewed: Mutex::new(None),
            registered: AtomicBool::new(false),
            adopted: AtomicBool::new(false),
            back_at: Mutex::new(None),
            poke: Arc::new(Notify::new()),
        }
    }

    /// Whether it may start tasks now: always on its own queue; on a shared one while its
    /// lease is current by its own clock, with a margin (it stops before others may rescue).
    pub(super) fn may_claim(&self) -> bool {
        !self.shared
            || self
                .renewed()
                .is_some_and(|at| at.elapsed() < self.lease * 2 / 3)
    }

    /// Whether it took up what an earlier drydock of this host left running.
    pub(super) fn adopted(&self) -> bool {
        self.adopted.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn set_adopted(&self) {
        self.adopted
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn claimer(&self, cap: Option<u32>) -> Claimer {
        Claimer {
            host: self.name.clone(),
            session: self.session.clone(),
            cap,
        }
    }

    pub(super) fn renewed(&self) -> Option<Instant> {
        *self.renewed.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_renewed(&self, at: Option<Instant>) {
        *self.renewed.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    pub(super) fn back_at(&self) -> Option<Instant> {
        *self.back_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_back_at(&self, at: Instant) {
        *self.back_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Received;
    use crate::tasks::parts_for_tests::{Setting, new_task};
    use crate::tasks::store::Added;

    fn ledger_of(setting: &Setting, events: Arc<Events>) -> Ledger {
        let location = StoreLocation::Sqlite(setting.config.data_dir.join("tasks.sqlite3"));
        Ledger::new(location, &setting.config.tasks, events)
    }

    /// Built alone, on a machine's own queue: what it writes through a short outage is
    /// read back, every task is this host's and needs no lease, and a change goes out on
    /// the feed.
    #[tokio::test]
    async fn a_machines_own_ledger_writes_reads_and_publishes() {
        let setting = Setting::new("");
        let events = Arc::new(Events::default());
        let ledger = ledger_of(&setting, events.clone());
        let mut feed = events.subscribe();

        let new = new_task("tidy the imports", &setting.project());
        let added = ledger
            .persistently(move |q| q.add_all(vec![new.clone()]))
            .await
            .unwrap();
        let [Added::Queued(task)] = added.as_slice() else {
            panic!("one task queued: {added:?}");
        };
        assert_eq!(
            ledger.task(&task.id).await.unwrap().title,
            "tidy the imports"
        );
        assert_eq!(ledger.all_tasks().await.len(), 1);
        assert!(ledger.running_tasks().await.is_empty());
        assert!(ledger.is_mine(task));
        assert_eq!(ledger.lease_here(task).unwrap(), None);

        let cancelled = ledger
            .change(&task.id, Transition::Cancel, Record::default(), None)
            .await
            .unwrap();
        ledger.publish(&cancelled, Some(TaskState::Queued));
        let Some(Received::Event(event)) = feed.try_recv() else {
            panic!("the change is on the feed");
        };
        let EventKind::TaskChanged(change) = event.kind else {
            panic!("a task's change: {:?}", event.kind);
        };
        assert_eq!(
            (change.state.as_str(), change.from.as_deref()),
            ("cancelled", Some("queued"))
        );

        let error = ledger
            .change(&task.id, Transition::Cancel, Record::default(), None)
            .await;
        assert!(
            matches!(error, Err(TaskError::Store(StoreError::Illegal { .. }))),
            "a cancelled task is not cancelled twice: {error:?}"
        );
    }

    /// A host of a shared queue writes about a task only under its own claim.
    #[tokio::test]
    async fn a_shared_queues_host_writes_only_under_its_own_claim() {
        let setting = Setting::new(
            "[tasks]\nstore = \"postgres://drydock@127.0.0.1:1/queue\"\nhost = \"here\"\n",
        );
        let location = StoreLocation::configured(&setting.config);
        assert!(location.is_shared());
        let ledger = Ledger::new(location, &setting.config.tasks, Arc::new(Events::default()));
        let task = setting.queued_task("tidy the imports");
        assert!(!ledger.is_mine(&task), "a queued task is no host's");
        let refused = ledger.lease_here(&task).unwrap_err().to_string();
        assert_eq!(refused, format!("task {} is queued, not running", task.id));
    }
}
