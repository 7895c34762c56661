//! The shared queue against a machine's own, in the same run, at the store (what a host's
//! runner calls): claims per second with three hosts contending for `DRYDOCK_BENCH_ITERS`
//! (default 300) queued tasks on a real PostgreSQL (Debian's, started here in a temporary
//! directory), against one host claiming them from the SQLite queue; and the time from a
//! task queued to its start, by a host woken by NOTIFY (PostgreSQL) or told in-process
//! (SQLite), p50/p99 over 100 tasks queued one at a time; and queue calls when many come at
//! once on two runtime workers, the store called on the runtime (as before) against through
//! `TaskStore` (off the runtime, with a deadline): each call's latency and how late a timer
//! on the same runtime fires meanwhile.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

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

/// The store itself, called synchronously as its own tests do.
type Backend = Box<dyn store::Queue>;

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
        touches: Vec::new(),
        key: None,
        budget: None,
    }
}

fn host(store: &Backend, name: &str) -> Claimer {
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

fn prepare(store: &Backend, tasks: usize) {
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
fn complete(store: &Backend, task: &Task) {
    let done = Transition::Complete(Outcome::Done);
    store
        .transition(&task.id, done, Record::default(), task.lease().as_ref())
        .unwrap();
}

/// Claims (and completes at once) every queued task with `hosts` threads; claims per second.
fn drain(open: impl Fn() -> Backend + Sync, hosts: &[&str]) -> f64 {
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
    queue: &Backend,
    tell: impl Fn(),
    host_store: Backend,
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

/// How queue calls fare when many come at once on a runtime of two workers (as on a 2-core
/// host): `CALLERS` tasks each make `CALLS_EACH` calls (a list, then a get), while a probe
/// measures how late a 1 ms timer fires (what every other tool, session and stream waits).
/// `direct` calls the store on the runtime's workers, as drydock did before; otherwise the
/// calls go through [`TaskStore`] (a blocking thread each, a deadline).
fn contention(backend: Backend, direct: bool) -> (Vec<Duration>, Vec<Duration>) {
    const CALLERS: usize = 16;
    const CALLS_EACH: usize = 25;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backend: Arc<dyn store::Queue> = Arc::from(backend);
    let store = TaskStore::new(backend.clone());
    runtime.block_on(async move {
        let some_id = backend.list(None).unwrap()[0].id.clone();
        let running = Arc::new(AtomicBool::new(true));
        let probe = {
            let running = running.clone();
            tokio::spawn(async move {
                let mut late = Vec::new();
                while running.load(Ordering::Relaxed) {
                    let asked = Instant::now();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    late.push(asked.elapsed().saturating_sub(Duration::from_millis(1)));
                    tokio::time::sleep(Duration::from_millis(4)).await;
                }
                late
            })
        };
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (backend, store, id) = (backend.clone(), store.clone(), some_id.clone());
                tokio::spawn(async move {
                    let mut took = Vec::new();
                    for _ in 0..CALLS_EACH {
                        let asked = Instant::now();
                        if direct {
                            backend.list(None).unwrap();
                            backend.get(&id).unwrap();
                        } else {
                            store.call(|q| q.list(None)).await.unwrap();
                            let id = id.clone();
                            store.call(move |q| q.get(&id)).await.unwrap();
                        }
                        took.push(asked.elapsed());
                        tokio::task::yield_now().await;
                    }
                    took
                })
            })
            .collect();
        let mut calls = Vec::new();
        for caller in callers {
            calls.extend(caller.await.unwrap());
        }
        running.store(false, Ordering::Relaxed);
        (calls, probe.await.unwrap())
    })
}

fn print_contention(
    name: &str,
    before: &(Vec<Duration>, Vec<Duration>),
    after: &(Vec<Duration>, Vec<Duration>),
) {
    let line = |label: &str, (calls, late): &(Vec<Duration>, Vec<Duration>)| {
        println!(
            "  {name}, {label:<28} call p50 {:>7.2} ms  p99 {:>7.2} ms   timer late p50 {:>6.2} ms  p99 {:>7.2} ms",
            percentile(calls, 50.0),
            percentile(calls, 99.0),
            percentile(late, 50.0),
            percentile(late, 99.0),
        )
    };
    line("on the runtime (before):", before);
    line("through TaskStore (after):", after);
    println!(
        "  {name}: the timer's p99 lateness after is {:.2}x before; a call's p99 {:.2}x",
        percentile(&after.1, 99.0) / percentile(&before.1, 99.0).max(0.001),
        percentile(&after.0, 99.0) / percentile(&before.0, 99.0),
    );
}

fn main() {
    let tasks = iterations(300);
    let postgres = postgres::Postgres::start();

    let data = tempfile::tempdir().unwrap();
    let sqlite_path = data.path().join("tasks.sqlite3");
    let sqlite =
        || -> Backend { store::open(&StoreLocation::Sqlite(sqlite_path.clone())).unwrap() };
    prepare(&sqlite(), tasks);
    let local_rate = drain(sqlite, &["here"]);

    let url = postgres.database("claims");
    let shared = || -> Backend { store::open(&StoreLocation::Postgres(url.clone())).unwrap() };
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
        store::listen(&url, "handoffs", teller, stop.clone()).unwrap();
        let host_store = store::open(&StoreLocation::Postgres(url)).unwrap();
        let times = handoffs(&queue, || {}, host_store, waiter);
        stop.store(true, Ordering::Relaxed);
        times
    };

    // Many queue calls at once, each store before and after, in the same run.
    let contended = tempfile::tempdir().unwrap();
    let contended_sqlite = || -> Backend {
        store::open(&StoreLocation::Sqlite(contended.path().join("q.sqlite3"))).unwrap()
    };
    prepare(&contended_sqlite(), 50);
    let sqlite_before = contention(contended_sqlite(), true);
    let sqlite_after = contention(contended_sqlite(), false);
    let contended_url = postgres.database("contention");
    let contended_pg =
        || -> Backend { store::open(&StoreLocation::Postgres(contended_url.clone())).unwrap() };
    prepare(&contended_pg(), 50);
    let pg_before = contention(contended_pg(), true);
    let pg_after = contention(contended_pg(), false);

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
    println!("queue calls under contention: 16 callers x 25 (list + get) on 2 runtime workers");
    print_contention("SQLite", &sqlite_before, &sqlite_after);
    print_contention("PostgreSQL", &pg_before, &pg_after);
}
