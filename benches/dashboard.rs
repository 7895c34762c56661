//! The dashboard's WebSocket, measured from a client that speaks it as the page does (no
//! browser: what is measured is drydock's side): keystroke → echo latency against a plain
//! round trip on the same socket; terminal bytes per second to one viewer and to four
//! against the terminal with no viewer; server memory per connected viewer; and what a
//! viewer that stops reading while a terminal prints 100 MB costs in RSS.
//! `DRYDOCK_BENCH_ITERS` keystrokes (default 200).

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod support;

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::*;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

const FLOOD_BYTES: u64 = 100_000_000;
const VIEWERS_FOR_MEMORY: usize = 20;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let keystrokes = iterations(200);
    let shutdown = CancellationToken::new();
    let url = start_server(&shutdown).await;
    let base = url.trim_end_matches("/mcp").to_string();
    let client = connect(&url).await;
    let session = new_shell(&client).await;

    let mut page = open(&base).await;
    let channel = watch(&mut page, &session).await;
    let (round_trips, echoes) = keystroke_latency(&mut page, &session, channel, keystrokes).await;
    println!(
        "dashboard: {keystrokes} keystrokes into bash in a drydock PTY, over the page's socket"
    );
    println!(
        "  keystroke -> echo    p50 {:.2} ms, p99 {:.2} ms",
        percentile(&echoes, 50.0),
        percentile(&echoes, 99.0)
    );
    println!(
        "  baseline: a tool call round trip on the same socket p50 {:.2} ms: the echo is {:.1}x it",
        percentile(&round_trips, 50.0),
        percentile(&echoes, 50.0) / percentile(&round_trips, 50.0)
    );

    let megabytes = 20;
    // The marker is computed by the shell, so the typed command line does not end the count,
    // and differs per run, since a new viewer gets the history with the earlier runs' markers.
    let flood = |run: u32| Flood {
        command: format!(
            "head -c {megabytes}000000 /dev/zero | tr '\\0' 'a'; echo; echo FLOOD-$((1+{run}))END"
        ),
        marker: format!("FLOOD-{}END", 1 + run),
    };
    let alone = timed_run(&client, &session, &flood(0).command).await;
    let one = flood_to_viewers(&base, &client, &session, flood(1), 1).await;
    let four = flood_to_viewers(&base, &client, &session, flood(2), 4).await;
    println!("terminal output, {megabytes} MB through bash");
    println!(
        "  no viewer: the command takes {:.2} s ({:.1} MB/s)",
        alone.as_secs_f64(),
        megabytes as f64 / alone.as_secs_f64()
    );
    for (viewers, rate) in [(1, one), (4, four)] {
        println!(
            "  {viewers} viewer(s): {rate:.1} MB/s to each ({:.0}% of the terminal alone)",
            100.0 * rate / (megabytes as f64 / alone.as_secs_f64())
        );
    }

    let before = rss_kib();
    let mut viewers = Vec::new();
    for _ in 0..VIEWERS_FOR_MEMORY {
        let mut viewer = open(&base).await;
        watch(&mut viewer, &session).await;
        viewers.push(viewer);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_viewer = (rss_kib() - before) as f64 / VIEWERS_FOR_MEMORY as f64;
    drop(viewers);
    println!(
        "memory: {per_viewer:.0} KiB of server RSS per connected viewer ({VIEWERS_FOR_MEMORY} viewers)"
    );

    let big = format!("head -c {FLOOD_BYTES} /dev/zero | tr '\\0' 'b'; echo");
    let before = rss_kib();
    let took = timed_run(&client, &session, &big).await;
    let unwatched = rss_kib().saturating_sub(before);
    let mut stalled = open(&base).await;
    watch(&mut stalled, &session).await;
    let before = rss_kib();
    let took_stalled = timed_run(&client, &session, &big).await;
    let grown = rss_kib().saturating_sub(before);
    println!(
        "{} MB printed by the terminal, server RSS growth:",
        FLOOD_BYTES / 1_000_000
    );
    println!(
        "  baseline, no viewer: {unwatched} KiB; the command took {:.1} s",
        took.as_secs_f64()
    );
    println!(
        "  a viewer that stops reading: {grown} KiB ({:+} KiB against no viewer); the command took {:.1} s",
        grown as i64 - unwatched as i64,
        took_stalled.as_secs_f64()
    );
    drop(stalled);
    shutdown.cancel();
}

async fn open(base: &str) -> Socket {
    let ws = base.replace("http://", "ws://") + "/dashboard/ws";
    let (socket, _) = tokio_tungstenite::connect_async(ws)
        .await
        .expect("the socket opens");
    socket
}

/// Watches `session`; its channel, once its first redraw arrived.
async fn watch(page: &mut Socket, session: &str) -> u32 {
    let request = json!({"type": "watch", "session": session}).to_string();
    page.send(Message::Text(request.into())).await.unwrap();
    let mut channel = None;
    loop {
        match page.next().await.unwrap().unwrap() {
            Message::Text(text) => {
                let value: Value = serde_json::from_str(&text).unwrap();
                if value["type"] == "screen" && value["session"] == session {
                    channel = value["channel"].as_u64().map(|c| c as u32);
                }
            }
            Message::Binary(bytes)
                if channel.is_some()
                    && Some(u32::from_be_bytes(bytes[..4].try_into().unwrap())) == channel =>
            {
                return channel.unwrap();
            }
            _ => {}
        }
    }
}

async fn keystroke_latency(
    page: &mut Socket,
    session: &str,
    channel: u32,
    keystrokes: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut round_trips, mut echoes) = (Vec::new(), Vec::new());
    for n in 0..keystrokes {
        let start = Instant::now();
        let call = json!({"type": "call", "id": n, "tool": "terminal_list", "arguments": {}});
        page.send(Message::Text(call.to_string().into()))
            .await
            .unwrap();
        until(page, |message| match message {
            Message::Text(text) => text.contains("\"type\":\"result\""),
            _ => false,
        })
        .await;
        round_trips.push(start.elapsed());

        let key = if n % 2 == 0 { "q" } else { "\u{7f}" };
        let start = Instant::now();
        let input = json!({"type": "input", "session": session, "data": key});
        page.send(Message::Text(input.to_string().into()))
            .await
            .unwrap();
        until(page, |message| match message {
            Message::Binary(bytes) => {
                u32::from_be_bytes(bytes[..4].try_into().unwrap()) == channel && bytes.len() > 4
            }
            _ => false,
        })
        .await;
        echoes.push(start.elapsed());
    }
    (round_trips, echoes)
}

async fn until(page: &mut Socket, wanted: impl Fn(&Message) -> bool) {
    loop {
        let message = page.next().await.unwrap().unwrap();
        if wanted(&message) {
            return;
        }
    }
}

/// How long `command` takes in `session` (terminal_run waits for it to end).
async fn timed_run(client: &Client, session: &str, command: &str) -> Duration {
    let start = Instant::now();
    let ran = call(
        client,
        "terminal_run",
        json!({"session": session, "command": command, "timeout_ms": 600000, "max_output_bytes": 1024}),
    )
    .await;
    assert_eq!(ran["exit_code"], 0, "{ran:#}");
    start.elapsed()
}

/// A command that prints a lot, then `marker`.
struct Flood {
    command: String,
    marker: String,
}

/// MB/s each of `count` viewers receives while `flood` floods `session`, up to its marker.
async fn flood_to_viewers(
    base: &str,
    client: &Client,
    session: &str,
    flood: Flood,
    count: usize,
) -> f64 {
    let mut readers = Vec::new();
    for _ in 0..count {
        let mut page = open(base).await;
        let channel = watch(&mut page, session).await;
        let marker = flood.marker.clone();
        readers.push(tokio::spawn(async move {
            let start = Instant::now();
            let mut bytes = 0u64;
            let mut tail = Vec::new();
            let read = async {
                while let Some(Ok(message)) = page.next().await {
                    if let Message::Binary(frame) = message
                        && u32::from_be_bytes(frame[..4].try_into().unwrap()) == channel
                    {
                        bytes += frame.len() as u64 - 4;
                        tail.extend_from_slice(&frame[4..]);
                        if tail.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                            return;
                        }
                        tail.drain(..tail.len().saturating_sub(16));
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(300), read)
                .await
                .expect("the viewer saw the end of the flood");
            bytes as f64 / 1e6 / start.elapsed().as_secs_f64()
        }));
    }
    timed_run(client, session, &flood.command).await;
    let mut rates = Vec::new();
    for reader in readers {
        rates.push(reader.await.unwrap());
    }
    rates.iter().sum::<f64>() / rates.len() as f64
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}
