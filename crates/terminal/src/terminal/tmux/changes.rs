//! One change at a time to a tmux server's sessions and control clients, across every
//! drydock that uses the server.
//!
//! tmux before 3.6 crashes (the server, and every pane on it) when it tells its control
//! clients of a change (a session created, closed or renamed, a client detached) while a
//! control client is still identifying itself: the client is flagged a control client from
//! its first message, but its control state exists only after its last one, and in between
//! the server reads its other messages on later turns of its loop (tmux pull request 4980;
//! Debian 12 ships 3.3a). drydock attaches a control client to every session it serves, and
//! creates and kills sessions while others start, on a server that other drydocks of the
//! machine may share. So an attach, until tmux answered it, never overlaps a change drydock
//! makes: each holds [`Changing`], a mutex of the process and an `flock` on a file beside
//! the server's socket, which the other drydocks on that server take too.
//!
//! What is left is what no lock can order: a drydock that dies without closing its control
//! clients (SIGKILL) has them detach at that moment.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::{Mutex, MutexGuard};

/// How long a change waits for another drydock's before it goes ahead without the file's
/// lock: a drydock stuck while it holds it never stops the others.
const WAIT_AT_MOST: Duration = Duration::from_secs(10);
/// How often the file's lock is tried again while another drydock holds it.
const RETRY_EVERY: Duration = Duration::from_millis(5);

/// The changes of this process, to any server.
static IN_PROCESS: Mutex<()> = Mutex::const_new(());

/// Held while drydock attaches a control client, or changes what tmux tells control clients
/// about; released on drop.
pub(crate) struct Changing {
    _in_process: MutexGuard<'static, ()>,
    _across: Option<Flock<File>>,
}

/// Waits for this process's other changes, then for those of the other drydocks that take
/// `lock_file` (none: this process's only).
pub(super) async fn changing(lock_file: Option<PathBuf>) -> Changing {
    let in_process = IN_PROCESS.lock().await;
    let across = match lock_file {
        Some(path) => lock(&path).await,
        None => None,
    };
    Changing {
        _in_process: in_process,
        _across: across,
    }
}

async fn lock(path: &Path) -> Option<Flock<File>> {
    let mut file = match open(path) {
        Ok(file) => file,
        Err(error) => {
            tracing::debug!("tmux's lock file {}: {error}", path.display());
            return None;
        }
    };
    let deadline = Instant::now() + WAIT_AT_MOST;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Some(locked),
            Err((back, Errno::EWOULDBLOCK | Errno::EINTR)) if Instant::now() < deadline => {
                file = back;
                tokio::time::sleep(RETRY_EVERY).await;
            }
            Err((_, errno)) => {
                tracing::warn!(
                    "tmux's lock file {}: {errno}; going ahead without it",
                    path.display()
                );
                return None;
            }
        }
    }
}

/// The lock file, made (only the user may read it) with its directory if need be: tmux makes
/// its socket directory the same way, and refuses it when others may enter it.
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}
