//! A model API the proxy speaks to itself, so its key never enters the sandbox: the agent has
//! a placeholder in its place and talks plain HTTP to a stand-in address; the proxy opens the
//! connection to the real origin (TLS its own, with the system's roots), sets each request's
//! `Host` to the origin, and puts the key where the placeholder is in the request's headers.
//! A placeholder sent anywhere else stays a placeholder.

use std::fmt;
use std::sync::{Arc, OnceLock};

use hyper::header::{HeaderMap, HeaderValue};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::NetGateError;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, pki_types::ServerName};

/// An origin whose requests get the secrets the sandbox has placeholders of.
#[derive(Clone)]
pub struct KeyedOrigin {
    /// As the allow list names it: a DNS name (lowercase) or an IP address.
    pub host: String,
    pub port: u16,
    /// The TLS the proxy speaks to the origin; None for plain HTTP (a local API).
    pub tls: Option<Arc<ClientConfig>>,
    /// (placeholder, secret) pairs.
    pub secrets: Vec<(String, String)>,
}

impl fmt::Debug for KeyedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedOrigin")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl KeyedOrigin {
    pub fn is(&self, host: &str, port: u16) -> bool {
        self.port == port
            && self
                .host
                .trim_end_matches('.')
                .eq_ignore_ascii_case(host.trim_start_matches('[').trim_end_matches([']', '.']))
    }

    /// The `Host` its requests carry: the port only where it is not the scheme's default.
    pub(super) fn authority(&self) -> String {
        let default = if self.tls.is_some() { 443 } else { 80 };
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        match self.port == default {
            true => host,
            false => format!("{host}:{}", self.port),
        }
    }

    /// `headers` with the origin's `Host` and every placeholder replaced by its secret; Err
    /// when a secret cannot be a header's value.
    pub(super) fn fill(&self, headers: &mut HeaderMap) -> Result<(), NetGateError> {
        let host = HeaderValue::from_str(&self.authority())
            .map_err(|e| NetGateError::HostValue(e.to_string()))?;
        headers.insert(hyper::header::HOST, host);
        for value in headers.values_mut() {
            let Some(filled) = self.filled(value.as_bytes()) else {
                continue;
            };
            *value =
                HeaderValue::from_bytes(&filled).map_err(|_| NetGateError::KeyNotAHeaderValue)?;
        }
        Ok(())
    }

    fn filled(&self, value: &[u8]) -> Option<Vec<u8>> {
        let mut out = value.to_vec();
        let mut changed = false;
        for (placeholder, secret) in &self.secrets {
            let placeholder = placeholder.as_bytes();
            if placeholder.is_empty() {
                continue;
            }
            while let Some(at) = out
                .windows(placeholder.len())
                .position(|w| w == placeholder)
            {
                out.splice(at..at + placeholder.len(), secret.bytes());
                changed = true;
            }
        }
        changed.then_some(out)
    }
}

/// TLS with the system's root certificates (and `SSL_CERT_FILE`'s, `SSL_CERT_DIR`'s), made once.
pub fn public_tls() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::debug!(%error, "net gate: a root certificate was not read");
            }
            roots.add_parsable_certificates(found.certs);
            tls_with_roots(roots)
        })
        .clone()
}

/// TLS (1.2 and 1.3, ring's ciphers) trusting `roots` alone, HTTP/1.1.
pub fn tls_with_roots(roots: RootCertStore) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The TLS session to `origin` over `upstream`, its certificate checked for its host.
pub(super) async fn tls_to(
    origin: &KeyedOrigin,
    config: Arc<ClientConfig>,
    upstream: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, NetGateError> {
    let name = ServerName::try_from(origin.host.clone()).map_err(|e| NetGateError::ServerName {
        host: origin.host.clone(),
        why: e.to_string(),
    })?;
    TlsConnector::from(config)
        .connect(name, upstream)
        .await
        .map_err(|e| NetGateError::Tls {
            host: origin.host.clone(),
            why: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(tls: bool, port: u16) -> KeyedOrigin {
        KeyedOrigin {
            host: "api.example.com".into(),
            port,
            tls: tls.then(|| tls_with_roots(RootCertStore::empty())),
            secrets: vec![("drydock-key-1".into(), "sk-real".into())],
        }
    }

    #[test]
    fn placeholders_become_secrets_and_host_the_origin() {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("127.0.0.1:3129"));
        headers.insert(
            "authorization",
            HeaderValue::from_static("Bearer drydock-key-1"),
        );
        headers.insert("x-api-key", HeaderValue::from_static("drydock-key-1"));
        headers.insert("x-other", HeaderValue::from_static("drydock-key-2"));
        origin(true, 443).fill(&mut headers).unwrap();
        assert_eq!(headers["host"], "api.example.com");
        assert_eq!(headers["authorization"], "Bearer sk-real");
        assert_eq!(headers["x-api-key"], "sk-real");
        assert_eq!(headers["x-other"], "drydock-key-2");
    }

    #[test]
    fn the_host_names_a_port_that_is_not_the_default() {
        assert_eq!(origin(true, 8443).authority(), "api.example.com:8443");
        assert_eq!(origin(false, 80).authority(), "api.example.com");
        assert!(origin(false, 80).is("API.example.com.", 80));
        assert!(!origin(false, 80).is("api.example.com", 443));
    }

    #[test]
    fn a_secret_that_is_no_header_value_is_an_error_not_a_panic() {
        let mut keyed = origin(false, 80);
        keyed.secrets[0].1 = "line\nbreak".into();
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("drydock-key-1"));
        assert_eq!(
            keyed.fill(&mut headers),
            Err(NetGateError::KeyNotAHeaderValue)
        );
    }

    #[test]
    fn debug_output_shows_no_secret() {
        assert!(!format!("{:?}", origin(false, 80)).contains("sk-real"));
    }
}
