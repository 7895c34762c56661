//! What a project's own files and its build tool say about it, typed once for every
//! capability that reads them: `cargo metadata`'s JSON and Cargo.lock, mix.exs's app and
//! version and mix.lock. The build tools (`project_info`) and the docs index (a project's
//! dependencies at their locked versions) both read them here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

/// `cargo metadata --format-version 1`, the parts drydock reads.
#[derive(Debug, Deserialize)]
pub struct CargoMetadata {
    pub packages: Vec<CargoPackage>,
    pub workspace_root: PathBuf,
    #[serde(default)]
    pub workspace_members: Vec<String>,
    /// Absent with `--no-deps`.
    #[serde(default)]
    pub resolve: Option<CargoResolve>,
}

#[derive(Debug, Deserialize)]
pub struct CargoPackage {
    #[serde(default)]
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub edition: Option<String>,
    pub manifest_path: PathBuf,
    #[serde(default)]
    pub targets: Vec<CargoTarget>,
    #[serde(default)]
    pub dependencies: Vec<CargoDependency>,
    /// The README the manifest names, relative to the package.
    #[serde(default)]
    pub readme: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct CargoTarget {
    pub name: String,
    pub kind: Vec<String>,
    pub src_path: PathBuf,
}

#[derive(Debug, Deserialize)]
pub struct CargoDependency {
    pub name: String,
    pub req: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
pub struct CargoResolve {
    pub nodes: Vec<CargoNode>,
}

#[derive(Debug, Deserialize)]
pub struct CargoNode {
    pub id: String,
    #[serde(default)]
    pub deps: Vec<CargoNodeDep>,
}

#[derive(Debug, Deserialize)]
pub struct CargoNodeDep {
    pub pkg: String,
}

impl CargoMetadata {
    pub fn parse(json: &str) -> Result<CargoMetadata, serde_json::Error> {
        serde_json::from_str(json)
    }

    pub fn is_member(&self, package: &CargoPackage) -> bool {
        self.workspace_members.contains(&package.id)
    }

    /// The ids of the packages the workspace's members depend on directly.
    pub fn direct_dependencies(&self) -> BTreeSet<&str> {
        let members: BTreeSet<&str> = self.workspace_members.iter().map(String::as_str).collect();
        self.resolve
            .iter()
            .flat_map(|resolve| &resolve.nodes)
            .filter(|node| members.contains(node.id.as_str()))
            .flat_map(|node| &node.deps)
            .map(|dep| dep.pkg.as_str())
            .collect()
    }
}

impl CargoPackage {
    /// The directory of its Cargo.toml.
    pub fn dir(&self) -> Option<&Path> {
        self.manifest_path.parent()
    }
}

/// A Cargo.lock, the parts drydock reads.
#[derive(Debug, Default, Deserialize)]
pub struct CargoLock {
    #[serde(default)]
    pub package: Vec<CargoLockPackage>,
}

#[derive(Debug, Deserialize)]
pub struct CargoLockPackage {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub source: Option<String>,
    /// `name` or `name version` (when two versions are locked).
    #[serde(default)]
    pub dependencies: Vec<String>,
}

impl CargoLock {
    /// The lock file at `path`; empty when there is none or it cannot be read.
    pub fn read(path: &Path) -> CargoLock {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| toml::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// The Cargo.lock of `dir` or of the nearest directory above it (a workspace member's
    /// lock is the workspace's).
    pub fn of_dir(dir: &Path) -> CargoLock {
        dir.ancestors()
            .map(|d| d.join("Cargo.lock"))
            .find(|p| p.is_file())
            .map(|path| CargoLock::read(&path))
            .unwrap_or_default()
    }

    /// `(name, version)` of every locked package.
    pub fn versions(&self) -> Vec<(String, String)> {
        self.package
            .iter()
            .map(|p| (p.name.clone(), p.version.clone()))
            .collect()
    }
}

/// The `app:` atom of the mix.exs in `dir`.
pub fn mix_app(dir: &Path) -> Option<String> {
    static APP: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"app:\s*:([a-z_0-9]+)").expect("valid regex"));
    let text = std::fs::read_to_string(dir.join("mix.exs")).ok()?;
    APP.captures(&text).map(|c| c[1].to_string())
}

/// The `version:` string of the mix.exs in `dir`.
pub fn mix_version(dir: &Path) -> Option<String> {
    static VERSION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"version:\s*"([^"]+)""#).expect("valid regex"));
    let text = std::fs::read_to_string(dir.join("mix.exs")).ok()?;
    VERSION.captures(&text).map(|c| c[1].to_string())
}

/// `(name, version)` of every Hex package in the mix.lock in `dir`.
pub fn mix_lock_versions(dir: &Path) -> Vec<(String, String)> {
    static ENTRY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#""([a-z_0-9]+)":\s*\{:hex,\s*:[a-z_0-9]+,\s*"([^"]+)""#).expect("valid regex")
    });
    let lock = std::fs::read_to_string(dir.join("mix.lock")).unwrap_or_default();
    ENTRY
        .captures_iter(&lock)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_gives_members_and_their_direct_dependencies() {
        let metadata = CargoMetadata::parse(
            r#"{"workspace_root": "/w", "workspace_members": ["path+file:///w#app@0.1.0"],
                "packages": [
                  {"id": "path+file:///w#app@0.1.0", "name": "app", "version": "0.1.0",
                   "manifest_path": "/w/Cargo.toml", "targets": [], "dependencies": []},
                  {"id": "registry+x#itoa@1.0.15", "name": "itoa", "version": "1.0.15",
                   "manifest_path": "/reg/itoa-1.0.15/Cargo.toml", "readme": "README.md"}
                ],
                "resolve": {"nodes": [
                  {"id": "path+file:///w#app@0.1.0", "deps": [{"pkg": "registry+x#itoa@1.0.15"}]},
                  {"id": "registry+x#itoa@1.0.15", "deps": []}
                ]}}"#,
        )
        .unwrap();
        assert!(metadata.is_member(&metadata.packages[0]));
        assert!(!metadata.is_member(&metadata.packages[1]));
        assert_eq!(
            metadata.direct_dependencies(),
            BTreeSet::from(["registry+x#itoa@1.0.15"])
        );
        assert_eq!(
            metadata.packages[1].dir(),
            Some(Path::new("/reg/itoa-1.0.15"))
        );
        assert_eq!(metadata.packages[1].readme.as_deref(), Some("README.md"));
        let no_deps = CargoMetadata::parse(r#"{"workspace_root": "/w", "packages": []}"#).unwrap();
        assert!(no_deps.direct_dependencies().is_empty());
    }

    #[test]
    fn a_member_reads_the_workspace_lock_and_mix_files_give_app_version_and_locks() {
        let dir = tempfile::tempdir().unwrap();
        let member = dir.path().join("crates/member");
        std::fs::create_dir_all(&member).unwrap();
        std::fs::write(
            dir.path().join("Cargo.lock"),
            "version = 4\n\n[[package]]\nname = \"itoa\"\nversion = \"1.0.15\"\n\
             source = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
        )
        .unwrap();
        assert_eq!(
            CargoLock::of_dir(&member).versions(),
            [("itoa".to_string(), "1.0.15".to_string())]
        );
        assert!(
            CargoLock::read(&dir.path().join("nope.lock"))
                .package
                .is_empty()
        );

        std::fs::write(
            dir.path().join("mix.exs"),
            "defmodule App.MixProject do\n  def project do\n    [app: :my_app, version: \"0.3.1\"]\n  end\nend\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("mix.lock"),
            "%{\n  \"jason\": {:hex, :jason, \"1.4.4\", \"abc\", [:mix], [], \"hexpm\", \"def\"},\n  \"local\": {:git, \"https://example.invalid/l.git\", \"abc\", []},\n}\n",
        )
        .unwrap();
        assert_eq!(mix_app(dir.path()).as_deref(), Some("my_app"));
        assert_eq!(mix_version(dir.path()).as_deref(), Some("0.3.1"));
        assert_eq!(
            mix_lock_versions(dir.path()),
            [("jason".to_string(), "1.4.4".to_string())]
        );
        assert_eq!(mix_app(&member), None);
    }
}
