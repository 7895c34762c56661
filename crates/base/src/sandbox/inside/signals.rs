//! Passing SIGTERM, SIGHUP and SIGINT on to the child while it runs.
//!
//! The child is in this process's process group, so a signal sent to the group (the
//! terminal's Ctrl-C, a hangup, a `kill -- -PGID`) reaches it directly; one sent to this
//! process alone (bubblewrap's parent, `kill PID`) would not, and is passed on. So:
//! - SIGTERM and SIGHUP are always passed on: a second copy of either only asks a process
//!   already ending to end.
//! - SIGINT is passed on only when a process sent it (`kill`, `sigqueue`). One the kernel
//!   sent came from the terminal, which delivered it to the child too, and a second Ctrl-C
//!   means "quit now" to agent CLIs that take one to mean "stop the current turn". (Before
//!   the child exists, the terminal's SIGINT is kept for it like any other.)
//!
//! Others keep their default: a terminal's SIGQUIT (`Ctrl-\`) ends this process and the
//! child together, SIGTSTP stops both.
//!
//! A signal that arrives before the child exists is kept and passed on once it does. Once
//! the child has exited (before it is reaped, so its pid cannot have been reused) nothing
//! is passed on any more and the previous handlers are back.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

const FORWARDED: [Signal; 3] = [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGINT];

/// The child signals go to; 0 before it runs and after it exited.
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived while there was no child.
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel hands a SA_SIGINFO handler a valid siginfo.
    let sent_by_kernel = !info.is_null() && unsafe { (*info).si_code } > 0;
    let child = CHILD.load(Ordering::SeqCst);
    if signal == libc::SIGINT && sent_by_kernel && child != 0 {
        return;
    }
    let errno = Errno::last_raw();
    match child {
        0 => PENDING.store(signal, Ordering::SeqCst),
        // SAFETY: kill(2) is async-signal-safe.
        pid => unsafe {
            libc::kill(pid, signal);
        },
    }
    Errno::set_raw(errno);
}

/// Signals passed on while it lives; made before the child is spawned.
pub(super) struct Forwarding {
    previous: Vec<(Signal, SigAction)>,
}

impl Forwarding {
    pub(super) fn install() -> Forwarding {
        PENDING.store(0, Ordering::SeqCst);
        let action = SigAction::new(
            SigHandler::SigAction(pass_on),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        let previous = FORWARDED
            .iter()
            // SAFETY: the handler only reads and writes atomics and calls kill(2).
            .filter_map(|&signal| {
                unsafe { sigaction(signal, &action) }
                    .ok()
                    .map(|old| (signal, old))
            })
            .collect();
        Forwarding { previous }
    }

    /// Passes signals on to `child` until it exits, then reaps it.
    pub(super) fn wait(self, mut child: Child) -> ExitStatus {
        let pid = child.id() as i32;
        CHILD.store(pid, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 {
            // SAFETY: plain kill(2) to our own child, not yet reaped.
            unsafe { libc::kill(pid, pending) };
        }
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
        while let Err(Errno::EINTR) = waitid(Id::Pid(Pid::from_raw(pid)), flags) {}
        drop(self);
        // std retries the wait on EINTR; no other error can come for our own child.
        child
            .wait()
            .unwrap_or_else(|_| ExitStatus::from_raw(1 << 8))
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::SeqCst);
        for (signal, old) in &self.previous {
            // SAFETY: restores the handler that was there before.
            let _ = unsafe { sigaction(*signal, old) };
        }
        PENDING.store(0, Ordering::SeqCst);
    }
}
