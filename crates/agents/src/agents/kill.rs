//! Ending an agent: its process and everything it started (tool commands, MCP servers), and
//! nothing else: the shell or pane it runs in stays, with its last screen readable.

use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use nix::sys::signal::Signal;

use super::answer::not_in;
use super::reports::KillReport;
use super::requests::KillRequest;
use super::{AgentError, Agents};
use crate::call::Call;
use crate::process::ProcessTree;
use crate::process::procfs::ProcStat;

/// Each step's signal and how long the agent's processes get to end after it.
const STEPS: [(Signal, &str, Duration); 3] = [
    (Signal::SIGINT, "interrupt", Duration::from_secs(2)),
    (Signal::SIGTERM, "terminate", Duration::from_secs(3)),
    (Signal::SIGKILL, "kill", Duration::from_secs(2)),
];
/// How long the terminal has to show the agent gone.
const SEEN_GONE: Duration = Duration::from_secs(5);

impl Agents {
    /// Interrupts `req.agent`, then terminates and kills what is left of its process tree.
    /// A pane of the user's own tmux server only with `force`.
    pub fn kill<'a>(
        &'a self,
        req: KillRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<KillReport, AgentError>> {
        async move {
            let agent = self.one(&req.agent).await?;
            if agent.state == "exited" {
                return Err(not_in(&agent, "running", "its process is gone already"));
            }
            if agent.users_pane && !req.force {
                return Err(AgentError::InvalidArgument(format!(
                    "{} is a pane of your own tmux server: pass force: true to kill the {} in it (the pane and its shell stay)",
                    agent.name, agent.kind
                )));
            }
            let process = ProcStat::read(agent.pid as i32)
                .filter(|p| !p.is_gone())
                .ok_or_else(|| not_in(&agent, "running", "its process is gone already"))?;
            let tree = ProcessTree::below(process);
            let processes = tree.members().len();
            let mut ended_by = None;
            for (signal, step, grace) in STEPS {
                if call.cancel.is_cancelled() {
                    break;
                }
                tree.signal(signal);
                if tree.wait_gone(grace).await {
                    ended_by = Some(step.to_string());
                    break;
                }
            }
            let remaining: Vec<u32> = tree
                .members()
                .iter()
                .filter(|p| !p.is_gone())
                .map(|p| p.pid as u32)
                .collect();
            tree.release();
            let (_, agent) = self
                .until(&req.agent, Instant::now() + SEEN_GONE, &call.cancel, |a| {
                    a.state == "exited"
                })
                .await?;
            Ok(KillReport {
                ended_by,
                processes,
                remaining,
                agent,
            })
    }
        .boxed()
    }
}
