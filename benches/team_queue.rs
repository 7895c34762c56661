//! The shared queue against a machine's own, in the same run, at the store (what a host's
//! runner calls): claims per second with three hosts contending for `DRYDOCK_BENCH_ITERS`
//! (default 300) queued tasks on a real PostgreSQL (Debian's, started here in a temporary
//! directory), against one host claiming them from the SQLite queue; and the time from a
//! task queued to its start, by a host woken by NOTIFY (PostgreSQL) or told in-process
//! (SQLite), p50/p99 over 100 tasks queued one at a time.

#[allow(dead_code)]
#[path = "../tests/it/postgres.rs"]
mod postgres;
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

use drydock::tasks::store::{
    self, Claimer, HostEntry, NewTask, QueueMode, QueueSettings, Record, StoreLocation, Task,
    TaskStore,
};
use drydock::tasks::{Outcome, Transition};
use support::{iterations, percentile};

const HANDOFFS: usize = 100;

fn new_task(n: usize) -> NewTask {
    NewTask {
        title: format!("bench {n}"),
        description: "bench".into(),
        project_path: "/work/p".into(),
        place: None,
        repository: None,
        agent_kind: "claude".into(),
        priority: 0,
        timeout_s: None,
        policy: None,
        base: None,
        in_place: false,
    }
}

fn host(store: &TaskStore, name: &str) -> Claimer {
    let entry = HostEntry {
        name: name.into(),
        url: format!("http://{name}"),
        roots: vec!["/work".into()],
        agents: vec!["claude".into()],
        cap: None,
    };
    store.register_host(&entry, name, 60_000).unwrap();
    Claimer {
        host: name.into(),
        session: name.into(),
        cap: None,
    }
}

fn prepare(store: &TaskStore, tasks: usize) {
    store
        .set_settings(QueueSettings {
            mode: QueueMode::Auto,
            max_concurrent: 1000,
        })
        .unwrap();
    for n in 0..tasks {
        store.add(new_task(n)).unwrap();
    }
}

/// The agent's word: done, under the task's claim.
fn complete(store: &TaskStore, task: &Task) {
    let done = Transition::Complete(Outcome::Done);
    store
        .transition(&task.id, done, Record::default(), task.lease().as_ref())
        .unwrap();
}

/// Claims (and completes at once) every queued task with `hosts` threads; claims per second.
fn drain(open: impl Fn() -> TaskStore + Sync, hosts: &[&str]) -> f64 {
    let start = Barrier::new(hosts.len());
    let began = Mutex::new(None);
    let claimed = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for name in hosts {
            let (open, start, began, claimed) = (&open, &start, &began, &claimed);
            scope.spawn(move || {
                let store = open();
                let me = host(&store, name);
                start.wait();
                began.lock().unwrap().get_or_insert_with(Instant::now);
                loop {
                    let queued: Vec<String> = store
                        .queued_in_order()
                        .unwrap()
                        .into_iter()
                        .take(16)
                        .map(|t| t.id)
                        .collect();
                    if queued.is_empty() {
                        return;
                    }
                    let Some(task) = store.claim(&queued, &me).unwrap() else {
                        continue;
                    };
                    claimed.fetch_add(1, Ordering::Relaxed);
                    complete(&store, &task);
                }
            });
        }
    });
    let took = began.lock().unwrap().unwrap().elapsed();
    claimed.load(Ordering::Relaxed) as f64 / took.as_secs_f64()
}

/// Queues `HANDOFFS` tasks one at a time (calling `tell` after each); a host thread claims
/// them whenever it is woken (`wait`). Queue-to-start times.
fn handoffs(
    queue: &TaskStore,
    tell: impl Fn(),
    host_store: TaskStore,
    wait: impl Fn(Duration) + Send + 'static,
) -> Vec<Duration> {
    let me = host(&host_store, "waiting");
    let added: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let host_side = {
        let (added, done) = (added.clone(), done.clone());
        std::thread::spawn(move || {
            let mut times = Vec::new();
            while times.len() < HANDOFFS && !done.load(Ordering::Relaxed) {
                wait(Duration::from_millis(200));
                loop {
                    let queued: Vec<String> = host_store
                        .queued_in_order()
                        .unwrap()
                        .into_iter()
                        .map(|t| t.id)
                        .collect();
                    let Some(task) = host_store.claim(&queued, &me).unwrap() else {
                        break;
                    };
                    let at = added.lock().unwrap()[times.len()];
                    times.push(at.elapsed());
                    complete(&host_store, &task);
                }
            }
            times
        })
    };
    for n in 0..HANDOFFS {
        added.lock().unwrap().push(Instant::now());
        queue.add(new_task(n)).unwrap();
        tell();
        std::thread::sleep(Duration::from_millis(20));
    }
    let times = host_side.join().unwrap();
    done.store(true, Ordering::Relaxed);
    times
}

/// A wake-up: the waiting side (returns when told, or after its limit) and the telling side.
fn wake_pair() -> (
    impl Fn(Duration) + Send + 'static,
    impl Fn() + Send + 'static,
) {
    let flag: Arc<(Mutex<bool>, Condvar)> = Arc::default();
    let teller = flag.clone();
    let wait = move |limit| {
        let mut told = flag.0.lock().unwrap();
        if !*told {
            told = flag.1.wait_timeout(told, limit).unwrap().0;
        }
        *told = false;
    };
    let tell = move || {
        *teller.0.lock().unwrap() = true;
        teller.1.notify_all();
    };
    (wait, tell)
}

fn main() {
    let tasks = iterations(300);
    let postgres = postgres::Postgres::start();

    let data = tempfile::tempdir().unwrap();
    let sqlite_path = data.path().join("tasks.sqlite3");
    let sqlite =
        || -> TaskStore { store::open(&StoreLocation::Sqlite(sqlite_path.clone())).unwrap() };
    prepare(&sqlite(), tasks);
    let local_rate = drain(sqlite, &["here"]);

    let url = postgres.database("claims");
    let shared = || -> TaskStore { store::open(&StoreLocation::Postgres(url.clone())).unwrap() };
    prepare(&shared(), tasks);
    let team_rate = drain(shared, &["a", "b", "c"]);

    // Queue to start: SQLite, the host told in-process (as `task_add`, then `fill`).
    let local_handoff = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let queue = store::open(&StoreLocation::Sqlite(path.clone())).unwrap();
        prepare(&queue, 0);
        let (waiter, teller) = wake_pair();
        let host_store = store::open(&StoreLocation::Sqlite(path)).unwrap();
        handoffs(&queue, teller, host_store, waiter)
    };
    // PostgreSQL: another host, woken by NOTIFY on its listening connection.
    let team_handoff = {
        let url = postgres.database("handoffs");
        let queue = store::open(&StoreLocation::Postgres(url.clone())).unwrap();
        prepare(&queue, 0);
        let (waiter, teller) = wake_pair();
        let stop = Arc::new(AtomicBool::new(false));
        store::listen(
            &url,
            "handoffs",
            store::postgres::CHANNEL,
            teller,
            stop.clone(),
        )
        .unwrap();
        let host_store = store::open(&StoreLocation::Postgres(url)).unwrap();
        let times = handoffs(&queue, || {}, host_store, waiter);
        stop.store(true, Ordering::Relaxed);
        times
    };

    println!("team queue: {tasks} tasks claimed and completed");
    println!("  SQLite, one host:          {local_rate:>8.0} claims/s");
    println!(
        "  PostgreSQL, three hosts:   {team_rate:>8.0} claims/s  ({:.2}x the SQLite rate)",
        team_rate / local_rate
    );
    println!("queue to start, {HANDOFFS} tasks queued one at a time");
    println!(
        "  SQLite, told in-process:   p50 {:.2} ms  p99 {:.2} ms",
        percentile(&local_handoff, 50.0),
        percentile(&local_handoff, 99.0)
    );
    println!(
        "  PostgreSQL, NOTIFY:        p50 {:.2} ms  p99 {:.2} ms  ({:.1}x the SQLite p50)",
        percentile(&team_handoff, 50.0),
        percentile(&team_handoff, 99.0),
        percentile(&team_handoff, 50.0) / percentile(&local_handoff, 50.0)
    );
}
