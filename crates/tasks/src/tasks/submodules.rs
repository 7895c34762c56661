//! A task worktree's submodules, checked out only from remotes drydock may fetch. A
//! submodule comes from the URL the repository's own config names for it (its owner ran
//! `git submodule init`), else from the one in `.gitmodules` (relative ones resolved against
//! the superproject's remote), and then only when `[tasks] repositories` allows it: a branch's
//! `.gitmodules` could otherwise pull any repository of the machine, or any URL, into a
//! worktree its agent reads.

use std::collections::BTreeMap;
use std::path::Path;

use super::remote_url::{PROTOCOLS, check_url};
use crate::config::RemoteRepositories;
use crate::git::{Git, GitError};

/// How deep submodules of submodules are followed.
const MOST_LEVELS: usize = 8;

/// One entry of a `.gitmodules`.
#[derive(Debug, Default)]
struct Entry {
    path: Option<String>,
    url: Option<String>,
}

/// Checks out the submodules of the work tree `dir` (and theirs) that come from an allowed
/// remote: how many were, and a note for each one left out.
pub(super) async fn check_out(
    dir: &Path,
    allowed: &RemoteRepositories,
) -> Result<(usize, Vec<String>), GitError> {
    let (mut checked_out, mut notes) = (0, Vec::new());
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((dir, level)) = pending.pop() {
        if level >= MOST_LEVELS || !dir.join(".gitmodules").is_file() {
            continue;
        }
        let git = Git::on_content(&dir);
        let mut sources = Vec::new();
        let entries = entries(&git).await?;
        let twice = named_twice(&entries);
        for (name, entry) in entries {
            let (Some(path), Some(url)) = (entry.path, entry.url) else {
                continue;
            };
            // git would update every entry of a path: the one checked and the other.
            if twice.contains(path.trim_end_matches('/')) {
                notes.push(format!(
                    "the submodule {path} was not checked out: .gitmodules names that path for more than one submodule"
                ));
                continue;
            }
            match source_of(&git, &name, &url, allowed).await {
                Ok(url) => sources.push((name, path, url)),
                Err(why) => notes.push(format!("the submodule {path} was not checked out: {why}")),
            }
        }
        for (name, path, url) in sources {
            update(&git, &name, &path, &url).await?;
            checked_out += 1;
            pending.push((dir.join(&path), level + 1));
        }
    }
    Ok((checked_out, notes))
}

/// The `.gitmodules` entries by name (read as data: `-f` follows no includes).
async fn entries(git: &Git) -> Result<BTreeMap<String, Entry>, GitError> {
    let listing = git
        .output(&[
            "config",
            "-f",
            ".gitmodules",
            "--get-regexp",
            r"^submodule\..*\.(path|url)$",
        ])
        .await?;
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    for line in listing.stdout.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let Some(key) = key.strip_prefix("submodule.") else {
            continue;
        };
        if let Some(name) = key.strip_suffix(".path") {
            entries.entry(name.to_string()).or_default().path = Some(value.to_string());
        } else if let Some(name) = key.strip_suffix(".url") {
            entries.entry(name.to_string()).or_default().url = Some(value.to_string());
        }
    }
    Ok(entries)
}

/// The paths more than one entry names.
fn named_twice(entries: &BTreeMap<String, Entry>) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    entries
        .values()
        .filter_map(|entry| entry.path.as_deref())
        .map(|path| path.trim_end_matches('/').to_string())
        .filter(|path| !seen.insert(path.clone()))
        .collect()
}

/// The URL submodule `name` is fetched from, or why it is not.
async fn source_of(
    git: &Git,
    name: &str,
    url: &str,
    allowed: &RemoteRepositories,
) -> Result<String, String> {
    let key = format!("submodule.{name}.url");
    if let Ok(configured) = git.line(&["config", "--get", &key]).await {
        return Ok(configured);
    }
    let base = git
        .line(&["config", "--get", "remote.origin.url"])
        .await
        .ok();
    let resolved = resolve(url, base.as_deref())
        .ok_or_else(|| format!("its URL {url:?} is relative and the repository has no remote"))?;
    let checked = check_url(&resolved).map_err(|e| e.to_string())?;
    match allowed.allows(&checked) {
        true => Ok(checked),
        false => Err(format!(
            "its URL {checked} is not one [tasks] repositories allows"
        )),
    }
}

/// `url` resolved against the superproject's remote `base` when it is relative (`./`,
/// `../`), as git resolves it.
fn resolve(url: &str, base: Option<&str>) -> Option<String> {
    if !(url.starts_with("./") || url.starts_with("../")) {
        return Some(url.to_string());
    }
    let mut base = base?.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(after) = rest.strip_prefix("./") {
            rest = after;
        } else if let Some(after) = rest.strip_prefix("../") {
            let cut = base.rfind(['/', ':'])?;
            base.truncate(cut);
            rest = after;
        } else {
            break;
        }
    }
    Some(format!("{base}/{rest}"))
}

/// `git submodule update --init` of one submodule, from `url` alone: the URL is given on the
/// command's own config (so git writes none into the repository's) with a plain checkout,
/// whatever `.gitmodules` asks.
async fn update(git: &Git, name: &str, path: &str, url: &str) -> Result<(), GitError> {
    let settings = [
        (format!("submodule.{name}.url"), url),
        (format!("submodule.{name}.update"), "checkout"),
        ("protocol.file.allow".to_string(), "always"),
    ];
    let mut git = git
        .clone()
        .with_env("GIT_CONFIG_COUNT", &settings.len().to_string())
        .with_env("GIT_ALLOW_PROTOCOL", PROTOCOLS);
    for (i, (key, value)) in settings.iter().enumerate() {
        git = git
            .with_env(&format!("GIT_CONFIG_KEY_{i}"), key)
            .with_env(&format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    git.run(&["submodule", "update", "--init", "--quiet", "--", path])
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_named_by_two_entries_is_found() {
        let entry = |path: &str, url: &str| Entry {
            path: Some(path.into()),
            url: Some(url.into()),
        };
        let entries: BTreeMap<String, Entry> = [
            (
                "allowed".to_string(),
                entry("lib", "https://allowed.host/lib"),
            ),
            (
                "refused".to_string(),
                entry("lib/", "file:///home/person/secrets"),
            ),
            (
                "other".to_string(),
                entry("vendor/x", "https://allowed.host/x"),
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(named_twice(&entries), ["lib".to_string()].into());
    }

    #[test]
    fn relative_urls_are_resolved_against_the_remote() {
        let base = Some("https://example.com/team/app.git");
        assert_eq!(
            resolve("../lib.git", base).as_deref(),
            Some("https://example.com/team/lib.git")
        );
        assert_eq!(
            resolve("./lib", base).as_deref(),
            Some("https://example.com/team/app.git/lib")
        );
        assert_eq!(
            resolve("../lib", Some("git@example.com:team/app")).as_deref(),
            Some("git@example.com:team/lib")
        );
        assert_eq!(resolve("../lib", None), None);
        assert_eq!(
            resolve("file:///srv/lib", None).as_deref(),
            Some("file:///srv/lib")
        );
    }
}
