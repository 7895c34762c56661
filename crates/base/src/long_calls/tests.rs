use super::*;

fn owner(client: &str) -> Owner {
    Owner {
        scope: "person".into(),
        client: client.into(),
    }
}

fn open(dir: &Path, ttl: Duration) -> Arc<LongCalls> {
    Arc::new(
        LongCalls::open(
            dir,
            ttl,
            Duration::from_secs(2),
            Arc::new(Events::default()),
        )
        .unwrap(),
    )
}

/// A task of client "c" that nothing cancels and nothing watches.
async fn begun(calls: &Arc<LongCalls>, tool: &str) -> Record {
    calls
        .begin(owner("c"), tool, CancellationToken::new(), Arc::default())
        .await
        .unwrap()
}

fn result(text: &str) -> Map<String, Value> {
    match json!({"content": [{"type": "text", "text": text}], "isError": false}) {
        Value::Object(object) => object,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn a_task_is_read_by_its_owner_only_and_ends_once() {
    let dir = tempfile::tempdir().unwrap();
    let calls = open(dir.path(), Duration::from_secs(3600));
    let watch = Arc::new(CallWatch::default());
    let cancel = CancellationToken::new();
    let record = calls
        .begin(
            owner("claude-code"),
            "compile",
            cancel.clone(),
            watch.clone(),
        )
        .await
        .unwrap();
    watch.report("3/10 Compiling serde".into());
    let seen = calls.get(&record.id, &owner("claude-code")).await.unwrap();
    assert_eq!(seen.state, State::Working);
    assert_eq!(seen.message.as_deref(), Some("3/10 Compiling serde"));

    let other = calls.get(&record.id, &owner("codex")).await.unwrap_err();
    assert!(matches!(other, LongCallError::NotYours { .. }), "{other}");
    let task_token = Owner {
        scope: "task 1234".into(),
        client: "claude-code".into(),
    };
    let scoped = calls.cancel(&record.id, &task_token).await.unwrap_err();
    assert!(matches!(scoped, LongCallError::NotYours { .. }), "{scoped}");
    assert!(!cancel.is_cancelled(), "a refused cancel changes nothing");
    let unknown = calls.get("0123", &owner("claude-code")).await.unwrap_err();
    assert!(
        matches!(unknown, LongCallError::Unknown { .. }),
        "{unknown}"
    );

    calls
        .end(&record.id, Ending::Completed(result("built")))
        .await;
    calls.end(&record.id, Ending::Cancelled).await;
    let ended = calls.get(&record.id, &owner("claude-code")).await.unwrap();
    assert_eq!(
        ended.state,
        State::Ended(Ending::Completed(result("built")))
    );
    calls
        .cancel(&record.id, &owner("claude-code"))
        .await
        .unwrap();
    let still = calls.get(&record.id, &owner("claude-code")).await.unwrap();
    assert_eq!(
        still.state,
        State::Ended(Ending::Completed(result("built"))),
        "a late cancel changes nothing"
    );
}

#[tokio::test]
async fn a_cancelled_task_stays_cancelled_when_its_call_ends_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let calls = open(dir.path(), Duration::from_secs(3600));
    let cancel = CancellationToken::new();
    let record = calls
        .begin(owner("c"), "test", cancel.clone(), Arc::default())
        .await
        .unwrap();
    calls.cancel(&record.id, &owner("c")).await.unwrap();
    assert!(cancel.is_cancelled());
    calls
        .end(&record.id, Ending::Completed(result("late")))
        .await;
    let seen = calls.get(&record.id, &owner("c")).await.unwrap();
    assert_eq!(seen.state, State::Ended(Ending::Cancelled));
}

#[tokio::test]
async fn a_restart_fails_the_tasks_a_stopped_drydock_left_and_keeps_ended_ones() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path(), Duration::from_secs(3600));
    let left = begun(&first, "compile").await;
    let done = begun(&first, "lint").await;
    first
        .end(&done.id, Ending::Completed(result("clean")))
        .await;

    // A second drydock beside the first leaves the first one's calls alone.
    let beside = open(dir.path(), Duration::from_secs(3600));
    assert_eq!(
        first.get(&left.id, &owner("c")).await.unwrap().state,
        State::Working
    );
    let elsewhere = beside.cancel(&left.id, &owner("c")).await.unwrap_err();
    assert!(
        matches!(elsewhere, LongCallError::Elsewhere { .. }),
        "{elsewhere}"
    );
    drop(beside);

    drop(first);
    let second = open(dir.path(), Duration::from_secs(3600));
    let failed = second.get(&left.id, &owner("c")).await.unwrap();
    let State::Ended(Ending::Failed(error)) = &failed.state else {
        panic!("{failed:?}");
    };
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("drydock stopped while this call ran"),
        "{error:?}"
    );
    let kept = second.get(&done.id, &owner("c")).await.unwrap();
    assert_eq!(kept.state, State::Ended(Ending::Completed(result("clean"))));
}

#[tokio::test]
async fn an_expired_task_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let calls = open(dir.path(), Duration::from_millis(1));
    let record = begun(&calls, "compile").await;
    calls
        .end(&record.id, Ending::Completed(result("built")))
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let expired = calls.get(&record.id, &owner("c")).await.unwrap_err();
    assert!(
        matches!(expired, LongCallError::Expired { .. }),
        "{expired}"
    );
    drop(calls);
    // Pruned at the next start: the outcome is gone, the id still says it expired.
    let again = open(dir.path(), Duration::from_secs(3600));
    let expired = again.get(&record.id, &owner("c")).await.unwrap_err();
    assert!(expired.to_string().contains("expired at"), "{expired}");
}

#[tokio::test]
async fn the_event_feed_hears_a_call_become_a_task_and_its_progress() {
    let dir = tempfile::tempdir().unwrap();
    let events = Arc::new(Events::default());
    let calls = Arc::new(
        LongCalls::open(
            dir.path(),
            Duration::from_secs(60),
            Duration::from_secs(2),
            events.clone(),
        )
        .unwrap(),
    );
    let mut feed = events.subscribe();
    let watch = Arc::new(CallWatch::default());
    watch.set_call_id(41);
    let record = calls
        .begin(owner("c"), "test", CancellationToken::new(), watch.clone())
        .await
        .unwrap();
    watch.report("2/5 tests".into());
    let mut heard = Vec::new();
    while heard.len() < 2 {
        let Some(crate::events::Received::Event(event)) = feed.recv().await else {
            continue;
        };
        heard.push(serde_json::to_value(&event).unwrap());
    }
    for (event, message) in heard.iter().zip([Value::Null, json!("2/5 tests")]) {
        assert_eq!(event["type"], "tool_call_task", "{event}");
        assert_eq!(event["call_id"], 41);
        assert_eq!(event["task_id"], record.id.as_str());
        assert_eq!(event["message"], message);
    }
    assert_eq!(
        events.recent_calls().len(),
        1,
        "the dashboard's history keeps the call's becoming a task, not its progress"
    );
}
