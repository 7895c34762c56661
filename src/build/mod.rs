//! The build toolset: project_info, compile, type_check, test, run, format, lint.
//!
//! `BuildTools` resolves the project against the allowlist, waits for the project's turn
//! and hands the call to the project's toolchain.

pub mod arg_values;
pub mod cargo;
pub mod diagnostics;
pub mod dialyzer;
pub mod exunit_output;
pub mod format_report;
pub mod mix;
pub mod mix_diagnostics;
pub mod project_queue;
pub mod reports;
pub mod requests;
pub mod task_args;
pub mod test_report;
pub mod version_cache;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::call::Call;
use crate::config::{Config, ToolName};
use crate::process::{self, CommandSpec, Limits, ProcessOutput, RunError};
use crate::workspace::{Project, ToolchainKind, Workspace, WorkspaceError};
use arg_values::{NameKind, ValueError};
use project_queue::ProjectQueue;
use reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use requests::{CompileRequest, FormatRequest, ProjectInfoRequest, RunRequest, TestRequest};

/// A call that could not run at all (the tool's result has `isError: true`).
/// A build that fails or a program that exits non-zero is not one of these.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{program} is not installed: {hint}")]
    ToolchainMissing { program: String, hint: String },
    #[error("{0}")]
    Failed(String),
    #[error("the call was cancelled before it started")]
    Cancelled,
}

impl From<ValueError> for ToolError {
    fn from(error: ValueError) -> Self {
        ToolError::InvalidArgument(error.to_string())
    }
}

impl From<task_args::TaskArgError> for ToolError {
    fn from(error: task_args::TaskArgError) -> Self {
        ToolError::InvalidArgument(error.to_string())
    }
}

/// The build tools, shared by the MCP server and `drydock call`.
#[derive(Clone)]
pub struct BuildTools {
    config: Arc<Config>,
    workspace: Workspace,
    queue: ProjectQueue,
    versions: Arc<version_cache::VersionCache>,
    /// Cancels every child process when the server stops.
    shutdown: CancellationToken,
    /// Every child process run, so stopping can wait until they are gone.
    runs: TaskTracker,
}

/// Which build a `BuildReport` tool asks of its toolchain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildKind {
    Compile,
    TypeCheck,
    Lint,
}

impl BuildKind {
    pub fn tool_name(self) -> ToolName {
        match self {
            BuildKind::Compile => ToolName::Compile,
            BuildKind::TypeCheck => ToolName::TypeCheck,
            BuildKind::Lint => ToolName::Lint,
        }
    }
}

impl BuildTools {
    pub fn new(config: Arc<Config>) -> Self {
        let workspace = Workspace::new(config.allowed_roots.clone());
        Self {
            config,
            workspace,
            queue: ProjectQueue::default(),
            versions: Arc::default(),
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
        }
    }

    /// Stop every running child process (their whole process groups) and wait until they are gone.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.runs.close();
        self.runs.wait().await;
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub async fn project_info(
        &self,
        req: ProjectInfoRequest,
        call: &Call<'_>,
    ) -> Result<ProjectInfo, ToolError> {
        let project = self
            .workspace
            .resolve_project(&req.project_path, req.toolchain)?;
        let runner = self.runner(ToolName::ProjectInfo, None);
        match project.kind {
            ToolchainKind::Cargo => {
                cargo::project_info(&project, &runner, call, &self.versions).await
            }
            ToolchainKind::Mix => mix::project_info(&project, &runner, call).await,
        }
    }

    pub async fn build(
        &self,
        kind: BuildKind,
        req: CompileRequest,
        call: &Call<'_>,
    ) -> Result<BuildReport, ToolError> {
        let project = self
            .workspace
            .resolve_project(&req.project_path, req.toolchain)?;
        match project.kind {
            ToolchainKind::Cargo => check_cargo_selection(&req.package, &req.features)?,
            ToolchainKind::Mix => {
                cargo_only("features", !req.features.is_empty())?;
                cargo_only("all_targets", req.all_targets.is_some())?;
            }
        }
        let runner = self.runner(kind.tool_name(), req.timeout_ms);
        let _turn = self.wait_turn(&project, call).await?;
        match project.kind {
            ToolchainKind::Cargo => cargo::build(&project, kind, &req, &runner, call).await,
            ToolchainKind::Mix => {
                let project = umbrella_app(project, &req.package)?;
                mix::build(&project, kind, &req, &runner, call).await
            }
        }
    }

    pub async fn test(&self, req: TestRequest, call: &Call<'_>) -> Result<TestReport, ToolError> {
        let project = self
            .workspace
            .resolve_project(&req.project_path, req.toolchain)?;
        match project.kind {
            ToolchainKind::Cargo => {
                mix_only("path", req.path.is_some())?;
                mix_only("tags", !req.tags.is_empty())?;
                mix_only("exclude", !req.exclude.is_empty())?;
                mix_only("seed", req.seed.is_some())?;
                mix_only("max_failures", req.max_failures.is_some())?;
                check_cargo_selection(&req.package, &req.features)?;
            }
            ToolchainKind::Mix => {
                cargo_only("features", !req.features.is_empty())?;
                if req.filter.is_some() && !req.exact {
                    return Err(ToolError::InvalidArgument(
                        "ExUnit cannot match part of a test name: for a mix project, `filter` \
                         needs `exact: true` and the full name (e.g. \"test adds numbers\"); \
                         or use `path` (file or file:line) or `tags`"
                            .into(),
                    ));
                }
            }
        }
        let runner = self.runner(ToolName::Test, req.timeout_ms);
        match project.kind {
            ToolchainKind::Cargo => {
                let _turn = self.wait_turn(&project, call).await?;
                cargo::test(&project, &req, &runner, call).await
            }
            ToolchainKind::Mix => {
                let app = umbrella_app(project.clone(), &req.package)?;
                check_mix_test_selection(&app, &req)?;
                let _turn = self.wait_turn(&project, call).await?;
                mix::test(&app, &req, &runner, call).await
            }
        }
    }

    pub async fn run(&self, req: RunRequest, call: &Call<'_>) -> Result<RunReport, ToolError> {
        let project = self
            .workspace
            .resolve_project(&req.project_path, req.toolchain)?;
        if project.kind == ToolchainKind::Mix {
            cargo_only("bin", req.bin.is_some())?;
        }
        let task = self.allowed_task(project.kind, &req.task)?;
        let runner = self.runner(ToolName::Run, req.timeout_ms);
        match (project.kind, task) {
            (ToolchainKind::Cargo, None) => {
                check_cargo_selection(&req.package, &[])?;
                if let Some(bin) = &req.bin {
                    arg_values::name("`bin`", bin, NameKind::Target)?;
                }
                let _turn = self.wait_turn(&project, call).await?;
                cargo::run(&project, &req, &runner, call).await
            }
            (ToolchainKind::Cargo, Some(task)) => {
                let argv = task_args::task_argv(project.kind, task, &req.args, &project.root)?;
                let _turn = self.wait_turn(&project, call).await?;
                cargo::run_task(&project, &req, argv, &runner, call).await
            }
            (ToolchainKind::Mix, task) => {
                let app = umbrella_app(project.clone(), &req.package)?;
                let task = task.unwrap_or("run");
                let argv = task_args::task_argv(project.kind, task, &req.args, &app.root)?;
                let _turn = self.wait_turn(&project, call).await?;
                mix::run(&app, &req, argv, &runner, call).await
            }
        }
    }

    /// The task `run` starts (a mix project's default is `run`; a cargo project's is its
    /// program, `None`), once it is known to be in the configured allowlist.
    fn allowed_task<'r>(
        &self,
        kind: ToolchainKind,
        task: &'r Option<String>,
    ) -> Result<Option<&'r str>, ToolError> {
        let (allowed, key) = match kind {
            ToolchainKind::Cargo => (&self.config.cargo_tasks, "cargo.tasks"),
            ToolchainKind::Mix => (&self.config.mix_tasks, "mix.tasks"),
        };
        let task = match (kind, task) {
            (_, Some(task)) => task.as_str(),
            (ToolchainKind::Mix, None) => "run",
            (ToolchainKind::Cargo, None) => return Ok(None),
        };
        if !allowed.iter().any(|t| t == task) {
            return Err(ToolError::InvalidArgument(format!(
                "task `{task}` is not allowed; allowed tasks: {} (config key {key})",
                allowed.join(", ")
            )));
        }
        Ok(Some(task))
    }

    pub async fn format(
        &self,
        req: FormatRequest,
        call: &Call<'_>,
    ) -> Result<FormatReport, ToolError> {
        let project = self
            .workspace
            .resolve_project(&req.project_path, req.toolchain)?;
        if project.kind == ToolchainKind::Cargo {
            check_cargo_selection(&req.package, &[])?;
        }
        let runner = self.runner(ToolName::Format, req.timeout_ms);
        let _turn = self.wait_turn(&project, call).await?;
        match project.kind {
            ToolchainKind::Cargo => cargo::format(&project, &req, &runner, call).await,
            ToolchainKind::Mix => {
                let project = umbrella_app(project, &req.package)?;
                mix::format(&project, &req, &runner, call).await
            }
        }
    }

    async fn wait_turn(
        &self,
        project: &Project,
        call: &Call<'_>,
    ) -> Result<project_queue::Turn, ToolError> {
        let key = match project.kind {
            ToolchainKind::Cargo => cargo::workspace_root(&project.root),
            ToolchainKind::Mix => project.root.clone(),
        };
        self.queue
            .wait_turn(&key, call.progress, &call.cancel)
            .await
            .ok_or(ToolError::Cancelled)
    }

    fn runner(&self, tool: ToolName, timeout_ms: Option<u64>) -> Runner {
        Runner {
            limits: Limits {
                timeout: self.config.timeouts.for_call(tool, timeout_ms),
                output_cap: self.config.limits.output_cap,
                kill_grace: self.config.limits.kill_grace,
            },
            env_remove: self.config.env_remove.clone(),
            shutdown: self.shutdown.clone(),
            runs: self.runs.clone(),
        }
    }
}

fn cargo_only(option: &str, given: bool) -> Result<(), ToolError> {
    match given {
        true => Err(ToolError::InvalidArgument(format!(
            "`{option}` applies to cargo projects only; this is a mix project"
        ))),
        false => Ok(()),
    }
}

fn mix_only(option: &str, given: bool) -> Result<(), ToolError> {
    match given {
        true => Err(ToolError::InvalidArgument(format!(
            "`{option}` applies to mix projects only; this is a cargo project"
        ))),
        false => Ok(()),
    }
}

/// Cargo's `package` and `features`, checked before they reach cargo's argv (as
/// `--package=SPEC` and `--features=LIST`).
fn check_cargo_selection(package: &Option<String>, features: &[String]) -> Result<(), ToolError> {
    if let Some(package) = package {
        arg_values::name("`package`", package, NameKind::Package)?;
    }
    arg_values::features("`features`", features)?;
    Ok(())
}

/// `mix test`'s `path` (inside the app), `tags` and `exclude`, checked before they reach its argv.
fn check_mix_test_selection(app: &Project, req: &TestRequest) -> Result<(), ToolError> {
    if let Some(path) = &req.path {
        arg_values::test_path("`path`", &app.root, path)?;
    }
    for tag in &req.tags {
        arg_values::name("`tags`", tag, NameKind::Tag)?;
    }
    for tag in &req.exclude {
        arg_values::name("`exclude`", tag, NameKind::Tag)?;
    }
    Ok(())
}

/// For a mix umbrella, `package` names the child app (under `apps/`) to work in.
fn umbrella_app(project: Project, package: &Option<String>) -> Result<Project, ToolError> {
    let Some(app) = package else {
        return Ok(project);
    };
    let dir = project.root.join("apps").join(app);
    if !app.contains(['/', '\\']) && app != ".." && dir.join("mix.exs").is_file() {
        return Ok(Project {
            root: dir,
            kind: project.kind,
        });
    }
    Err(ToolError::InvalidArgument(format!(
        "`package` {app:?} is not an app of the umbrella at {} (no apps/{app}/mix.exs)",
        project.root.display()
    )))
}

/// Runs a toolchain's child processes under one call's limits.
pub struct Runner {
    pub limits: Limits,
    pub env_remove: Vec<String>,
    shutdown: CancellationToken,
    runs: TaskTracker,
}

impl Runner {
    /// Run `program args` in `cwd`, feeding every output line to `on_line`.
    pub async fn run(
        &self,
        mut spec: CommandSpec,
        call: &Call<'_>,
        on_line: &mut (dyn FnMut(process::Stream, &str) + Send),
    ) -> Result<ProcessOutput, RunError> {
        spec.env_remove.extend(self.env_remove.iter().cloned());
        // Stopped by the call's own cancellation or by the server shutting down.
        let stop = self.shutdown.child_token();
        let run = self
            .runs
            .track_future(process::run(&spec, &self.limits, &stop, on_line));
        tokio::pin!(run);
        tokio::select! {
            biased;
            output = &mut run => output,
            _ = call.cancel.cancelled() => {
                stop.cancel();
                run.await
            }
        }
    }

    /// `run`, with a program that is not installed reported as a missing toolchain and `hint`
    /// saying how to install it.
    pub async fn run_toolchain(
        &self,
        spec: CommandSpec,
        call: &Call<'_>,
        on_line: &mut (dyn FnMut(process::Stream, &str) + Send),
        hint: &str,
    ) -> Result<ProcessOutput, ToolError> {
        let program = spec.program.clone();
        self.run(spec, call, on_line).await.map_err(|e| match e {
            RunError::NotFound { .. } => ToolError::ToolchainMissing {
                program,
                hint: hint.to_string(),
            },
            other => ToolError::Run(other),
        })
    }

    /// Generous limits, for unit tests that run real programs.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Runner {
        Runner {
            limits: Limits {
                timeout: Duration::from_secs(600),
                output_cap: 1 << 20,
                kill_grace: Duration::from_secs(2),
            },
            env_remove: Vec::new(),
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
        }
    }

    /// The same limits with a shorter timeout, for quick helper commands.
    pub fn quick(&self, timeout: Duration) -> Runner {
        Runner {
            limits: Limits {
                timeout: timeout.min(self.limits.timeout),
                ..self.limits
            },
            env_remove: self.env_remove.clone(),
            shutdown: self.shutdown.clone(),
            runs: self.runs.clone(),
        }
    }
}

pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
