//! Which terminal runs which agent, found from the process tree (never from screen text):
//! below each terminal's first process, the processes of the terminal's foreground group
//! first, the deepest first (the process that draws the TUI, not a wrapper that started
//! it), matched against the profiles by executable and argv.

use std::collections::HashMap;
use std::path::PathBuf;

use super::profile::{ProcessInfo, Profiles};
use crate::process::procfs::{self, ProcStat};
use crate::terminal::TerminalProgram;

/// An agent CLI running in a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub terminal: TerminalProgram,
    /// The profile that recognised it.
    pub profile: String,
    pub process: ProcStat,
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
}

/// The processes running at one moment, and who started whom.
pub(super) struct ProcessTable {
    by_pid: HashMap<i32, ProcStat>,
    children: HashMap<i32, Vec<i32>>,
}

impl ProcessTable {
    pub(super) fn read() -> ProcessTable {
        ProcessTable::of(procfs::all_processes())
    }

    fn of(processes: Vec<ProcStat>) -> ProcessTable {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for process in processes.iter().filter(|p| !p.is_gone()) {
            children.entry(process.ppid).or_default().push(process.pid);
        }
        ProcessTable {
            by_pid: processes.into_iter().map(|p| (p.pid, p)).collect(),
            children,
        }
    }

    /// `root` and every live process below it, ordered for recognition: the terminal's
    /// foreground process group first, deeper processes before their parents.
    fn below(&self, root: i32) -> Vec<ProcStat> {
        let Some(first) = self.by_pid.get(&root).filter(|p| !p.is_gone()) else {
            return Vec::new();
        };
        let mut tree = vec![(0usize, *first)];
        let mut next = 0;
        while next < tree.len() {
            let (depth, process) = tree[next];
            for child in self.children.get(&process.pid).into_iter().flatten() {
                tree.push((depth + 1, self.by_pid[child]));
            }
            next += 1;
        }
        let foreground = first.tpgid;
        tree.sort_by_key(|(depth, process)| (process.pgrp != foreground, usize::MAX - depth));
        tree.into_iter().map(|(_, process)| process).collect()
    }
}

/// The agents running in `terminals`, one per terminal at most.
pub(super) fn find(
    profiles: &Profiles,
    terminals: &[TerminalProgram],
    table: &ProcessTable,
) -> Vec<Found> {
    terminals
        .iter()
        .filter_map(|terminal| {
            let processes = table.below(terminal.pid as i32);
            let details: Vec<(String, Vec<String>)> = processes
                .iter()
                .map(|p| {
                    (
                        procfs::executable(p.pid).unwrap_or_default(),
                        procfs::argv(p.pid),
                    )
                })
                .collect();
            let infos: Vec<ProcessInfo<'_>> = details
                .iter()
                .map(|(executable, argv)| ProcessInfo { executable, argv })
                .collect();
            let (profile, index) = profiles.recognise(&infos)?;
            let process = processes[index];
            Some(Found {
                terminal: terminal.clone(),
                profile: profile.name.clone(),
                process,
                argv: details[index].1.clone(),
                cwd: procfs::cwd(process.pid),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: i32, ppid: i32, pgrp: i32, tpgid: i32) -> ProcStat {
        ProcStat {
            pid,
            ppid,
            pgrp,
            session: 1,
            tpgid,
            state: 'S',
            start_time: 1,
        }
    }

    #[test]
    fn the_foreground_group_comes_first_and_children_before_parents() {
        // shell 10 (group 10) ran `node wrapper` 11 → native 12 in group 11 (foreground),
        // and a background job 13 in group 13.
        let table = ProcessTable::of(vec![
            process(10, 1, 10, 11),
            process(11, 10, 11, 11),
            process(12, 11, 11, 11),
            process(13, 10, 13, 11),
            process(99, 1, 99, -1),
        ]);
        let order: Vec<i32> = table.below(10).iter().map(|p| p.pid).collect();
        assert_eq!(order, [12, 11, 13, 10]);
        assert!(
            table.below(4242).is_empty(),
            "a terminal whose process is gone"
        );
    }

    #[test]
    fn zombies_are_not_candidates() {
        let mut zombie = process(11, 10, 11, 11);
        zombie.state = 'Z';
        let table = ProcessTable::of(vec![process(10, 1, 10, 11), zombie]);
        let order: Vec<i32> = table.below(10).iter().map(|p| p.pid).collect();
        assert_eq!(order, [10]);
    }

    #[test]
    fn an_agent_below_a_shell_is_found_by_its_executable_name() {
        // A copy of `sleep` named `claude`: recognition is by executable and argv only.
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        std::fs::copy("/bin/sleep", &claude).unwrap();
        let mut shell = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{} 30; true", claude.display()))
            .spawn()
            .unwrap();
        let terminal = TerminalProgram {
            name: "t1".into(),
            pid: shell.id(),
            users: false,
        };
        let profiles = Profiles::embedded();
        let mut found = Vec::new();
        for _ in 0..200 {
            found = find(
                &profiles,
                std::slice::from_ref(&terminal),
                &ProcessTable::read(),
            );
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let nothing = find(
            &profiles,
            &[TerminalProgram {
                pid: plain.id(),
                ..terminal.clone()
            }],
            &ProcessTable::read(),
        );
        for child in [&mut shell, &mut plain] {
            child.kill().unwrap();
            child.wait().unwrap();
        }

        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].profile, "claude");
        assert_eq!(found[0].terminal, terminal);
        assert_eq!(found[0].argv, [claude.display().to_string(), "30".into()]);
        assert_ne!(found[0].process.pid, shell.id() as i32);
        assert!(nothing.is_empty(), "{nothing:?}");
    }
}
