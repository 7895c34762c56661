//! One running drydock and its faces: the MCP server, its HTTP transport, the dashboard, and tool calls without MCP.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_agents::agents;
use drydock_base::{
    call, catalog, config, events, long_calls, millis, private, render, supervise, telemetry,
    text_budget, workspace,
};
use drydock_docs::docs;
use drydock_history::history;
use drydock_tasks::tasks;
use drydock_terminal::terminal;
use drydock_toolchain::toolchain;

pub mod app;
pub mod dashboard;
pub mod http;
pub mod mcp;
pub mod tool_call;
