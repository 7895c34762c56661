//! Agent supervision's pure core: which coding agent runs in a terminal, what state it is
//! in and what it asks, from what its terminal shows and tells (agent-lab.md holds the
//! measured facts this builds on). No terminal I/O here; the terminal layer feeds it.
//!
//! - [`profile`]: agent profiles as data (embedded TOML, user overrides), recognising
//!   an agent's process, its keys, submission and launch;
//! - [`osc7501`]: a streaming scanner for OSC 7501 program-status reports and probes;
//! - [`prompt`]: a waiting prompt read off the screen, with options and a stable id;
//! - [`detect`]: profile + observation → state, deciding signal and since when.

pub mod detect;
pub mod osc7501;
pub mod profile;
pub mod prompt;

#[cfg(test)]
mod fixtures;

pub use detect::{
    AgentState, Detection, HookEvent, Millis, Observation, ProcessStatus, Signal, Stamped, Waiting,
    detect,
};
pub use osc7501::{Osc7501Scanner, OscEvent, ReportedState, StatusReport};
pub use profile::{
    LaunchError, LaunchVars, ProcessInfo, Profile, ProfileError, Profiles, SubmitPlan, WaitKind,
};
pub use prompt::{Prompt, PromptId, PromptOption, extract_prompt};
