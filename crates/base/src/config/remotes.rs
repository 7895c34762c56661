//! `[tasks] repositories`: the git remotes a host may clone, and a remote's normal form.

use super::ConfigError;

/// Git remotes by glob (`[tasks] repositories`): `*` stays within one `/` segment, `**`
/// crosses them. None by default: a host clones nothing it was not told it may.
#[derive(Debug, Clone)]
pub struct RemoteRepositories {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl RemoteRepositories {
    pub fn new(patterns: Vec<String>) -> Result<RemoteRepositories, ConfigError> {
        let mut set = globset::GlobSetBuilder::new();
        for pattern in &patterns {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| ConfigError::Glob {
                    pattern: pattern.clone(),
                    message: e.kind().to_string(),
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| ConfigError::Glob {
            pattern: patterns.join(", "),
            message: e.kind().to_string(),
        })?;
        Ok(RemoteRepositories { patterns, set })
    }

    /// Whether `url` is allowed: its normalised form ([`normalised_remote`]) matches a
    /// pattern. A URL that does not normalise (a query, a fragment, a `..`) is not.
    pub fn allows(&self, url: &str) -> bool {
        normalised_remote(url).is_ok_and(|url| self.set.is_match(url))
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// Why a git remote is refused, said of the remote ("`URL` holds a password").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    #[error("holds a control character, a backslash, `?` or `#`")]
    OddCharacter,
    #[error("has a `..` segment")]
    DotSegment,
    #[error("is not a URL")]
    NotAUrl,
    #[error("is not a URL ({0})")]
    Unparsed(url::ParseError),
    #[error("uses {0}://")]
    Scheme(String),
    #[error("holds a password")]
    Password,
    #[error(
        "names a user: over {0} git takes credentials from its credential helper, never from the URL"
    )]
    UserOverHttp(String),
    #[error("is not written {0}://HOST/PATH")]
    NotWritten(String),
    #[error("names a file on another host")]
    FileElsewhere,
    #[error("names no host")]
    NoHost,
    #[error("has an odd user name")]
    OddUser,
    #[error("has an odd host name")]
    OddHost,
    #[error("has an escape that is not text")]
    NotText,
}

/// The transports a git remote may use.
const REMOTE_SCHEMES: [&str; 5] = ["https", "http", "ssh", "git", "file"];

/// A git remote as git reaches it, for matching: `scheme://[user@]host[:port]/path` with the
/// scheme and host in lower case and the path percent-decoded (`file:///srv/%61pp` is
/// `file:///srv/app`), or `user@host:path` (ssh's short form, host in lower case). Refused: a
/// scheme git should not use here, a password, a query or fragment (`?`, `#`: what comes
/// after them is not the path a glob reads, and may name another host), a backslash, and a
/// `.` or `..` segment, raw or encoded.
pub fn normalised_remote(raw: &str) -> Result<String, RemoteError> {
    let raw = raw.trim();
    if raw
        .chars()
        .any(|c| c.is_control() || matches!(c, '\\' | '?' | '#'))
    {
        return Err(RemoteError::OddCharacter);
    }
    let (normalised, path) = match raw.split_once("://") {
        Some(_) => normalised_url(raw)?,
        None => normalised_scp(raw)?,
    };
    if path
        .split('/')
        .any(|segment| segment == ".." || segment == ".")
    {
        return Err(RemoteError::DotSegment);
    }
    Ok(normalised)
}

/// `scheme://…` normalised, and its decoded path.
fn normalised_url(raw: &str) -> Result<(String, String), RemoteError> {
    let url = url::Url::parse(raw).map_err(RemoteError::Unparsed)?;
    let scheme = url.scheme();
    if !REMOTE_SCHEMES.contains(&scheme) {
        return Err(RemoteError::Scheme(scheme.into()));
    }
    if url.password().is_some() {
        return Err(RemoteError::Password);
    }
    // Over HTTP a user in the URL is a token more often than a name (`https://ghp_…@host`),
    // and the URL is shown to every client: credentials come from git's helper instead.
    if matches!(scheme, "http" | "https") && !url.username().is_empty() {
        return Err(RemoteError::UserOverHttp(scheme.into()));
    }
    // The raw path: the parser has already taken `..` out of it. The parser also takes
    // `ssh:/host` and `ssh:host`, which are not remotes.
    let after_scheme = match raw.trim().split_once("://") {
        Some((written, rest)) if written.eq_ignore_ascii_case(scheme) => rest,
        _ => return Err(RemoteError::NotWritten(scheme.into())),
    };
    let raw_path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    let path = percent_decoded(raw_path)?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let place = match (scheme, host.as_str()) {
        ("file", "" | "localhost") => String::new(),
        ("file", _) => return Err(RemoteError::FileElsewhere),
        (_, "") => return Err(RemoteError::NoHost),
        _ => {
            let user = match percent_decoded(url.username())? {
                user if user.is_empty() => user,
                user if is_word(&user, "._-") => format!("{user}@"),
                _ => return Err(RemoteError::OddUser),
            };
            if !is_word(&host, ".-[]:") {
                return Err(RemoteError::OddHost);
            }
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{user}{host}{port}")
        }
    };
    Ok((format!("{scheme}://{place}{path}"), path))
}

/// `user@host:path` normalised, and its path.
fn normalised_scp(raw: &str) -> Result<(String, String), RemoteError> {
    let (user, rest) = raw.split_once('@').ok_or(RemoteError::NotAUrl)?;
    let (host, path) = rest.split_once(':').ok_or(RemoteError::NotAUrl)?;
    if !is_word(user, "._-") || !is_word(host, ".-") || path.is_empty() || path.starts_with('/') {
        return Err(RemoteError::NotAUrl);
    }
    let host = host.to_ascii_lowercase();
    Ok((format!("{user}@{host}:{path}"), path.to_string()))
}

/// Whether `s` is made of ASCII letters, digits and the characters of `extra`.
fn is_word(s: &str, extra: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// `text` with its `%XX` escapes decoded; refused when one does not decode to text.
fn percent_decoded(text: &str) -> Result<String, RemoteError> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    match String::from_utf8(decoded) {
        Ok(text) if !text.chars().any(char::is_control) => Ok(text),
        _ => Err(RemoteError::NotText),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_is_normalised_or_refused_with_the_reason() {
        assert_eq!(
            normalised_remote("HTTPS://GitHub.com/team/%61pp.git").as_deref(),
            Ok("https://github.com/team/app.git")
        );
        assert_eq!(
            normalised_remote("git@GitHub.com:team/app").as_deref(),
            Ok("git@github.com:team/app")
        );
        let refused = [
            ("https://host/app?x", RemoteError::OddCharacter),
            ("https://host/a/%2e%2e/b", RemoteError::DotSegment),
            ("app", RemoteError::NotAUrl),
            ("ftp://host/app", RemoteError::Scheme("ftp".into())),
            ("ssh://git:pw@host/app", RemoteError::Password),
            (
                "https://token@host/app",
                RemoteError::UserOverHttp("https".into()),
            ),
            ("file://elsewhere/srv/app", RemoteError::FileElsewhere),
            ("https://host/%ff", RemoteError::NotText),
        ];
        for (remote, why) in refused {
            assert_eq!(normalised_remote(remote), Err(why), "{remote}");
        }
        assert_eq!(
            RemoteError::UserOverHttp("https".into()).to_string(),
            "names a user: over https git takes credentials from its credential helper, never from the URL"
        );
    }
}
