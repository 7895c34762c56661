//! Coding agents in terminals: recognised by profile, their state read from the screen, answered, spawned with consent.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_base::{
    bounded, call, config, events, local_endpoint, millis, private, process, render, sandbox,
    shared_reading, spend, untrusted, workspace,
};
use drydock_terminal::terminal;

pub mod agents;
