//! The build tools: cargo and mix run on a project, their output parsed into diagnostics and test results.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_base::{
    bounded, call, catalog, config, exs, git, millis, process, project_facts, render, sandbox,
    untrusted, workspace,
};

pub mod toolchain;
