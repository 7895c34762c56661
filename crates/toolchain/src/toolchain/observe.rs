//! What the build tools hand to whoever keeps their results (drydock's project memory):
//! each finished build, test, run or format, and back what was seen and fixed before of its
//! problems.

use std::path::Path;

use futures::future::BoxFuture;

pub use super::Toolchain;
use super::reports::{BuildReport, FormatReport, RunReport, SeenBefore, TestReport};
use crate::catalog::ToolName;

/// Keeps the build tools' results.
pub trait Observer: Send + Sync {
    /// A build or test of `project` starts: the observer may look at the project's files
    /// now, as the tool sees them (in the background: the tool does not wait for it).
    fn starting(&self, project: &Path) -> Started;

    /// The run `started` began finished. Returns what was seen and fixed before of its
    /// problems, quickly: it is on the call's path (the observer bounds how long it looks),
    /// and whatever takes time (recording) goes on in the background.
    fn observe<'a>(&'a self, started: Started, run: Observed<'_>)
    -> BoxFuture<'a, Vec<SeenBefore>>;
}

/// What an observer keeps of a run from its start to its end.
pub struct Started(pub Box<dyn std::any::Any + Send>);

/// A finished run of a build tool.
pub struct Observed<'a> {
    /// The project's directory.
    pub project: &'a Path,
    pub toolchain: Toolchain,
    pub tool: ToolName,
    /// What the run checked (the tool and the arguments that choose what it builds or
    /// tests): a problem is fixed when a later run of the same check no longer has it.
    pub check: String,
    pub result: ObservedResult<'a>,
    pub client: Option<&'a str>,
}

pub enum ObservedResult<'a> {
    Build(&'a BuildReport),
    Test(&'a TestReport),
    Run(&'a RunReport),
    Format(&'a FormatReport),
}
