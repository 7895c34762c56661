//! The server name a TLS client asks for, read from its ClientHello (RFC 8446 4.1.2, the
//! `server_name` extension of RFC 6066) without terminating TLS: the proxy lets a tunnel go on
//! only when that name is the one it was opened for.

/// What the first bytes a client sent in a tunnel are.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Opening {
    /// A TLS handshake record, complete: the server name it asks for, if any.
    Tls(Option<String>),
    /// A TLS handshake record, not all here yet.
    TlsIncomplete,
    /// Not a ClientHello that can be read: refused.
    TlsUnreadable,
    /// An HTTP request line's start (`GET `, `POST `, ...).
    Http,
    /// Anything else: another protocol.
    Other,
}

/// The largest TLS record (2^14 bytes plus what encryption adds) and its header.
pub(super) const LARGEST_RECORD: usize = 5 + (1 << 14) + 2048;

/// What `bytes`, the start of a tunnel's client side, opens with.
pub(super) fn opening(bytes: &[u8]) -> Opening {
    match bytes.first() {
        Some(0x16) => {
            let Some(length) = bytes.get(3..5) else {
                return Opening::TlsIncomplete;
            };
            let end = 5 + usize::from(u16::from_be_bytes([length[0], length[1]]));
            match bytes.get(5..end) {
                Some(record) => match server_name(record) {
                    Some(name) => Opening::Tls(name),
                    None => Opening::TlsUnreadable,
                },
                None if end > LARGEST_RECORD => Opening::TlsUnreadable,
                None => Opening::TlsIncomplete,
            }
        }
        Some(_) if looks_like_http(bytes) => Opening::Http,
        _ => Opening::Other,
    }
}

/// An HTTP/1 request line's method and space (the rest may not be here yet).
fn looks_like_http(bytes: &[u8]) -> bool {
    let method_end = bytes.iter().position(|&b| b == b' ');
    match method_end {
        Some(end) => end > 0 && end <= 16 && bytes[..end].iter().all(u8::is_ascii_uppercase),
        None => false,
    }
}

/// The server name of the ClientHello in a handshake record's body: Some(None) when it
/// names none, None when the record is not a ClientHello that parses.
fn server_name(record: &[u8]) -> Option<Option<String>> {
    let mut r = Reader(record);
    if r.u8()? != 1 {
        return None;
    }
    let length = r.u24()?;
    let body = r.take(length)?;
    let mut hello = Reader(body);
    hello.take(2 + 32)?; // version, random
    let session = hello.u8()?;
    hello.take(usize::from(session))?;
    let suites = hello.u16()?;
    hello.take(usize::from(suites))?;
    let compression = hello.u8()?;
    hello.take(usize::from(compression))?;
    if hello.0.is_empty() {
        return Some(None);
    }
    let extensions = hello.u16()?;
    let mut extensions = Reader(hello.take(usize::from(extensions))?);
    let mut found = None;
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let length = extensions.u16()?;
        let data = extensions.take(usize::from(length))?;
        if kind != 0 {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let mut names = Reader(data);
        let list = names.u16()?;
        let mut list = Reader(names.take(usize::from(list))?);
        let mut name = None;
        while !list.0.is_empty() {
            let kind = list.u8()?;
            let length = list.u16()?;
            let text = list.take(usize::from(length))?;
            if kind == 0 {
                if name.is_some() {
                    return None;
                }
                name = Some(std::str::from_utf8(text).ok()?.to_ascii_lowercase());
            }
        }
        found = Some(name);
    }
    Some(found.flatten())
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let taken = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(taken)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u24(&mut self) -> Option<usize> {
        let b = self.take(3)?;
        Some(usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]))
    }
}

/// A ClientHello record asking for `name` (or none), as a TLS 1.3 client sends it: for
/// tests, here and in the sandbox's own.
#[cfg(test)]
pub(super) fn record_for(name: Option<&str>) -> Vec<u8> {
    let mut extensions = Vec::new();
    if let Some(name) = name {
        let name = name.as_bytes();
        let mut list = vec![0u8];
        list.extend((name.len() as u16).to_be_bytes());
        list.extend(name);
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend(list);
        extensions.extend(0u16.to_be_bytes());
        extensions.extend((data.len() as u16).to_be_bytes());
        extensions.extend(data);
    }
    // supported_versions: TLS 1.3.
    extensions.extend([0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]);
    let mut hello = vec![0x03, 0x03];
    hello.extend([7u8; 32]);
    hello.push(0);
    hello.extend([0x00, 0x02, 0x13, 0x01]);
    hello.extend([0x01, 0x00]);
    hello.extend((extensions.len() as u16).to_be_bytes());
    hello.extend(extensions);
    let mut handshake = vec![1u8];
    handshake.extend(&(hello.len() as u32).to_be_bytes()[1..]);
    handshake.extend(hello);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_read_from_a_client_hello() {
        let record = record_for(Some("API.Example.com"));
        assert_eq!(
            opening(&record),
            Opening::Tls(Some("api.example.com".into()))
        );
        assert_eq!(opening(&record_for(None)), Opening::Tls(None));
        assert_eq!(opening(&record[..3]), Opening::TlsIncomplete);
        assert_eq!(opening(&record[..record.len() - 1]), Opening::TlsIncomplete);
        let mut broken = record.clone();
        broken[5] = 2;
        assert_eq!(opening(&broken), Opening::TlsUnreadable);
        let mut cut = record_for(Some("a.example"));
        let at = cut.len() - 9;
        cut[at] = 0xff;
        assert_ne!(opening(&cut), Opening::Tls(Some("a.example".into())));
    }

    #[test]
    fn http_and_other_protocols_are_told_apart() {
        assert_eq!(opening(b"GET / HTTP/1.1\r\n"), Opening::Http);
        assert_eq!(opening(b"POST "), Opening::Http);
        assert_eq!(opening(b"SSH-2.0-OpenSSH\r\n"), Opening::Other);
        assert_eq!(opening(b"get / HTTP/1.1"), Opening::Other);
        assert_eq!(opening(b"\x00\x01"), Opening::Other);
        assert_eq!(opening(b""), Opening::Other);
    }

    /// Every prefix and every one-byte change of a ClientHello parses or is refused: no
    /// panic, no read past the end.
    #[test]
    fn any_damage_is_refused_without_a_panic() {
        let record = record_for(Some("api.example.com"));
        for end in 0..record.len() {
            let _ = opening(&record[..end]);
        }
        for at in 0..record.len() {
            for byte in [0u8, 1, 0x7f, 0xff] {
                let mut damaged = record.clone();
                damaged[at] = byte;
                let _ = opening(&damaged);
            }
        }
    }
}
