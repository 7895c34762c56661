//! Issue 48: drydock's local port is its user's. Without a token a loopback connection is
//! served only when its socket belongs to the server's own user (a second, real user gets a
//! 403 on every route), and every route answers to loopback `Host` names alone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::support::*;

/// The user the tests add to reach drydock as someone else on the same machine.
const OTHER_USER: &str = "drydock-lab-other";

/// `GET path` with `host` as the Host header; the response's status code.
fn status_with_host(base: &str, path: &str, host: &str) -> u16 {
    let authority = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(authority).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn every_route_answers_to_loopback_names_alone() {
    let server = Server::start(&[]);
    let base = server.base_url();
    let authority = base.trim_start_matches("http://").to_string();
    for path in [
        "/",
        "/health",
        "/hosts/anything/open",
        "/assets/app.js",
        "/mcp",
    ] {
        for forged in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
            assert_eq!(
                status_with_host(&base, path, forged),
                403,
                "{path} {forged}"
            );
        }
    }
    assert_eq!(status_with_host(&base, "/health", &authority), 200);
    assert_eq!(status_with_host(&base, "/health", "localhost"), 200);
}

/// The uid of the machine's second user, added once (the tests run as root, as CI does).
fn other_user() -> u32 {
    let id = || {
        Command::new("id")
            .args(["-u", OTHER_USER])
            .output()
            .unwrap()
    };
    if !id().status.success() {
        let added = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/bin/sh",
                OTHER_USER,
            ])
            .output()
            .expect("useradd runs (the tests need root to add the second user)");
        let existed = String::from_utf8_lossy(&added.stderr).contains("already exists");
        assert!(
            added.status.success() || existed,
            "useradd {OTHER_USER} (the tests need root): {}",
            String::from_utf8_lossy(&added.stderr)
        );
    }
    let uid = String::from_utf8(id().stdout).unwrap();
    uid.trim().parse().unwrap()
}

/// `GET /health` then `GET /` from a process of user `uid`: each response's first line.
fn as_user(uid: u32, base: &str, token: Option<&str>) -> String {
    let port = base.rsplit(':').next().unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\\r\\n"))
        .unwrap_or_default();
    let script = format!(
        "for path in /health /; do exec 3<>/dev/tcp/127.0.0.1/{port} && \
         printf 'GET %s HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n{auth}Connection: close\\r\\n\\r\\n' \"$path\" >&3 && \
         head -1 <&3; exec 3<&-; done"
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir("/")
        .uid(uid)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

#[tokio::test]
async fn another_local_user_gets_403_from_a_server_without_a_token() {
    let other = other_user();
    let drydock::http::Peers::User(me) = drydock::http::Peers::own_user() else {
        unreachable!("a user's peers")
    };
    assert_ne!(other, me);
    let server = Server::start(&[]);
    let base = server.base_url();

    let refused = as_user(other, &base, None);
    assert_eq!(refused.matches(" 403 ").count(), 2, "{refused}");
    let mine = as_user(me, &base, None);
    assert!(mine.lines().all(|l| l.contains(" 200 ")), "{mine}");
    assert_eq!(mine.lines().count(), 2, "{mine}");
    let client = modern_client(&server.url).await;
    call_ok(&client, "terminal_list", serde_json::json!({})).await;
    client.cancel().await.ok();

    let guarded = Server::start(&["--token", "lab-token"]);
    let served = as_user(other, &guarded.base_url(), Some("lab-token"));
    assert!(
        served.lines().next().unwrap_or_default().contains(" 200 "),
        "{served}"
    );
}
