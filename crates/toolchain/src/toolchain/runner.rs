//! How a toolchain's child processes run: under one call's limits, stopped by the call's
//! cancellation or by drydock shutting down, tracked so shutdown can wait for them.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Toolchain, ToolchainError};
use crate::call::Call;
use crate::process::{self, CommandSpec, Policy, ProcessOutput, RunError};

/// Runs a toolchain's child processes under one call's policy.
#[derive(Clone)]
pub struct Runner {
    pub(super) policy: Policy,
    pub(super) shutdown: CancellationToken,
    pub(super) runs: TaskTracker,
    /// Set in every child's environment (a task worktree's cargo target directory).
    pub(super) env_set: Vec<(String, String)>,
    /// The sandbox every child runs in (a build in a task's worktree runs the task's code).
    pub(super) confine: Option<Confined>,
    /// Whose programs it runs: the toolchain that says how to install one that is missing.
    pub(super) toolchain: Option<Toolchain>,
}

/// A sandbox for builds: bubblewrap, and what the build sees.
#[derive(Debug, Clone)]
pub struct Confined {
    pub bwrap: std::path::PathBuf,
    pub confinement: crate::sandbox::Confinement,
}

impl Runner {
    /// Run `program args` in `cwd`, feeding every output line to `on_line`.
    pub fn run<'a>(
        &'a self,
        mut spec: CommandSpec,
        call: &'a Call<'a>,
        on_line: &'a mut (dyn FnMut(process::Stream, &str) + Send),
    ) -> BoxFuture<'a, Result<ProcessOutput, RunError>> {
        async move {
            spec.env_set.extend(self.env_set.iter().cloned());
            if let Some(confined) = &self.confine {
                spec = crate::sandbox::confinement::confine(
                    spec,
                    &confined.bwrap,
                    &confined.confinement,
                );
            }
            // Stopped by the call's own cancellation or by the server shutting down.
            let stop = self.shutdown.child_token();
            let run = self
                .runs
                .track_future(self.policy.run(spec, &stop, on_line));
            tokio::pin!(run);
            tokio::select! {
                biased;
                output = &mut run => output,
                _ = call.cancel.cancelled() => {
                    stop.cancel();
                    run.await
                }
            }
        }
        .boxed()
    }

    /// `run`, with a program that is not installed reported as a missing toolchain, saying
    /// how to install it.
    pub fn run_toolchain<'a>(
        &'a self,
        spec: CommandSpec,
        call: &'a Call<'a>,
        on_line: &'a mut (dyn FnMut(process::Stream, &str) + Send),
    ) -> BoxFuture<'a, Result<ProcessOutput, ToolchainError>> {
        async move {
            let program = spec.program.clone();
            self.run(spec, call, on_line).await.map_err(|e| match e {
                RunError::NotFound { .. } => ToolchainError::ToolchainMissing {
                    hint: match self.toolchain {
                        Some(toolchain) => toolchain.kit().install_hint(&program).to_string(),
                        None => format!("put `{program}` on the server's PATH"),
                    },
                    program,
                },
                other => ToolchainError::Run(other),
            })
        }
        .boxed()
    }

    /// `run_toolchain` for commands whose output is only read at the end.
    pub fn run_to_end<'a>(
        &'a self,
        spec: CommandSpec,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<ProcessOutput, ToolchainError>> {
        async move { self.run_toolchain(spec, call, &mut |_, _| {}).await }.boxed()
    }

    /// Generous limits, for unit tests that run real programs.
    #[cfg(test)]
    pub fn for_tests() -> Runner {
        Runner {
            policy: Policy {
                limits: process::Limits {
                    timeout: Duration::from_secs(600),
                    output_cap: 1 << 20,
                    kill_grace: Duration::from_secs(2),
                },
                env_remove: Vec::new(),
            },
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
            env_set: Vec::new(),
            confine: None,
            toolchain: None,
        }
    }

    /// The same limits with a shorter timeout, for quick helper commands.
    pub fn quick(&self, timeout: Duration) -> Runner {
        Runner {
            policy: self.policy.within(timeout),
            ..self.clone()
        }
    }

    /// `quick`, outside any sandbox: for drydock's own helpers, which run none of the
    /// project's code (compiling drydock's ExUnit formatter into drydock's cache).
    pub fn own_helper(&self, timeout: Duration) -> Runner {
        Runner {
            confine: None,
            ..self.quick(timeout)
        }
    }

    /// The same runner whose sandbox, if it has one, also sees `dir` (read-only).
    pub fn seeing(&self, dir: &std::path::Path) -> Runner {
        let mut runner = self.clone();
        if let Some(confined) = &mut runner.confine {
            confined
                .confinement
                .readable
                .push(crate::sandbox::Mount::same(dir));
        }
        runner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Silent;

    #[tokio::test]
    async fn a_missing_program_is_a_missing_toolchain_with_its_kits_hint() {
        let mix = crate::toolchain::mix::TOOLCHAIN;
        let runner = Runner {
            toolchain: Some(mix),
            ..Runner::for_tests()
        };
        let call = Call::new(&Silent, Default::default());
        let spec = CommandSpec::new("drydock-no-such-elixir", ["--version"], "/");
        let Err(ToolchainError::ToolchainMissing { program, hint }) =
            runner.run_to_end(spec, &call).await
        else {
            panic!("a program not on PATH is a missing toolchain");
        };
        assert_eq!(program, "drydock-no-such-elixir");
        assert_eq!(hint, mix.kit().install_hint(&program));
    }
}
