//! The project memory: every problem the build tools reported, and the change that fixed it.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_base::{
    bounded, config, digest, events, git, millis, private, render, text_budget, untrusted,
    workspace,
};
use drydock_docs::docs;
use drydock_toolchain::toolchain;

pub mod history;
