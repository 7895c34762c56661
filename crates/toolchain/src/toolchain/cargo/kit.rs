//! How the cargo toolchain plugs into drydock: its `Kit`, the checks of a request's options,
//! and the arguments each cargo task that `run` may start takes.

use std::path::PathBuf;

use crate::call::Call;
use crate::toolchain::arg_values::{self, NameKind};
use crate::toolchain::kit::{DoctorCheck, Kit, Reply};
use crate::toolchain::options::only_for;
use crate::toolchain::reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use crate::toolchain::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use crate::toolchain::runner::Runner;
use crate::toolchain::task_args::{Opt, Positionals, TaskSpec, Value, flag, optional, valued};
use crate::toolchain::versions::VersionCache;
use crate::toolchain::{BuildKind, Project, Toolchain, ToolchainError};

/// The cargo toolchain: projects with a Cargo.toml.
struct Cargo;

/// Its line in [`TOOLCHAINS`](crate::toolchain::TOOLCHAINS).
pub const TOOLCHAIN: Toolchain = Toolchain(&Cargo);

impl Kit for Cargo {
    fn name(&self) -> &'static str {
        "cargo"
    }

    fn manifest(&self) -> &'static str {
        "Cargo.toml"
    }

    fn install_hint(&self, _program: &str) -> &'static str {
        "install Rust with rustup (rustup.rs) and make sure cargo is on the server's PATH"
    }

    fn doctor_checks(&self) -> &'static [DoctorCheck] {
        &[
            DoctorCheck {
                name: "cargo",
                used_by: "the build tools on Rust projects",
                program: "cargo",
                version_args: &["--version"],
                version_line: "cargo",
                fix: "install Rust with rustup (https://rustup.rs), then: rustup component add \
                      clippy rustfmt",
                essential: true,
            },
            DoctorCheck {
                name: "clippy",
                used_by: "lint on Rust projects",
                program: "cargo",
                version_args: &["clippy", "--version"],
                version_line: "cargo",
                fix: "rustup component add clippy",
                essential: false,
            },
            DoctorCheck {
                name: "rustfmt",
                used_by: "format on Rust projects",
                program: "cargo",
                version_args: &["fmt", "--version"],
                version_line: "cargo",
                fix: "rustup component add rustfmt",
                essential: false,
            },
        ]
    }

    fn default_tasks(&self) -> &'static [&'static str] {
        &["bench", "doc", "tree", "metadata", "version"]
    }

    fn task_spec(&self, task: &str) -> Option<TaskSpec> {
        task_spec(task)
    }

    /// Members of one workspace share its target directory.
    fn turn_key(&self, project: &Project) -> PathBuf {
        super::workspace_root(&project.root)
    }

    fn check_build(&self, req: &CompileRequest) -> Result<(), ToolchainError> {
        check_selection(&req.package, &req.features)
    }

    fn check_test(&self, _: &Project, req: &TestRequest) -> Result<(), ToolchainError> {
        mix_only("path", req.path.is_some())?;
        mix_only("tags", !req.tags.is_empty())?;
        mix_only("exclude", !req.exclude.is_empty())?;
        mix_only("seed", req.seed.is_some())?;
        mix_only("max_failures", req.max_failures.is_some())?;
        check_selection(&req.package, &req.features)
    }

    fn check_run(&self, req: &RunRequest) -> Result<(), ToolchainError> {
        check_selection(&req.package, &[])?;
        if let Some(bin) = &req.bin {
            arg_values::name("`bin`", bin, NameKind::Target)?;
        }
        Ok(())
    }

    fn check_format(&self, req: &FormatRequest) -> Result<(), ToolchainError> {
        check_selection(&req.package, &[])
    }

    fn project_info<'a>(
        &'a self,
        project: &'a Project,
        runner: &'a Runner,
        call: &'a Call<'_>,
        versions: &'a VersionCache,
    ) -> Reply<'a, ProjectInfo> {
        Box::pin(super::project_info(project, runner, call, versions))
    }

    fn build<'a>(
        &'a self,
        kind: BuildKind,
        member: &'a Project,
        req: &'a CompileRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, BuildReport> {
        Box::pin(super::build(member, kind, req, runner, call))
    }

    fn test<'a>(
        &'a self,
        member: &'a Project,
        req: &'a TestRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, TestReport> {
        Box::pin(super::test(member, req, runner, call))
    }

    fn run_program<'a>(
        &'a self,
        member: &'a Project,
        req: &'a RunRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, RunReport> {
        Box::pin(super::run(member, req, runner, call))
    }

    fn run_task<'a>(
        &'a self,
        member: &'a Project,
        req: &'a RunRequest,
        argv: Vec<String>,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, RunReport> {
        Box::pin(super::run_task(member, req, argv, runner, call))
    }

    fn format<'a>(
        &'a self,
        member: &'a Project,
        req: &'a FormatRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, FormatReport> {
        Box::pin(super::format(member, req, runner, call))
    }
}

fn mix_only(option: &str, given: bool) -> Result<(), ToolchainError> {
    only_for(option, given, "mix", "cargo")
}

/// Cargo's `package` and `features`, checked before they reach cargo's argv (as
/// `--package=SPEC` and `--features=LIST`).
fn check_selection(package: &Option<String>, features: &[String]) -> Result<(), ToolchainError> {
    if let Some(package) = package {
        arg_values::name("`package`", package, NameKind::Package)?;
    }
    arg_values::features("`features`", features)?;
    Ok(())
}

const FILTER: &str = "one optional filter that does not start with `-`";

const CARGO_OUTPUT: &[Opt] = &[
    flag("quiet", Some('q')),
    flag("verbose", Some('v')),
    valued("color", None, Value::Choice(&["auto", "always", "never"])),
    flag("locked", None),
    flag("offline", None),
    flag("frozen", None),
];

const CARGO_PACKAGES: &[Opt] = &[
    optional("package", Some('p'), Value::Name(NameKind::Package)),
    flag("workspace", None),
    valued("exclude", None, Value::Name(NameKind::Package)),
];

const CARGO_FEATURES: &[Opt] = &[
    valued("features", Some('F'), Value::Features),
    flag("all-features", None),
    flag("no-default-features", None),
];

const CARGO_COMPILE: &[Opt] = &[
    valued("jobs", Some('j'), Value::Integer),
    valued("profile", None, Value::Name(NameKind::Target)),
    flag("ignore-rust-version", None),
    valued(
        "message-format",
        None,
        Value::Choice(&["human", "short", "json"]),
    ),
    flag("lib", None),
    flag("bins", None),
    optional("bin", None, Value::Name(NameKind::Target)),
    flag("examples", None),
    optional("example", None, Value::Name(NameKind::Target)),
];

const CARGO_DOC: &[Opt] = &[
    flag("no-deps", None),
    flag("document-private-items", None),
    flag("keep-going", None),
    flag("release", Some('r')),
];

const CARGO_BENCH: &[Opt] = &[
    flag("no-run", None),
    flag("no-fail-fast", None),
    flag("tests", None),
    optional("test", None, Value::Name(NameKind::Target)),
    flag("benches", None),
    optional("bench", None, Value::Name(NameKind::Target)),
    flag("all-targets", None),
];

const CARGO_TREE: &[Opt] = &[
    valued("edges", Some('e'), Value::Text("KINDS")),
    optional("invert", Some('i'), Value::Name(NameKind::Package)),
    valued("prune", None, Value::Name(NameKind::Package)),
    valued("depth", None, Value::Text("DEPTH")),
    valued("prefix", None, Value::Choice(&["indent", "depth", "none"])),
    flag("no-dedupe", None),
    flag("duplicates", Some('d')),
    valued("charset", None, Value::Choice(&["utf8", "ascii"])),
    valued("format", Some('f'), Value::Text("FORMAT")),
];

const CARGO_METADATA: &[Opt] = &[
    valued("format-version", None, Value::Choice(&["1"])),
    flag("no-deps", None),
];

fn task_spec(task: &str) -> Option<TaskSpec> {
    let cargo = |options, positionals| TaskSpec {
        options,
        positionals,
        dashes_end_options: false,
        unlisted: false,
    };
    Some(match task {
        "doc" => cargo(
            &[
                CARGO_DOC,
                CARGO_PACKAGES,
                CARGO_FEATURES,
                CARGO_COMPILE,
                CARGO_OUTPUT,
            ],
            Positionals::None,
        ),
        "bench" => cargo(
            &[
                CARGO_BENCH,
                CARGO_PACKAGES,
                CARGO_FEATURES,
                CARGO_COMPILE,
                CARGO_OUTPUT,
            ],
            Positionals::One(Value::Text("FILTER"), FILTER),
        ),
        "tree" => cargo(
            &[CARGO_TREE, CARGO_PACKAGES, CARGO_FEATURES, CARGO_OUTPUT],
            Positionals::None,
        ),
        "metadata" => cargo(
            &[CARGO_METADATA, CARGO_FEATURES, CARGO_OUTPUT],
            Positionals::None,
        ),
        "version" => cargo(&[], Positionals::None),
        _ => return None,
    })
}
