//! Agent supervision's pure core: which coding agent runs in a terminal, what state it is
//! in and what it asks, from what its terminal shows and tells (agent-lab.md holds the
//! measured facts this builds on). No terminal I/O here; the terminal layer feeds it.
//!
//! - [`profile`]: agent profiles as data (embedded TOML, user overrides by version) and
//!   recognising an agent's process;
//! - [`rules`]: how a profile reads state: OSC 7501 support, regions, title, screen and
//!   hook rules;
//! - [`keys`]: the keys that answer an agent, and how text is submitted;
//! - [`launch`]: the argv that starts an agent for one run, with hooks and MCP config;
//! - [`osc7501`]: a streaming scanner for OSC 7501 program-status reports and probes;
//! - [`prompt`]: a waiting prompt read off the screen, with options and a stable id;
//! - [`detect`]: profile + observation → state, deciding signal and since when.

pub mod detect;
pub mod keys;
pub mod launch;
pub mod osc7501;
pub mod profile;
pub mod prompt;
pub mod rules;

#[cfg(test)]
mod fixtures;

pub use detect::{
    AgentState, Detection, HookEvent, Millis, Observation, ProcessStatus, Signal, Stamped, Waiting,
    detect,
};
pub use keys::{Keys, Submission, SubmitPlan};
pub use launch::{LaunchError, LaunchVars};
pub use osc7501::{Osc7501Scanner, OscEvent, ReportedState, StatusReport};
pub use profile::{ProcessInfo, Profile, ProfileError, Profiles};
pub use prompt::{Prompt, PromptId, PromptOption, extract_prompt};
pub use rules::WaitKind;
