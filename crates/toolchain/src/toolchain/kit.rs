//! What a toolchain gives drydock, and the handle the rest of the code holds.
//!
//! A toolchain is a folder of this module (`cargo/`, `mix/`) whose `Kit` runs the build
//! tools for its projects, and a line in [`TOOLCHAINS`](super::TOOLCHAINS). Everything else
//! (finding a project's toolchain, the `toolchain` argument and its schema, the tasks `run`
//! may start, the queue's turns, what the project memory records) reads it through
//! [`Toolchain`]: nothing outside its folder names a toolchain.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use futures::future::BoxFuture;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::reports::{BuildReport, FormatReport, ProjectInfo, RunReport, TestReport};
use super::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use super::runner::Runner;
use super::task_args::TaskSpec;
use super::versions::VersionCache;
use super::{BuildKind, Project, TOOLCHAINS, ToolchainError};
use crate::call::Call;
use crate::workspace::ProjectKind;

/// A program of a toolchain as `drydock doctor` checks it: the version it prints, or how to
/// install it.
#[derive(Debug, Clone, Copy)]
pub struct DoctorCheck {
    /// Its line's name in the doctor.
    pub name: &'static str,
    /// What uses it ("the build tools on Rust projects").
    pub used_by: &'static str,
    /// The program and the arguments that make it print its version (never through a shell).
    pub program: &'static str,
    pub version_args: &'static [&'static str],
    /// The word of the output's line to report (`Elixir`); the first line when none has it.
    pub version_line: &'static str,
    /// How to install it.
    pub fix: &'static str,
    /// Whether it is the toolchain itself, which the build tools need one toolchain's of (else
    /// some calls use it).
    pub essential: bool,
}

/// A build tool's answer, from a toolchain.
pub(super) type Reply<'a, T> = BoxFuture<'a, Result<T, ToolchainError>>;

/// One toolchain: how drydock knows its projects and runs each build tool for them.
///
/// The checks run before anything starts: each refuses the request's options that this
/// toolchain does not take, and checks the values that reach its argv.
pub trait Kit: Send + Sync {
    /// Its name: the `toolchain` argument, the config section (`[cargo] tasks`), the
    /// project memory's records.
    fn name(&self) -> &'static str;

    /// The file that makes a directory one of its projects.
    fn manifest(&self) -> &'static str;

    /// How to install `program`, one this toolchain runs, for the error when it is not on
    /// the server's PATH.
    fn install_hint(&self, program: &str) -> &'static str;

    /// What `drydock doctor` checks of it, in its order.
    fn doctor_checks(&self) -> &'static [DoctorCheck];

    /// The tasks `run` may start when its config section does not list them.
    fn default_tasks(&self) -> &'static [&'static str];

    /// The task `run` starts when none is named; `None`: the project's own program.
    fn default_task(&self) -> Option<&'static str> {
        None
    }

    /// The arguments `task` takes (`run` with `task`); `None`: no table, so no options and
    /// only plain positional values.
    fn task_spec(&self, task: &str) -> Option<TaskSpec>;

    /// The directory whose builds take turns: builds sharing one output directory wait for
    /// each other (cargo's workspace root).
    fn turn_key(&self, project: &Project) -> PathBuf {
        project.root.clone()
    }

    /// Where a build, test, run or format with `package` works: the project itself, or
    /// (mix) the umbrella's app of that name.
    fn member(
        &self,
        project: &Project,
        package: &Option<String>,
    ) -> Result<Project, ToolchainError> {
        let _ = package;
        Ok(project.clone())
    }

    fn check_build(&self, req: &CompileRequest) -> Result<(), ToolchainError>;

    /// `member` is where the tests run ([`Kit::member`]).
    fn check_test(&self, member: &Project, req: &TestRequest) -> Result<(), ToolchainError>;

    fn check_run(&self, req: &RunRequest) -> Result<(), ToolchainError>;

    fn check_format(&self, req: &FormatRequest) -> Result<(), ToolchainError>;

    fn project_info<'a>(
        &'a self,
        project: &'a Project,
        runner: &'a Runner,
        call: &'a Call<'_>,
        versions: &'a VersionCache,
    ) -> Reply<'a, ProjectInfo>;

    fn build<'a>(
        &'a self,
        kind: BuildKind,
        member: &'a Project,
        req: &'a CompileRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, BuildReport>;

    fn test<'a>(
        &'a self,
        member: &'a Project,
        req: &'a TestRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, TestReport>;

    /// Runs the project's own program with the request's `args`. A toolchain whose `run`
    /// always starts a task ([`Kit::default_task`]) has none.
    fn run_program<'a>(
        &'a self,
        member: &'a Project,
        req: &'a RunRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, RunReport> {
        let _ = (member, req, runner, call);
        let name = self.name();
        Box::pin(async move {
            Err(ToolchainError::InvalidArgument(format!(
                "a {name} project runs a task: name one with `task`"
            )))
        })
    }

    /// Runs a task: `argv` (task name first) went through the task's allowlist.
    fn run_task<'a>(
        &'a self,
        member: &'a Project,
        req: &'a RunRequest,
        argv: Vec<String>,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, RunReport>;

    fn format<'a>(
        &'a self,
        member: &'a Project,
        req: &'a FormatRequest,
        runner: &'a Runner,
        call: &'a Call<'_>,
    ) -> Reply<'a, FormatReport>;
}

/// A toolchain of [`TOOLCHAINS`](super::TOOLCHAINS): a handle to its [`Kit`], equal by name.
#[derive(Clone, Copy)]
pub struct Toolchain(pub &'static dyn Kit);

impl Toolchain {
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn kit(self) -> &'static dyn Kit {
        self.0
    }

    /// The toolchain named `name`.
    pub fn named(name: &str) -> Option<Toolchain> {
        TOOLCHAINS.iter().copied().find(|t| t.name() == name)
    }

    /// The names of every toolchain, for messages: "cargo, mix".
    pub fn names() -> String {
        let names: Vec<&str> = TOOLCHAINS.iter().map(|t| t.name()).collect();
        names.join(", ")
    }
}

impl PartialEq for Toolchain {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Toolchain {}

/// As the enum it replaced printed itself (`Cargo`): a request's text is the key of its
/// check in the project memory, so checks recorded before still match.
impl fmt::Debug for Toolchain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.name().chars();
        if let Some(first) = chars.next() {
            write!(f, "{}{}", first.to_ascii_uppercase(), chars.as_str())?;
        }
        Ok(())
    }
}

impl ProjectKind for Toolchain {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn manifest(&self) -> &'static str {
        self.0.manifest()
    }
}

impl Serialize for Toolchain {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Toolchain {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Cow::<str>::deserialize(deserializer)?;
        Toolchain::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown toolchain {name:?}: drydock has {}",
                Toolchain::names()
            ))
        })
    }
}

impl JsonSchema for Toolchain {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Toolchain".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = TOOLCHAINS.iter().map(|t| t.name()).collect();
        json_schema!({ "type": "string", "enum": names })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, resolve_file_text};

    fn config_with(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        resolve_file_text(text, dir.path()).unwrap()
    }

    #[test]
    fn each_toolchain_has_a_name_and_a_manifest_of_its_own() {
        let mut names: Vec<&str> = TOOLCHAINS.iter().map(|t| t.name()).collect();
        let mut manifests: Vec<&str> = TOOLCHAINS.iter().map(|t| t.kit().manifest()).collect();
        names.sort();
        names.dedup();
        manifests.sort();
        manifests.dedup();
        assert_eq!(names, ["cargo", "mix"]);
        assert_eq!(manifests.len(), TOOLCHAINS.len());
    }

    #[test]
    fn each_toolchain_says_how_to_install_it_and_what_the_doctor_checks() {
        for toolchain in TOOLCHAINS {
            let kit = toolchain.kit();
            let checks = kit.doctor_checks();
            let essential = checks.iter().filter(|check| check.essential).count();
            assert_eq!(essential, 1, "{}: one check is the toolchain", kit.name());
            for check in checks {
                assert!(
                    !kit.install_hint(check.program).is_empty(),
                    "{}",
                    check.name
                );
            }
        }
        let hint = |toolchain: Toolchain, program| toolchain.kit().install_hint(program);
        assert!(hint(crate::toolchain::cargo::TOOLCHAIN, "cargo").contains("rustup"));
        assert!(hint(crate::toolchain::mix::TOOLCHAIN, "mix").contains("Elixir"));
        assert!(hint(crate::toolchain::mix::TOOLCHAIN, "dialyzer").contains("erlang-dialyzer"));
    }

    #[test]
    fn the_argument_reads_a_name_and_its_schema_lists_every_toolchain() {
        let mix: Toolchain = serde_json::from_value(serde_json::json!("mix")).unwrap();
        assert_eq!(mix, crate::toolchain::mix::TOOLCHAIN);
        assert_eq!(format!("{:?}", Some(mix)), "Some(Mix)");
        assert_eq!(serde_json::to_value(mix).unwrap(), "mix");
        let error = serde_json::from_value::<Toolchain>(serde_json::json!("go")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown toolchain \"go\": drydock has cargo, mix"
        );
        let schema = serde_json::to_value(schemars::schema_for!(CompileRequest)).unwrap();
        assert_eq!(
            schema["properties"]["toolchain"]["enum"],
            serde_json::json!(["cargo", "mix", null]),
            "{schema:#}"
        );
    }

    #[test]
    fn a_config_section_names_a_toolchain_and_lists_its_tasks() {
        let defaults = config_with("");
        let cargo = crate::toolchain::cargo::TOOLCHAIN;
        assert_eq!(
            crate::toolchain::run_tasks(&defaults, cargo),
            ["bench", "doc", "tree", "metadata", "version"]
        );
        let narrowed = config_with("[cargo]\ntasks = [\"doc\"]");
        assert_eq!(crate::toolchain::run_tasks(&narrowed, cargo), ["doc"]);
        assert!(crate::toolchain::check_config(&narrowed).is_ok());
        let typo = config_with("[crago]\ntasks = [\"doc\"]");
        let refused = crate::toolchain::check_config(&typo)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("[crago]") && refused.contains("cargo, mix"),
            "{refused}"
        );
        let example = config_with(include_str!("../../../../drydock.example.toml"));
        assert_eq!(
            crate::toolchain::every_run_tasks(&example),
            crate::toolchain::every_run_tasks(&defaults),
            "the example config lists the defaults"
        );
    }
}
