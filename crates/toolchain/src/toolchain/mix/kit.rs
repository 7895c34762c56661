//! How the mix toolchain plugs into drydock: its `Kit`, the checks of a request's options,
//! an umbrella's apps as the `package` a call works in, and the arguments each mix task that
//! `run` may start takes.

use crate::call::Call;
use crate::toolchain::arg_values::{self, NameKind};
use crate::toolchain::kit::{DoctorCheck, Kit, Reply};
use crate::toolchain::options::only_for;
use crate::toolchain::reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use crate::toolchain::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use crate::toolchain::runner::Runner;
use crate::toolchain::task_args::{Opt, Positionals, Takes, TaskSpec, Value, flag, valued};
use crate::toolchain::versions::VersionCache;
use crate::toolchain::{BuildKind, Project, Toolchain, ToolchainError};

/// The mix toolchain: projects with a mix.exs.
struct Mix;

/// Its line in [`TOOLCHAINS`](crate::toolchain::TOOLCHAINS).
pub const TOOLCHAIN: Toolchain = Toolchain(&Mix);

impl Kit for Mix {
    fn name(&self) -> &'static str {
        "mix"
    }

    fn manifest(&self) -> &'static str {
        "mix.exs"
    }

    fn install_hint(&self, program: &str) -> &'static str {
        match program {
            "dialyzer" => {
                "install Erlang/OTP's dialyzer (Debian and Ubuntu: the erlang-dialyzer package) \
                 and put `dialyzer` on the server's PATH"
            }
            _ => {
                "install Elixir and Erlang (Debian: `apt install elixir erlang-dev`) and make \
                 sure `mix` and `elixir` are on the server's PATH"
            }
        }
    }

    fn doctor_checks(&self) -> &'static [DoctorCheck] {
        &[
            DoctorCheck {
                name: "elixir",
                used_by: "the build tools on mix projects",
                program: "elixir",
                version_args: &["--version"],
                version_line: "Elixir",
                fix: "sudo apt-get install elixir erlang-dev",
                essential: true,
            },
            DoctorCheck {
                name: "dialyzer",
                used_by: "type_check on mix projects",
                program: "dialyzer",
                version_args: &["--version"],
                version_line: "dialyzer",
                fix: "sudo apt-get install erlang-dialyzer",
                essential: false,
            },
        ]
    }

    /// Read-only or project-local tasks; `run` is how a mix project's code is executed.
    fn default_tasks(&self) -> &'static [&'static str] {
        &["run", "deps.tree", "xref", "help", "app.tree", "docs"]
    }

    fn default_task(&self) -> Option<&'static str> {
        Some("run")
    }

    fn task_spec(&self, task: &str) -> Option<TaskSpec> {
        task_spec(task)
    }

    /// For an umbrella, `package` names the child app (under `apps/`) to work in.
    fn member(
        &self,
        project: &Project,
        package: &Option<String>,
    ) -> Result<Project, ToolchainError> {
        let Some(app) = package else {
            return Ok(project.clone());
        };
        let dir = project.root.join("apps").join(app);
        if !app.contains(['/', '\\']) && app != ".." && dir.join("mix.exs").is_file() {
            return Ok(Project {
                root: dir,
                kind: project.kind,
            });
        }
        Err(ToolchainError::InvalidArgument(format!(
            "`package` {app:?} is not an app of the umbrella at {} (no apps/{app}/mix.exs)",
            project.root.display()
        )))
    }

    fn check_build(&self, req: &CompileRequest) -> Result<(), ToolchainError> {
        cargo_only("features", !req.features.is_empty())?;
        cargo_only("all_targets", req.all_targets.is_some())
    }

    /// `path` (inside the app), `tags` and `exclude` are checked before they reach
    /// `mix test`'s argv.
    fn check_test(&self, app: &Project, req: &TestRequest) -> Result<(), ToolchainError> {
        cargo_only("features", !req.features.is_empty())?;
        if req.filter.is_some() && !req.exact {
            return Err(ToolchainError::InvalidArgument(
                "ExUnit cannot match part of a test name: for a mix project, `filter` \
                 needs `exact: true` and the full name (e.g. \"test adds numbers\"); \
                 or use `path` (file or file:line) or `tags`"
                    .into(),
            ));
        }
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

    fn check_run(&self, req: &RunRequest) -> Result<(), ToolchainError> {
        cargo_only("bin", req.bin.is_some())
    }

    fn check_format(&self, _: &FormatRequest) -> Result<(), ToolchainError> {
        Ok(())
    }

    fn project_info<'a>(
        &'a self,
        project: &'a Project,
        runner: &'a Runner,
        call: &'a Call<'_>,
        _: &'a VersionCache,
    ) -> Reply<'a, ProjectInfo> {
        Box::pin(super::project_info(project, runner, call))
    }

    fn build<'a>(
        &'a self,
        kind: BuildKind,
        app: &'a Project,
        req: &'a CompileRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, BuildReport> {
        Box::pin(super::build(app, kind, req, runner, call))
    }

    fn test<'a>(
        &'a self,
        app: &'a Project,
        req: &'a TestRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, TestReport> {
        Box::pin(super::test(app, req, runner, call))
    }

    fn run_task<'a>(
        &'a self,
        app: &'a Project,
        req: &'a RunRequest,
        argv: Vec<String>,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, RunReport> {
        Box::pin(super::run(app, req, argv, runner, call))
    }

    fn format<'a>(
        &'a self,
        app: &'a Project,
        req: &'a FormatRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, FormatReport> {
        Box::pin(super::format(app, req, runner, call))
    }
}

fn cargo_only(option: &str, given: bool) -> Result<(), ToolchainError> {
    only_for(option, given, "cargo", "mix")
}

const MIX_RUN: &[Opt] = &[
    valued("eval", Some('e'), Value::Text("EXPR")),
    valued("require", Some('r'), Value::LiteralProjectFile),
    valued("parallel-require", None, Value::LiteralProjectFile),
    flag("parallel", Some('p')),
    valued("config", Some('c'), Value::ProjectFile),
    flag("no-compile", None),
    flag("no-deps-check", None),
    flag("no-archives-check", None),
    flag("no-elixir-version-check", None),
    flag("no-start", None),
    flag("no-halt", None),
    flag("preload-modules", None),
];

const MIX_TREE_FORMAT: Value = Value::Choice(&["pretty", "plain", "dot"]);

const MIX_DEPS_TREE: &[Opt] = &[
    valued("only", None, Value::Name(NameKind::Package)),
    valued("target", None, Value::Name(NameKind::Package)),
    valued("exclude", None, Value::Name(NameKind::Package)),
    valued("format", None, MIX_TREE_FORMAT),
];

const MIX_APP_TREE: &[Opt] = &[
    valued("exclude", None, Value::Name(NameKind::Package)),
    valued("format", None, MIX_TREE_FORMAT),
];

const MIX_XREF: &[Opt] = &[
    flag("no-compile", None),
    flag("no-deps-check", None),
    flag("no-archives-check", None),
    flag("no-elixir-version-check", None),
    valued("exclude", None, Value::Text("FILE")),
    valued("fail-above", None, Value::Integer),
    valued(
        "format",
        None,
        Value::Choice(&["pretty", "plain", "stats", "cycles", "dot"]),
    ),
    valued("group", None, Value::Text("FILES")),
    flag("include-siblings", None),
    valued("label", None, Value::Text("LABEL")),
    flag("only-nodes", None),
    flag("only-direct", None),
    valued("sink", None, Value::Text("FILE")),
    valued("source", None, Value::Text("FILE")),
    valued("min-cycle-size", None, Value::Integer),
];

const MIX_HELP: &[Opt] = &[
    flag("names", None),
    Opt {
        long: "search",
        short: None,
        takes: Takes::Separate(Value::Text("PATTERN")),
    },
];

const MIX_DOCS: &[Opt] = &[
    valued("canonical", Some('n'), Value::Text("URL")),
    valued(
        "formatter",
        Some('f'),
        Value::Choice(&["html", "epub", "markdown"]),
    ),
    valued("language", None, Value::Text("LANGUAGE")),
    valued("output", Some('o'), Value::ProjectOutput),
    valued("proglang", None, Value::Choice(&["elixir", "erlang"])),
    flag("warnings-as-errors", None),
];

fn task_spec(task: &str) -> Option<TaskSpec> {
    let mix = |options, positionals| TaskSpec {
        options,
        positionals,
        dashes_end_options: true,
        unlisted: false,
    };
    let name = |what| Positionals::One(Value::Name(NameKind::Package), what);
    Some(match task {
        "run" => mix(&[MIX_RUN], Positionals::Script),
        "deps.tree" => mix(&[MIX_DEPS_TREE], name("one optional dependency name")),
        "app.tree" => mix(&[MIX_APP_TREE], name("one optional application name")),
        "xref" => mix(&[MIX_XREF], Positionals::XrefCommand),
        "help" => TaskSpec {
            // `mix help` matches its argv literally: no `--`.
            dashes_end_options: false,
            ..mix(&[MIX_HELP], name("one optional task name (or `app:NAME`)"))
        },
        "docs" => mix(&[MIX_DOCS], Positionals::None),
        _ => return None,
    })
}
