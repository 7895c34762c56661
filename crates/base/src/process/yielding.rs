//! Making a tree of processes yield the CPU where the kernel shares it by session first.
//!
//! With `sched_autogroup` (on in many distributions' kernels), the scheduler first shares the
//! CPU fairly between autogroups, one per session, and a niceness weighs only inside its own
//! autogroup. Every tmux pane is a session, and Claude Code runs each of its commands in a
//! session of its own: an agent started under `nice -n 10` still gets a whole session's
//! share, as much as drydock and everything it serves together. An autogroup has a niceness
//! of its own (`/proc/PID/autogroup`); a process may raise it (a lower priority) without
//! privilege, which is all this does. Without autogroups the file is missing and nothing
//! happens.

use std::collections::HashMap;

use super::procfs::{self, ProcStat};

/// An autogroup as `/proc/PID/autogroup` shows it: "/autogroup-ID nice N".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Autogroup {
    id: u64,
    nice: i8,
}

impl Autogroup {
    fn of(pid: i32) -> Option<Autogroup> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?)
    }

    fn of_self() -> Option<Autogroup> {
        Self::parse(&std::fs::read_to_string("/proc/self/autogroup").ok()?)
    }

    fn parse(text: &str) -> Option<Autogroup> {
        let (group, nice) = text.trim().split_once(" nice ")?;
        Some(Autogroup {
            id: group.strip_prefix("/autogroup-")?.parse().ok()?,
            nice: nice.trim().parse().ok()?,
        })
    }
}

/// Lowers to `nice` the autogroup of each of `roots` and of their descendants whose autogroup
/// is above it (never drydock's own, which a descendant still in drydock's session shares);
/// returns how many autogroups it lowered. A process that ends meanwhile is passed over.
pub fn hold_trees_at(roots: &[u32], nice: u8) -> usize {
    let own = Autogroup::of_self().map(|group| group.id);
    let processes = procfs::all_processes();
    let pids = roots
        .iter()
        .filter_map(|root| i32::try_from(*root).ok())
        .flat_map(|root| tree_of(root, &processes));
    let mut lowered = Vec::new();
    for pid in pids {
        let Some(group) = Autogroup::of(pid) else {
            continue;
        };
        if Some(group.id) == own || group.nice >= nice as i8 || lowered.contains(&group.id) {
            continue;
        }
        if std::fs::write(format!("/proc/{pid}/autogroup"), nice.to_string()).is_ok() {
            lowered.push(group.id);
        }
    }
    lowered.len()
}

/// `root` and its descendants by parent link, among `processes`.
fn tree_of(root: i32, processes: &[ProcStat]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for process in processes.iter().filter(|p| !p.is_gone()) {
        children.entry(process.ppid).or_default().push(process.pid);
    }
    let mut tree = vec![root];
    let mut next = 0;
    while let Some(&pid) = tree.get(next) {
        tree.extend(children.get(&pid).into_iter().flatten());
        next += 1;
    }
    tree
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn an_autogroup_line_is_read_and_anything_else_is_not() {
        assert_eq!(
            Autogroup::parse("/autogroup-1234 nice 10\n"),
            Some(Autogroup { id: 1234, nice: 10 })
        );
        assert_eq!(
            Autogroup::parse("/autogroup-7 nice -5"),
            Some(Autogroup { id: 7, nice: -5 })
        );
        assert_eq!(Autogroup::parse(""), None);
        assert_eq!(Autogroup::parse("/autogroup-x nice 0"), None);
        assert_eq!(Autogroup::parse("/autogroup-3 nice"), None);
    }

    #[test]
    fn a_tree_is_its_root_and_every_descendant_and_nothing_else() {
        let stat = |pid, ppid| ProcStat {
            pid,
            ppid,
            pgrp: pid,
            session: pid,
            tpgid: -1,
            state: 'S',
            start_time: 0,
        };
        let processes = [
            stat(1, 0),
            stat(10, 1),
            stat(11, 10),
            stat(12, 11),
            stat(20, 1),
        ];
        let mut tree = tree_of(10, &processes);
        tree.sort();
        assert_eq!(tree, vec![10, 11, 12]);
        assert_eq!(tree_of(99, &processes), vec![99]);
    }

    /// A command started in a session of its own (as Claude Code runs each) gets its autogroup
    /// lowered; the autogroup of the tree's root, which is this test process's own (drydock's
    /// own, for an agent started in drydock's session), is left as it is. This process may be in
    /// the kernel's default autogroup (a child of init that never started a session, as a CI
    /// runner's is), whose file is empty: that is no autogroup of its own, not a kernel without
    /// them.
    #[test]
    fn the_sessions_of_a_tree_are_lowered_and_the_callers_is_not() {
        if !std::path::Path::new("/proc/self/autogroup").exists() {
            // A kernel built without autogroups has nothing to lower.
            let mut child = Command::new("sleep").arg("30").spawn().unwrap();
            let lowered = hold_trees_at(&[child.id()], 10);
            child.kill().unwrap();
            child.wait().unwrap();
            assert_eq!(lowered, 0);
            return;
        }
        let own = Autogroup::of_self();
        let mut child = Command::new("sh")
            .args(["-c", "setsid sleep 30 & exec sleep 30"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let grandchild = (0..500).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            let started = procfs::all_processes()
                .into_iter()
                .find(|p| p.ppid == pid && p.session == p.pid)?;
            let exec_done = procfs::argv(started.pid)
                .first()
                .is_some_and(|p| p == "sleep");
            exec_done.then_some(started.pid)
        });
        let grandchild = grandchild.expect("the command in a session of its own started");
        assert_eq!(Autogroup::of(pid), own);
        assert_ne!(
            Autogroup::of(grandchild).map(|group| group.id),
            own.map(|group| group.id)
        );

        let lowered = hold_trees_at(&[child.id()], 10);
        let (theirs, ours) = (Autogroup::of(grandchild), Autogroup::of_self());
        let again = hold_trees_at(&[child.id()], 10);
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(grandchild),
            nix::sys::signal::Signal::SIGKILL,
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(lowered, 1);
        assert_eq!(theirs.unwrap().nice, 10);
        assert_eq!(ours, own);
        assert_eq!(again, 0, "held already");
    }
}
