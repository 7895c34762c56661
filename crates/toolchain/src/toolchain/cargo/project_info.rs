//! `project_info` of a cargo project: `cargo metadata` and the lock read into its packages,
//! targets, resolved dependencies and test files, with the toolchain's versions.

use super::*;

pub(super) async fn project_info(
    project: &Project,
    runner: &Runner,
    call: &Call<'_>,
    versions: &VersionCache,
) -> Result<ProjectInfo, ToolchainError> {
    let quick = runner.quick(Duration::from_secs(60));
    let metadata_args = strings(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    let metadata = quick.run_to_end(cargo(project, metadata_args), call);
    let (metadata, toolchain_versions) = match versions.get(&project.root) {
        Some(known) => (metadata.await, Ok(known)),
        None => tokio::join!(
            metadata,
            toolchain_versions(project, &quick, call, versions)
        ),
    };
    let (metadata, toolchain_versions) = (metadata?, toolchain_versions?);
    if metadata.termination != Termination::Exited(0) {
        return Err(ToolchainError::Failed(format!(
            "cargo metadata failed: {}",
            output_tail(&metadata.stderr.text).unwrap_or_default()
        )));
    }
    let metadata = CargoMetadata::parse(&metadata.stdout.text)
        .map_err(|e| ToolchainError::Failed(format!("cannot read cargo metadata: {e}")))?;
    // The lock, and every source file of every member searched for tests: on a blocking
    // thread (a large workspace is thousands of files).
    let root = project.root.clone();
    let (metadata, lock, test_files) = tokio::task::spawn_blocking(move || {
        let lock = CargoLock::read(&metadata.workspace_root.join("Cargo.lock"));
        let test_files = test_files(&metadata.packages, &root);
        (metadata, lock, test_files)
    })
    .await
    .map_err(|e| ToolchainError::Failed(format!("reading the project's files: {e}")))?;
    let relative = |path: &Path| relative_to(path, &project.root);
    let packages: Vec<PackageInfo> = metadata
        .packages
        .iter()
        .map(|p| package_info(p, &lock, &relative))
        .collect();
    let own = metadata
        .packages
        .iter()
        .find(|p| p.manifest_path == project.root.join("Cargo.toml"));
    let (name, version, edition) = match own {
        Some(p) => (p.name.clone(), p.version.clone(), p.edition.clone()),
        None => (
            project
                .root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            String::new(),
            None,
        ),
    };
    Ok(ProjectInfo {
        toolchain: "cargo".into(),
        name,
        version,
        edition,
        elixir_requirement: None,
        workspace_root: metadata.workspace_root.display().to_string(),
        toolchain_versions,
        test_files,
        packages,
    })
}

/// `rustc --version` and `cargo --version` as the project sees them (rustup overrides apply).
pub(super) async fn toolchain_versions(
    project: &Project,
    runner: &Runner,
    call: &Call<'_>,
    cache: &VersionCache,
) -> Result<Versions, ToolchainError> {
    let version = |program: &str| CommandSpec::new(program, ["--version"], &project.root);
    let (rustc, cargo) = tokio::join!(
        runner.run_to_end(version("rustc"), call),
        runner.run_to_end(version("cargo"), call),
    );
    let versions: Versions = [("rustc", rustc?), ("cargo", cargo?)]
        .into_iter()
        .map(|(name, output)| (name.to_string(), output.stdout.text.trim().to_string()))
        .collect();
    cache.put(&project.root, versions.clone());
    Ok(versions)
}

pub(super) fn package_info(
    package: &CargoPackage,
    lock: &CargoLock,
    relative: &dyn Fn(&Path) -> String,
) -> PackageInfo {
    let resolved = resolved_versions(package, lock);
    PackageInfo {
        name: package.name.clone(),
        version: package.version.clone(),
        edition: package.edition.clone(),
        elixir_requirement: None,
        manifest: relative(&package.manifest_path),
        targets: package
            .targets
            .iter()
            .map(|t| TargetInfo {
                name: t.name.clone(),
                kind: t.kind.join(","),
                path: relative(&t.src_path),
            })
            .collect(),
        dependencies: package
            .dependencies
            .iter()
            .map(|d| DependencyInfo {
                name: d.name.clone(),
                requirement: d.req.clone(),
                kind: d.kind.clone().unwrap_or_else(|| "normal".into()),
                resolved: resolved.get(d.name.as_str()).cloned(),
                optional: d.optional.then_some(true),
                source: match (&d.path, &d.source) {
                    (Some(_), _) => "path".into(),
                    (None, Some(s)) if s.starts_with("git+") => "git".into(),
                    _ => "registry".into(),
                },
            })
            .collect(),
    }
}

/// Dependency name -> version, from the package's own entry in Cargo.lock.
pub(super) fn resolved_versions<'a>(
    package: &CargoPackage,
    lock: &'a CargoLock,
) -> HashMap<&'a str, String> {
    let Some(entry) = lock
        .package
        .iter()
        .find(|p| p.name == package.name && p.version == package.version && p.source.is_none())
    else {
        return HashMap::new();
    };
    entry
        .dependencies
        .iter()
        .filter_map(|dep| {
            let mut parts = dep.split(' ');
            let name = parts.next()?;
            let version = match parts.next() {
                Some(v) => v.to_string(),
                None => lock
                    .package
                    .iter()
                    .find(|p| p.name == name)?
                    .version
                    .clone(),
            };
            Some((name, version))
        })
        .collect()
}

/// Integration test targets plus source files that contain unit tests.
pub(super) fn test_files(packages: &[CargoPackage], project_root: &Path) -> Vec<String> {
    const MAX_FILES_SCANNED: usize = 5000;
    let mut files = Vec::new();
    for package in packages {
        for target in &package.targets {
            if target.kind.iter().any(|k| k == "test") {
                files.push(relative_to(&target.src_path, project_root));
            }
        }
        let Some(dir) = package.manifest_path.parent() else {
            continue;
        };
        let sources = walkdir::WalkDir::new(dir.join("src"))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() && e.path().extension() == Some("rs".as_ref()))
            .take(MAX_FILES_SCANNED);
        for entry in sources {
            let has_tests = std::fs::read_to_string(entry.path())
                .is_ok_and(|text| text.contains("#[test]") || text.contains("#[cfg(test)]"));
            if has_tests {
                files.push(relative_to(entry.path(), project_root));
            }
        }
    }
    files.sort();
    files.dedup();
    files
}
