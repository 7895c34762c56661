//! A project's documentation: its own docs and its dependencies' at their locked versions
//! (what `drydock index --project` ingests), the toolchain docs installed on this machine
//! (`--toolchain-docs`), and the scope a `docs_lookup` with `project_path` searches.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::search::ProjectScope;
use super::sources::{FileRoot, Library, PathFilter, Root};
use crate::process::{CommandSpec, Limits, Policy, Termination};
use crate::project_facts::{CargoLock, CargoMetadata, mix_app, mix_lock_versions, mix_version};
use crate::workspace::ProjectKind;

/// What kind of project a directory is, as the docs see it: where its dependencies and
/// their docs are (a cargo project's crates, a mix project's Hex packages). A project of
/// another toolchain has no dependencies' docs here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Cargo,
    Mix,
}

/// The projects whose docs drydock indexes, in the order their manifests are looked for.
pub const ECOSYSTEMS: &[Ecosystem] = &[Ecosystem::Cargo, Ecosystem::Mix];

impl ProjectKind for Ecosystem {
    fn name(&self) -> &'static str {
        match self {
            Ecosystem::Cargo => "cargo",
            Ecosystem::Mix => "mix",
        }
    }

    fn manifest(&self) -> &'static str {
        match self {
            Ecosystem::Cargo => "Cargo.toml",
            Ecosystem::Mix => "mix.exs",
        }
    }
}

/// cargo metadata can download a missing dependency; it must still end.
const METADATA_TIMEOUT: Duration = Duration::from_secs(300);
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// The whole of `cargo metadata`'s one JSON line is needed, whatever the output cap of tools.
const HELPER_OUTPUT_CAP: usize = 256 * 1024 * 1024;

/// The Rust docs rustup installs, one library per directory (see `rust_toolchain_root`).
pub const RUST_TOOLCHAIN_LIBRARIES: &[&str] = &[
    "rust",
    "book",
    "cargo",
    "clippy",
    "edition-guide",
    "embedded-book",
    "error_codes",
    "nomicon",
    "proc_macro",
    "reference",
    "rust-by-example",
    "rustc",
    "rustdoc",
    "std",
    "style-guide",
    "test",
    "unstable-book",
];
/// Elixir's own applications.
pub const ELIXIR_TOOLCHAIN_LIBRARIES: &[&str] =
    &["eex", "elixir", "ex_unit", "iex", "logger", "mix"];

#[derive(Debug, thiserror::Error)]
pub enum ProjectDocsError {
    #[error("`{program}` could not run: {reason}")]
    Spawn { program: String, reason: String },
    #[error("`{command}` did not finish within {seconds} s")]
    Timeout { command: String, seconds: u64 },
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("cannot read the output of `{command}`: {reason}")]
    Output { command: String, reason: String },
}

/// What a project's dependencies are, for `--project`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DependencyChoice {
    /// Every package in the lock (cargo), not only the direct dependencies.
    pub transitive: bool,
}

/// The roots of a project: its own files, then one per dependency. `cargo metadata` runs
/// under `policy`.
pub fn project_roots<'a>(
    policy: &'a Policy,
    dir: &'a Path,
    kind: Ecosystem,
    choice: DependencyChoice,
    exclude: &'a [String],
) -> BoxFuture<'a, Result<Vec<Root>, ProjectDocsError>> {
    async move {
        match kind {
            Ecosystem::Cargo => cargo_roots(policy, dir, choice, exclude).await,
            // Every dependency's folder and mix.exs read: on a blocking thread.
            Ecosystem::Mix => {
                let (dir, exclude) = (dir.to_path_buf(), exclude.to_vec());
                let roots = tokio::task::spawn_blocking(move || mix_roots(&dir, &exclude)).await;
                Ok(roots.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())))
            }
        }
    }
    .boxed()
}

async fn cargo_roots(
    policy: &Policy,
    dir: &Path,
    choice: DependencyChoice,
    exclude: &[String],
) -> Result<Vec<Root>, ProjectDocsError> {
    let mut args = vec!["metadata", "--format-version", "1"];
    if dir.ancestors().any(|d| d.join("Cargo.lock").is_file()) {
        // Never rewrite the user's lock file (a member's is the workspace's).
        args.push("--locked");
    }
    let output = run(policy, METADATA_TIMEOUT, "cargo", &args, dir).await?;
    let metadata = CargoMetadata::parse(&output).map_err(|e| ProjectDocsError::Output {
        command: "cargo metadata".into(),
        reason: e.to_string(),
    })?;
    Ok(cargo_roots_from_metadata(&metadata, choice, exclude))
}

/// Roots from `cargo metadata`: the workspace root (its own files, members left to
/// themselves), each member, and each dependency's README, docs and `src/`.
pub fn cargo_roots_from_metadata(
    metadata: &CargoMetadata,
    choice: DependencyChoice,
    exclude: &[String],
) -> Vec<Root> {
    let direct = metadata.direct_dependencies();
    let own_filter = PathFilter::new(&[], exclude).unwrap_or_default();
    let workspace = &metadata.workspace_root;
    let root_package = metadata
        .packages
        .iter()
        .find(|p| p.dir() == Some(workspace.as_path()) && metadata.is_member(p));
    let fallback_name = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workspace".into());
    let mut roots = vec![Root::Files(FileRoot {
        library: Library::Named(
            root_package
                .map(|p| p.name.clone())
                .unwrap_or(fallback_name),
        ),
        version: root_package.map(|p| p.version.clone()),
        dir: workspace.clone(),
        only: None,
        filter: own_filter.clone(),
        skip_nested_packages: true,
    })];
    for package in &metadata.packages {
        let Some(dir) = package.dir() else {
            continue;
        };
        let is_member = metadata.is_member(package);
        if is_member && roots.iter().any(|r| r.path() == dir) {
            continue;
        }
        if !is_member && !choice.transitive && !direct.contains(package.id.as_str()) {
            continue;
        }
        let filter = if is_member {
            own_filter.clone()
        } else {
            let mut include: Vec<String> = vec![
                "README*".into(),
                "readme*".into(),
                "src/**/*.rs".into(),
                "doc/**/*.{md,mdx,rst,adoc}".into(),
                "docs/**/*.{md,mdx,rst,adoc}".into(),
            ];
            include.extend(package.readme.clone());
            PathFilter::new(&include, &[]).unwrap_or_default()
        };
        roots.push(Root::Files(FileRoot {
            dir: dir.to_path_buf(),
            only: None,
            library: Library::Named(package.name.clone()),
            version: Some(package.version.clone()),
            filter,
            skip_nested_packages: true,
        }));
    }
    roots
}

/// A mix project: its own files (umbrella apps included) and every dependency in its deps
/// directory, at the version mix.lock locks (else the version its mix.exs declares).
fn mix_roots(dir: &Path, exclude: &[String]) -> Vec<Root> {
    let mut own_exclude = vec!["deps/**".to_string()];
    own_exclude.extend(exclude.iter().cloned());
    let mut roots = vec![Root::Files(FileRoot {
        dir: dir.to_path_buf(),
        only: None,
        library: Library::Named(mix_app_name(dir)),
        version: mix_version(dir),
        filter: PathFilter::new(&[], &own_exclude).unwrap_or_default(),
        skip_nested_packages: false,
    })];
    let locked = mix_lock_versions(dir);
    let Ok(entries) = std::fs::read_dir(dir.join("deps")) else {
        return roots;
    };
    let mut deps: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("mix.exs").is_file())
        .collect();
    deps.sort();
    for dep in deps {
        let name = dep
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let version = locked
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| mix_version(&dep));
        let include = [
            "README*",
            "readme*",
            "lib/**/*.ex",
            "guides/**/*.{md,cheatmd,livemd}",
            "*.md",
        ]
        .map(String::from);
        roots.push(Root::Files(FileRoot {
            dir: dep,
            only: None,
            library: Library::Named(name),
            version,
            filter: PathFilter::new(&include, &[]).unwrap_or_default(),
            skip_nested_packages: true,
        }));
    }
    roots
}

fn mix_app_name(dir: &Path) -> String {
    mix_app(dir).unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "project".into())
    })
}

/// What a docs_lookup with `project_path` may return: the project's own files, its locked
/// dependencies at their versions, and its language's toolchain docs.
pub fn project_scope(dir: &Path, kind: Ecosystem) -> ProjectScope {
    let (locked, toolchain) = match kind {
        Ecosystem::Cargo => (CargoLock::of_dir(dir).versions(), RUST_TOOLCHAIN_LIBRARIES),
        Ecosystem::Mix => {
            let mut locked = mix_lock_versions(dir);
            // The umbrella's lock, for an app inside it.
            if let Some(umbrella) = dir.parent().and_then(Path::parent)
                && umbrella.join("apps").is_dir()
            {
                locked.extend(mix_lock_versions(umbrella));
            }
            (locked, ELIXIR_TOOLCHAIN_LIBRARIES)
        }
    };
    let mut libraries: Vec<(String, Option<String>)> = locked
        .into_iter()
        .map(|(name, version)| (name, Some(version)))
        .collect();
    if kind == Ecosystem::Mix {
        // Git and path dependencies have no version in the lock.
        if let Ok(entries) = std::fs::read_dir(dir.join("deps")) {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !libraries.iter().any(|(n, _)| *n == name) {
                    libraries.push((name, None));
                }
            }
        }
    }
    libraries.extend(toolchain.iter().map(|name| (name.to_string(), None)));
    libraries.sort();
    libraries.dedup();
    ProjectScope {
        source_prefixes: vec![format!("{}/", dir.display())],
        libraries,
    }
}

/// The toolchain docs installed here: the Rust docs of the default rustc (when rustup
/// installed them) and Elixir's standard library (when Elixir is installed). The probes
/// run under `policy`.
pub fn toolchain_roots<'a>(policy: &'a Policy, cwd: &'a Path) -> BoxFuture<'a, Vec<Root>> {
    async move {
        let mut roots = Vec::new();
        if let (Ok(sysroot), Ok(version)) = (
            run(policy, PROBE_TIMEOUT, "rustc", &["--print", "sysroot"], cwd).await,
            run(policy, PROBE_TIMEOUT, "rustc", &["--version"], cwd).await,
        ) {
            // `rustc 1.95.0 (59807616e 2026-04-14)` → 1.95.0
            let version = version.split_whitespace().nth(1).unwrap_or("").to_string();
            roots.extend(
                super::sources::rust_toolchain_root(Path::new(sysroot.trim()), &version)
                    .map(Root::Files),
            );
        }
        let script = crate::exs::ELIXIR_LIB_DIR;
        if let Ok(output) = run(policy, PROBE_TIMEOUT, "elixir", &["-e", script], cwd).await {
            let mut lines = output.lines();
            if let (Some(version), Some(elixir_dir)) = (lines.next(), lines.next())
                && let Some(lib_dir) = Path::new(elixir_dir.trim()).parent()
            {
                roots.extend(super::sources::elixir_toolchain_roots(
                    lib_dir,
                    version.trim(),
                ));
            }
        }
        roots
    }
    .boxed()
}

/// Runs a helper command to its end under `policy`, for at most `timeout` (which kills its
/// whole group, as dropping the future does), and returns its stdout.
async fn run(
    policy: &Policy,
    timeout: Duration,
    program: &str,
    args: &[&str],
    cwd: &Path,
) -> Result<String, ProjectDocsError> {
    let policy = Policy {
        limits: Limits {
            output_cap: HELPER_OUTPUT_CAP,
            ..policy.within(timeout).limits
        },
        env_remove: policy.env_remove.clone(),
    };
    let command = || format!("{program} {}", args.join(" "));
    let spec = CommandSpec::new(program, args.iter().copied(), cwd);
    let output = policy
        .run(spec, &CancellationToken::new(), &mut |_, _| {})
        .await
        .map_err(|e| ProjectDocsError::Spawn {
            program: program.to_string(),
            reason: e.to_string(),
        })?;
    match output.termination {
        Termination::Exited(0) => Ok(output.stdout.text),
        Termination::TimedOut => Err(ProjectDocsError::Timeout {
            command: command(),
            seconds: policy.limits.timeout.as_secs(),
        }),
        _ => Err(ProjectDocsError::Failed {
            command: command(),
            stderr: output
                .stderr
                .text
                .trim()
                .lines()
                .last()
                .unwrap_or("")
                .into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_metadata_gives_members_and_direct_dependencies() {
        let metadata = serde_json::json!({
            "workspace_root": "/w",
            "workspace_members": ["path+file:///w#app@0.1.0", "path+file:///w/crates/core#core@0.2.0"],
            "packages": [
                {"id": "path+file:///w#app@0.1.0", "name": "app", "version": "0.1.0",
                 "manifest_path": "/w/Cargo.toml"},
                {"id": "path+file:///w/crates/core#core@0.2.0", "name": "core", "version": "0.2.0",
                 "manifest_path": "/w/crates/core/Cargo.toml"},
                {"id": "registry+x#itoa@1.0.15", "name": "itoa", "version": "1.0.15",
                 "manifest_path": "/reg/itoa-1.0.15/Cargo.toml", "readme": "README.md"},
                {"id": "registry+x#deep@2.0.0", "name": "deep", "version": "2.0.0",
                 "manifest_path": "/reg/deep-2.0.0/Cargo.toml"}
            ],
            "resolve": {"nodes": [
                {"id": "path+file:///w#app@0.1.0", "deps": [{"pkg": "registry+x#itoa@1.0.15"}]},
                {"id": "registry+x#itoa@1.0.15", "deps": [{"pkg": "registry+x#deep@2.0.0"}]}
            ]}
        });
        let describe = |roots: Vec<Root>| -> Vec<String> {
            roots
                .iter()
                .map(|r| match r {
                    Root::Files(f) => format!(
                        "{} {:?} {}",
                        f.dir.display(),
                        f.library,
                        f.version.as_deref().unwrap_or("-")
                    ),
                    Root::Beams(b) => b.ebin.display().to_string(),
                })
                .collect()
        };
        let metadata: CargoMetadata = serde_json::from_value(metadata).unwrap();
        let direct = describe(cargo_roots_from_metadata(
            &metadata,
            DependencyChoice::default(),
            &[],
        ));
        assert_eq!(
            direct,
            [
                "/w Named(\"app\") 0.1.0",
                "/w/crates/core Named(\"core\") 0.2.0",
                "/reg/itoa-1.0.15 Named(\"itoa\") 1.0.15",
            ]
        );
        let all = cargo_roots_from_metadata(&metadata, DependencyChoice { transitive: true }, &[]);
        assert_eq!(all.len(), 4);
    }

    #[test]
    fn lock_files_give_versions_and_the_scope() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mix.lock"),
            r#"%{
  "jason": {:hex, :jason, "1.4.4", "b9226785a9aa77b6857ca22832cffa5d5011a667207eb2a0ad56adb5db443b8a", [:mix], [], "hexpm", "c5eb0cab91f094599f94d55bc63409236a8ec69a21a67814529e8d5f6cc90b3b"},
  "plug_crypto": {:hex, :plug_crypto, "2.1.0", "f44309c2b06d249c27c8d3f65cfe08158ade08418cf540fd4f72d4d6863abb7b", [:mix], [], "hexpm", "131216a4b030b8f8ce0f26038bc4421ae60e4bb95c5cf5395e1421437824c4fa"},
  "local": {:git, "https://example.invalid/local.git", "abc", []},
}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("deps/local")).unwrap();
        assert_eq!(
            mix_lock_versions(dir.path()),
            [
                ("jason".to_string(), "1.4.4".to_string()),
                ("plug_crypto".to_string(), "2.1.0".to_string())
            ]
        );
        let scope = project_scope(dir.path(), Ecosystem::Mix);
        assert!(
            scope
                .libraries
                .contains(&("jason".into(), Some("1.4.4".into())))
        );
        assert!(scope.libraries.contains(&("local".into(), None)));
        assert!(scope.libraries.contains(&("elixir".into(), None)));
        assert_eq!(
            scope.source_prefixes,
            [format!("{}/", dir.path().display())]
        );

        let cargo = dir.path().join("crate");
        std::fs::create_dir_all(cargo.join("member")).unwrap();
        std::fs::write(
            cargo.join("Cargo.lock"),
            "version = 4\n\n[[package]]\nname = \"itoa\"\nversion = \"1.0.15\"\n\
             source = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
        )
        .unwrap();
        assert_eq!(
            CargoLock::of_dir(&cargo.join("member")).versions(),
            [("itoa".to_string(), "1.0.15".to_string())]
        );
    }
}
