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

/// The `elixir -e` code that makes the formatter available to `mix test`: loading the
/// cached .beam files when they can be had, else compiling the source in place.
pub(super) async fn loader(cache_root: Option<&Path>, runner: &Runner, call: &Call<'_>) -> String {
    let beams = match cache_root {
        Some(root) => cached_beams(root, runner, call).await,
        None => None,
    };
    match beams {
        // Loaded into memory before Mix starts, so no code path pruning can lose them.
        Some(beams) => beams
            .iter()
            .map(|beam| {
                let path = beam.with_extension("").display().to_string();
                format!(":code.load_abs(~c\"{}\")", path.replace(['\\', '"'], ""))
            })
            .collect::<Vec<_>>()
            .join("; "),
        None => FORMATTER_SOURCE.to_string(),
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
    let output = runner
        .quick(COMPILE_TIMEOUT)
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
        let first = loader(Some(cache.path()), &runner, &call).await;
        assert!(first.starts_with(":code.load_abs(~c\""), "{first}");
        let beams: Vec<_> = walkdir::WalkDir::new(cache.path())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension() == Some("beam".as_ref()))
            .collect();
        assert_eq!(beams.len(), 2, "{beams:?}");
        assert_eq!(loader(Some(cache.path()), &runner, &call).await, first);
        assert_eq!(loader(None, &runner, &call).await, FORMATTER_SOURCE);
    }
}
