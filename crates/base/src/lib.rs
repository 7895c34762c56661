//! The foundation of drydock: what every layer uses and none of them owns (config, child
//! processes, git, the event feed, the one door for untrusted content, the sandbox, ...).
//! It knows no capability (ARCHITECTURE.md).

pub mod bounded;
pub mod call;
pub mod catalog;
pub mod config;
pub mod digest;
pub mod events;
pub mod exs;
pub mod git;
pub mod local_endpoint;
pub mod long_calls;
pub mod millis;
pub mod private;
pub mod process;
pub mod project_facts;
pub mod render;
pub mod sandbox;
pub mod shared_reading;
pub mod spend;
pub mod supervise;
pub mod telemetry;
pub mod text_budget;
pub mod untrusted;
pub mod workspace;
