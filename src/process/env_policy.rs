//! What no child may inherit: the secrets the config names and drydock's own token.
//!
//! `drydock` takes them out of its own environment at start-up, before any other thread
//! exists, so no child of any kind (a build, a docs helper, a PTY shell, drydock's tmux server)
//! can inherit them, however it is started. [`super::CommandSpec::env_remove`] repeats the
//! list for the children of a drydock embedded in another process (the tests and benches).

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
