//! A background load like a cargo build started from another terminal: one busy process per
//! core at normal priority, in a session of its own, until dropped. A terminal's commands run
//! in its session, and on kernels with autogroups (this one, most distributions) the CPU is
//! shared between sessions first: threads of the bench's own process would be a load no
//! build is. The docs benches measure latency with and without it in one run.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

pub struct BusyLoad {
    processes: Vec<Child>,
}

impl BusyLoad {
    /// As many busy processes as the machine has cores.
    pub fn start() -> BusyLoad {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let processes = (0..cores)
            .map(|_| {
                let mut command = Command::new("sh");
                command
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null());
                // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
                unsafe {
                    command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(Into::into));
                }
                command.spawn().expect("a busy sh")
            })
            .collect();
        BusyLoad { processes }
    }

    pub fn processes(&self) -> usize {
        self.processes.len()
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        for process in &mut self.processes {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}
