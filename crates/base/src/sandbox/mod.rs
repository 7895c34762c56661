//! The sandbox a task's agent, and everything drydock runs on its work, is confined to:
//! Linux namespaces through bubblewrap. Outside, drydock prepares what the sandbox sees and
//! serves the only two ways out of it, as unix sockets bound into it: drydock itself, under
//! the task's identity, and a proxy that reaches the allowed hosts alone. Inside, a small
//! drydock process turns those sockets back into the loopback ports the agent's clients
//! expect, then runs the agent.

pub mod confinement;
pub mod inside;
pub mod net_gate;
pub mod private_git;
pub mod support;

pub use confinement::{Confinement, Mount};
pub use private_git::PrivateGit;
pub use support::Support;
