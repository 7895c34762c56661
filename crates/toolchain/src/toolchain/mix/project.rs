//! project_info for a mix project, from what `project_info.exs` reads through Mix.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::toolchain::cargo::relative_to;
use crate::toolchain::reports::{DependencyInfo, PackageInfo, ProjectInfo, TargetInfo};

pub(super) const SCRIPT: &str = crate::exs::PROJECT_INFO;

const MAX_FILES_SCANNED: usize = 5000;

#[derive(Debug, Deserialize)]
pub(super) struct MixProject {
    app: Option<String>,
    version: Option<String>,
    elixir_requirement: Option<String>,
    umbrella: bool,
    elixir_version: String,
    otp_release: String,
    otp_version: String,
    apps: Vec<MixApp>,
}

#[derive(Debug, Deserialize)]
struct MixApp {
    app: Option<String>,
    version: Option<String>,
    elixir_requirement: Option<String>,
    /// Relative to the project directory ("." for a single app).
    path: String,
    elixirc_paths: Vec<String>,
    test_paths: Vec<String>,
    escript: bool,
    deps: Vec<MixDep>,
}

#[derive(Debug, Deserialize)]
struct MixDep {
    name: String,
    requirement: Option<String>,
    source: String,
    only: Option<Vec<String>>,
    optional: bool,
    locked: Option<String>,
}

impl MixProject {
    pub(super) fn into_info(self, project_root: &Path) -> ProjectInfo {
        let test_files = self
            .apps
            .iter()
            .flat_map(|app| test_files(project_root, app))
            .collect();
        let name = match (&self.app, self.umbrella) {
            (Some(app), _) => app.clone(),
            (None, true) => umbrella_name(project_root),
            (None, false) => String::new(),
        };
        ProjectInfo {
            toolchain: "mix".into(),
            name,
            version: self.version.unwrap_or_default(),
            edition: None,
            elixir_requirement: self.elixir_requirement,
            workspace_root: project_root.display().to_string(),
            toolchain_versions: BTreeMap::from([
                ("elixir".into(), format!("Elixir {}", self.elixir_version)),
                (
                    "otp".into(),
                    format!("Erlang/OTP {} ({})", self.otp_release, self.otp_version),
                ),
            ]),
            packages: self.apps.into_iter().map(package_info).collect(),
            test_files,
        }
    }
}

fn umbrella_name(project_root: &Path) -> String {
    project_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn package_info(app: MixApp) -> PackageInfo {
    let app_dir = Path::new(&app.path);
    let name = app.app.unwrap_or_default();
    let mut targets = vec![TargetInfo {
        name: name.clone(),
        kind: "app".into(),
        path: joined(
            app_dir,
            app.elixirc_paths.first().map_or("lib", String::as_str),
        ),
    }];
    if app.escript {
        targets.push(TargetInfo {
            name: name.clone(),
            kind: "escript".into(),
            path: joined(app_dir, "mix.exs"),
        });
    }
    for test_path in &app.test_paths {
        targets.push(TargetInfo {
            name: name.clone(),
            kind: "test".into(),
            path: joined(app_dir, test_path),
        });
    }
    PackageInfo {
        name,
        version: app.version.unwrap_or_default(),
        edition: None,
        elixir_requirement: app.elixir_requirement,
        manifest: joined(app_dir, "mix.exs"),
        targets,
        dependencies: app.deps.into_iter().map(dependency_info).collect(),
    }
}

fn dependency_info(dep: MixDep) -> DependencyInfo {
    let kind = match dep.only.as_deref() {
        Some(envs) if !envs.is_empty() && envs.iter().all(|e| e == "test") => "test",
        Some(envs) if !envs.is_empty() && envs.iter().all(|e| e == "dev" || e == "test") => "dev",
        _ => "normal",
    };
    DependencyInfo {
        name: dep.name,
        requirement: dep.requirement.unwrap_or_default(),
        kind: kind.into(),
        resolved: dep.locked,
        optional: dep.optional.then_some(true),
        source: dep.source,
    }
}

/// `*_test.exs` under the app's test paths, relative to the project directory.
fn test_files(project_root: &Path, app: &MixApp) -> Vec<String> {
    let mut files: Vec<String> = app
        .test_paths
        .iter()
        .flat_map(|test_path| {
            walkdir::WalkDir::new(project_root.join(&app.path).join(test_path))
                .sort_by_file_name()
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .filter(|e| e.file_name().to_string_lossy().ends_with("_test.exs"))
                .take(MAX_FILES_SCANNED)
                .map(|e| relative_to(&normalize(e.path()), project_root))
        })
        .collect();
    files.sort();
    files
}

fn joined(dir: &Path, file: &str) -> String {
    normalize(&dir.join(file)).display().to_string()
}

/// Drops `.` components, so the single app at "." gives `lib`, not `./lib`.
fn normalize(path: &Path) -> std::path::PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Printed by project_info.exs (Elixir 1.14.0, OTP 25) for an umbrella with two apps.
    const UMBRELLA: &str = r#"{"app":null,"apps":[{"app":"core","deps":[],"elixir_requirement":"~> 1.14","elixirc_paths":["lib"],"escript":false,"path":"apps/core","test_paths":["test"],"version":"0.1.0"},{"app":"web","deps":[{"locked":null,"name":"core","only":null,"optional":false,"requirement":null,"runtime":true,"source":"in_umbrella"},{"locked":"1.4.1","name":"jason","only":["dev","test"],"optional":true,"requirement":"~> 1.4","runtime":true,"source":"hex"}],"elixir_requirement":"~> 1.14","elixirc_paths":["lib"],"escript":false,"path":"apps/web","test_paths":["test"],"version":"0.2.0"}],"elixir_requirement":null,"elixir_version":"1.14.0","otp_release":"25","otp_version":"25.2.3","umbrella":true,"version":"0.1.0"}"#;

    #[test]
    fn umbrella_apps_become_packages() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        std::fs::create_dir_all(root.join("apps/web/test/web")).unwrap();
        std::fs::write(root.join("apps/web/test/web/page_test.exs"), "").unwrap();
        std::fs::write(root.join("apps/web/test/test_helper.exs"), "").unwrap();
        let project: MixProject = serde_json::from_str(UMBRELLA).unwrap();
        let info = project.into_info(&root);

        assert_eq!(
            (info.name.as_str(), info.toolchain.as_str()),
            ("shop", "mix")
        );
        assert_eq!(info.toolchain_versions["elixir"], "Elixir 1.14.0");
        assert_eq!(info.toolchain_versions["otp"], "Erlang/OTP 25 (25.2.3)");
        assert_eq!(info.test_files, ["apps/web/test/web/page_test.exs"]);
        let web = &info.packages[1];
        assert_eq!(
            (web.name.as_str(), web.manifest.as_str()),
            ("web", "apps/web/mix.exs")
        );
        assert_eq!(web.targets[0].path, "apps/web/lib");
        let jason = &web.dependencies[1];
        assert_eq!(
            (
                jason.kind.as_str(),
                jason.resolved.as_deref(),
                jason.optional
            ),
            ("dev", Some("1.4.1"), Some(true))
        );
        assert_eq!(web.dependencies[0].source, "in_umbrella");
    }
}
