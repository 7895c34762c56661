//! Our ExUnit formatter compiled once into the user cache dir, so that `mix test` loads a
//! ready .beam instead of compiling the formatter's source in every run (~70 ms here).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::exunit_events::{FORMATTER_MODULE, FORMATTER_SOURCE};
use crate::call::Call;
use crate::process::{CommandSpec, Termination};
use crate::toolchain::runner::Runner;

const COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

/// The modules the formatter's source defines, each compiled to its own .beam.
const MODULES: [&str; 2] = ["DrydockJSON", FORMATTER_MODULE];

/// How `mix test` gets drydock's formatter.
pub(super) struct Formatter {
    /// The `elixir -e` code that makes it available.
    pub code: String,
    /// The directory of the cached .beam files the code loads, when it loads them.
    beams: Option<PathBuf>,
}

impl Formatter {
    /// `runner`, whose sandbox (a task's build) sees the cached .beam files it must load.
    pub(super) fn visible_to(&self, runner: &Runner) -> Runner {
        match &self.beams {
            Some(dir) => runner.seeing(dir),
            None => runner.clone(),
        }
    }
}

/// The formatter: the cached .beam files loaded when they can be had (compiled on first
/// use), else its source compiled in place.
pub(super) async fn loader(
    cache_root: Option<&Path>,
    runner: &Runner,
    call: &Call<'_>,
) -> Formatter {
    let beams = match cache_root {
        Some(root) => cached_beams(root, runner, call).await,
        None => None,
    };
    match beams {
        // Loaded into memory before Mix starts, so no code path pruning can lose them.
        Some(beams) => Formatter {
            code: beams
                .iter()
                .map(|beam| {
                    let path = beam.with_extension("").display().to_string();
                    format!(":code.load_abs(~c\"{}\")", path.replace(['\\', '"'], ""))
                })
                .collect::<Vec<_>>()
                .join("; "),
            beams: beams
                .first()
                .and_then(|beam| beam.parent())
                .map(Path::to_path_buf),
        },
        None => Formatter {
            code: FORMATTER_SOURCE.to_string(),
            beams: None,
        },
    }
}

/// `~/.cache/drydock/exunit-formatter/<key>/Elixir.<module>.beam`, compiled on first use.
/// The key changes with the source and with the installed Elixir.
async fn cached_beams(root: &Path, runner: &Runner, call: &Call<'_>) -> Option<Vec<PathBuf>> {
    let dir = root.join("exunit-formatter").join(key()?);
    let beams: Vec<PathBuf> = MODULES
        .iter()
        .map(|module| dir.join(format!("Elixir.{module}.beam")))
        .collect();
    if !beams.iter().all(|beam| beam.is_file()) {
        compile_into(&dir, runner, call).await?;
    }
    beams.iter().all(|beam| beam.is_file()).then_some(beams)
}

/// Compiles into a directory of its own, then renames it into place: a concurrent or
/// interrupted compile never leaves a half-written .beam where it would be loaded.
async fn compile_into(dir: &Path, runner: &Runner, call: &Call<'_>) -> Option<()> {
    static COMPILES: AtomicU64 = AtomicU64::new(0);
    let unique = COMPILES.fetch_add(1, Ordering::Relaxed);
    let scratch = Scratch(dir.with_extension(format!("tmp-{}-{unique}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).ok()?;
    let source = scratch.0.join("drydock_exunit_formatter.ex");
    std::fs::write(&source, FORMATTER_SOURCE).ok()?;
    let out = scratch.0.join("ebin");
    let spec = CommandSpec::new(
        "elixirc",
        [
            "-o".to_string(),
            out.display().to_string(),
            source.display().to_string(),
        ],
        &scratch.0,
    );
    // drydock's own source, compiled into drydock's cache: outside a task's sandbox, which
    // does not see that cache.
    let output = runner
        .own_helper(COMPILE_TIMEOUT)
        .run(spec, call, &mut |_, _| {})
        .await
        .ok()?;
    if output.termination != Termination::Exited(0) {
        tracing::warn!(
            "compiling the ExUnit formatter failed, it will be compiled in each run: {}",
            output.stderr.text
        );
        return None;
    }
    // Another call may have won the race; its copy is as good as ours.
    if std::fs::rename(&out, dir).is_err() && !dir.is_dir() {
        return None;
    }
    Some(())
}

/// Removed when dropped, whatever happened.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The formatter's source and the `elixir` found on PATH (its path, size and mtime, which
/// an upgrade changes).
fn key() -> Option<String> {
    let elixir = find_on_path("elixir")?;
    let metadata = std::fs::metadata(&elixir).ok()?;
    let mut hasher = DefaultHasher::new();
    FORMATTER_SOURCE.hash(&mut hasher);
    elixir.hash(&mut hasher);
    metadata.len().hash(&mut hasher);
    metadata.modified().ok()?.hash(&mut hasher);
    Some(format!("{:016x}", hasher.finish()))
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .and_then(|found| found.canonicalize().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Silent;

    #[tokio::test]
    async fn compiles_once_then_loads_the_cached_beam() {
        let cache = tempfile::tempdir().unwrap();
        let runner = Runner::for_tests();
        let call = Call::new(&Silent, Default::default());
        let first = loader(Some(cache.path()), &runner, &call).await.code;
        assert!(first.starts_with(":code.load_abs(~c\""), "{first}");
        let beams: Vec<_> = walkdir::WalkDir::new(cache.path())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension() == Some("beam".as_ref()))
            .collect();
        assert_eq!(beams.len(), 2, "{beams:?}");
        assert_eq!(loader(Some(cache.path()), &runner, &call).await.code, first);
        assert_eq!(loader(None, &runner, &call).await.code, FORMATTER_SOURCE);
    }

    /// A task's build runs in a sandbox that does not see drydock's cache: the formatter is
    /// compiled outside it, and the run that loads it is shown the cached .beam files.
    #[tokio::test]
    async fn a_sandboxed_run_loads_the_formatter_compiled_outside_its_sandbox() {
        use crate::sandbox::{Confinement, confinement};
        use crate::toolchain::runner::Confined;
        let (cache, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let bwrap = crate::sandbox::support::host()
            .bwrap()
            .expect("bubblewrap works here");
        let confinement = Confinement {
            work: work.path().to_path_buf(),
            readable: confinement::readable(
                confinement::toolchain_dirs(),
                dirs::home_dir().as_deref(),
                &[cache.path()],
            ),
            passed: confinement::passed_env(&[]),
            ..Confinement::default()
        };
        let sandboxed = Runner {
            confine: Some(Confined {
                bwrap: bwrap.to_path_buf(),
                confinement,
            }),
            ..Runner::for_tests()
        };
        let call = Call::new(&Silent, Default::default());
        let formatter = loader(Some(cache.path()), &sandboxed, &call).await;
        assert!(
            formatter.code.starts_with(":code.load_abs"),
            "{}",
            formatter.code
        );
        let loaded = async |runner: &Runner| {
            let check = format!(
                "{}; IO.puts(Code.ensure_loaded?(DrydockJSON))",
                formatter.code
            );
            let spec = CommandSpec::new("elixir", ["-e".to_string(), check], work.path());
            let output = runner.run(spec, &call, &mut |_, _| {}).await.unwrap();
            output.stdout.text.trim().to_string()
        };
        assert_eq!(loaded(&formatter.visible_to(&sandboxed)).await, "true");
        assert_eq!(
            loaded(&sandboxed).await,
            "false",
            "the cache is not seen otherwise"
        );
    }
}
