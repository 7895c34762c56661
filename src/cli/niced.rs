//! `drydock niced`: what a task's agent is started behind. It lowers the priority of its own
//! process and of its terminal session (`process::priority`: `nice` alone yields nothing to
//! other sessions where the kernel groups the CPU by session), leaves a watcher that lowers
//! the sessions the agent's commands start, then becomes the agent. It reads no config and
//! touches no data dir.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use std::os::fd::AsRawFd;

use clap::Args;
use nix::unistd::ForkResult;

use crate::process::priority;
use crate::process::procfs::ProcStat;

#[derive(Args, Clone)]
pub(super) struct NicedArgs {
    /// The niceness: 0 (unchanged) to 19 (the lowest priority).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=19))]
    nice: u8,
    /// The program to run and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    argv: Vec<OsString>,
}

pub(super) fn run(args: NicedArgs) -> ExitCode {
    // An agent at drydock's priority still does its work: say so, and run it.
    if let Err(e) = priority::lower(args.nice) {
        eprintln!(
            "drydock: could not lower the priority to nice {}: {e}; running at the priority it has",
            args.nice
        );
    }
    watch_sessions_below_me(args.nice);
    let (program, rest) = args.argv.split_first().expect("clap requires a program");
    let error = std::process::Command::new(program).args(rest).exec();
    eprintln!("drydock: cannot run {}: {error}", program.to_string_lossy());
    ExitCode::from(127)
}

/// Forks the watcher of the sessions this process (the agent, once it execs) starts. The
/// watcher holds no terminal and dies with the agent.
fn watch_sessions_below_me(nice: u8) {
    let Some(agent) = ProcStat::read(std::process::id() as i32) else {
        return;
    };
    // SAFETY: single-threaded here (no runtime was built), so the child may run any code.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
            if nix::unistd::getppid().as_raw() == agent.pid {
                detach_from_terminal();
                priority::keep_lowered(agent, nice);
            }
            std::process::exit(0);
        }
        Ok(ForkResult::Parent { .. }) => {}
        Err(e) => eprintln!("drydock: the sessions the agent starts keep their priority: {e}"),
    }
}

/// Points the watcher's standard streams at /dev/null: the terminal stays the agent's alone.
fn detach_from_terminal() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..=2 {
            // SAFETY: dup2 onto the standard descriptors of this process, which owns them.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}
