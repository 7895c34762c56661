//! The control-mode client on a real tmux server: exact bytes, and the end of a session.

use super::*;

#[tokio::test]
async fn control_client_delivers_exact_bytes_without_resizing() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-ctl").await;
    let client = ControlClient::attach(&server.tmux, "drydock-ctl")
        .await
        .unwrap();
    let mut events = client.events();
    let received = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = received.clone();
    client.subscribe(
        &pane.id,
        Arc::new(move |bytes| sink.lock().unwrap().extend_from_slice(bytes)),
    );

    run_line(&server.tmux, &pane.id, r"printf 'a\033[31mb\n'").await;
    let expected = b"a\x1b[31mb\r\n";
    wait_until("colored output", || {
        let got = received.lock().unwrap().clone();
        async move { got.windows(expected.len()).any(|w| w == expected) }
    })
    .await;
    // A backslash and a byte above 0x7f survive the escaping too.
    run_line(&server.tmux, &pane.id, r"printf '\\\303\251\001\n'").await;
    let expected = b"\\\xc3\xa9\x01\r\n";
    wait_until("backslash and utf-8", || {
        let got = received.lock().unwrap().clone();
        async move { got.windows(expected.len()).any(|w| w == expected) }
    })
    .await;

    // The control client never changed the window's size.
    assert_eq!(server.tmux.pane_size(&pane.id).await.unwrap(), (24, 80));

    let lines = client
        .command("display-message -p '#{pane_id}'")
        .await
        .unwrap();
    assert_eq!(lines, vec![pane.id.clone()]);
    let err = client.command("no-such-command").await;
    assert!(matches!(err, Err(TmuxError::Command { .. })), "{err:?}");

    // The shell exits: the pane stays (remain-on-exit) and is reported dead with its status.
    run_line(&server.tmux, &pane.id, "exit 3").await;
    let exited = next_event(&mut events, "pane exited", |e| {
        matches!(e, ControlEvent::PaneExited { .. })
    })
    .await;
    assert_eq!(
        exited,
        ControlEvent::PaneExited {
            pane: pane.id.clone(),
            status: Some(3),
            signal: None
        }
    );

    // A new window, then the exited pane is killed: reported closed.
    let (argv, env) = TestServer::bash_spawn();
    server
        .tmux
        .new_window(
            "drydock-ctl",
            None,
            &Spawn {
                cwd: None,
                argv: &argv,
                env: &env,
            },
        )
        .await
        .unwrap();
    next_event(&mut events, "window added", |e| {
        matches!(e, ControlEvent::WindowAdded { .. })
    })
    .await;
    server.tmux.kill_pane(&pane.id).await.unwrap();
    let closed = next_event(&mut events, "pane closed", |e| {
        matches!(e, ControlEvent::PaneClosed { .. })
    })
    .await;
    assert_eq!(
        closed,
        ControlEvent::PaneClosed {
            pane: pane.id.clone()
        }
    );

    // Dropping the client ends the tmux -C process.
    drop(client);
    wait_until("control client detached", || async {
        server
            .tmux
            .run(strings(&["list-clients", "-F", "#{client_pid}"]))
            .await
            .unwrap()
            .trim()
            .is_empty()
    })
    .await;
}

/// The first event `wanted` accepts; on a timeout the panic names the events seen instead.
async fn next_event(
    events: &mut tokio::sync::broadcast::Receiver<ControlEvent>,
    what: &str,
    wanted: impl Fn(&ControlEvent) -> bool,
) -> ControlEvent {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(WAIT, async {
        loop {
            let event = events.recv().await.unwrap();
            if wanted(&event) {
                return event;
            }
            seen.push(event);
        }
    })
    .await;
    match found {
        Ok(event) => event,
        Err(_) => panic!("timed out: {what}; seen: {seen:?}"),
    }
}

#[tokio::test]
async fn control_client_reports_exit_when_the_session_dies() {
    let server = TestServer::new();
    let pane = server.bash_session("drydock-exit").await;
    let client = ControlClient::attach(&server.tmux, "drydock-exit")
        .await
        .unwrap();
    client.subscribe(&pane.id, Arc::new(|_| {}));
    let mut events = client.events();
    server.tmux.kill_session("drydock-exit").await.unwrap();
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, events.recv())
            .await
            .unwrap()
            .unwrap();
        let done = matches!(event, ControlEvent::Exited { .. });
        seen.push(event);
        if done {
            break;
        }
    }
    assert!(
        seen.contains(&ControlEvent::PaneClosed {
            pane: pane.id.clone()
        }),
        "{seen:?}"
    );
    assert!(
        !client.is_alive()
            || tokio::time::timeout(WAIT, async {
                while client.is_alive() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .is_ok()
    );

    let missing = ControlClient::attach(&server.tmux, "drydock-nope").await;
    assert!(
        matches!(
            missing,
            Err(TmuxError::UnknownTarget { .. }) | Err(TmuxError::NoServer { .. })
        ),
        "{:?}",
        missing.err()
    );
    server.bash_session("drydock-other").await;
    let missing = ControlClient::attach(&server.tmux, "drydock-nope").await;
    assert!(
        matches!(missing, Err(TmuxError::UnknownTarget { .. })),
        "{:?}",
        missing.err()
    );
    // And the command channel reports a gone client instead of hanging.
    assert!(matches!(
        client.command("list-windows").await,
        Err(TmuxError::ControlClientGone)
    ));
}
