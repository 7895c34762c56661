//! What tasks read from outside as the fuzzers feed it: a task's git remote against a
//! host's `[tasks] repositories` globs, and the tmux session names a host finds.

use std::path::PathBuf;

use super::clones::Clones;
use super::remote_url::check_url;
use super::sessions::task_of_session;
use crate::config::RemoteRepositories;

/// `url` as a task names it, checked and looked up among the clones `patterns` allow; the
/// same text as a tmux session's name.
pub fn remote_url(patterns: Vec<String>, url: &str) {
    let _ = check_url(url);
    if let Ok(allowed) = RemoteRepositories::new(patterns) {
        Clones::new(PathBuf::from("/fuzz/clones"), allowed).dir_of(url);
    }
    task_of_session(url);
}
