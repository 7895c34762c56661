//! The options of each build tool's request that apply to one toolchain only, refused for
//! the other before anything runs, and the request values checked before they reach argv.

use super::ToolchainError;
use super::arg_values::{self, NameKind};
use super::requests::{CompileRequest, FormatRequest, RunRequest, TestRequest};
use crate::workspace::{Project, Toolchain};

pub(super) fn check_build(
    toolchain: Toolchain,
    req: &CompileRequest,
) -> Result<(), ToolchainError> {
    match toolchain {
        Toolchain::Cargo => check_cargo_selection(&req.package, &req.features),
        Toolchain::Mix => {
            cargo_only("features", !req.features.is_empty())?;
            cargo_only("all_targets", req.all_targets.is_some())
        }
    }
}

pub(super) fn check_test(toolchain: Toolchain, req: &TestRequest) -> Result<(), ToolchainError> {
    match toolchain {
        Toolchain::Cargo => {
            mix_only("path", req.path.is_some())?;
            mix_only("tags", !req.tags.is_empty())?;
            mix_only("exclude", !req.exclude.is_empty())?;
            mix_only("seed", req.seed.is_some())?;
            mix_only("max_failures", req.max_failures.is_some())?;
            check_cargo_selection(&req.package, &req.features)
        }
        Toolchain::Mix => {
            cargo_only("features", !req.features.is_empty())?;
            if req.filter.is_some() && !req.exact {
                return Err(ToolchainError::InvalidArgument(
                    "ExUnit cannot match part of a test name: for a mix project, `filter` \
                     needs `exact: true` and the full name (e.g. \"test adds numbers\"); \
                     or use `path` (file or file:line) or `tags`"
                        .into(),
                ));
            }
            Ok(())
        }
    }
}

pub(super) fn check_run(toolchain: Toolchain, req: &RunRequest) -> Result<(), ToolchainError> {
    match toolchain {
        Toolchain::Cargo => {
            check_cargo_selection(&req.package, &[])?;
            if let Some(bin) = &req.bin {
                arg_values::name("`bin`", bin, NameKind::Target)?;
            }
            Ok(())
        }
        Toolchain::Mix => cargo_only("bin", req.bin.is_some()),
    }
}

pub(super) fn check_format(
    toolchain: Toolchain,
    req: &FormatRequest,
) -> Result<(), ToolchainError> {
    match toolchain {
        Toolchain::Cargo => check_cargo_selection(&req.package, &[]),
        Toolchain::Mix => Ok(()),
    }
}

fn cargo_only(option: &str, given: bool) -> Result<(), ToolchainError> {
    match given {
        true => Err(ToolchainError::InvalidArgument(format!(
            "`{option}` applies to cargo projects only; this is a mix project"
        ))),
        false => Ok(()),
    }
}

fn mix_only(option: &str, given: bool) -> Result<(), ToolchainError> {
    match given {
        true => Err(ToolchainError::InvalidArgument(format!(
            "`{option}` applies to mix projects only; this is a cargo project"
        ))),
        false => Ok(()),
    }
}

/// Cargo's `package` and `features`, checked before they reach cargo's argv (as
/// `--package=SPEC` and `--features=LIST`).
fn check_cargo_selection(
    package: &Option<String>,
    features: &[String],
) -> Result<(), ToolchainError> {
    if let Some(package) = package {
        arg_values::name("`package`", package, NameKind::Package)?;
    }
    arg_values::features("`features`", features)?;
    Ok(())
}

/// `mix test`'s `path` (inside the app), `tags` and `exclude`, checked before they reach its argv.
pub(super) fn check_mix_test_selection(
    app: &Project,
    req: &TestRequest,
) -> Result<(), ToolchainError> {
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
