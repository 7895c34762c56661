//! One libFuzzer binary for every target in `drydock::fuzz_targets`; `FUZZ_TARGET` names
//! the one to run. Build and run it with `scripts/fuzz.sh`.
#![no_main]

#[cfg(not(fuzzing))]
compile_error!("build the fuzzers with scripts/fuzz.sh (it adds --cfg fuzzing and coverage)");

use std::sync::LazyLock;

use drydock::fuzz_targets::{TARGETS, Target, target};

static TARGET: LazyLock<&'static Target> = LazyLock::new(|| {
    let name = std::env::var("FUZZ_TARGET").unwrap_or_default();
    target(&name).unwrap_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        panic!("FUZZ_TARGET={name:?} names no target; the targets: {names:?}")
    })
});

libfuzzer_sys::fuzz_target!(|data: &[u8]| (TARGET.run)(data));
