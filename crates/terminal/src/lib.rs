//! PTY and tmux sessions: their screens, scrollback and shell marks, and the user's own tmux panes.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_base::{
    bounded, call, config, events, millis, process, render, shared_reading, text_budget, workspace,
};

pub mod terminal;
