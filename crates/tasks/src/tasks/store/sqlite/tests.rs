use super::*;
use crate::tasks::state::Outcome;

fn start(store: &SqliteStore, id: &str) -> Task {
    let here = Claimer {
        host: "here".into(),
        session: "s".into(),
        cap: None,
    };
    store
        .claim(&[id.to_string()], &here)
        .unwrap()
        .expect("claimed")
}

fn task(title: &str, priority: i64) -> NewTask {
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

#[test]
fn tasks_are_stored_listed_and_kept_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/tasks.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let first = store.add(task("fix the flaky test", 0)).unwrap();
    let urgent = store.add(task("bump serde", 5)).unwrap();
    assert_eq!(first.state, TaskState::Queued);
    assert_eq!(first.attempts, 1);
    assert_eq!(first.id.len(), 8);
    assert_eq!(store.queued_in_order().unwrap()[0].id, urgent.id);
    assert_eq!(store.list(None).unwrap().len(), 2);
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.get(&first.id).unwrap(), first);
    assert!(matches!(
        store.get("nope"),
        Err(StoreError::UnknownTask { .. })
    ));
    assert_eq!(
        store.settings().unwrap(),
        QueueSettings {
            mode: QueueMode::Manual,
            max_concurrent: 2
        }
    );
    let auto = QueueSettings {
        mode: QueueMode::Auto,
        max_concurrent: 3,
    };
    store.set_settings(auto).unwrap();
    drop(store);
    assert_eq!(SqliteStore::open(&path).unwrap().settings().unwrap(), auto);
}

#[test]
fn tasks_added_in_the_same_millisecond_keep_the_order_they_were_added_in() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
    let added: Vec<String> = (0..40)
        .map(|n| store.add(task(&format!("t{n}"), 0)).unwrap().id)
        .collect();
    store
        .lock()
        .execute("UPDATE tasks SET created_at_ms = 1", [])
        .unwrap();
    let ids = |tasks: Vec<Task>| tasks.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list(None).unwrap()), added);
    assert_eq!(ids(store.queued_in_order().unwrap()), added);
    assert_eq!(store.queued_in_order().unwrap()[0].id, added[0]);
}

#[test]
fn transitions_are_checked_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
    let id = store.add(task("t", 0)).unwrap().id;
    let running = start(&store, &id);
    assert_eq!(running.state, TaskState::Running);
    assert!(running.started_at_ms.is_some());
    assert_eq!(running.session, Some(format!("task-{id}")));
    assert_eq!((running.host.as_deref(), running.epoch), (Some("here"), 1));
    let bare_start = store.transition(&id, Transition::Start, Record::default(), None);
    assert!(matches!(bare_start, Err(StoreError::Illegal { .. })));
    let elsewhere = Lease {
        host: "there".into(),
        epoch: 1,
    };
    let fenced = store.transition(&id, Transition::Fail, Record::default(), Some(&elsewhere));
    assert!(
        matches!(fenced, Err(StoreError::Fenced { .. })),
        "{fenced:?}"
    );
    let failed = Record {
        failure: Some("session lost while drydock was down".into()),
        exit_code: Some(3),
        transcript: Some("last screen".into()),
        ..Record::default()
    };
    let failed = store
        .transition(&id, Transition::Fail, failed, None)
        .unwrap();
    assert_eq!(failed.state, TaskState::Failed);
    assert_eq!(failed.exit_code, Some(3));
    assert_eq!(failed.session, Some(format!("task-{id}")), "kept");

    let again = store.transition(&id, Transition::Fail, Record::default(), None);
    assert_eq!(
        again.unwrap_err().to_string(),
        format!("task {id}: a failed task cannot be failed")
    );
    let retried = store
        .transition(&id, Transition::Retry, Record::default(), None)
        .unwrap();
    assert_eq!((retried.state, retried.attempts), (TaskState::Queued, 2));
    assert_eq!(retried.failure, None);
    assert_eq!(retried.transcript.as_deref(), Some("last screen"), "kept");
    assert_eq!(start(&store, &id).epoch, 2, "a new claim");
    let done = Record {
        summary: Some("fixed".into()),
        ..Record::default()
    };
    let mine = Lease {
        host: "here".into(),
        epoch: 2,
    };
    let done = store
        .transition(&id, Transition::Complete(Outcome::Done), done, Some(&mine))
        .unwrap();
    assert_eq!(done.state, TaskState::Done);
    assert_eq!(done.summary.as_deref(), Some("fixed"));
    let twice = store.transition(
        &id,
        Transition::Complete(Outcome::Done),
        Record::default(),
        None,
    );
    assert!(matches!(twice, Err(StoreError::Illegal { .. })));
    assert_eq!(
        store.get(&id).unwrap(),
        done,
        "a refused change changes nothing"
    );
}

#[test]
fn clearing_the_queue_cancels_queued_tasks_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
    let running = store.add(task("a", 0)).unwrap().id;
    start(&store, &running);
    store.add(task("b", 0)).unwrap();
    store.add(task("c", 0)).unwrap();

    let cancelled = store.clear_queue().unwrap();

    assert_eq!(cancelled.len(), 2);
    assert!(cancelled.iter().all(|t| t.state == TaskState::Cancelled));
    assert_eq!(store.get(&running).unwrap().state, TaskState::Running);
    assert_eq!(store.queued_in_order().unwrap(), Vec::new());
}

fn keyed(title: &str, key: &str) -> NewTask {
    NewTask {
        key: Some(key.into()),
        ..task(title, 0)
    }
}

#[test]
fn a_key_queues_its_work_once_whatever_became_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let first = store.add_all(vec![keyed("fix the flaky test", "flaky-1")]);
    let Ok([Added::Queued(first)]) = first.as_deref() else {
        panic!("queued: {first:?}")
    };
    assert_eq!(first.key.as_deref(), Some("flaky-1"));

    // The same call again (its answer was lost), in a batch with a new task.
    let again = store
        .add_all(vec![
            keyed("fix the flaky test", "flaky-1"),
            task("other", 0),
        ])
        .unwrap();
    assert_eq!(again[0], Added::Known(first.clone()));
    assert!(matches!(&again[1], Added::Queued(t) if t.title == "other"));

    // Once it ran and ended, the key still names it: a late retry starts nothing again.
    let running = start(&store, &first.id);
    store
        .transition(
            &first.id,
            Transition::Complete(Outcome::Done),
            Record::default(),
            running.lease().as_ref(),
        )
        .unwrap();
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    let late = store.add(keyed("fix the flaky test", "flaky-1")).unwrap();
    assert_eq!(
        (late.id.as_str(), late.state),
        (first.id.as_str(), TaskState::Done)
    );
    assert_eq!(store.list(None).unwrap().len(), 2);
}

#[test]
fn a_key_of_other_work_refuses_the_whole_call_and_queues_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
    let holder = store.add(keyed("bump serde", "deps")).unwrap();

    let refused = store.add_all(vec![task("fresh", 0), keyed("bump tokio", "deps")]);

    let Err(StoreError::KeyTaken { key, id, title }) = &refused else {
        panic!("refused: {refused:?}")
    };
    assert_eq!(
        (key.as_str(), id, title.as_str()),
        ("deps", &holder.id, "bump serde")
    );
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("nothing was queued")
    );
    assert_eq!(store.list(None).unwrap(), vec![holder]);
}

#[test]
fn one_call_that_names_a_key_twice_queues_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();

    let added = store
        .add_all(vec![keyed("a", "k"), keyed("a", "k")])
        .unwrap();

    let Added::Queued(queued) = &added[0] else {
        panic!("{added:?}")
    };
    assert_eq!(added[1], Added::Known(queued.clone()));
    assert_eq!(store.list(None).unwrap().len(), 1);
}

#[test]
fn an_empty_file_is_migrated_and_a_newer_or_foreign_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite3");
    std::fs::write(&empty, b"").unwrap();
    let store = SqliteStore::open(&empty).unwrap();
    store.add(task("a", 0)).unwrap();
    drop(store);
    // Opening at the current version runs no migration again.
    assert_eq!(
        SqliteStore::open(&empty).unwrap().list(None).unwrap().len(),
        1
    );

    let newer = dir.path().join("newer.sqlite3");
    let connection = Connection::open(&newer).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let error = SqliteStore::open(&newer).err().unwrap().to_string();
    assert!(
        error.contains("written by a newer drydock (schema 99"),
        "{error}"
    );

    let foreign = dir.path().join("notes.txt");
    std::fs::write(
        &foreign,
        "these are not the tasks you are looking for\n".repeat(200),
    )
    .unwrap();
    let error = SqliteStore::open(&foreign).err().unwrap();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(error.to_string().contains("move it away"), "{error}");
}

#[test]
fn a_file_of_the_first_schema_is_migrated_keeping_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite3");
    let connection = Connection::open(&path).unwrap();
    connection.execute_batch(MIGRATIONS[0]).unwrap();
    connection.pragma_update(None, "user_version", 1).unwrap();
    connection
        .execute(
            "INSERT INTO tasks (id, title, description, project_path, agent_kind, state,
                    created_at_ms) VALUES ('0000beef', 'old', 'old, please', '/p', 'claude',
                    'running', 1)",
            [],
        )
        .unwrap();
    drop(connection);

    let store = SqliteStore::open(&path).unwrap();
    let old = store.get("0000beef").unwrap();
    assert_eq!((old.title.as_str(), old.state), ("old", TaskState::Running));
    assert_eq!(
        (old.timeout_s, old.policy, old.attention),
        (None, None, None)
    );
    assert!(
        store
            .set_attention("0000beef", Some("waits: permission"), None)
            .unwrap()
    );
    assert!(
        !store
            .set_attention("0000beef", Some("waits: permission"), None)
            .unwrap()
    );
    let new = store
        .add(NewTask {
            timeout_s: Some(60),
            policy: Some("trusted".into()),
            ..task("new", 0)
        })
        .unwrap();
    assert_eq!(
        (new.timeout_s, new.policy.as_deref()),
        (Some(60), Some("trusted"))
    );
    let version: usize = store
        .lock()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, MIGRATIONS.len());
    let failed = store
        .transition("0000beef", Transition::Fail, Record::default(), None)
        .unwrap();
    assert_eq!(failed.attention, None, "a finished task needs no one");
}

#[test]
fn a_task_keeps_its_worktree_and_result_across_a_reopen() {
    use crate::tasks::isolation::{Checks, Disposition, Review, Worktree};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let id = store
        .add(NewTask {
            base: Some("release".into()),
            ..task("isolated", 0)
        })
        .unwrap()
        .id;
    let isolation = Isolation::Worktree(Worktree {
        repo: "/work/p".into(),
        path: "/data/worktrees/p-1/t".into(),
        dir: "/data/worktrees/p-1/t".into(),
        branch: format!("drydock/task-{id}"),
        base_ref: Some("release".into()),
        base_sha: "a".repeat(40),
        copied: vec!["deps".into()],
        notes: vec!["a note".into()],
        confinement: Some("bubblewrap".into()),
    });
    store.set_isolation(&id, &isolation).unwrap();
    let review = Review {
        head: "b".repeat(40),
        base: "a".repeat(40),
        committed_for_agent: true,
        commits: 1,
        files: Vec::new(),
        insertions: 0,
        deletions: 0,
        diff: String::new(),
        diff_cut: false,
        checks: Checks::Running,
        disposition: Disposition::Open,
        notes: Vec::new(),
    };
    store.set_review(&id, &review).unwrap();
    assert!(matches!(
        store.set_review("nope", &review),
        Err(StoreError::UnknownTask { .. })
    ));
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    let task = store.get(&id).unwrap();
    assert_eq!(task.base.as_deref(), Some("release"));
    assert!(!task.in_place);
    assert_eq!(task.isolation, Some(isolation));
    assert_eq!(task.review, Some(review));
    assert_eq!(task.work_dir(), "/data/worktrees/p-1/t");
    store.clear_review(&id).unwrap();
    assert_eq!(store.get(&id).unwrap().review, None);
}

#[test]
fn a_done_task_sent_back_keeps_its_landing_and_waits_for_a_person_with_why() {
    use crate::tasks::landing::{Failure, LandingState, SentBack};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let id = store.add(task("lands", 0)).unwrap().id;
    start(&store, &id);
    let done = Record {
        summary: Some("renamed it".into()),
        ..Record::default()
    };
    store
        .transition(&id, Transition::Complete(Outcome::Done), done, None)
        .unwrap();
    let mut landing = Landing::waiting("main", 1);
    landing.sent_back.push(SentBack {
        attempt: 1,
        head: "b".repeat(40),
        into: "main".into(),
        tip: "c".repeat(40),
        failure: Failure::Red {
            on_merged_tree: true,
            check: "test".into(),
            status: "build_failed".into(),
            detail: "error[E0425]".into(),
        },
        at_ms: 2,
    });
    landing.state = LandingState::WaitsForPerson {
        why: "its merged tree is red".into(),
    };
    store.set_landing(&id, &landing).unwrap();
    let waits = store.get(&id).unwrap();
    assert_eq!(waits.attention.as_deref(), Some("its merged tree is red"));
    landing.state = LandingState::SentBack { attempt: 2 };
    store.set_landing(&id, &landing).unwrap();
    assert_eq!(
        store.get(&id).unwrap().attention,
        None,
        "the why goes with it"
    );
    assert!(store.set_attention(&id, Some("a note"), None).unwrap());

    let again = store
        .transition(&id, Transition::SendBack, Record::default(), None)
        .unwrap();
    assert_eq!((again.state, again.attempts), (TaskState::Queued, 2));
    assert_eq!((again.summary, again.attention), (None, None));
    let sent_twice = store.transition(&id, Transition::SendBack, Record::default(), None);
    assert!(matches!(sent_twice, Err(StoreError::Illegal { .. })));
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.get(&id).unwrap().landing, Some(landing));
    assert!(
        !store.set_attention(&id, Some("queued"), None).unwrap(),
        "only a running or done task needs a person"
    );
}

#[test]
fn a_database_locked_by_another_process_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.sqlite3");
    drop(SqliteStore::open(&path).unwrap());
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let error = SqliteStore::open_waiting(&path, Duration::from_millis(100))
        .err()
        .unwrap();

    assert!(matches!(error, StoreError::Locked { .. }), "{error}");
    assert!(error.to_string().contains("locked by another process"));
}

/// Issue 48: the queue (prompts, notes, remote URLs) is readable by its user alone, the
/// write-ahead log included, whatever the umask.
#[test]
fn the_queue_is_its_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.sqlite3");
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    store.add(task("private", 0)).unwrap();
    for file in ["tasks.sqlite3", "tasks.sqlite3-wal"] {
        let Ok(meta) = std::fs::metadata(dir.path().join(file)) else {
            continue;
        };
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{file}");
    }
}
