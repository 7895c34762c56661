//! The git remotes a task may name, and the transports git may use for them.

use crate::config::normalised_remote;

/// The transports a clone may use: never `ext::` (it runs a command) or `fd::`.
pub(super) const PROTOCOLS: &str = "file:git:http:https:ssh";

/// A remote a task may not name, and why.
#[derive(Debug, thiserror::Error)]
#[error("repository: {url:?} {why}")]
pub struct BadRemote {
    url: String,
    why: String,
}

/// `raw` as a git remote a task may name: a URL of a transport git clones over (https, http,
/// ssh, git, file) or ssh's `user@host:path`, without a password in it or a `..` segment.
pub fn check_url(raw: &str) -> Result<String, BadRemote> {
    let url = raw.trim();
    let refuse = |why: &str| {
        Err(BadRemote {
            url: url.to_string(),
            why: why.to_string(),
        })
    };
    if url.is_empty() {
        return refuse("is empty: give a git remote's URL");
    }
    let odd = |c: char| c.is_control() || (c.is_whitespace() && c != ' ');
    if url.chars().any(odd) || url.starts_with('-') {
        return refuse("is not a git remote's URL");
    }
    let scp_like = regex::Regex::new(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]")
        .expect("a valid pattern")
        .is_match(url);
    let rest = match url.split_once("://") {
        Some(("https" | "http" | "ssh" | "git" | "file", rest)) => rest,
        Some((scheme, _)) => {
            return refuse(&format!(
                "uses {scheme}://: a task's remote is https, http, ssh, git or file"
            ));
        }
        None if scp_like => url,
        None => {
            return refuse(
                "is not a URL: give https://…, ssh://…, git://…, file://… or user@host:path",
            );
        }
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if url.contains("://")
        && authority
            .rsplit_once('@')
            .is_some_and(|(who, _)| who.contains(':'))
    {
        return refuse(
            "holds a password: the queue keeps and shows a task's remote; give the password to git's credential helper",
        );
    }
    if rest.split(['/', ':']).any(|segment| segment == "..") {
        return refuse("has a `..` segment");
    }
    match normalised_remote(url) {
        Ok(_) => Ok(url.to_string()),
        Err(why) => refuse(&why.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_are_checked_before_they_are_kept() {
        for good in [
            "https://github.com/team/app.git",
            "ssh://git@example.com/team/app",
            "git@github.com:team/app.git",
            "file:///srv/git/app.git",
            "file:///srv/git/lab project.git",
        ] {
            assert_eq!(check_url(&format!(" {good} ")).unwrap(), good);
        }
        for (bad, why) in [
            ("", "is empty"),
            ("ext::sh -c touch% /tmp/x", "not a URL"),
            ("https://github.com/te\u{1b}am/app", "not a git remote"),
            ("https://github.com/te\tam/app", "not a git remote"),
            ("ext::sh", "not a URL"),
            ("fd::3", "not a URL"),
            ("ftp://example.com/app", "uses ftp://"),
            ("https://me:secret@github.com/team/app", "holds a password"),
            ("file:///srv/git/../../etc", "`..` segment"),
            ("-uhttps://x/y", "not a git remote"),
            ("/srv/git/app", "not a URL"),
            ("file:///srv/git/%2e%2e/etc", "`..` segment"),
            ("file:///srv/git/%2E%2e%2Fetc", "`..` segment"),
            ("https://allowed.host?x@evil/team/app", "`?` or `#`"),
            ("https://allowed.host/team/app#@evil/x", "`?` or `#`"),
            ("https://allowed.host%2f@evil/team/app", "names a user"),
            ("ssh://allowed.host%2f@evil/team/app", "odd user name"),
        ] {
            let error = check_url(bad).unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
        // Issue 48: a token as the user would be shown to every client by task_list.
        for user in [
            "https://me@github.com/team/app",
            "http://ghp_abc123@example.com/app",
        ] {
            let error = check_url(user).unwrap_err().to_string();
            assert!(error.contains("names a user"), "{user}: {error}");
        }
        assert!(check_url("ssh://git@github.com/team/app").is_ok());
    }
}
