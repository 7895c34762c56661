//! A host of a shared queue while its PostgreSQL stops answering: every server process
//! SIGSTOPped for 25 s, as a long lock, a failover or a network partition looks from outside
//! (connections stay open, nothing answers). The tools that do not need the queue answer at
//! once all along; a queue call answers within its deadline, saying what is wrong; the
//! dashboard's feed says the queue is unreachable and then that it is back; once the database
//! answers again, everything works and nothing queued was lost.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::postgres::Postgres;
use crate::support::*;

const OUTAGE: Duration = Duration::from_secs(25);

type Page =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The dashboard's socket, as the page opens it (a server without a token needs no login).
async fn dashboard(server: &Server) -> Page {
    let ws = server.base_url().replace("http://", "ws://") + "/dashboard/ws";
    tokio_tungstenite::connect_async(ws)
        .await
        .expect("the dashboard's socket opens")
        .0
}

/// Waits for the feed's `queue_health` event that says `answering`; its `why`.
async fn queue_health(page: &mut Page, answering: bool) -> Value {
    let wanted = async {
        while let Some(message) = page.next().await {
            let Ok(Message::Text(text)) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).unwrap();
            let event = &value["event"];
            if event["type"] == "queue_health" && event["answering"] == answering {
                return event["why"].clone();
            }
        }
        panic!("the dashboard's socket closed");
    };
    tokio::time::timeout(Duration::from_secs(60), wanted)
        .await
        .unwrap_or_else(|_| panic!("no queue_health event with answering: {answering}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_database_stalls_only_the_calls_that_need_it() {
    let postgres = Postgres::start();
    let url = postgres.database("outage");
    let server = Server::start_with_config(&format!(
        "[tasks]\nstore = \"{url}\"\nhost = \"solo\"\nlease_s = 5\n\n[agents.commands]\nclaude = \"/bin/sh\"\n"
    ));
    let client = modern_client(&server.url).await;
    let project = path_arg(&test_project("cargo-clean"));
    let task = |title: &str| json!({"tasks": [{"title": title, "project_path": project}]});
    let added = call_ok(&client, "task_add", task("queued before the outage")).await;
    let kept = added["added"][0]["id"].as_str().unwrap().to_string();
    call_ok(&client, "project_info", json!({"project_path": project})).await;
    let mut page = dashboard(&server).await;

    postgres.pause();
    let stopped = Instant::now();
    let queue_call = {
        let peer = client.peer().clone();
        tokio::spawn(async move {
            let asked = Instant::now();
            let listed = call(&peer, "task_list", json!({})).await;
            (asked.elapsed(), listed)
        })
    };
    // A terminal listing is answered from memory, project_info runs `cargo metadata`: both
    // take milliseconds on a quiet machine and took 30 s each before the queue moved off the
    // runtime. The bounds leave room for the other suites that run beside this one.
    let mut slowest = [Duration::ZERO; 2];
    let mut calls = 0;
    while stopped.elapsed() < OUTAGE {
        for (n, (tool, arguments)) in [
            ("terminal_list", json!({})),
            ("project_info", json!({"project_path": project})),
        ]
        .into_iter()
        .enumerate()
        {
            let asked = Instant::now();
            call_ok(&client, tool, arguments).await;
            slowest[n] = slowest[n].max(asked.elapsed());
            calls += 1;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        slowest[0] < Duration::from_secs(3) && slowest[1] < Duration::from_secs(5),
        "tools that need no queue answer while its database is stopped; the slowest of {calls} calls (terminal_list, project_info): {slowest:?}"
    );
    let (took, listed) = queue_call.await.unwrap();
    let said = text_of(&listed);
    assert_eq!(listed.is_error, Some(true), "{said}");
    assert!(
        took < Duration::from_secs(10),
        "a queue call answers within its deadline: {took:?}"
    );
    assert!(
        said.contains("is not answering") && said.contains("127.0.0.1"),
        "{said}"
    );
    let why = queue_health(&mut page, false).await;
    assert!(
        why.as_str().is_some_and(|w| w.contains("not answering")),
        "{why}"
    );
    let keyed = json!({"tasks": [
        {"title": "asked during the outage", "project_path": project, "key": "outage-1"}
    ]});
    let failed_add = call(&client, "task_add", keyed.clone()).await;
    assert_eq!(failed_add.is_error, Some(true));
    assert!(
        text_of(&failed_add).contains("call task_add again with the same keys"),
        "{}",
        text_of(&failed_add)
    );

    postgres.resume();
    queue_health(&mut page, true).await;
    let listing = until_read(
        Duration::from_secs(30),
        || call(&client, "task_list", json!({})),
        |listed| listed.is_error == Some(false),
    )
    .await
    .unwrap_or_else(|listed| panic!("{}", text_of(&listed)))
    .structured_content
    .unwrap();
    assert!(
        listing["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == kept.as_str() && t["state"] == "queued"),
        "{listing:#}"
    );
    // The call that timed out may have been made once the database answered again, or not:
    // made again with its key, it is queued exactly once either way.
    call_ok(&client, "task_add", keyed).await;
    let listing = call_ok(&client, "task_list", json!({})).await;
    let titles: Vec<&str> = listing["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles
            .iter()
            .filter(|t| **t == "asked during the outage")
            .count(),
        1,
        "{titles:?}"
    );
    call_ok(&client, "task_add", task("queued after the outage")).await;
    let hosts = call_ok(&client, "task_list", json!({})).await["queue"]["hosts"].clone();
    assert_eq!(hosts[0]["name"], "solo", "{hosts:#}");
}
