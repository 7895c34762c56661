//! The one reader of `/proc`: a process's stat line (pid, parent, group, session, state,
//! start time) and whether its environment carries a given entry. Linux only; elsewhere every
//! read finds nothing.

/// What `/proc/PID/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// The foreground process group of the process's controlling terminal (-1: none).
    pub tpgid: i32,
    /// `R`, `S`, `D`, `Z` (zombie), `X` (dead), ...
    pub state: char,
    /// Clock ticks after boot. With the pid, it names one process: a reused pid has a later
    /// start time.
    pub start_time: u64,
}

impl ProcStat {
    pub fn read(pid: i32) -> Option<ProcStat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Self::parse(&text)
    }

    /// Parses "pid (comm) state ppid pgrp session ...", where comm may itself contain spaces
    /// and parentheses (so the last `)` ends it).
    pub fn parse(text: &str) -> Option<ProcStat> {
        let (pid, rest) = text.split_once(" (")?;
        let after_comm = &rest[rest.rfind(')')? + 1..];
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        // Fields after comm, 0-based: state, ppid, pgrp, session, tty_nr, tpgid, ...,
        // starttime (19).
        Some(ProcStat {
            pid: pid.trim().parse().ok()?,
            state: fields.first()?.chars().next()?,
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            session: fields.get(3)?.parse().ok()?,
            tpgid: fields.get(5)?.parse().ok()?,
            start_time: fields.get(19)?.parse().ok()?,
        })
    }

    /// A zombie or dead process runs nothing any more; only its parent's wait is missing.
    pub fn is_gone(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }

    /// Whether this is still the process `earlier` described (same pid, same start time).
    pub fn is_same_process(&self, earlier: &ProcStat) -> bool {
        self.pid == earlier.pid && self.start_time == earlier.start_time
    }
}

/// Every process that can be read now. Processes that end while the list is read are skipped.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(ProcStat::read)
        .collect()
}

/// The process's arguments (empty for a kernel thread, or when it cannot be read).
pub fn argv(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The path of the process's executable, when it can be read.
pub fn executable(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|path| path.to_string_lossy().into_owned())
}

/// The process's working directory, when it can be read.
pub fn cwd(pid: i32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Whether `NAME=value` (given as `entry`) is one of the process's environment variables as it
/// was when it started. False when the environment cannot be read.
pub fn environ_contains(pid: i32, entry: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        environ
            .split(|&b| b == 0)
            .any(|variable| variable == entry.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let stat = "123 (a) b (c) S 1 456 789 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 98765 0 0";
        let parsed = ProcStat::parse(stat).unwrap();

        assert_eq!(
            parsed,
            ProcStat {
                pid: 123,
                ppid: 1,
                pgrp: 456,
                session: 789,
                tpgid: -1,
                state: 'S',
                start_time: 98765,
            }
        );
    }

    #[test]
    fn a_truncated_stat_line_is_refused() {
        assert_eq!(ProcStat::parse("123 (x) S 1 2"), None);
        assert_eq!(ProcStat::parse("garbage"), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = ProcStat::read(std::process::id() as i32).expect("own stat");

        assert_eq!(me.pid, std::process::id() as i32);
        assert_eq!(me.ppid, std::os::unix::process::parent_id() as i32);
        assert!(!me.is_gone());
        assert!(all_processes().iter().any(|p| p.is_same_process(&me)));
        assert_eq!(argv(me.pid), std::env::args().collect::<Vec<_>>());
        let exe = std::env::current_exe().unwrap();
        assert_eq!(executable(me.pid), Some(exe.to_string_lossy().into_owned()));
        assert_eq!(cwd(me.pid), std::env::current_dir().ok());
    }

    #[test]
    fn the_environment_of_a_child_is_read_exactly() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .env("DRYDOCK_PROCFS_TEST", "yes")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // The environment is there once the child has exec'd.
        let mut found = false;
        for _ in 0..200 {
            found = environ_contains(pid, "DRYDOCK_PROCFS_TEST=yes");
            if found {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let prefix_only = environ_contains(pid, "DRYDOCK_PROCFS_TEST=y");
        child.kill().unwrap();
        child.wait().unwrap();

        assert!(found);
        assert!(!prefix_only, "a prefix of a variable is not the variable");
        assert!(!environ_contains(pid, "DRYDOCK_PROCFS_TEST=yes"), "gone");
    }
}
