//! drydock: a developer toolbox served to coding agents over MCP.
//!
//! drydock is a workspace of crates, one per layer (ARCHITECTURE.md): `drydock-base` (the
//! foundation), the capabilities (`drydock-terminal`, `-toolchain`, `-docs`, `-history`,
//! `-agents`, `-tasks`), `drydock-server` (the running drydock and its faces) and this one,
//! the command line. Their modules are re-exported here under their own names:
//!
//! - [`app`]: one running drydock: config, the capabilities, the event feed, shutdown;
//! - [`catalog`]: the one list of tools, with their toolsets and annotations;
//! - [`events`]: the event feed (tool calls, terminal sessions, docs ingests);
//! - [`millis`]: time as drydock reports and stores it, whole milliseconds;
//! - [`long_calls`]: tool calls that became MCP tasks, kept across reconnects and restarts;
//! - [`call`] and [`render`]: what every capability's long operations take (progress,
//!   cancellation) and how every report renders as text;
//! - [`supervise`]: background loops started again after a panic;
//! - [`shared_reading`]: a reading of the outside (a tmux server's panes, `/proc`) that callers
//!   arriving together share;
//! - [`toolchain`]: cargo and mix for the build tools, each toolchain with its parsers;
//! - [`exs`]: every Elixir script drydock runs;
//! - [`terminal`]: PTY and tmux sessions, their screens and shell marks;
//! - [`agents`]: coding agents in terminals: profiles, OSC 7501, prompts and state detection,
//!   hooks, answering, spawning with consent;
//! - [`tasks`]: the persistent queue of tasks for agents, each in a worktree of its own, with
//!   a result to review, merge or discard;
//! - [`docs`]: the local documentation index and its lookup;
//! - [`history`]: the project memory: build and test results, their problems and the changes
//!   that fixed them;
//! - [`process`]: how every child process is started, limited and stopped;
//! - [`sandbox`]: the bubblewrap sandbox of a task's agent, its network gate and its private
//!   git;
//! - [`spend`] and [`telemetry`]: what model calls spend and a budget on it; drydock's traces
//!   over OTLP;
//! - [`git`]: git as a child process, for tasks' worktrees, commits and merges;
//! - [`workspace`]: the allowed roots, and paths resolved inside them;
//! - [`private`]: random tokens and files only the user can read;
//! - [`untrusted`]: the one door for what a task or a repository wrote: files beneath a root
//!   through no link, bounded reads, printed paths kept inside;
//! - [`digest`]: content hashes, and folders named after a path or a URL;
//! - [`project_facts`]: what `cargo metadata`, Cargo.lock, mix.exs and mix.lock say, typed once
//!   for the build tools and the docs;
//! - [`local_endpoint`]: where drydock's own commands find the running server;
//! - [`config`]: drydock.toml, flags and environment, resolved once;
//! - [`text_budget`]: fitting text into what a client reads;
//! - [`bounded`]: the numbers tools take, each within its range;
//! - [`mcp`] and [`http`]: the MCP server and its HTTP face, thin adapters over the above;
//! - [`dashboard`]: the page at `/` (live terminals, agents, the queue, the tool feed) and its
//!   WebSocket, acting only through tool calls;
//! - [`tool_call`]: one tool by name without MCP (`drydock call`);
//! - [`cli`]: the command line;
//! - `fuzz_targets`: every parser of foreign text as the fuzzers and their corpora reach it
//!   (tests and `--cfg fuzzing` builds only).

pub use drydock_agents::agents;
pub use drydock_base::{
    bounded, call, catalog, config, digest, events, exs, git, local_endpoint, long_calls, millis,
    private, process, project_facts, render, sandbox, shared_reading, spend, supervise, telemetry,
    text_budget, untrusted, workspace,
};
pub use drydock_docs::docs;
pub use drydock_history::history;
pub use drydock_server::{app, dashboard, http, mcp, tool_call};
pub use drydock_tasks::tasks;
pub use drydock_terminal::terminal;
pub use drydock_toolchain::toolchain;

pub mod cli;
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzz_targets;
