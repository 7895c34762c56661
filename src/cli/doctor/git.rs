//! git, and whether its version does what tasks ask of it: a worktree per task (any git),
//! results reviewed and merged without a working tree (`git merge-tree --write-tree`, git
//! 2.38), and results landed by rebase (`git replay`, git 2.44).

use crate::config::{Config, LandWith};

use super::{Check, Found, Need, NotRun, check, output_line};

/// `git merge-tree --write-tree`: task_merge, the review's conflict check, the landing queue
/// and the conflict forecast.
const MERGES: Version = Version(2, 38);
/// `git replay`: `land_with = "rebase"` and task_merge's `strategy: "rebase"`.
const REBASE: Version = Version(2, 44);

const NEWER_GIT: &str = "Debian 12 ships 2.39 and Ubuntu 22.04 2.34: on Ubuntu, sudo \
                         add-apt-repository ppa:git-core/ppa && sudo apt-get install git; \
                         elsewhere, a git built from source (https://git-scm.com) ahead on PATH";

/// A git version, major and minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Version(u32, u32);

impl Version {
    /// From `git version 2.47.3` (or `git version 2.39.3 (Apple Git-146)`).
    fn parse(line: &str) -> Option<Version> {
        let number = line.split_whitespace().nth(2)?;
        let mut parts = number.split('.').map(str::parse::<u32>);
        match (parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Some(Version(major, minor)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The `git` check (tasks need it at merge-tree's version) and the `git replay` check (landing
/// by rebase needs it; required only when `[tasks] land_with = "rebase"`).
pub(super) async fn checks(config: &Config, tasks: Need) -> Vec<Check> {
    let found = output_line("git", &["--version"], "git").await;
    let rebase = match (tasks, config.tasks.landing.with) {
        (Need::Required, LandWith::Rebase) => Need::Required,
        _ => Need::Optional,
    };
    vec![
        check(
            "git",
            "tasks (a worktree per task; reviewing and merging results needs git merge-tree \
             --write-tree, git 2.38)",
            tasks,
            at_least(&found, MERGES, "git merge-tree --write-tree"),
        ),
        check(
            "git replay",
            "landing by rebase (land_with = \"rebase\", task_merge's strategy rebase)",
            rebase,
            at_least(&found, REBASE, "git replay"),
        ),
    ]
}

/// Whether the git found is at least `needed`, which `what` needs.
fn at_least(found: &Result<(String, String), NotRun>, needed: Version, what: &str) -> Found {
    let (line, path) = match found {
        Ok(found) => found,
        Err(why) => {
            return Found::Missing {
                detail: why.to_string(),
                fix: format!("sudo apt-get install git (git {needed} or later)"),
            };
        }
    };
    match Version::parse(line) {
        Some(version) if version >= needed => Found::Ok {
            detail: format!("{line} ({path})"),
        },
        Some(version) => Found::Missing {
            detail: format!("{line} ({path}): {what} needs git {needed}, this is {version}"),
            fix: format!("git {needed} or later: {NEWER_GIT}"),
        },
        None => Found::Missing {
            detail: format!("`{path} --version` printed {line:?}, not a git version"),
            fix: format!("git {needed} or later on PATH"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_what_git_prints() {
        assert_eq!(Version::parse("git version 2.47.3"), Some(Version(2, 47)));
        assert_eq!(
            Version::parse("git version 2.39.3 (Apple Git-146)"),
            Some(Version(2, 39))
        );
        assert_eq!(
            Version::parse("git version 2.34.1.windows.1"),
            Some(Version(2, 34))
        );
        assert_eq!(Version::parse("git version two"), None);
        assert!(Version(2, 38) > Version(2, 34) && Version(3, 0) > Version(2, 44));
    }

    #[test]
    fn an_old_git_is_missing_with_what_needs_a_newer_one() {
        let found = Ok(("git version 2.34.1".to_string(), "/usr/bin/git".to_string()));
        let Found::Missing { detail, fix } = at_least(&found, MERGES, "git merge-tree") else {
            panic!("2.34 is older than 2.38");
        };
        assert!(detail.contains("needs git 2.38, this is 2.34"), "{detail}");
        assert!(fix.contains("ppa:git-core/ppa"), "{fix}");
        let found = Ok(("git version 2.44.0".to_string(), "/usr/bin/git".to_string()));
        assert!(matches!(
            at_least(&found, REBASE, "git replay"),
            Found::Ok { .. }
        ));
    }
}
