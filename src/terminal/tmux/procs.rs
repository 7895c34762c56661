//! The processes a pane ran, found in /proc, so that none outlives a kill.
//!
//! tmux starts each pane's process as the leader of a new terminal session (setsid), so
//! every process of the pane has that session id unless it left with `setsid` itself;
//! descendants are added too (by parent pid) to catch those that did not leave through a
//! reparent. Each process is remembered with its start time so a recycled pid is never hit.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const GRACE: Duration = Duration::from_millis(300);
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: u32,
    pub ppid: u32,
    pub session: u32,
    pub start_time: u64,
}

/// Parses `/proc/PID/stat`: "pid (comm) state ppid pgrp session ... starttime(22) ...".
/// `comm` may hold spaces and parentheses, so fields are counted after the last ')'.
pub(crate) fn parse_stat(stat: &str) -> Option<ProcStat> {
    let (head, rest) = stat.rsplit_once(')')?;
    let pid = head.split_once(" (")?.0.trim().parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state).
    Some(ProcStat {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

fn read_stat(pid: u32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Processes (pid, start time) found for some panes.
#[derive(Debug, Default)]
pub(crate) struct ProcessSet(Vec<(u32, u64)>);

impl ProcessSet {
    /// Every process in the terminal sessions led by `pane_pids`, and their descendants.
    pub fn of_panes(pane_pids: impl IntoIterator<Item = u32>) -> Self {
        let roots: HashSet<u32> = pane_pids.into_iter().collect();
        if roots.is_empty() {
            return Self::default();
        }
        let all = all_processes();
        let mut children: HashMap<u32, Vec<&ProcStat>> = HashMap::new();
        for p in &all {
            children.entry(p.ppid).or_default().push(p);
        }
        let mut found: HashMap<u32, u64> = all
            .iter()
            .filter(|p| roots.contains(&p.session) || roots.contains(&p.pid))
            .map(|p| (p.pid, p.start_time))
            .collect();
        let mut stack: Vec<u32> = found.keys().copied().collect();
        while let Some(pid) = stack.pop() {
            for child in children.get(&pid).into_iter().flatten() {
                if found.insert(child.pid, child.start_time).is_none() {
                    stack.push(child.pid);
                }
            }
        }
        Self(found.into_iter().collect())
    }

    #[cfg(test)]
    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().map(|(pid, _)| *pid).collect()
    }

    fn alive(&self) -> Vec<u32> {
        self.0
            .iter()
            .filter(|(pid, start)| {
                read_stat(*pid).is_some_and(|s| s.start_time == *start) && !is_zombie(*pid)
            })
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// After tmux closed the ptys (SIGHUP): gives the processes a moment to exit, then
    /// SIGKILLs whatever is left and waits (bounded) until it is gone.
    pub async fn kill_survivors(&self) {
        if self.0.is_empty() || self.wait_gone(GRACE).await {
            return;
        }
        for pid in self.alive() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        self.wait_gone(GRACE).await;
    }

    async fn wait_gone(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.alive().is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_comm() {
        let stat = "1234 (a (b) c) S 1 1234 1234 34816 1234 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100";
        let s = parse_stat(stat).unwrap();
        assert_eq!(
            s,
            ProcStat {
                pid: 1234,
                ppid: 1,
                session: 1234,
                start_time: 987654
            }
        );
    }

    #[test]
    fn reads_own_stat() {
        let me = read_stat(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
    }
}
