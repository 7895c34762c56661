//! The build toolset: project_info, compile, type_check, test, run, format, lint.
//!
//! `Toolchains` resolves the project against the allowlist, waits for the project's turn
//! and hands the call to the project's toolchain.

pub mod arg_values;
pub mod cargo;
pub mod endings;
#[doc(hidden)]
pub mod fuzzing;
mod kit;
pub mod line_parser;
pub mod mix;
pub mod observe;
mod options;
pub mod paths;
mod queue;
#[cfg(test)]
pub mod recorded;
pub mod reports;
pub mod requests;
pub mod results;
pub mod runner;
pub mod task_args;
mod versions;
pub mod warm_start;

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::call::Call;
use crate::config::{Config, ToolName};
use crate::process::RunError;
use crate::sandbox::{Confinement, Mount, confinement};
use crate::workspace::{Workspace, WorkspaceError};
use arg_values::ValueError;
pub use kit::{DoctorCheck, Toolchain};
use observe::{Observed, ObservedResult, Observer, Started};
use queue::ProjectQueue;
use reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use requests::{
    CompileRequest, FormatRequest, ProjectInfoRequest, RunRequest, TestRequest, TimeoutMs,
};
use runner::{Confined, Runner};

/// The toolchains drydock builds with, in the order a project's manifest is looked for. A new
/// toolchain is a folder beside `cargo/` and `mix/` whose `Kit` runs its tools, and a line
/// here (ARCHITECTURE.md, "Extending drydock").
pub const TOOLCHAINS: &[Toolchain] = &[cargo::TOOLCHAIN, mix::TOOLCHAIN];

/// A project of one of the toolchains.
pub type Project = crate::workspace::Project<Toolchain>;

/// The toolchain whose manifest `dir` holds (the first of [`TOOLCHAINS`]), if any.
pub fn project_kind(dir: &Path) -> Option<Toolchain> {
    TOOLCHAINS
        .iter()
        .copied()
        .find(|t| dir.join(t.kit().manifest()).is_file())
}

/// A config section that is neither drydock's nor a toolchain's.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the config file's [{0}] is no section drydock knows and names no toolchain (it has {names})",
    names = Toolchain::names()
)]
pub struct UnknownSection(pub String);

/// Refuses a config whose toolchain section (`[crago] tasks`) names no toolchain: the config
/// keeps every table it does not know as one (`config::toolchain`).
pub fn check_config(config: &Config) -> Result<(), UnknownSection> {
    match config
        .toolchain
        .sections()
        .find(|name| Toolchain::named(name).is_none())
    {
        Some(name) => Err(UnknownSection(name.to_string())),
        None => Ok(()),
    }
}

/// The tasks `run` may start in a project of `toolchain`: its config section's list, else
/// the toolchain's defaults.
pub fn run_tasks(config: &Config, toolchain: Toolchain) -> Vec<String> {
    match config.toolchain.tasks(toolchain.name()) {
        Some(tasks) => tasks.to_vec(),
        None => toolchain
            .kit()
            .default_tasks()
            .iter()
            .map(|t| t.to_string())
            .collect(),
    }
}

/// Every toolchain with the tasks `run` may start in its projects.
pub fn every_run_tasks(config: &Config) -> Vec<(Toolchain, Vec<String>)> {
    TOOLCHAINS
        .iter()
        .map(|&t| (t, run_tasks(config, t)))
        .collect()
}

/// A call that could not run at all (the tool's result has `isError: true`).
/// A build that fails or a program that exits non-zero is not one of these.
#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
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

impl From<ValueError> for ToolchainError {
    fn from(error: ValueError) -> Self {
        ToolchainError::InvalidArgument(error.to_string())
    }
}

impl From<task_args::TaskArgError> for ToolchainError {
    fn from(error: task_args::TaskArgError) -> Self {
        ToolchainError::InvalidArgument(error.to_string())
    }
}

/// The build tools, shared by the MCP server and `drydock call`.
#[derive(Clone)]
pub struct Toolchains {
    config: Arc<Config>,
    workspace: Workspace,
    queue: ProjectQueue,
    versions: Arc<versions::VersionCache>,
    /// Cancels every child process when the server stops.
    shutdown: CancellationToken,
    /// Every child process run, so stopping can wait until they are gone.
    runs: TaskTracker,
    /// Keeps the results (the project memory), when recording is on.
    observer: Option<Arc<dyn Observer>>,
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

impl Toolchains {
    pub fn new(config: Arc<Config>) -> Self {
        // Tasks' worktrees are copies of allowed projects that drydock made itself: their
        // agents and their checks build there.
        let workspace = Workspace::new(config.allowed_roots.clone())
            .with_managed(config.task_dirs().worktrees());
        Self {
            config,
            workspace,
            queue: ProjectQueue::default(),
            versions: Arc::default(),
            shutdown: CancellationToken::new(),
            runs: TaskTracker::new(),
            observer: None,
        }
    }

    /// The same tools, their builds and tests kept by `observer`.
    pub fn observed_by(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Stop every running child process (their whole process groups) and wait until they are gone.
    pub fn shutdown(&self) -> BoxFuture<'_, ()> {
        async move {
            self.shutdown.cancel();
            self.runs.close();
            self.runs.wait().await;
        }
        .boxed()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn project_info<'a>(
        &'a self,
        req: ProjectInfoRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<ProjectInfo, ToolchainError>> {
        async move {
            let project = self.resolve_project(&req.project_path, req.toolchain)?;
            let runner = self
                .runner(&project, ToolName::ProjectInfo, None, call)
                .await;
            let kit = project.kind.kit();
            kit.project_info(&project, &runner, call, &self.versions)
                .await
        }
        .boxed()
    }

    pub fn build<'a>(
        &'a self,
        kind: BuildKind,
        req: CompileRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<BuildReport, ToolchainError>> {
        async move {
            let project = self.resolve_project(&req.project_path, req.toolchain)?;
            let kit = project.kind.kit();
            kit.check_build(&req)?;
            let member = kit.member(&project, &req.package)?;
            let runner = self
                .runner(&project, kind.tool_name(), req.timeout_ms, call)
                .await;
            let _turn = self.wait_turn(&project, call).await?;
            let started = self.observe_start(&project);
            let mut report = kit.build(kind, &member, &req, &runner, call).await?;
            let check = CompileRequest {
                project_path: String::new(),
                include_rendered: false,
                force: false,
                timeout_ms: None,
                ..req
            };
            let check = format!("{} {check:?}", kind.tool_name().name());
            let result = ObservedResult::Build(&report);
            report.seen_before = self
                .observe_end(started, &project, kind.tool_name(), check, result, call)
                .await;
            Ok(report)
        }
        .boxed()
    }

    pub fn test<'a>(
        &'a self,
        req: TestRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<TestReport, ToolchainError>> {
        async move {
            let project = self.resolve_project(&req.project_path, req.toolchain)?;
            let kit = project.kind.kit();
            let member = kit.member(&project, &req.package)?;
            kit.check_test(&member, &req)?;
            let runner = self
                .runner(&project, ToolName::Test, req.timeout_ms, call)
                .await;
            let _turn = self.wait_turn(&project, call).await?;
            let started = self.observe_start(&project);
            let mut report = kit.test(&member, &req, &runner, call).await?;
            let check = TestRequest {
                project_path: String::new(),
                seed: None,
                timeout_ms: None,
                ..req
            };
            let check = format!("test {check:?}");
            let result = ObservedResult::Test(&report);
            report.seen_before = self
                .observe_end(started, &project, ToolName::Test, check, result, call)
                .await;
            Ok(report)
        }
        .boxed()
    }

    pub fn run<'a>(
        &'a self,
        req: RunRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<RunReport, ToolchainError>> {
        async move {
            let project = self.resolve_project(&req.project_path, req.toolchain)?;
            let kit = project.kind.kit();
            kit.check_run(&req)?;
            let task = self.allowed_task(project.kind, &req.task)?;
            let member = kit.member(&project, &req.package)?;
            let argv = task
                .map(|task| task_args::task_argv(project.kind, task, &req.args, &member.root))
                .transpose()?;
            let runner = self
                .runner(&project, ToolName::Run, req.timeout_ms, call)
                .await;
            let started = self.observe_start(&project);
            let _turn = self.wait_turn(&project, call).await?;
            let mut report = match argv {
                Some(argv) => kit.run_task(&member, &req, argv, &runner, call).await,
                None => kit.run_program(&member, &req, &runner, call).await,
            }?;
            let check = RunRequest {
                project_path: String::new(),
                stdin: None,
                timeout_ms: None,
                ..req
            };
            let check = format!("run {check:?}");
            let result = ObservedResult::Run(&report);
            report.seen_before = self
                .observe_end(started, &project, ToolName::Run, check, result, call)
                .await;
            Ok(report)
        }
        .boxed()
    }

    /// A project's own command (a check named in `[tasks.land_commands]`), run like a build:
    /// in `project_path`, in the builds' sandbox, in the project's turn, within `timeout_ms`.
    /// A relative program (`./ci.sh`) is the project's.
    pub fn command<'a>(
        &'a self,
        project_path: &'a str,
        argv: &'a [String],
        timeout_ms: Option<TimeoutMs>,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<crate::process::ProcessOutput, ToolchainError>> {
        async move {
            let project = self.resolve_project(project_path, None)?;
            let Some((program, args)) = argv.split_first() else {
                return Err(ToolchainError::InvalidArgument(
                    "a command needs at least its program".into(),
                ));
            };
            let program = match program.contains('/') && Path::new(program).is_relative() {
                true => project.root.join(program).display().to_string(),
                false => program.clone(),
            };
            let runner = self.runner(&project, ToolName::Run, timeout_ms, call).await;
            let _turn = self.wait_turn(&project, call).await?;
            let spec = crate::process::CommandSpec::new(program, args, &project.root);
            runner.run_to_end(spec, call).await
        }
        .boxed()
    }

    /// The task `run` starts (the named one, else the toolchain's default: mix's `run`; none
    /// for cargo, which runs the project's program), once it is known to be in the
    /// configured allowlist.
    fn allowed_task<'r>(
        &self,
        toolchain: Toolchain,
        task: &'r Option<String>,
    ) -> Result<Option<&'r str>, ToolchainError> {
        let Some(task) = task.as_deref().or(toolchain.kit().default_task()) else {
            return Ok(None);
        };
        let allowed = run_tasks(&self.config, toolchain);
        if !allowed.iter().any(|t| t == task) {
            return Err(ToolchainError::InvalidArgument(format!(
                "task `{task}` is not allowed; allowed tasks: {} (config key {}.tasks)",
                allowed.join(", "),
                toolchain.name()
            )));
        }
        Ok(Some(task))
    }

    /// A project of one of the toolchains inside the allowed roots; `toolchain` settles a
    /// directory with the manifests of several.
    pub fn resolve_project(
        &self,
        raw: &str,
        toolchain: Option<Toolchain>,
    ) -> Result<Project, WorkspaceError> {
        self.workspace.resolve_project(raw, toolchain, TOOLCHAINS)
    }

    pub fn format<'a>(
        &'a self,
        req: FormatRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<FormatReport, ToolchainError>> {
        async move {
            let project = self.resolve_project(&req.project_path, req.toolchain)?;
            let kit = project.kind.kit();
            kit.check_format(&req)?;
            let member = kit.member(&project, &req.package)?;
            let runner = self
                .runner(&project, ToolName::Format, req.timeout_ms, call)
                .await;
            let _turn = self.wait_turn(&project, call).await?;
            let started = self.observe_start(&project);
            let report = kit.format(&member, &req, &runner, call).await?;
            // Applying formats what checking finds: both are the same check.
            let check = format!("format {:?}", req.package);
            let result = ObservedResult::Format(&report);
            self.observe_end(started, &project, ToolName::Format, check, result, call)
                .await;
            Ok(report)
        }
        .boxed()
    }

    /// A build, test, run or format of `project` starts: the observer, if any, looks at its
    /// files.
    fn observe_start(&self, project: &Project) -> Option<Started> {
        self.observer.as_ref().map(|o| o.starting(&project.root))
    }

    /// The run `started` began ended with `result`: the observer keeps it and says what was
    /// seen before of its problems.
    async fn observe_end(
        &self,
        started: Option<Started>,
        project: &Project,
        tool: ToolName,
        check: String,
        result: ObservedResult<'_>,
        call: &Call<'_>,
    ) -> Vec<reports::SeenBefore> {
        let (Some(observer), Some(started)) = (&self.observer, started) else {
            return Vec::new();
        };
        let run = Observed {
            project: &project.root,
            toolchain: project.kind,
            tool,
            check,
            result,
            client: call.client.as_deref(),
        };
        observer.observe(started, run).await
    }

    async fn wait_turn(
        &self,
        project: &Project,
        call: &Call<'_>,
    ) -> Result<queue::Turn, ToolchainError> {
        let key = project.kind.kit().turn_key(project);
        self.queue
            .wait_turn(&key, call.progress, &call.cancel)
            .await
            .ok_or(ToolchainError::Cancelled)
    }

    async fn runner(
        &self,
        project: &Project,
        tool: ToolName,
        timeout_ms: Option<TimeoutMs>,
        call: &Call<'_>,
    ) -> Runner {
        let env_set = self
            .config
            .task_dirs()
            .cargo_target_for(&project.root)
            .map(|dir| ("CARGO_TARGET_DIR".to_string(), dir.display().to_string()))
            .into_iter()
            .collect();
        Runner {
            policy: self.config.policy_for(tool, timeout_ms.map(TimeoutMs::get)),
            shutdown: self.shutdown.clone(),
            runs: self.runs.clone(),
            env_set,
            confine: self.confined(&project.root, call.for_task).await,
            toolchain: Some(project.kind),
        }
    }

    /// The sandbox of a build in a task's worktree, or of one a task's agent asked for (in
    /// place, in its project): what the agent wrote runs there (build scripts, tests,
    /// `.cargo/config.toml`), so it sees the worktree (or project) and its cargo target
    /// writable, the toolchains read-only, and no network (cargo offline). None elsewhere,
    /// with `[tasks] sandbox = false`, or where the host cannot make one.
    ///
    /// On a blocking thread: the first call probes bubblewrap, and the toolchains' folders
    /// are looked for on disk.
    async fn confined(&self, root: &Path, for_task: bool) -> Option<Confined> {
        if !self.config.tasks.sandbox {
            return None;
        }
        let (config, root) = (self.config.clone(), root.to_path_buf());
        tokio::task::spawn_blocking(move || confinement_of(&config, &root, for_task))
            .await
            .ok()
            .flatten()
    }
}

fn confinement_of(config: &Config, root: &Path, for_task: bool) -> Option<Confined> {
    let task_dirs = config.task_dirs();
    let top = match task_dirs.worktree_of(root) {
        Some((top, _)) => top,
        None if for_task => root.to_path_buf(),
        None => return None,
    };
    let bwrap = crate::sandbox::support::host().bwrap()?.to_path_buf();
    let readable = confinement::readable(
        confinement::toolchain_dirs(),
        dirs::home_dir().as_deref(),
        &[config.data_dir.as_path()],
    );
    let mut confinement = Confinement {
        work: root.to_path_buf(),
        readable,
        writable: vec![Mount::same(&top)],
        passed: confinement::passed_env(&config.tasks.sandbox_env),
        env: vec![("CARGO_NET_OFFLINE".into(), "true".into())],
        ..Confinement::default()
    };
    // A model API's key is no build's business, even where sandbox_env names it.
    confinement
        .passed
        .retain(|(name, _)| !config.tasks.sandbox_keys.contains_key(name));
    if let Some(target) = task_dirs.cargo_target_for(root) {
        let _ = std::fs::create_dir_all(&target);
        confinement.writable.push(Mount::same(target));
    }
    confinement.hide_credentials(&config.data_dir.join("sandbox"));
    Some(Confined { bwrap, confinement })
}
