use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::*;
use crate::sandbox::net_gate::{self, AllowList};

/// The signal handlers are the process's: one test at a time runs a child.
fn one_child_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A unix-socket echo server at `path`: each connection gets back what it sent, once its
/// client has finished sending.
fn unix_echo_server(path: &Path) {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            std::thread::spawn(move || {
                let mut received = Vec::new();
                stream.read_to_end(&mut received).unwrap();
                stream.write_all(&received).unwrap();
            });
        }
    });
}

/// A TCP echo server on 127.0.0.1 that echoes as it reads; its port.
fn tcp_echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            std::thread::spawn(move || {
                let _ = io::copy(&mut &stream, &mut &stream);
            });
        }
    });
    port
}

fn relay(socket: &Path) -> InsideSpec {
    InsideSpec {
        relays: vec![Relay {
            port: 0,
            socket: socket.to_path_buf(),
        }],
        ..InsideSpec::default()
    }
}

/// Sends `message`, closes the sending side, and reads to the end; a connection closed under
/// it reads as empty.
fn round_trip(port: u16, message: &[u8]) -> Vec<u8> {
    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = client.write_all(message);
    let _ = client.shutdown(Shutdown::Write);
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    answer
}

#[test]
fn a_relay_carries_bytes_both_ways_and_passes_the_half_close_on() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("drydock.sock");
    unix_echo_server(&socket);
    let forwards = Forwards::start(&relay(&socket)).unwrap();
    let port = forwards.addrs()[0].port();
    // The echo server answers only after the end of the request: the half-close got there.
    assert_eq!(
        round_trip(port, b"GET / HTTP/1.1\r\n\r\n"),
        b"GET / HTTP/1.1\r\n\r\n"
    );
    assert_eq!(round_trip(port, b"again"), b"again");
}

#[test]
fn a_relay_whose_socket_is_missing_closes_the_client_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("later.sock");
    let forwards = Forwards::start(&relay(&socket)).unwrap();
    let port = forwards.addrs()[0].port();
    assert_eq!(round_trip(port, b"nobody there"), b"");
    assert_eq!(round_trip(port, b"still nobody"), b"");

    unix_echo_server(&socket);
    assert_eq!(round_trip(port, b"now"), b"now");
}

fn start_gate(runtime: &tokio::runtime::Runtime, dir: &Path, allowed: &[String]) -> PathBuf {
    let socket = dir.join("net.sock");
    let _entered = runtime.enter();
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let allow = Arc::new(AllowList::parse(allowed).unwrap());
    runtime.spawn(net_gate::serve(
        listener,
        allow,
        Vec::new().into(),
        Arc::new(|_: &str| {}),
        CancellationToken::new(),
    ));
    socket
}

fn tunnel(socket: PathBuf, target_port: u16) -> InsideSpec {
    InsideSpec {
        tunnels: vec![Tunnel {
            port: 0,
            socket,
            host: "127.0.0.1".to_string(),
            target_port,
        }],
        ..InsideSpec::default()
    }
}

#[test]
fn a_tunnel_reaches_an_allowed_host_through_the_net_gate() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let echo = tcp_echo_server();
    let gate = start_gate(&runtime, dir.path(), &[format!("127.0.0.1:{echo}")]);
    let forwards = Forwards::start(&tunnel(gate, echo)).unwrap();
    let port = forwards.addrs()[0].port();

    let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    client.write_all(b"ping").unwrap();
    let mut echoed = [0u8; 4];
    client.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"ping");
    client.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn a_tunnel_the_net_gate_refuses_closes_the_client() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let echo = tcp_echo_server();
    let gate = start_gate(&runtime, dir.path(), &["api.example.com:443".to_string()]);
    let forwards = Forwards::start(&tunnel(gate, echo)).unwrap();
    let port = forwards.addrs()[0].port();
    assert_eq!(round_trip(port, b"ping"), b"");
}

#[test]
fn relays_and_tunnels_are_read_from_their_flags() {
    assert_eq!(
        "8080=/run/drydock.sock".parse::<Relay>(),
        Ok(Relay {
            port: 8080,
            socket: "/run/drydock.sock".into()
        })
    );
    assert_eq!(
        "443=/run/a=b/net.sock=[::1]:8443".parse::<Tunnel>(),
        Ok(Tunnel {
            port: 443,
            socket: "/run/a=b/net.sock".into(),
            host: "::1".into(),
            target_port: 8443
        })
    );
    assert_eq!(
        "443=/run/net.sock=api.anthropic.com:443"
            .parse::<Tunnel>()
            .unwrap()
            .authority(),
        "api.anthropic.com:443"
    );
    let refused = [
        ("8080", FlagError::NotARelay("8080".into())),
        ("x=/s", FlagError::NotAPort("x".into())),
        ("8080=", FlagError::NoSocket),
        ("70000=/s", FlagError::NotAPort("70000".into())),
    ];
    for (bad, why) in refused {
        assert_eq!(bad.parse::<Relay>(), Err(why), "{bad}");
    }
    let refused = [
        ("443=/s", FlagError::NotATunnel("443=/s".into())),
        ("443=/s=host", FlagError::NotATunnel("443=/s=host".into())),
        (
            "443=/s=::1:443",
            FlagError::Unbracketed("443=/s=::1:443".into()),
        ),
        (
            "443=/s=ho st:443",
            FlagError::NotAHost {
                text: "443=/s=ho st:443".into(),
                host: "ho st".into(),
            },
        ),
        ("443=/s=host:https", FlagError::NotAPort("https".into())),
        ("443==host:443", FlagError::NoSocket),
    ];
    for (bad, why) in refused {
        assert_eq!(bad.parse::<Tunnel>(), Err(why), "{bad}");
    }
    assert_eq!(
        FlagError::NotARelay("8080".into()).to_string(),
        "`8080`: expected PORT=SOCKET"
    );
}

fn command(argv: &[&str]) -> InsideSpec {
    InsideSpec {
        argv: argv.iter().map(OsString::from).collect(),
        ..InsideSpec::default()
    }
}

#[test]
fn the_exit_code_is_the_childs() {
    let _one = one_child_at_a_time();
    assert_eq!(exit_code(&command(&["sh", "-c", "exit 3"])), 3);
    assert_eq!(exit_code(&command(&["true"])), 0);
}

#[test]
fn a_child_killed_by_a_signal_exits_128_plus_the_signal() {
    let _one = one_child_at_a_time();
    assert_eq!(exit_code(&command(&["sh", "-c", "kill -KILL $$"])), 128 + 9);
}

#[test]
fn a_program_that_cannot_run_exits_127() {
    let _one = one_child_at_a_time();
    let spec = command(&["/nonexistent/drydock-no-such-program"]);
    assert_eq!(exit_code(&spec), EXIT_CANNOT_RUN);
    assert_eq!(exit_code(&command(&[])), EXIT_CANNOT_RUN);
}

#[test]
fn a_port_already_taken_exits_125_without_running_the_child() {
    let _one = one_child_at_a_time();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let script = format!("touch '{}'", marker.display());
    let mut spec = command(&["sh", "-c", &script]);
    spec.relays.push(Relay {
        port: 0,
        socket: dir.path().join("a.sock"),
    });
    spec.relays.push(Relay {
        port: taken.local_addr().unwrap().port(),
        socket: dir.path().join("b.sock"),
    });
    assert_eq!(exit_code(&spec), EXIT_CANNOT_LISTEN);
    assert!(!marker.exists());
}

#[test]
fn signals_a_process_sends_to_sandbox_run_are_passed_on_to_the_child() {
    let _one = one_child_at_a_time();
    // The child signals its parent (this process), which passes it back: the child dies of it.
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2)] {
        let script = format!("kill -{signal} $PPID; exec sleep 60");
        assert_eq!(exit_code(&command(&["sh", "-c", &script])), 128 + number);
    }
}
