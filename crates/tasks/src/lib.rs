//! The task queue: agents on tasks, each in a worktree and a sandbox of its own, their results reviewed and landed.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_agents::agents;
use drydock_base::{
    bounded, call, config, digest, events, git, local_endpoint, millis, private, process, render,
    sandbox, spend, supervise, telemetry, text_budget, untrusted, workspace,
};
use drydock_terminal::terminal;
use drydock_toolchain::toolchain;

pub mod tasks;
