//! `run` of a cargo project: its program built and run with the caller's arguments, or a
//! cargo task (`cargo doc`, `cargo tree`, ...) that went through its allowlist.

use super::*;

/// Build the project's program and run it with `args`, which are the program's own: they
/// go to it directly, never through cargo.
pub(super) async fn run(
    project: &Project,
    req: &RunRequest,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<RunReport, ToolchainError> {
    let started = Instant::now();
    let executable = match build_program(project, req, runner, call, started).await? {
        Ok(executable) => executable,
        Err(failed) => return Ok(failed),
    };
    let spec = CommandSpec::new(
        executable.display().to_string(),
        req.args.clone(),
        &project.root,
    );
    run_with_stdin(spec, req, runner, call, started).await
}

/// `cargo TASK ...`, where `argv` (task name first) went through the task's allowlist
/// (`task_args`).
pub(super) async fn run_task(
    project: &Project,
    req: &RunRequest,
    argv: Vec<String>,
    runner: &Runner,
    call: &Call<'_>,
) -> Result<RunReport, ToolchainError> {
    run_with_stdin(cargo(project, argv), req, runner, call, Instant::now()).await
}

pub(super) async fn run_with_stdin(
    spec: CommandSpec,
    req: &RunRequest,
    runner: &Runner,
    call: &Call<'_>,
    started: Instant,
) -> Result<RunReport, ToolchainError> {
    let spec = CommandSpec {
        stdin: req.stdin.as_ref().map(|s| s.clone().into_bytes()),
        ..spec
    };
    call.progress.report(&format!("running {}", spec.program));
    let output = runner.run_to_end(spec, call).await?;
    Ok(RunReport::from_output(output, millis(started.elapsed())))
}

#[derive(Deserialize)]
pub(super) struct ArtifactMessage {
    reason: String,
    #[serde(default)]
    package_id: String,
    #[serde(default)]
    target: Option<ArtifactTarget>,
    #[serde(default)]
    executable: Option<PathBuf>,
}

#[derive(Deserialize)]
pub(super) struct ArtifactTarget {
    name: String,
    kind: Vec<String>,
}

pub(super) struct BuiltBinary {
    package_id: String,
    name: String,
    executable: PathBuf,
}

/// Build the program `run` should start; `Ok(Err(report))` when it did not build.
pub(super) async fn build_program(
    project: &Project,
    req: &RunRequest,
    runner: &Runner,
    call: &Call<'_>,
    started: Instant,
) -> Result<Result<PathBuf, RunReport>, ToolchainError> {
    let mut args = strings(&["build", "--message-format=json"]);
    selection_args(&mut args, &req.package, &[]);
    if let Some(bin) = &req.bin {
        args.push(format!("--bin={bin}"));
    }
    call.progress.report(&format!("cargo {}", args.join(" ")));
    let ws_root = workspace_root(&project.root);
    let mut parser = CargoMessageParser::new(&ws_root, &project.root, false);
    let mut binaries = Vec::new();
    let output = {
        let mut on_json = compile_progress(&mut parser, call);
        let mut on_line = |stream: Stream, line: &str| {
            if stream != Stream::Stdout {
                return;
            }
            if let Some(binary) = built_binary(line) {
                binaries.push(binary);
            }
            on_json(line);
        };
        runner
            .run_toolchain(cargo(project, args), call, &mut on_line)
            .await?
    };
    let build = BuildDiagnostics::capped(parser.finish().diagnostics);
    let unexplained = output_tail(&output.stderr.text).filter(|_| build.errors.is_empty());
    let end = match output.termination {
        Termination::Exited(0) => return choose_binary(project, req, binaries).map(Ok),
        Termination::TimedOut => RunEnd::Timeout(RunStage::Build),
        Termination::Cancelled => RunEnd::Cancelled(RunStage::Build),
        Termination::Exited(_) | Termination::Signaled(_) => RunEnd::BuildFailed(build),
    };
    let duration_ms = millis(started.elapsed());
    Ok(Err(RunReport::not_built(end, unexplained, duration_ms)))
}

pub(super) fn built_binary(line: &str) -> Option<BuiltBinary> {
    if !line.contains("\"compiler-artifact\"") {
        return None;
    }
    let message: ArtifactMessage = serde_json::from_str(line).ok()?;
    let target = message.target?;
    (message.reason == "compiler-artifact" && target.kind.iter().any(|k| k == "bin")).then_some(
        BuiltBinary {
            package_id: message.package_id,
            name: target.name,
            executable: message.executable?,
        },
    )
}

/// The binary `cargo run` would pick: the named one, the only one, or the package's `default-run`.
pub(super) fn choose_binary(
    project: &Project,
    req: &RunRequest,
    binaries: Vec<BuiltBinary>,
) -> Result<PathBuf, ToolchainError> {
    if let Some(bin) = &req.bin {
        return binaries
            .into_iter()
            .find(|b| &b.name == bin)
            .map(|b| b.executable)
            .ok_or_else(|| {
                ToolchainError::InvalidArgument(format!("no binary named `{bin}` was built"))
            });
    }
    if binaries.len() == 1 {
        return Ok(binaries.into_iter().next().expect("one binary").executable);
    }
    if binaries.is_empty() {
        return Err(ToolchainError::InvalidArgument(
            "the project has no binary to run; pass `package` for a workspace member or use `task`"
                .into(),
        ));
    }
    let default_run = read_manifest(&project.root.join("Cargo.toml")).and_then(|m| {
        m.get("package")?
            .get("default-run")?
            .as_str()
            .map(str::to_string)
    });
    let own_package = binaries.iter().any(|b| {
        b.package_id
            .contains(&format!("file://{}", project.root.display()))
    });
    if let Some(default_run) = default_run.filter(|_| own_package)
        && let Some(binary) = binaries.iter().find(|b| b.name == default_run)
    {
        return Ok(binary.executable.clone());
    }
    let mut names: Vec<&str> = binaries.iter().map(|b| b.name.as_str()).collect();
    names.sort_unstable();
    Err(ToolchainError::InvalidArgument(format!(
        "several binaries were built ({}); choose one with `bin` (and `package` in a workspace)",
        names.join(", ")
    )))
}
