//! Who is at the other end of a loopback connection. Without a token, drydock's port is its
//! user's: `terminal_run` there is code execution as them, so a connection from another user's
//! process gets a 403. The owner of the peer's socket is what the kernel lists in
//! `/proc/net/tcp` and `tcp6` (the socket whose local address is the peer's and whose remote
//! address is ours), as `SO_PEERCRED` says for a unix socket.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Which connections the port serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// Every connection (a token guards the port, or it is not on loopback).
    Anyone,
    /// Only those whose socket belongs to this user id.
    User(u32),
}

impl Peers {
    /// The connections of this process's own user.
    pub fn own_user() -> Peers {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Peers::User(unsafe { libc::geteuid() })
    }

    /// Whether the connection from `peer` to `local` is served.
    pub(super) fn serves(&self, peer: SocketAddr, local: SocketAddr) -> bool {
        match self {
            Peers::Anyone => true,
            Peers::User(uid) => owner(peer, local) == Some(*uid),
        }
    }

    pub(super) fn refusal(&self) -> String {
        match self {
            Peers::Anyone => String::new(),
            Peers::User(uid) => format!(
                "Forbidden: this drydock has no token, so it serves the processes of its own user (uid {uid}) alone; start it with a token (--token, DRYDOCK_TOKEN) to serve others"
            ),
        }
    }
}

/// The user id owning the socket at `peer` connected to `local`, from the kernel's tables.
fn owner(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            owner_in(&text, peer, local)
        })
}

/// The uid of the line of a `/proc/net/tcp` table whose local address is `peer` and whose
/// remote address is `local`.
pub(super) fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (peer, local) = (plain(peer), plain(local));
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (ours, theirs, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        (address(ours)? == peer && address(theirs)? == local)
            .then(|| uid.parse().ok())
            .flatten()
    })
}

/// An IPv4-mapped IPv6 address as the IPv4 one.
fn plain(address: SocketAddr) -> SocketAddr {
    match address.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), address.port()),
            None => address,
        },
        IpAddr::V4(_) => address,
    }
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): each 32-bit word in the host's
/// byte order, as the kernel prints it.
fn address(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    for word in 0..ip.len() / 8 {
        let hex = ip.get(word * 8..word * 8 + 8)?;
        bytes.extend(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes());
    }
    let ip = match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
        16 => {
            let octets: [u8; 16] = bytes.try_into().ok()?;
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(plain(SocketAddr::new(ip, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // /proc/net/tcp on x86_64 (little-endian): a server on 127.0.0.1:7878 (0x1EC6) of uid
    // 1000, a client of uid 1001 on port 45678 (0xB26E), and the server's side of it.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1EC6 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 11111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:B26E 0100007F:1EC6 01 00000000:00000000 00:00000000 00000000  1001        0 22222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1EC6 0100007F:B26E 01 00000000:00000000 00:00000000 00000000  1000        0 33333 1 0000000000000000 20 4 30 10 -1
";

    // /proc/net/tcp6: a client on [::1]:40000 (0x9C40) of uid 0 to a server on [::1]:7878.
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:1EC6 01 00000000:00000000 00:00000000 00000000     0        0 44444 1 0000000000000000 20 4 30 10 -1
";

    fn at(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// The tables above were recorded on a little-endian machine.
    #[cfg(target_endian = "little")]
    #[test]
    fn the_peers_socket_names_its_owner() {
        let server = at("127.0.0.1:7878");
        assert_eq!(owner_in(TCP, at("127.0.0.1:45678"), server), Some(1001));
        assert_eq!(owner_in(TCP, at("127.0.0.1:45679"), server), None);
        assert_eq!(
            owner_in(
                TCP,
                at("[::ffff:127.0.0.1]:45678"),
                at("[::ffff:127.0.0.1]:7878")
            ),
            Some(1001)
        );
        assert_eq!(owner_in(TCP6, at("[::1]:40000"), at("[::1]:7878")), Some(0));
        assert_eq!(
            owner_in("garbage\n1: zz:zz", at("[::1]:40000"), server),
            None
        );
    }

    #[tokio::test]
    async fn a_connection_of_this_process_is_its_users() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let local = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(local).await.unwrap();
        let (_stream, peer) = listener.accept().await.unwrap();
        let Peers::User(me) = Peers::own_user() else {
            unreachable!("a user's peers")
        };
        assert!(Peers::User(me).serves(peer, local));
        assert!(!Peers::User(me + 1).serves(peer, local));
        assert!(Peers::Anyone.serves(peer, local));
    }
}
