//! The integration tests, one binary for all of them (`cargo test --test it`), one module per
//! suite; `cargo test --test it mcp_terminals::` runs one suite. Every suite runs in this one
//! process, on the same test threads as the others: what two suites share (the mix projects
//! in test-projects/, markers on processes) is in `support`.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod proc_env;
mod support;

mod agent_hooks;
mod agent_kit;
mod agent_screens;
mod blocked_memory;
mod chaos_soak;
mod chromium;
mod containment;
mod dashboard;
mod docs_eval;
mod docs_index;
mod docs_models;
mod doctor;
mod forecast;
mod fuzz_corpus;
mod history;
mod landing;
mod local_port;
mod mcp_agents;
mod mcp_build_tools;
mod mcp_docs;
mod mcp_long_calls;
mod mcp_mix_tools;
mod mcp_protocol;
mod mcp_run_and_cancel;
mod mcp_spawn;
mod mcp_tasks;
mod mcp_terminals;
mod postgres;
mod queue_outage;
mod readme;
mod release;
mod retrieval_scores;
mod sandbox;
mod task_budgets;
mod task_scope;
mod task_worktrees;
mod team_hosts;
mod team_queue;
mod telemetry;
mod toolchain_versions;
