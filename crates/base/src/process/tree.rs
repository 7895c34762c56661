//! The processes of one run or one terminal session, and the one way drydock ends them:
//! [`Escalation`] (first signals, a grace period, then SIGKILL).
//!
//! A run's processes are found three ways so that none is left behind:
//! - the run's process group (the child is its leader);
//! - the descendants of any member by parent link: a grandchild that called `setsid` and
//!   ignores SIGTERM has left the group, but it is still its parent's child;
//! - every process whose environment carries the run's tag ([`RUN_TAG_VAR`]): a daemon whose
//!   parent already exited was reparented to init and lost both links, but it inherited the tag.
//!
//! A terminal session's processes (a PTY's program, a tmux pane) are those of its session id
//! and their descendants. In both cases every process seen once stays a member while it
//! lives, so one that lost its links after it was seen is still found.
//!
//! Only processes started after the roots are considered, and a process is signalled only
//! while it is still the one that was seen (same pid and start time), so a reused pid is never
//! hit. Out of reach: a process that left before it was seen, outlived its parent and cleared
//! its environment, and processes in another PID namespace.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::procfs::{self, ProcStat};

/// The environment variable every child of a run carries: `DRYDOCK_RUN_ID=<drydock pid>-<n>`.
pub const RUN_TAG_VAR: &str = "DRYDOCK_RUN_ID";

/// How many times `kill_all` looks again for processes forked while it was killing.
const KILL_ROUNDS: usize = 4;
/// How often a waiting escalation looks whether the processes are gone.
const POLL: Duration = Duration::from_millis(50);
/// How long an escalation waits for SIGKILLed processes to be gone.
const AFTER_SIGKILL: Duration = Duration::from_secs(2);

/// A tag unique to one run of this drydock process.
#[derive(Debug, Clone)]
pub(super) struct RunTag(String);

impl RunTag {
    pub(super) fn next() -> RunTag {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunTag(format!("{}-{n}", std::process::id()))
    }

    pub(super) fn value(&self) -> &str {
        &self.0
    }

    fn env_entry(&self) -> String {
        format!("{RUN_TAG_VAR}={}", self.0)
    }
}

/// How processes are ended: `first` signals to each, up to `grace` for them to exit, then
/// SIGKILL to whatever is left.
#[derive(Debug, Clone, Copy)]
pub struct Escalation {
    pub first: &'static [Signal],
    pub grace: Duration,
}

impl Escalation {
    /// SIGTERM, then SIGKILL after `grace`.
    pub fn sigterm(grace: Duration) -> Escalation {
        Escalation {
            first: &[Signal::SIGTERM],
            grace,
        }
    }
}

/// What makes a process a member, besides descending from one.
#[derive(Debug)]
enum Roots {
    /// A run: the leader's process group, and every process carrying the run's tag.
    Run { leader: i32, tag_entry: String },
    /// Terminal sessions, by their leaders as they were seen alive.
    Sessions(Vec<ProcStat>),
    /// One process (as it was seen alive) and whatever it started.
    Subtree(ProcStat),
}

/// The processes of one run or of some terminal sessions. Dropping it while armed SIGKILLs all
/// of them (without waiting), so a dropped `run` future leaves nothing behind. A run's tree
/// is armed from the start; sessions' trees when [`ProcessTree::kill_on_drop`] says so.
#[derive(Debug)]
pub struct ProcessTree {
    roots: Roots,
    /// The roots' earliest start time: nothing of theirs is older.
    since: u64,
    /// Every member seen so far: pid -> start time.
    seen: Mutex<HashMap<i32, u64>>,
    armed: bool,
}

impl ProcessTree {
    /// `leader` was just spawned (and not yet waited for) in a group of its own, with `tag`
    /// in its environment.
    pub(super) fn new(leader: u32, tag: &RunTag) -> Self {
        let leader = i32::try_from(leader).expect("pids fit in an i32");
        let since = ProcStat::read(leader).map_or(0, |stat| stat.start_time);
        let roots = Roots::Run {
            leader,
            tag_entry: tag.env_entry(),
        };
        Self::with_roots(roots, since)
    }

    /// The terminal sessions led by `leaders` (each read from /proc while it ran). Not armed.
    pub fn of_sessions(leaders: impl IntoIterator<Item = ProcStat>) -> Self {
        let leaders: Vec<ProcStat> = leaders.into_iter().collect();
        let since = leaders.iter().map(|l| l.start_time).min().unwrap_or(0);
        let mut tree = Self::with_roots(Roots::Sessions(leaders), since);
        tree.armed = false;
        tree
    }

    /// `process` and its descendants, leaving its parents and siblings alone. Not armed.
    pub fn below(process: ProcStat) -> Self {
        let mut tree = Self::with_roots(Roots::Subtree(process), process.start_time);
        tree.armed = false;
        tree
    }

    fn with_roots(roots: Roots, since: u64) -> Self {
        Self {
            roots,
            since,
            seen: Mutex::new(HashMap::new()),
            armed: true,
        }
    }

    /// Arms the drop guard: dropping the tree SIGKILLs its processes.
    pub fn kill_on_drop(mut self) -> Self {
        self.armed = true;
        self
    }

    /// Disarms the drop guard: the processes are left alone.
    pub fn release(mut self) {
        self.armed = false;
    }

    #[cfg(test)]
    fn leader(&self) -> i32 {
        match &self.roots {
            Roots::Run { leader, .. } => *leader,
            Roots::Sessions(leaders) => leaders[0].pid,
            Roots::Subtree(process) => process.pid,
        }
    }

    /// The process group every member started in, if they share one.
    fn group(&self) -> Option<i32> {
        match &self.roots {
            Roots::Run { leader, .. } => Some(*leader),
            Roots::Sessions(_) | Roots::Subtree(_) => None,
        }
    }

    /// The members as they are now, zombies included; remembers them.
    pub fn members(&self) -> Vec<ProcStat> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let candidates: Vec<ProcStat> = procfs::all_processes()
            .into_iter()
            .filter(|p| p.start_time >= self.since && p.pid != std::process::id() as i32)
            .collect();
        let live_sessions = self.live_sessions();
        let mut pids: HashSet<i32> = candidates
            .iter()
            .filter(|p| {
                seen.get(&p.pid) == Some(&p.start_time) || self.is_root_member(p, &live_sessions)
            })
            .map(|p| p.pid)
            .collect();
        add_descendants(&candidates, &mut pids);
        let members: Vec<ProcStat> = candidates
            .into_iter()
            .filter(|p| pids.contains(&p.pid))
            .collect();
        seen.extend(members.iter().map(|p| (p.pid, p.start_time)));
        members
    }

    fn is_root_member(&self, process: &ProcStat, live_sessions: &[i32]) -> bool {
        match &self.roots {
            Roots::Run { leader, tag_entry } => {
                process.pid == *leader
                    || process.pgrp == *leader
                    || procfs::environ_contains(process.pid, tag_entry)
            }
            Roots::Sessions(_) => live_sessions.contains(&process.session),
            Roots::Subtree(root) => process.is_same_process(root),
        }
    }

    /// The session ids still in use by the sessions of the roots. A session id cannot be
    /// reused while a process of that session lives, so a leader's pid that now names another
    /// process means its session is gone.
    fn live_sessions(&self) -> Vec<i32> {
        let Roots::Sessions(leaders) = &self.roots else {
            return Vec::new();
        };
        leaders
            .iter()
            .filter(|leader| {
                ProcStat::read(leader.pid).is_none_or(|now| now.is_same_process(leader))
            })
            .map(|leader| leader.pid)
            .collect()
    }

    /// Whether any member still runs (zombies do not: they only wait for a parent, which may
    /// be a slow init in a container).
    pub fn has_live_members(&self) -> bool {
        self.members().iter().any(|p| !p.is_gone())
    }

    /// Sends `signal` to the group (if any) and to every live member outside it; returns how
    /// many live processes were signalled.
    pub fn signal(&self, signal: Signal) -> usize {
        // Listed before the group is signalled: a dead parent's children are reparented at
        // once, and a descendant without the tag is found only through its parent.
        let live: Vec<ProcStat> = self
            .members()
            .into_iter()
            .filter(|p| !p.is_gone())
            .collect();
        let group = self.group();
        if let Some(group) = group {
            signal_group(group, signal);
        }
        for process in live.iter().filter(|p| Some(p.pgrp) != group) {
            signal_process(process, signal);
        }
        live.len()
    }

    /// The first steps of `escalation`: its first signals, then waiting until no member lives
    /// or the grace period is over. True when none is left. SIGKILL is the caller's next step
    /// ([`ProcessTree::kill_all`]).
    pub fn terminate(&self, escalation: Escalation) -> BoxFuture<'_, bool> {
        async move {
            self.send_first(escalation);
            self.wait_gone(escalation.grace).await
        }
        .boxed()
    }

    /// The whole of `escalation`, then waits (bounded) until the SIGKILLed processes are gone.
    pub fn end(self, escalation: Escalation) -> BoxFuture<'static, ()> {
        async move {
            if !self.terminate(escalation).await {
                self.kill_now();
                self.wait_gone(AFTER_SIGKILL).await;
            }
            self.release();
        }
        .boxed()
    }

    /// [`ProcessTree::end`] for blocking code (it sleeps: never on an async thread).
    pub fn end_blocking(self, escalation: Escalation) {
        self.send_first(escalation);
        if !self.wait_gone_blocking(escalation.grace) {
            self.kill_now();
            self.wait_gone_blocking(AFTER_SIGKILL);
        }
        self.release();
    }

    /// SIGKILL every member and disarm the drop guard. Looks again a few times for processes
    /// forked while it was killing; never sleeps.
    pub fn kill_all(self) {
        self.kill_now();
        self.release();
    }

    /// `kill_all`, and a second look a moment later, in the background: a process caught
    /// between `setsid()` and the end of its `execve` has left the run's group and its
    /// environment (the run's tag) cannot be read for that instant, so the first look can
    /// miss it.
    pub fn kill_all_and_look_again(self) {
        self.kill_now();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(POLL).await;
                    self.kill_all();
                });
            }
            Err(_) => self.kill_all(),
        }
    }

    fn send_first(&self, escalation: Escalation) {
        for signal in escalation.first {
            self.signal(*signal);
        }
    }

    /// Waits until no member lives, `limit` at most; true when none is left.
    pub fn wait_gone(&self, limit: Duration) -> BoxFuture<'_, bool> {
        async move {
            let deadline = Instant::now().checked_add(limit);
            while self.has_live_members() {
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    return false;
                }
                tokio::time::sleep(POLL).await;
            }
            true
        }
        .boxed()
    }

    fn wait_gone_blocking(&self, limit: Duration) -> bool {
        let deadline = Instant::now().checked_add(limit);
        while self.has_live_members() {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return false;
            }
            std::thread::sleep(POLL);
        }
        true
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

/// Adds to `pids` every descendant of its processes among `candidates`.
fn add_descendants(candidates: &[ProcStat], pids: &mut HashSet<i32>) {
    loop {
        let children: Vec<i32> = candidates
            .iter()
            .filter(|p| pids.contains(&p.ppid) && !pids.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        if children.is_empty() {
            return;
        }
        pids.extend(children);
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

    /// `sh -c script` as the leader of a session of its own, and its stat.
    fn spawn_session(script: &str) -> (std::process::Child, ProcStat) {
        let child = std::process::Command::new("setsid")
            .args(["sh", "-c", script])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut leader = None;
        for _ in 0..500 {
            leader = ProcStat::read(pid).filter(|p| p.session == pid);
            if leader.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        (child, leader.expect("setsid made it a session leader"))
    }

    fn wait_for_members(tree: &ProcessTree, count: usize) -> Vec<ProcStat> {
        for _ in 0..500 {
            let live: Vec<ProcStat> = tree
                .members()
                .into_iter()
                .filter(|p| !p.is_gone())
                .collect();
            if live.len() >= count {
                return live;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("fewer than {count} members: {:?}", tree.members());
    }

    #[test]
    fn an_escalation_waits_the_grace_period_then_kills_what_ignored_the_first_signals() {
        let (mut child, leader) = spawn_session("trap '' HUP TERM; sleep 1000 & wait");
        let tree = ProcessTree::of_sessions([leader]);
        wait_for_members(&tree, 2);
        let grace = Duration::from_millis(300);

        let started = Instant::now();
        tree.end_blocking(Escalation {
            first: &[Signal::SIGHUP, Signal::SIGTERM],
            grace,
        });

        assert!(started.elapsed() >= grace, "SIGKILL came before the grace");
        child.wait().unwrap();
        let left = ProcessTree::of_sessions([leader]).members();
        assert!(left.iter().all(ProcStat::is_gone), "{left:?}");
    }

    #[tokio::test]
    async fn a_member_that_obeys_the_first_signal_ends_before_the_grace_period() {
        let (mut child, leader) = spawn_session("sleep 1000 & wait");
        let tree = ProcessTree::of_sessions([leader]);
        wait_for_members(&tree, 2);

        // A grace of an hour: only a tree ended by its first signal ends within the limit.
        let ended = tokio::time::timeout(
            Duration::from_secs(600),
            tree.end(Escalation::sigterm(Duration::from_secs(3600))),
        )
        .await;
        assert!(ended.is_ok(), "the member waited for the grace period");
        child.wait().unwrap();
    }

    #[test]
    fn a_leader_pid_that_names_another_process_has_no_session_left() {
        let (mut child, leader) = spawn_session("exec sleep 1000");
        let reused = ProcStat {
            start_time: leader.start_time - 1,
            ..leader
        };

        let of_reused = ProcessTree::of_sessions([reused]).members();
        let of_leader = ProcessTree::of_sessions([leader]).members();
        child.kill().unwrap();
        child.wait().unwrap();

        assert!(of_reused.is_empty(), "{of_reused:?}");
        assert_eq!(of_leader.len(), 1, "{of_leader:?}");
    }

    #[test]
    fn a_member_seen_once_stays_one_after_it_left_the_session_and_lost_its_parent() {
        let (mut child, leader) = spawn_session("setsid sleep 30 & sleep 1");
        let tree = ProcessTree::of_sessions([leader]);
        let mut escaped = None;
        for _ in 0..90 {
            escaped = tree
                .members()
                .into_iter()
                .find(|p| p.session != leader.session && !p.is_gone());
            if escaped.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let escaped = escaped.expect("the setsid sleep, found through its parent");
        child.wait().unwrap();

        let members = tree.members();

        assert!(
            members.iter().any(|p| p.is_same_process(&escaped)),
            "{members:?}"
        );
        tree.kill_all();
        let after = ProcStat::read(escaped.pid);
        assert!(after.is_none_or(|p| p.is_gone() || !p.is_same_process(&escaped)));
    }

    #[test]
    fn a_subtree_is_a_process_and_its_descendants_not_its_parent_or_siblings() {
        // The session's shell runs two children: `sh` (the subtree's root, with a sleep of
        // its own) and a sibling sleep.
        let (mut child, leader) = spawn_session("sh -c 'sleep 1000 & wait' & sleep 1000 & wait");
        let session = ProcessTree::of_sessions([leader]);
        let all = wait_for_members(&session, 4);
        let root = *all
            .iter()
            .find(|p| {
                p.ppid == leader.pid
                    && procfs::argv(p.pid).first().map(String::as_str) == Some("sh")
            })
            .expect("the inner sh");
        let subtree = ProcessTree::below(root);
        let members = wait_for_members(&subtree, 2);

        assert_eq!(members.len(), 2, "{members:?}");
        assert!(
            members
                .iter()
                .all(|p| p.pid == root.pid || p.ppid == root.pid)
        );
        subtree.kill_all();
        let left: Vec<ProcStat> = session
            .members()
            .into_iter()
            .filter(|p| !p.is_gone())
            .collect();
        assert_eq!(
            left.len(),
            2,
            "the session's shell and the sibling remain: {left:?}"
        );
        session.kill_on_drop().kill_all();
        child.wait().unwrap();
    }
}
