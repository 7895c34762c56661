//! The shared queue on a real PostgreSQL (Debian's, started in a temporary directory on a
//! free port): the same state machine as the SQLite queue, hosts claiming under the team's
//! cap and their own, leases that run out and tasks taken over, fenced writes of the host
//! that lost them, a restart of the database, and wake-ups by NOTIFY.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use drydock::tasks::landing::{Landing, LandingState};
use drydock::tasks::store::{
    self, Claimer, Heartbeat, HostEntry, LeaseClock, NewTask, PgStore, QueueMode, QueueSettings,
    Record, StoreError, StoreLocation,
};
use drydock::tasks::{Outcome, TaskState, Transition};

use crate::postgres::Postgres;
use crate::support::drydock_command;

/// The store itself, called synchronously as its own tests do.
type Backend = Box<dyn store::Queue>;

fn new_task(title: &str, priority: i64) -> NewTask {
    NewTask {
        title: title.into(),
        description: format!("{title}, please"),
        project_path: "/work/p".into(),
        place: None,
        repository: None,
        agent_kind: "claude".into(),
        priority,
        timeout_s: None,
        policy: None,
        base: None,
        in_place: false,
        touches: Vec::new(),
        key: None,
        budget: None,
    }
}

fn keyed(title: &str, key: &str) -> NewTask {
    NewTask {
        key: Some(key.into()),
        ..new_task(title, 0)
    }
}

fn open(url: &str) -> Backend {
    store::open(&StoreLocation::Postgres(url.to_string())).expect("the shared queue opens")
}

/// [`open`], its leases on `clock`, which the test moves on.
fn open_on(url: &str, clock: &LeaseClock) -> Backend {
    Box::new(PgStore::open_with_clock(url, clock.clone()).expect("the shared queue opens"))
}

fn entry(name: &str, cap: Option<u32>) -> HostEntry {
    HostEntry {
        name: name.into(),
        url: format!("http://{name}.example:7878"),
        roots: vec!["/work".into()],
        agents: vec!["claude".into()],
        cap,
    }
}

/// Registers host `name` with a lease of `lease_ms`; its claimer.
fn host(store: &Backend, name: &str, cap: Option<u32>, lease_ms: u64) -> Claimer {
    let session = format!("{name}-{}", Instant::now().elapsed().as_nanos());
    store
        .register_host(&entry(name, cap), &session, lease_ms)
        .unwrap();
    Claimer {
        host: name.into(),
        session,
        cap,
    }
}

fn auto(store: &Backend, cap: u32) {
    store
        .set_settings(QueueSettings {
            mode: QueueMode::Auto,
            max_concurrent: cap,
        })
        .unwrap();
}

fn queued_ids(store: &Backend) -> Vec<String> {
    store
        .queued_in_order()
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect()
}

fn done(summary: &str) -> Record {
    Record {
        summary: Some(summary.into()),
        ..Record::default()
    }
}

#[test]
fn the_shared_queue_keeps_the_state_machine_and_survives_a_reopen() {
    let postgres = Postgres::start();
    let url = postgres.database("queue");
    let store = open(&url);
    assert!(store.is_shared());
    let first = store.add(new_task("fix the flaky test", 0)).unwrap();
    let urgent = store.add(new_task("bump serde", 5)).unwrap();
    assert_eq!(
        (first.state, first.attempts, first.epoch),
        (TaskState::Queued, 1, 0)
    );
    assert_eq!(
        queued_ids(&store),
        vec![urgent.id.clone(), first.id.clone()]
    );
    assert_eq!(
        store.settings().unwrap(),
        QueueSettings {
            mode: QueueMode::Manual,
            max_concurrent: 2
        }
    );

    let a = host(&store, "a", None, 30_000);
    let running = store
        .claim(&queued_ids(&store), &a)
        .unwrap()
        .expect("a slot and a task");
    assert_eq!(running.id, urgent.id, "the queue's order");
    assert_eq!(running.session, Some(format!("task-{}", urgent.id)));
    assert_eq!((running.host.as_deref(), running.epoch), (Some("a"), 1));

    let bare = store.transition(&first.id, Transition::Start, Record::default(), None);
    assert!(matches!(bare, Err(StoreError::Illegal { .. })), "{bare:?}");
    let twice = store.transition(&urgent.id, Transition::Retry, Record::default(), None);
    assert_eq!(
        twice.unwrap_err().to_string(),
        format!(
            "task {}: a running task cannot be retried (only failed, cancelled and lost tasks are)",
            urgent.id
        )
    );
    let finished = store
        .transition(
            &urgent.id,
            Transition::Complete(Outcome::Done),
            done("bumped"),
            running.lease().as_ref(),
        )
        .unwrap();
    assert_eq!(
        (finished.state, finished.summary.as_deref()),
        (TaskState::Done, Some("bumped"))
    );
    assert!(matches!(
        store.get("nope"),
        Err(StoreError::UnknownTask { .. })
    ));
    let cancelled = store.clear_queue().unwrap();
    assert_eq!(cancelled.len(), 1);
    drop(store);

    let again = open(&url);
    assert_eq!(again.get(&urgent.id).unwrap(), finished, "kept");
    assert_eq!(again.count(TaskState::Cancelled).unwrap(), 1);
    let hosts = again.hosts().unwrap();
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0].entry, entry("a", None));
    assert!(hosts[0].up);
}

#[test]
fn a_newer_schema_or_a_wrong_url_is_refused_clearly() {
    let postgres = Postgres::start();
    let url = postgres.database("newer");
    drop(open(&url));
    postgres.psql_in("newer", "UPDATE drydock.schema_version SET version = 99");
    let error = store::open(&StoreLocation::Postgres(url)).err().unwrap();
    assert!(
        error
            .to_string()
            .contains("written by a newer drydock (schema 99"),
        "{error}"
    );

    let nobody_there = format!("postgres://drydock:secret@127.0.0.1:{}/x", free_port());
    let error = store::open(&StoreLocation::Postgres(nobody_there))
        .err()
        .unwrap();
    assert!(error.is_unavailable(), "{error}");
    assert!(
        !error.to_string().contains("secret"),
        "no password in messages: {error}"
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Four hosts add the same keyed task at the same instant, twenty times over: each time one
/// of them queues it and the others get that task back; a key of other work is refused and
/// its whole call rolled back.
#[test]
fn hosts_adding_the_same_key_at_once_queue_it_once() {
    let postgres = Postgres::start();
    let url = postgres.database("keys");
    const HOSTS: usize = 4;
    const ROUNDS: usize = 20;
    let start = Arc::new(Barrier::new(HOSTS));
    let adders: Vec<_> = (0..HOSTS)
        .map(|_| {
            let (url, start) = (url.clone(), start.clone());
            std::thread::spawn(move || {
                let store = open(&url);
                (0..ROUNDS)
                    .map(|round| {
                        start.wait();
                        let added = store
                            .add_all(vec![keyed(&format!("round {round}"), &format!("k{round}"))])
                            .unwrap();
                        match &added[..] {
                            [store::Added::Queued(task)] => (task.id.clone(), true),
                            [store::Added::Known(task)] => (task.id.clone(), false),
                            other => panic!("{other:?}"),
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<Vec<(String, bool)>> = adders.into_iter().map(|a| a.join().unwrap()).collect();

    for round in 0..ROUNDS {
        let ids: Vec<&String> = answers.iter().map(|host| &host[round].0).collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "round {round}: {ids:?}");
        let queued = answers.iter().filter(|host| host[round].1).count();
        assert_eq!(queued, 1, "round {round}");
    }
    let shared = open(&url);
    assert_eq!(shared.list(None).unwrap().len(), ROUNDS);

    let refused = shared.add_all(vec![new_task("fresh", 0), keyed("other work", "k0")]);
    assert!(
        matches!(&refused, Err(StoreError::KeyTaken { key, .. }) if key == "k0"),
        "{refused:?}"
    );
    assert_eq!(
        shared.list(None).unwrap().len(),
        ROUNDS,
        "nothing of it queued"
    );
}

/// Three hosts with caps 2/2/3 under a team cap of 6 take 30 tasks as fast as they can, each
/// finishing a task a little after it took it; a watcher samples the running counts in one
/// statement all the while.
#[test]
fn hosts_contending_never_exceed_a_cap_and_run_every_task_once() {
    let postgres = Postgres::start();
    let url = postgres.database("contend");
    let setup = open(&url);
    auto(&setup, 6);
    let ids: Vec<String> = (0..30)
        .map(|n| setup.add(new_task(&format!("t{n}"), 0)).unwrap().id)
        .collect();
    let caps = [("a", 2), ("b", 2), ("c", 3)];
    let finished = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (postgres_url, finished) = (url.clone(), finished.clone());
        let database = postgres_url.rsplit('/').next().unwrap().to_string();
        let port = postgres.port;
        std::thread::spawn(move || {
            let mut peaks: HashMap<String, i64> = HashMap::new();
            while !finished.load(Ordering::Relaxed) {
                let output = std::process::Command::new("psql")
                    .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &port.to_string()])
                    .args(["-U", "drydock", "-d", &database, "-c"])
                    .arg(
                        "SELECT coalesce(host, '-') || '=' || count(*) FROM drydock.tasks \
                         WHERE state = 'running' GROUP BY ROLLUP (host)",
                    )
                    .output()
                    .unwrap();
                for line in String::from_utf8_lossy(&output.stdout).lines() {
                    if let Some((host, n)) = line.split_once('=') {
                        let n: i64 = n.parse().unwrap();
                        let peak = peaks.entry(host.to_string()).or_default();
                        *peak = (*peak).max(n);
                    }
                }
            }
            peaks
        })
    };
    let completions: Arc<Mutex<Vec<String>>> = Arc::default();
    let start = Arc::new(Barrier::new(caps.len()));
    let claims = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = caps
        .iter()
        .map(|&(name, cap)| {
            let (url, completions, start, claims) = (
                url.clone(),
                completions.clone(),
                start.clone(),
                claims.clone(),
            );
            std::thread::spawn(move || {
                let store = open(&url);
                let me = host(&store, name, Some(cap), 30_000);
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let queued = queued_ids(&store);
                    if queued.is_empty() && mine.is_empty() {
                        return;
                    }
                    if let Some(task) = store.claim(&queued, &me).unwrap() {
                        assert!(mine.len() < cap as usize, "{name} over its own cap");
                        claims.fetch_add(1, Ordering::Relaxed);
                        mine.push(task);
                        continue;
                    }
                    if let Some(task) = (!mine.is_empty()).then(|| mine.remove(0)) {
                        std::thread::sleep(Duration::from_millis(15));
                        store
                            .transition(
                                &task.id,
                                Transition::Complete(Outcome::Done),
                                done(name),
                                task.lease().as_ref(),
                            )
                            .unwrap();
                        completions.lock().unwrap().push(task.id);
                    } else {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a host's thread");
    }
    finished.store(true, Ordering::Relaxed);
    let peaks = watcher.join().unwrap();

    assert!(
        peaks.get("-").copied().unwrap_or(0) <= 6,
        "team cap: {peaks:?}"
    );
    for (name, cap) in caps {
        assert!(
            peaks.get(name).copied().unwrap_or(0) <= i64::from(cap),
            "{name}'s cap: {peaks:?}"
        );
    }
    let mut completed = completions.lock().unwrap().clone();
    completed.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(completed, expected, "every task completed exactly once");
    for id in &ids {
        let task = setup.get(id).unwrap();
        assert_eq!((task.state, task.epoch), (TaskState::Done, 1), "{id}");
    }
    assert_eq!(claims.load(Ordering::Relaxed), 30);
}

/// Host a stops renewing its lease mid-task (the test moves the leases' clock past it): b
/// rescues the task (queued again), claims it under a new epoch and completes it; a's late
/// writes under its old claim change nothing.
#[test]
fn a_host_that_lost_its_lease_changes_nothing_of_the_claim_that_followed() {
    let postgres = Postgres::start();
    let url = postgres.database("fence");
    let clock = LeaseClock::default();
    let store = open_on(&url, &clock);
    auto(&store, 2);
    let id = store.add(new_task("long job", 0)).unwrap().id;
    let a = host(&store, "a", None, 10_000);
    let b = host(&store, "b", None, 600_000);
    let held = store.claim(std::slice::from_ref(&id), &a).unwrap().unwrap();
    let old = held.lease().unwrap();

    assert_eq!(
        store.rescue_lost(true).unwrap(),
        Vec::new(),
        "a's lease runs"
    );
    clock.advance(Duration::from_secs(11));
    assert_eq!(
        store.claim(std::slice::from_ref(&id), &a).unwrap(),
        None,
        "a host past its lease claims nothing"
    );
    let rescued = store.rescue_lost(true).unwrap();
    assert_eq!(rescued.len(), 1);
    let queued = &rescued[0];
    assert_eq!((queued.state, queued.attempts), (TaskState::Queued, 2));
    assert!(
        queued
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("host a stopped renewing its lease")),
        "{queued:?}"
    );
    let taken = store.claim(std::slice::from_ref(&id), &b).unwrap().unwrap();
    assert_eq!((taken.host.as_deref(), taken.epoch), (Some("b"), 2));

    let late = store.transition(
        &id,
        Transition::Complete(Outcome::Done),
        done("a"),
        Some(&old),
    );
    let error = late.unwrap_err();
    assert!(matches!(error, StoreError::Fenced { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        format!("task {id} no longer runs on host a under claim 1 (it runs on b under claim 2)")
    );
    assert!(!store.set_attention(&id, Some("waits"), Some(&old)).unwrap());
    assert_eq!(
        store.heartbeat("a", "an old session", 30_000).unwrap(),
        Heartbeat::Superseded
    );
    let finished = store
        .transition(
            &id,
            Transition::Complete(Outcome::Done),
            done("b"),
            taken.lease().as_ref(),
        )
        .unwrap();
    assert_eq!(
        (finished.state, finished.summary.as_deref()),
        (TaskState::Done, Some("b"))
    );
    // A landing that waits for a person carries its why into the task's attention at once.
    let mut landing = Landing::waiting("main", 1);
    landing.state = LandingState::WaitsForPerson {
        why: "its merged tree is red".into(),
    };
    store.set_landing(&id, &landing).unwrap();
    let waits = store.get(&id).unwrap();
    assert_eq!(waits.attention.as_deref(), Some("its merged tree is red"));
    store
        .set_landing(&id, &Landing::waiting("main", 2))
        .unwrap();
    assert_eq!(store.get(&id).unwrap().attention, None);

    // Left lost (not queued again) when the policy says so.
    let other = store.add(new_task("another", 0)).unwrap().id;
    let a_again = host(&store, "a", None, 10_000);
    store
        .claim(std::slice::from_ref(&other), &a_again)
        .unwrap()
        .unwrap();
    assert_eq!(
        store.rescue_lost(false).unwrap(),
        Vec::new(),
        "a's new lease runs"
    );
    clock.advance(Duration::from_secs(11));
    let lost = store.rescue_lost(false).unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].state, TaskState::Lost);
    let retried = store
        .transition(&other, Transition::Retry, Record::default(), None)
        .unwrap();
    assert_eq!(retried.state, TaskState::Queued);
}

/// The database restarts under a store in use: the calls made while it is down fail as
/// unavailable (at once, never hanging), and the first calls after it is back work.
#[test]
fn a_restarted_database_is_reconnected_and_nothing_is_lost() {
    let mut postgres = Postgres::start();
    let url = postgres.database("restart");
    let store = open(&url);
    let id = store.add(new_task("kept", 0)).unwrap().id;
    let woken = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let counter = woken.clone();
    store::listen(
        &url,
        "restart",
        move || {
            counter.fetch_add(1, Ordering::Relaxed);
        },
        stop.clone(),
    )
    .unwrap();
    let waited = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while woken.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        woken.load(Ordering::Relaxed)
    };
    assert!(waited(1) >= 1, "woken once on connecting");
    let before = woken.load(Ordering::Relaxed);
    let other = open(&url);
    other.add(new_task("announced", 0)).unwrap();
    assert!(
        waited(before + 1) > before,
        "an added task wakes the listener"
    );

    let calls_down = {
        let store = &store;
        let postgres = &mut postgres;
        postgres.restart_with(Duration::from_secs(2), || {
            let began = Instant::now();
            let error = store.get(&id).unwrap_err();
            (error, began.elapsed())
        })
    };
    let (error, took) = calls_down;
    assert!(error.is_unavailable(), "{error}");
    assert!(
        took < Duration::from_secs(10),
        "a down database answers at once: {took:?}"
    );

    assert_eq!(store.get(&id).unwrap().title, "kept", "reconnected");
    assert_eq!(store.list(None).unwrap().len(), 2);
    let after = woken.load(Ordering::Relaxed);
    store.add(new_task("after", 0)).unwrap();
    assert!(waited(after + 1) > after, "the listener reconnected too");
    stop.store(true, Ordering::Relaxed);
}

/// `drydock task migrate --to URL` moves a machine's queue into an empty shared one, keeping
/// every task as it was; it refuses while a task runs or when the target has tasks, and the
/// old file is then refused by every drydock, with the way to the new queue.
#[test]
fn a_machines_queue_moves_to_a_shared_one_without_losing_a_task() {
    let postgres = Postgres::start();
    let url = postgres.database("moved");
    let data = tempfile::tempdir().unwrap();
    let local = drydock::tasks::local_queue(data.path());
    let machine = store::SqliteStore::open(&local).unwrap();
    let queue: &dyn store::Queue = &machine;
    let waiting = queue.add(keyed("waiting", "wait-1")).unwrap();
    let finished = queue.add(new_task("finished", 0)).unwrap();
    let dropped = queue.add(new_task("dropped", 0)).unwrap();
    let here = Claimer {
        host: "laptop".into(),
        session: "s".into(),
        cap: None,
    };
    let running = queue
        .claim(std::slice::from_ref(&finished.id), &here)
        .unwrap()
        .unwrap();
    queue
        .transition(&dropped.id, Transition::Cancel, Record::default(), None)
        .unwrap();
    queue
        .set_settings(QueueSettings {
            mode: QueueMode::Auto,
            max_concurrent: 3,
        })
        .unwrap();
    let migrate = || {
        drydock_command()
            .args(["task", "migrate", "--to", &url, "--data-dir"])
            .arg(data.path())
            .output()
            .unwrap()
    };

    let refused = migrate();
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("1 task(s) run on this machine") && said.contains(&finished.id),
        "{said}"
    );
    assert_eq!(
        postgres.psql_in("moved", "SELECT COUNT(*) FROM drydock.tasks"),
        "0"
    );

    let done = queue
        .transition(
            &finished.id,
            Transition::Complete(Outcome::Done),
            done("shipped"),
            running.lease().as_ref(),
        )
        .unwrap();
    let before = queue.list(None).unwrap();
    drop(machine);
    let moved = migrate();
    let said = String::from_utf8_lossy(&moved.stdout);
    assert!(
        moved.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    assert!(
        said.contains("moved 3 task(s) (1 queued, 1 done, 1 cancelled)"),
        "{said}"
    );

    let shared = open(&url);
    assert_eq!(shared.list(None).unwrap(), before, "every task as it was");
    assert_eq!(shared.get(&finished.id).unwrap(), done);
    assert_eq!(queued_ids(&shared), vec![waiting.id.clone()]);
    let retried = shared.add(keyed("waiting", "wait-1")).unwrap();
    assert_eq!(retried.id, waiting.id, "its key moved with it");
    assert_eq!(
        shared.settings().unwrap(),
        QueueSettings {
            mode: QueueMode::Auto,
            max_concurrent: 3
        }
    );

    let error = store::SqliteStore::open(&local).err().unwrap().to_string();
    assert!(
        error.contains(&format!("moved to {url}")) && error.contains("[tasks] store"),
        "{error}"
    );
    let again = migrate();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("moved to"));

    let other = tempfile::tempdir().unwrap();
    let second = store::SqliteStore::open(&drydock::tasks::local_queue(other.path())).unwrap();
    store::Queue::add(&second, new_task("late", 0)).unwrap();
    drop(second);
    let full = drydock_command()
        .args(["task", "migrate", "--to", &url, "--data-dir"])
        .arg(other.path())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&full.stderr).contains("holds 3 task(s) already"),
        "{full:?}"
    );
}
