//! Lowering a process's CPU priority so that it yields to everything else, where Linux groups
//! the CPU by session. With `sched_autogroup` (on by default in many kernels), the scheduler
//! first shares the CPU fairly between sessions (autogroups) and only then weighs niceness
//! inside each: `nice -n 10` in a terminal session of its own (a tmux pane, a PTY) changes
//! nothing against a process in another session. So the session's autogroup is lowered too,
//! and so is every session a descendant starts (Claude Code runs each Bash command in a
//! session of its own): [`keep_lowered`].

use std::io;
use std::time::{Duration, Instant};

use super::ProcessTree;
use super::procfs::ProcStat;

/// How often [`keep_lowered`] looks for new sessions below the process it watches.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// An unprivileged process may change an autogroup's niceness once per 100 ms system-wide
/// (else EAGAIN); tasks starting together retry for this long.
const AUTOGROUP_BUSY_FOR: Duration = Duration::from_secs(2);

/// Sets this process's niceness to `nice` (0 to 19; inherited by everything it starts) and
/// its session's autogroup's to the same. Only ever lowers: call it in a session of its own,
/// as every process of the session yields with it. Where the kernel groups no sessions, the
/// niceness alone does the same.
pub(crate) fn lower(nice: u8) -> io::Result<()> {
    let nice = i32::from(nice.min(19));
    // SAFETY: setpriority has no memory effects; `who` 0 is the calling process.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    match set_autogroup_nice("self", nice) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

/// Keeps every session started below `process` (by it or by its descendants) at niceness
/// `nice`, looking every second, until `process` is gone.
pub(crate) fn keep_lowered(process: ProcStat, nice: u8) {
    let nice = i32::from(nice.min(19));
    let below = ProcessTree::below(process);
    while ProcStat::read(process.pid).is_some_and(|now| now.is_same_process(&process)) {
        for member in below.members() {
            if !member.is_gone() && autogroup_nice(member.pid).is_some_and(|now| now != nice) {
                // A process already gone, or a kernel busy for longer than a task's start.
                let _ = set_autogroup_nice(&member.pid.to_string(), nice);
            }
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// The niceness of `pid`'s session's autogroup, if the kernel groups sessions.
fn autogroup_nice(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
    text.split_whitespace()
        .skip_while(|word| *word != "nice")
        .nth(1)?
        .parse()
        .ok()
}

/// Sets the niceness of the autogroup of `/proc/{pid}`'s session.
fn set_autogroup_nice(pid: &str, nice: i32) -> io::Result<()> {
    let started = Instant::now();
    loop {
        match std::fs::write(format!("/proc/{pid}/autogroup"), nice.to_string()) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                if started.elapsed() > AUTOGROUP_BUSY_FOR {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            done => return done,
        }
    }
}
