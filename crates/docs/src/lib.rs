//! The documentation index: chunkers per format, the embedding model, LanceDB with full text, hybrid search.
//!
//! A layer of drydock (ARCHITECTURE.md): the modules it names from `crate::` below are its own
//! or those of the layers it depends on, imported here under the same names.

use drydock_base::{
    bounded, call, config, digest, events, exs, millis, process, project_facts, render, workspace,
};

pub mod docs;
