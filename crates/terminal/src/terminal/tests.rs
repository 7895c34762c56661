//! The facade on real bash sessions (PTYs): what it tells the event feed, and calls
//! cancelled through their `Call`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::requests::{
    CommandRequest, CreateRequest, ManageAction, ManageRequest, WaitMs, WaitRequest,
};
use super::{TerminalError, Terminals};
use crate::call::Call;
use crate::config::{Config, Overrides};
use crate::events::{Event, EventKind, Events, Received, Subscription};

/// Terminals whose only allowed root is a fresh directory, also the shells' HOME.
fn terminals() -> (Arc<Terminals>, Arc<Events>, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("drydock.toml"),
        "[terminal]\nshell = \"bash\"\n",
    )
    .unwrap();
    let overrides = Overrides {
        allow_roots: vec![home.path().to_path_buf()],
        ..Default::default()
    };
    let config = Config::resolve(&overrides, &|_| None, home.path()).unwrap();
    let events = Arc::new(Events::default());
    (
        Terminals::new(Arc::new(config), events.clone()),
        events,
        home,
    )
}

fn uncancelled() -> Call<'static> {
    Call::silent(CancellationToken::new())
}

/// A call cancelled `after` from now.
fn cancelled_after(after: Duration) -> Call<'static> {
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        canceller.cancel();
    });
    Call::silent(cancel)
}

async fn create(terminals: &Terminals, name: &str, home: &std::path::Path) {
    let home = home.to_str().unwrap().to_string();
    let request = CreateRequest {
        name: Some(name.into()),
        cwd: home.clone(),
        env: [("HOME".to_string(), home)].into(),
        ..Default::default()
    };
    terminals.create(request, &uncancelled()).await.unwrap();
}

fn command(session: &str, command: &str) -> CommandRequest {
    CommandRequest {
        session: session.into(),
        command: command.into(),
        timeout_ms: WaitMs::new(10_000),
        ..Default::default()
    }
}

/// A wait (of at most a minute) for the screen to match `pattern`.
fn shows(session: &str, pattern: &str) -> WaitRequest {
    WaitRequest {
        session: session.into(),
        pattern: Some(pattern.into()),
        max_wait_ms: WaitMs::new(60_000),
        ..Default::default()
    }
}

fn assert_cancelled_at_once<T: std::fmt::Debug>(
    result: Result<T, TerminalError>,
    started: Instant,
) {
    assert!(
        matches!(result, Err(TerminalError::Cancelled)),
        "{result:?}"
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "cancelled after {took:?}");
}

async fn next_event(feed: &mut Subscription) -> Event {
    let next = tokio::time::timeout(Duration::from_secs(10), feed.recv()).await;
    match next.expect("an event within 10 s") {
        Some(Received::Event(event)) => event,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_rename_goes_on_the_event_feed_and_the_exit_follows_it() {
    let (terminals, events, home) = terminals();
    let mut feed = events.subscribe();
    create(&terminals, "first", home.path()).await;
    let rename = ManageRequest {
        session: "first".into(),
        action: ManageAction::Rename,
        new_name: Some("second".into()),
        rows: None,
        cols: None,
    };
    let renamed = terminals.manage(rename).await.unwrap();
    assert_eq!(renamed.session, "second");
    assert_eq!(terminals.names(), ["second"]);
    let kill = ManageRequest {
        session: "second".into(),
        action: ManageAction::Kill,
        new_name: None,
        rows: None,
        cols: None,
    };
    terminals.manage(kill).await.unwrap();

    let created = EventKind::TerminalSessionCreated {
        session: "first".into(),
        backend: "pty",
    };
    assert_eq!(next_event(&mut feed).await.kind, created);
    let renamed = EventKind::TerminalSessionRenamed {
        from: "first".into(),
        to: "second".into(),
    };
    assert_eq!(next_event(&mut feed).await.kind, renamed);
    let EventKind::TerminalSessionExited { session, .. } = next_event(&mut feed).await.kind else {
        panic!("the session's exit comes next");
    };
    assert_eq!(session, "second");
}

#[tokio::test]
async fn a_cancelled_wait_returns_at_once() {
    let (terminals, _events, home) = terminals();
    create(&terminals, "w", home.path()).await;
    let started = Instant::now();
    let call = cancelled_after(Duration::from_millis(200));
    let waited = terminals.wait(shows("w", "never shown"), &call).await;
    assert_cancelled_at_once(waited, started);
}

#[tokio::test]
async fn a_cancelled_run_returns_at_once_and_its_command_runs_on() {
    let (terminals, _events, home) = terminals();
    create(&terminals, "r", home.path()).await;
    let started = Instant::now();
    let call = cancelled_after(Duration::from_millis(300));
    let cancelled = terminals
        .run(command("r", "sleep 2; echo $((6 * 7))done"), &call)
        .await;
    assert_cancelled_at_once(cancelled, started);

    let finished = shows("r", "^42done");
    let waited = terminals.wait(finished, &uncancelled()).await.unwrap();
    assert!(waited.outcome.completed, "{waited:?}");
    let again = terminals
        .run(command("r", "echo again"), &uncancelled())
        .await
        .unwrap();
    assert_eq!(again.outcome.output, "again\n", "{again:?}");
}
