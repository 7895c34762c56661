//! The fuzzers' seeds (`fuzz/seeds/<target>`) and every input that once crashed drydock
//! (`fuzz/regressions/<target>`), replayed. The corpora the campaigns grow stay outside the
//! repository (`scripts/fuzz.sh corpus`).

use std::path::{Path, PathBuf};

use super::{TARGETS, target};

fn fuzz_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    files.sort();
    files
}

/// The inputs in `fuzz/<kind>/` under which a target panics.
fn replay(kind: &str) -> Vec<String> {
    let mut failed = Vec::new();
    for target in TARGETS {
        for input in inputs(&fuzz_dir(kind).join(target.name)) {
            let bytes = std::fs::read(&input).unwrap();
            if std::panic::catch_unwind(|| (target.run)(&bytes)).is_err() {
                failed.push(input.display().to_string());
            }
        }
    }
    failed
}

#[test]
fn every_target_has_seeds_and_every_seed_folder_a_target() {
    for target in TARGETS {
        let seeds = inputs(&fuzz_dir("seeds").join(target.name));
        assert!(!seeds.is_empty(), "fuzz/seeds/{} is empty", target.name);
    }
    for kind in ["seeds", "regressions"] {
        for dir in inputs(&fuzz_dir(kind)) {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                target(&name).is_some(),
                "fuzz/{kind}/{name} names no target"
            );
        }
    }
}

#[test]
fn the_seeds_replay_without_a_panic() {
    let failed = replay("seeds");
    assert!(failed.is_empty(), "panicked on {failed:#?}");
}

#[test]
fn the_crashes_found_stay_fixed() {
    let failed = replay("regressions");
    assert!(failed.is_empty(), "panicked on {failed:#?}");
}
