//! Every process one run started, found three ways so that none is left behind:
//! - the run's process group (the child is its leader);
//! - the descendants of any member by parent link: a grandchild that called `setsid` and
//!   ignores SIGTERM has left the group, but it is still its parent's child;
//! - every process whose environment carries the run's tag ([`RUN_TAG_VAR`]): a daemon whose
//!   parent already exited was reparented to init and lost both links, but it inherited the tag.
//!
//! Only processes started after the run's leader are considered, and a process is signalled
//! only while it is still the one that was seen (same pid and start time), so a reused pid is
//! never hit. Out of reach: a process that left the group, outlived its parent and cleared its
//! environment, and processes in another PID namespace.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::procfs::{self, ProcStat};

/// The environment variable every child of a run carries: `DRYDOCK_RUN_ID=<drydock pid>-<n>`.
pub const RUN_TAG_VAR: &str = "DRYDOCK_RUN_ID";

/// How many times `kill_all` looks again for processes forked while it was killing.
const KILL_ROUNDS: usize = 4;

/// A tag unique to one run of this drydock process.
#[derive(Debug, Clone)]
pub struct RunTag(String);

impl RunTag {
    pub fn next() -> RunTag {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunTag(format!("{}-{n}", std::process::id()))
    }

    pub fn value(&self) -> &str {
        &self.0
    }

    fn env_entry(&self) -> String {
        format!("{RUN_TAG_VAR}={}", self.0)
    }
}

/// The processes of one run. Dropping it while armed SIGKILLs all of them, so a dropped `run`
/// future leaves nothing behind.
pub struct ProcessTree {
    leader: i32,
    /// The leader's start time: nothing the run started is older.
    since: u64,
    tag_entry: String,
    armed: bool,
}

impl ProcessTree {
    /// `leader` was just spawned (and not yet waited for) with `tag` in its environment.
    pub fn new(leader: u32, tag: &RunTag) -> Self {
        let leader = i32::try_from(leader).expect("pids fit in an i32");
        Self {
            leader,
            since: ProcStat::read(leader).map_or(0, |stat| stat.start_time),
            tag_entry: tag.env_entry(),
            armed: true,
        }
    }

    #[cfg(test)]
    fn leader(&self) -> i32 {
        self.leader
    }

    /// The run's processes as they are now, zombies included.
    pub fn members(&self) -> Vec<ProcStat> {
        let candidates: Vec<ProcStat> = procfs::all_processes()
            .into_iter()
            .filter(|p| p.start_time >= self.since && p.pid != std::process::id() as i32)
            .collect();
        let mut pids: HashSet<i32> = candidates
            .iter()
            .filter(|p| {
                p.pid == self.leader
                    || p.pgrp == self.leader
                    || procfs::environ_contains(p.pid, &self.tag_entry)
            })
            .map(|p| p.pid)
            .collect();
        loop {
            let children: Vec<i32> = candidates
                .iter()
                .filter(|p| pids.contains(&p.ppid) && !pids.contains(&p.pid))
                .map(|p| p.pid)
                .collect();
            if children.is_empty() {
                break;
            }
            pids.extend(children);
        }
        candidates
            .into_iter()
            .filter(|p| pids.contains(&p.pid))
            .collect()
    }

    /// Whether any process of the run still runs (zombies do not: they only wait for a
    /// parent, which may be a slow init in a container).
    pub fn has_live_members(&self) -> bool {
        self.members().iter().any(|p| !p.is_gone())
    }

    /// Sends `signal` to the group and to every member outside it; returns how many live
    /// processes were signalled.
    pub fn signal(&self, signal: Signal) -> usize {
        // Listed before the group is signalled: a dead parent's children are reparented at
        // once, and a descendant without the tag is found only through its parent.
        let live: Vec<ProcStat> = self
            .members()
            .into_iter()
            .filter(|p| !p.is_gone())
            .collect();
        signal_group(self.leader, signal);
        for process in &live {
            if process.pgrp != self.leader {
                signal_process(process, signal);
            }
        }
        live.len()
    }

    /// SIGKILL every process of the run and disarm the drop guard. Looks again a few times
    /// for processes forked while it was killing; never sleeps.
    pub fn kill_all(mut self) {
        self.kill_now();
        self.armed = false;
    }

    fn kill_now(&self) {
        for _ in 0..KILL_ROUNDS {
            if self.signal(Signal::SIGKILL) == 0 {
                return;
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        if self.armed {
            self.kill_now();
        }
    }
}

fn signal_group(pgid: i32, signal: Signal) {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!(pgid, %signal, "could not signal the process group: {error}"),
    }
}

/// Signals `process` if that pid still names the same process.
fn signal_process(process: &ProcStat, signal: Signal) {
    let still_it = ProcStat::read(process.pid).is_some_and(|now| now.is_same_process(process));
    if !still_it {
        return;
    }
    match kill(Pid::from_raw(process.pid), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!(pid = process.pid, %signal, "could not signal: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::time::Duration;

    use super::*;

    fn spawn_leader(program: &str, args: &[&str]) -> (std::process::Child, ProcessTree) {
        let child = std::process::Command::new(program)
            .args(args)
            .process_group(0)
            .spawn()
            .unwrap();
        let tree = ProcessTree::new(child.id(), &RunTag::next());
        (child, tree)
    }

    #[test]
    fn zombies_do_not_count_as_live_members() {
        let (mut child, tree) = spawn_leader("true", &[]);
        while ProcStat::read(tree.leader()).is_some_and(|p| !p.is_gone()) {
            std::thread::sleep(Duration::from_millis(10));
        }

        assert_eq!(
            tree.members().len(),
            1,
            "the zombie leader is still a member"
        );
        assert!(!tree.has_live_members());
        child.wait().unwrap();
        assert!(tree.members().is_empty());
        tree.kill_all();
    }

    #[test]
    fn a_running_leader_is_a_live_member_until_killed() {
        let (mut child, tree) = spawn_leader("sleep", &["1000"]);

        assert!(tree.has_live_members());
        tree.kill_all();
        child.wait().unwrap();
    }

    #[test]
    fn descendants_in_sessions_of_their_own_are_members() {
        let (mut child, tree) = spawn_leader("sh", &["-c", "setsid sleep 1000 & wait"]);
        let leader = tree.leader();
        let mut members = Vec::new();
        for _ in 0..500 {
            members = tree.members();
            if members
                .iter()
                .any(|p| p.pgrp != leader && p.session == p.pid)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let outside_the_group: Vec<&ProcStat> =
            members.iter().filter(|p| p.pgrp != leader).collect();

        assert_eq!(outside_the_group.len(), 1, "{members:?}");
        assert_eq!(outside_the_group[0].session, outside_the_group[0].pid);
        tree.kill_all();
        child.wait().unwrap();
    }

    #[test]
    fn a_dropped_tree_kills_its_processes() {
        let (mut child, tree) = spawn_leader("sleep", &["1000"]);
        drop(tree);

        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }
}
