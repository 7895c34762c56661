use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use super::*;

fn list(entries: &[&str]) -> Result<AllowList, NetGateError> {
    AllowList::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>())
}

/// A running gate: its socket, the destinations it refused, and its stop.
struct Gate {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    refused: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn start_gate(allowed: &[String]) -> Gate {
    start_gate_with(AllowList::parse(allowed).unwrap())
}

fn start_gate_with(allow: AllowList) -> Gate {
    start_keyed_gate(allow, Vec::new())
}

fn start_keyed_gate(allow: AllowList, keyed: Vec<KeyedOrigin>) -> Gate {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("net.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let allow = Arc::new(allow);
    let refused = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let seen = refused.clone();
    tokio::spawn(serve(
        listener,
        allow,
        keyed.into(),
        Arc::new(move |destination: &str| seen.lock().unwrap().push(destination.to_string())),
        stop.clone(),
    ));
    Gate {
        _dir: dir,
        socket,
        refused,
        stop,
    }
}

/// A TCP echo server on 127.0.0.1; its port.
async fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    port
}

async fn exchange(socket: &PathBuf, request: &[u8]) -> String {
    let mut client = UnixStream::connect(socket).await.unwrap();
    client.write_all(request).await.unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).await.unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test]
async fn an_allowed_connect_reaches_the_destination_and_carries_bytes_both_ways() {
    let port = echo_server().await;
    let gate = start_gate(&[format!("127.0.0.1:{port}")]);
    let mut client = UnixStream::connect(&gate.socket).await.unwrap();
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    client.write_all(request.as_bytes()).await.unwrap();
    let established = b"HTTP/1.1 200 Connection Established\r\n\r\n";
    let mut answer = vec![0u8; established.len()];
    client.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer, established);

    client.write_all(b"ping").await.unwrap();
    let mut echoed = [0u8; 4];
    client.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");
    client.shutdown().await.unwrap();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    assert!(gate.refused.lock().unwrap().is_empty());
}

#[tokio::test]
async fn bytes_sent_with_the_connect_head_are_forwarded() {
    let port = echo_server().await;
    let gate = start_gate(&[format!("localhost:{port}"), format!("127.0.0.1:{port}")]);
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nearly");
    let mut client = UnixStream::connect(&gate.socket).await.unwrap();
    client.write_all(request.as_bytes()).await.unwrap();
    client.shutdown().await.unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&response),
        "HTTP/1.1 200 Connection Established\r\n\r\nearly"
    );
}

#[tokio::test]
async fn a_refused_connect_gets_403_and_no_connection_is_opened() {
    let destination = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = destination.local_addr().unwrap().port();
    let gate = start_gate(&["api.example.com:443".to_string()]);
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let response = exchange(&gate.socket, request.as_bytes()).await;

    assert!(
        response.starts_with("HTTP/1.1 403 Forbidden\r\n"),
        "{response}"
    );
    assert!(
        response.contains(&format!("127.0.0.1:{port} is not reachable")),
        "{response}"
    );
    assert!(
        response.contains("allows only the hosts listed"),
        "{response}"
    );
    assert_eq!(*gate.refused.lock().unwrap(), [format!("127.0.0.1:{port}")]);
    // A connection the gate made would be waiting in the listener's backlog.
    destination.set_nonblocking(true).unwrap();
    let accepted = destination.accept();
    assert!(
        accepted
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "{accepted:?}"
    );
}

#[tokio::test]
async fn an_absolute_form_request_reaches_the_origin_in_origin_form() {
    let origin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = origin.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut stream, _) = origin.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .await
            .unwrap();
        String::from_utf8(head).unwrap()
    });
    let gate = start_gate(&[format!("127.0.0.1:{port}")]);
    let request = format!(
        "GET http://127.0.0.1:{port}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Proxy-Authorization: Basic c2VjcmV0\r\nAccept: */*\r\n\r\n"
    );
    let response = exchange(&gate.socket, request.as_bytes()).await;

    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nok"), "{response}");
    let head = server.await.unwrap().to_ascii_lowercase();
    assert!(head.starts_with("get /path?q=1 http/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("host: 127.0.0.1:{port}\r\n")),
        "{head}"
    );
    assert!(head.contains("accept: */*\r\n"), "{head}");
    assert!(!head.contains("proxy-authorization"), "{head}");
}

#[tokio::test]
async fn a_destination_that_refuses_gets_502_with_the_reason() {
    // Bound and not listening: connections to it are refused, and no other test gets it.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    let gate = start_gate(&[format!("127.0.0.1:{port}")]);
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    let response = exchange(&gate.socket, request.as_bytes()).await;
    assert!(
        response.starts_with("HTTP/1.1 502 Bad Gateway\r\n"),
        "{response}"
    );
    assert!(
        response.contains(&format!("could not reach 127.0.0.1:{port}")),
        "{response}"
    );
}

#[tokio::test]
async fn garbage_and_origin_form_requests_get_400() {
    let gate = start_gate(&["127.0.0.1:80".to_string()]);
    for request in [
        "hello there\r\n\r\n",
        "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
        "GET http://user@127.0.0.1/ HTTP/1.1\r\n\r\n",
        "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
        "CONNECT 127.0.0.1:80 HTTP/2\r\n\r\n",
        "CONNECT \x1b[31mred.example.com:443 HTTP/1.1\r\n\r\n",
    ] {
        let response = exchange(&gate.socket, request.as_bytes()).await;
        assert!(
            response.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{request:?}: {response}"
        );
    }
    assert!(gate.refused.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_head_over_16_kib_gets_431() {
    let gate = start_gate(&["127.0.0.1:80".to_string()]);
    let mut request = b"GET http://127.0.0.1/ HTTP/1.1\r\nX-Filler: ".to_vec();
    request.resize(MAX_HEAD + 1024, b'a');
    let response = exchange(&gate.socket, &request).await;
    assert!(
        response.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{response}"
    );
}

#[test]
fn an_allow_list_matches_names_in_any_case_and_wildcards_below_their_domain() {
    let allow = list(&[
        "API.Anthropic.com:443",
        "*.example.com:443",
        "10.0.0.1:8080",
    ])
    .unwrap();
    assert!(allow.allows("api.anthropic.com", 443));
    assert!(allow.allows("API.ANTHROPIC.COM.", 443));
    assert!(!allow.allows("api.anthropic.com", 80));
    assert!(!allow.allows("anthropic.com", 443));
    assert!(allow.allows("a.example.com", 443));
    assert!(allow.allows("b.a.Example.com", 443));
    assert!(!allow.allows("example.com", 443));
    assert!(!allow.allows("badexample.com", 443));
    assert!(!allow.allows("a.example.com", 8443));
    assert!(allow.allows("10.0.0.1", 8080));
    assert!(!allow.allows("10.0.0.01", 8080));
    assert!(!allow.allows("", 443));
    assert_eq!(
        allow.to_string(),
        "api.anthropic.com:443, *.example.com:443, 10.0.0.1:8080"
    );
}

#[test]
fn an_allow_list_takes_ipv6_in_brackets() {
    let allow = list(&["[::1]:8080"]).unwrap();
    assert!(allow.allows("::1", 8080));
    assert!(allow.allows("[0:0::1]", 8080));
    assert!(!allow.allows("::1", 8081));
    assert!(!allow.allows("127.0.0.1", 8080));
    assert_eq!(allow.to_string(), "[::1]:8080");
}

#[test]
fn an_allow_list_refuses_bad_entries_with_the_reason() {
    let cases = [
        ("api.example.com", "no port"),
        ("api.example.com:0", "not a port"),
        ("api.example.com:https", "not a port"),
        ("api.example.com:70000", "not a port"),
        ("::1:8080", "in brackets"),
        ("[::1:8080", "closing `]`"),
        ("[example.com]:80", "not an IPv6 address"),
        ("*.com:443", "too broad"),
        ("*.10.0.0.1:443", "not IP addresses"),
        ("a.*.example.com:443", "whole first label"),
        ("*:443", "whole first label"),
        ("exa mple.com:443", "neither an IP address nor a host name"),
        ("-bad.example.com:443", "neither"),
        (":443", "neither"),
        ("127.1:443", "neither"),
    ];
    for (entry, reason) in cases {
        let error = list(&[entry]).unwrap_err().to_string();
        assert!(error.contains(entry), "{entry}: {error}");
        assert!(error.contains(reason), "{entry}: {error}");
    }
    assert!(list(&[]).unwrap().is_empty());
}

#[test]
fn requests_are_read_into_their_destination() {
    assert_eq!(
        parse_request(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n"),
        Some(Request::Connect {
            host: "::1".into(),
            port: 443
        })
    );
    assert_eq!(
        parse_request(b"POST HTTP://Example.com?x=1 HTTP/1.0\r\nHost: example.com\r\n\r\n"),
        Some(Request::Forward {
            host: "Example.com".into(),
            port: 80
        })
    );
}

/// A stand-in origin on loopback that answers every request on a connection with `ok` and
/// records every byte it was sent; its port and what it saw.
/// Keeps what `stream` sends in `record` and answers each request head with a 200.
async fn record_and_answer<S>(mut stream: S, record: Arc<Mutex<Vec<u8>>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buffer = [0u8; 4096];
    let mut pending = Vec::new();
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        record.lock().unwrap().extend_from_slice(&buffer[..n]);
        pending.extend_from_slice(&buffer[..n]);
        while let Some(end) = head_end(&pending, 0) {
            pending.drain(..end);
            let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if stream.write_all(answer).await.is_err() {
                return;
            }
        }
    }
}

async fn recording_origin() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(record_and_answer(stream, record.clone()));
        }
    });
    (port, seen)
}

/// Issue 48: a kept-alive connection to an allowed origin carries requests for that origin
/// alone: a second request naming another site gets a 403 and never reaches the origin, in a
/// tunnel as in absolute form.
#[tokio::test]
async fn every_request_on_a_connection_must_name_its_origin() {
    let (port, seen) = recording_origin().await;
    let gate = start_gate(&[format!("127.0.0.1:{port}")]);
    let first = format!("GET /a HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let forged = "GET /b HTTP/1.1\r\nHost: forged.example\r\nConnection: close\r\n\r\n";
    let tunnel = format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n{first}{forged}"
    );
    let answer = exchange(&gate.socket, tunnel.as_bytes()).await;
    assert!(answer.contains(" 200 OK\r\n"), "{answer}");
    assert!(answer.contains(" 403 Forbidden\r\n"), "{answer}");
    assert!(answer.contains("forged.example"), "{answer}");

    let absolute = format!(
        "GET http://127.0.0.1:{port}/c HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n\
         GET http://forged.example/d HTTP/1.1\r\nHost: forged.example\r\n\r\n\
         GET http://127.0.0.1:{port}/e HTTP/1.1\r\nHost: forged.example\r\nConnection: close\r\n\r\n"
    );
    let answer = exchange(&gate.socket, absolute.as_bytes()).await;
    assert_eq!(answer.matches(" 403 Forbidden\r\n").count(), 2, "{answer}");
    let seen = String::from_utf8_lossy(&seen.lock().unwrap()).to_ascii_lowercase();
    assert!(
        seen.contains("get /a ") && seen.contains("get /c "),
        "{seen}"
    );
    assert!(
        !seen.contains("forged"),
        "the origin saw a forged request: {seen}"
    );
}

/// Issue 48: a TLS handshake in a tunnel asks for the name the tunnel was opened to, or the
/// tunnel ends before the origin sees a byte of it.
#[tokio::test]
async fn a_tls_server_name_other_than_the_tunnels_is_refused() {
    let (port, seen) = recording_origin().await;
    let allow = AllowList::parse(&[format!("localhost:{port}")])
        .unwrap()
        .with_private_names(true);
    let gate = start_gate_with(allow);
    let connect = format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut forged = connect.clone().into_bytes();
    forged.extend(client_hello::record_for(Some("fronted.example")));
    let answer = exchange(&gate.socket, &forged).await;
    assert_eq!(answer, "HTTP/1.1 200 Connection Established\r\n\r\n");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the origin saw the forged handshake"
    );
    assert!(
        gate.refused
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.contains("fronted.example")),
        "{:?}",
        gate.refused.lock().unwrap()
    );

    let mut client = UnixStream::connect(&gate.socket).await.unwrap();
    let mut honest = connect.into_bytes();
    let hello = client_hello::record_for(Some("localhost"));
    honest.extend(&hello);
    client.write_all(&honest).await.unwrap();
    let mut established = [0u8; 39];
    client.read_exact(&mut established).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < hello.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handshake never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*seen.lock().unwrap(), hello);
}

/// Issue 48: an allowed name that resolves to loopback is not connected unless the list
/// allows private names; an address named as such is.
#[tokio::test]
async fn a_name_is_no_way_to_loopback() {
    let port = echo_server().await;
    let gate = start_gate(&[format!("localhost:{port}")]);
    let request = format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let answer = exchange(&gate.socket, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(answer.contains("loopback or private"), "{answer}");
    assert!(is_public("93.184.216.34".parse().unwrap()));
    for private in [
        "10.1.2.3",
        "192.168.0.1",
        "172.20.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
    ] {
        assert!(!is_public(private.parse().unwrap()), "{private}");
    }
}

/// Issue 48: one sandbox cannot hold the proxy's connections without end.
#[tokio::test]
async fn a_sandbox_has_a_bounded_number_of_connections() {
    let gate = start_gate(&["127.0.0.1:9".to_string()]);
    let mut held = Vec::new();
    for _ in 0..MOST_CONNECTIONS {
        let mut client = UnixStream::connect(&gate.socket).await.unwrap();
        client.write_all(b"CONN").await.unwrap();
        held.push(client);
    }
    // Accepted in order: the 64 above hold every slot (each waits for the rest of its head).
    let answer = exchange(&gate.socket, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    drop(held);
}

fn keyed_origin(port: u16, tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>) -> KeyedOrigin {
    KeyedOrigin {
        host: "127.0.0.1".into(),
        port,
        tls,
        secrets: vec![("drydock-placeholder-7".into(), "sk-lab-secret".into())],
    }
}

/// Issue 48: the model API's key stays with the proxy. Plain HTTP to a keyed origin gets the
/// key where the placeholder was and the origin's `Host`, whatever the request named; the same
/// placeholder sent to another allowed origin stays a placeholder.
#[tokio::test]
async fn a_keyed_origin_gets_the_key_and_no_other_origin_does() {
    let (keyed_port, keyed_saw) = recording_origin().await;
    let (other_port, other_saw) = recording_origin().await;
    let allow = list(&[
        &format!("127.0.0.1:{keyed_port}"),
        &format!("127.0.0.1:{other_port}"),
    ])
    .unwrap();
    let gate = start_keyed_gate(allow, vec![keyed_origin(keyed_port, None)]);
    let tunnel = format!(
        "CONNECT 127.0.0.1:{keyed_port} HTTP/1.1\r\n\r\n\
         POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3129\r\nx-api-key: drydock-placeholder-7\r\n\
         Content-Length: 0\r\n\r\n\
         GET /b HTTP/1.1\r\nHost: forged.example\r\nAuthorization: Bearer drydock-placeholder-7\r\n\
         Connection: close\r\n\r\n"
    );
    let answer = exchange(&gate.socket, tunnel.as_bytes()).await;
    assert_eq!(answer.matches(" 200 OK\r\n").count(), 2, "{answer}");
    let absolute = format!(
        "GET http://127.0.0.1:{keyed_port}/c HTTP/1.1\r\nHost: 127.0.0.1:{keyed_port}\r\n\
         x-api-key: drydock-placeholder-7\r\nConnection: close\r\n\r\n"
    );
    let answer = exchange(&gate.socket, absolute.as_bytes()).await;
    assert!(answer.contains(" 200 OK\r\n"), "{answer}");
    let keyed = String::from_utf8_lossy(&keyed_saw.lock().unwrap()).to_ascii_lowercase();
    assert_eq!(keyed.matches("sk-lab-secret").count(), 3, "{keyed}");
    assert!(!keyed.contains("placeholder"), "{keyed}");
    assert!(
        !keyed.contains("forged") && !keyed.contains(":3129"),
        "{keyed}"
    );
    assert_eq!(
        keyed
            .matches(&format!("host: 127.0.0.1:{keyed_port}\r\n"))
            .count(),
        3,
        "{keyed}"
    );

    let other = format!(
        "GET /d HTTP/1.1\r\nHost: 127.0.0.1:{other_port}\r\nx-api-key: drydock-placeholder-7\r\n\
         Connection: close\r\n\r\n"
    );
    let tunnel = format!("CONNECT 127.0.0.1:{other_port} HTTP/1.1\r\n\r\n{other}");
    let answer = exchange(&gate.socket, tunnel.as_bytes()).await;
    assert!(answer.contains(" 200 OK\r\n"), "{answer}");
    let other = String::from_utf8_lossy(&other_saw.lock().unwrap()).into_owned();
    assert!(other.contains("drydock-placeholder-7"), "{other}");
    assert!(!other.contains("sk-lab-secret"), "{other}");
}

/// A CA and a certificate it signed for 127.0.0.1, made by openssl in `dir`: the CA's and
/// the server's PEM files.
fn lab_certificates(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=lab ca",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=lab",
            ],
        ]
        .concat(),
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

/// A TLS origin on 127.0.0.1 that records what it is sent (decrypted) and answers each
/// request head with a 200.
async fn recording_tls_origin(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> (u16, Arc<Mutex<Vec<u8>>>) {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![CertificateDer::from_pem_file(cert).unwrap()];
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (record, acceptor) = (record.clone(), acceptor.clone());
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(stream).await {
                    record_and_answer(stream, record).await;
                }
            });
        }
    });
    (port, seen)
}

/// Issue 48: a model API over TLS is reached by the proxy's own TLS, its certificate checked:
/// the agent speaks plain HTTP with a placeholder, the origin hears the key in TLS; an origin
/// whose certificate is not trusted gets no request, and the agent a 502 that says why.
#[tokio::test]
async fn a_keyed_tls_origin_is_reached_by_the_proxys_own_checked_tls() {
    use tokio_rustls::rustls::RootCertStore;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = lab_certificates(dir.path());
    let (port, saw) = recording_tls_origin(&cert, &key).await;
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(&ca).unwrap())
        .unwrap();
    let allow = list(&[&format!("127.0.0.1:{port}")]).unwrap();
    let gate = start_keyed_gate(
        allow.clone(),
        vec![keyed_origin(port, Some(tls_with_roots(roots)))],
    );
    let request = format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n\
         POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3129\r\n\
         Authorization: Bearer drydock-placeholder-7\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
    );
    let answer = exchange(&gate.socket, request.as_bytes()).await;
    assert!(answer.contains(" 200 OK\r\n"), "{answer}");
    let heard = String::from_utf8_lossy(&saw.lock().unwrap()).to_ascii_lowercase();
    assert!(
        heard.starts_with("post /v1/messages http/1.1\r\n"),
        "{heard}"
    );
    assert!(
        heard.contains("authorization: bearer sk-lab-secret\r\n"),
        "{heard}"
    );
    assert!(
        heard.contains(&format!("host: 127.0.0.1:{port}\r\n")),
        "{heard}"
    );

    saw.lock().unwrap().clear();
    let untrusting = start_keyed_gate(
        allow,
        vec![keyed_origin(
            port,
            Some(tls_with_roots(RootCertStore::empty())),
        )],
    );
    let answer = exchange(&untrusting.socket, request.as_bytes()).await;
    assert!(answer.contains(" 502 Bad Gateway\r\n"), "{answer}");
    assert!(answer.contains("TLS with 127.0.0.1"), "{answer}");
    assert!(
        saw.lock().unwrap().is_empty(),
        "the untrusted origin heard the request"
    );
}
