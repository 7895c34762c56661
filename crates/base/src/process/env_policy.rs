//! What no child may inherit: the secrets the config names, drydock's own token and its task
//! queue's store (a PostgreSQL URL holds the database's password).
//!
//! `drydock` takes them out of its own environment at start-up, before any other thread
//! exists, so no child of any kind (a build, a docs helper, a PTY shell, drydock's tmux server)
//! can inherit them, however it is started. Every command drydock builds also goes through
//! [`scrub`], for the children of a drydock embedded in another process (the tests and
//! benches), whose environment still holds them.

/// Never inherited by a child, whatever the config says.
pub const ALWAYS_REMOVED: &[&str] = &["DRYDOCK_TOKEN", "DRYDOCK_TASKS_STORE"];

/// A command under construction whose environment can lose a variable.
pub trait RemoveEnv {
    fn remove_env(&mut self, name: &str);
}

impl RemoveEnv for std::process::Command {
    fn remove_env(&mut self, name: &str) {
        self.env_remove(name);
    }
}

impl RemoveEnv for tokio::process::Command {
    fn remove_env(&mut self, name: &str) {
        self.env_remove(name);
    }
}

impl RemoveEnv for portable_pty::CommandBuilder {
    fn remove_env(&mut self, name: &str) {
        self.env_remove(name);
    }
}

/// Takes drydock's token and `secrets` (the config's `env_remove`) out of `command`'s
/// environment. Variables set on `command` afterwards are kept.
pub fn scrub(command: &mut impl RemoveEnv, secrets: &[String]) {
    for name in removed(secrets) {
        command.remove_env(name);
    }
}

/// The names [`scrub`] removes.
pub fn removed(secrets: &[String]) -> impl Iterator<Item = &str> {
    ALWAYS_REMOVED
        .iter()
        .copied()
        .chain(secrets.iter().map(String::as_str))
}

/// Removes `names` from this process's environment.
///
/// # Safety
/// No other thread may exist yet: the environment is not safe to change while another
/// thread may read it (every spawn reads it).
pub unsafe fn remove_from_own_environment(names: &[String]) {
    for name in names {
        if std::env::var_os(name).is_some() {
            // SAFETY: the caller guarantees that this process has a single thread.
            unsafe { std::env::remove_var(name) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removed_by_scrub(secrets: &[&str]) -> Vec<String> {
        let mut command = std::process::Command::new("true");
        command.env("KEPT", "yes");
        scrub(
            &mut command,
            &secrets.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        );
        command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_token_and_the_store_are_removed_even_without_configured_secrets() {
        let mut removed = removed_by_scrub(&[]);
        removed.sort();
        assert_eq!(removed, ["DRYDOCK_TASKS_STORE", "DRYDOCK_TOKEN"]);
    }

    #[test]
    fn a_child_does_not_see_the_queues_store() {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", "echo \"${DRYDOCK_TASKS_STORE-unset} ${KEPT-unset}\""])
            .env("DRYDOCK_TASKS_STORE", "postgres://q:secret@db/q")
            .env("KEPT", "yes");
        scrub(&mut command, &[]);
        let output = command.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "unset yes\n");
    }

    #[test]
    fn configured_secrets_are_removed_with_the_token() {
        let mut removed = removed_by_scrub(&["GITHUB_TOKEN", "NPM_TOKEN"]);
        removed.sort();

        assert_eq!(
            removed,
            [
                "DRYDOCK_TASKS_STORE",
                "DRYDOCK_TOKEN",
                "GITHUB_TOKEN",
                "NPM_TOKEN"
            ]
        );
    }
}
