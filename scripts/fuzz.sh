#!/usr/bin/env bash
# Coverage-guided fuzzing of drydock's parsers of foreign text, with libFuzzer on the stable
# toolchain (the targets: src/fuzz_targets.rs).
#
#   scripts/fuzz.sh check                  type-check the fuzz build (the tests run this)
#   scripts/fuzz.sh build                  build fuzz_parsers (drydock instrumented, its
#                                          dependencies shared with the test build)
#   scripts/fuzz.sh run TARGET [RUNS]      fuzz one target for RUNS executions (10 million)
#   scripts/fuzz.sh campaign [RUNS] [JOBS] every target, JOBS at a time (2)
#   scripts/fuzz.sh minimize TARGET        shrink TARGET's corpus to a minimal cover
#   scripts/fuzz.sh corpus [TARGET]        make TARGET's corpus (every target's) afresh
#
# The corpora live outside the repository, in $FUZZ_WORK/corpus/TARGET. The repository keeps
# a dozen seeds a target (fuzz/seeds/TARGET) and every input that ever crashed
# (fuzz/regressions/TARGET); a corpus is made from them, and from the corpus the campaigns
# had grown by commit $CORPUS_AT when this clone's history holds it, the first time a target
# runs (or by `corpus`). A run starts from its corpus and, when it ends clean, leaves there
# the smallest corpus that covers what it found. A crash or a hang stops it: the input is kept in
# fuzz/regressions/TARGET (the unit tests replay it until it is fixed) and the run fails.
# A run stopped with SIGINT to fuzz_parsers (the CPU is needed elsewhere) keeps what it
# found: its executions are recorded as interrupted and its corpus is merged, so the next
# run on the same code goes on from there. Each run's figures go to stdout and to
# $FUZZ_WORK/runs.tsv. FUZZ_BIN names a fuzz_parsers built before, to run instead of building
# one (a long campaign goes on while the sources change).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}"
FUZZ_WORK="${FUZZ_WORK:-$HOME/.cache/drydock-fuzz}"
BIN="${FUZZ_BIN:-$CARGO_TARGET_DIR/debug/fuzz_parsers}"
CORPUS="$FUZZ_WORK/corpus"
# The last commit whose tree held the campaigns' corpora (fuzz/corpus/, 19,000 inputs).
CORPUS_AT=c7383fce933627024507c2f41cbdd3e426c69aa1
MAX_LEN=4096
# libFuzzer's exit status after SIGINT.
INTERRUPTED=72

fuzz_cargo() {
    RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/fuzz-rustc" cargo "$1" --quiet -p drydock-fuzz
}

build() {
    [ -n "${FUZZ_BIN:-}" ] || fuzz_cargo build
}

targets() {
    ls fuzz/seeds
}

# Makes $CORPUS/TARGET afresh: the seeds, the regressions, and the corpus at $CORPUS_AT.
corpus() {
    local target="$1" dir="$CORPUS/$1"
    [ -d "fuzz/seeds/$target" ] || { echo "no target $target (fuzz/seeds/)" >&2; return 1; }
    rm -rf "$dir" && mkdir -p "$dir"
    cp fuzz/seeds/"$target"/* "$dir/"
    cp fuzz/regressions/"$target"/* "$dir/" 2>/dev/null || true
    if git cat-file -e "$CORPUS_AT:fuzz/corpus/$target" 2>/dev/null; then
        git archive "$CORPUS_AT" "fuzz/corpus/$target" | tar -x --strip-components=3 -C "$dir"
    else
        echo "$target: this clone's history lacks $CORPUS_AT; its corpus starts from the seeds" >&2
    fi
    echo "$target: corpus of $(ls "$dir" | wc -l) inputs in $dir"
}

# The corpus of TARGET, made the first time.
ensure_corpus() {
    [ -d "$CORPUS/$1" ] || corpus "$1" >&2
}

# The value of libFuzzer's final `stat::NAME:` line in LOG.
stat() {
    sed -n "s/^stat::$1: *//p" "$2" | tail -1
}

# Leaves in TARGET's corpus the fewest inputs that cover what it and DIRS cover.
minimize() {
    local target="$1" merged="$FUZZ_WORK/$1.merged"
    shift
    ensure_corpus "$target"
    rm -rf "$merged" && mkdir -p "$merged"
    FUZZ_TARGET="$target" "$BIN" -set_cover_merge=1 -max_len=$MAX_LEN "$merged" \
        "$CORPUS/$target" "$@" >"$FUZZ_WORK/$target.merge.log" 2>&1
    rm -rf "${CORPUS:?}/$target" && mv "$merged" "$CORPUS/$target"
}

run() {
    local target="$1" runs="${2:-10000000}"
    local work="$FUZZ_WORK/$target" found="$FUZZ_WORK/$target.found"
    local log="$FUZZ_WORK/$target.log"
    mkdir -p "$work" "$found"
    ensure_corpus "$target"
    local started=$SECONDS status=0
    FUZZ_TARGET="$target" "$BIN" "$work" "$CORPUS/$target" \
        -runs="$runs" -max_len=$MAX_LEN -timeout=10 -rss_limit_mb=2048 \
        -interrupt_exit_code=$INTERRUPTED -print_final_stats=1 -artifact_prefix="$found/" \
        >"$log" 2>&1 || status=$?
    local seconds=$((SECONDS - started))
    local execs
    execs=$(stat number_of_executed_units "$log")
    if [ "$status" -eq "$INTERRUPTED" ]; then
        minimize "$target" "$work"
        printf '%s\tinterrupted after %s executions in %ss, nothing found\tcorpus %s inputs\n' \
            "$target" "${execs:-?}" "$seconds" "$(ls "$CORPUS/$target" | wc -l)" |
            tee -a "$FUZZ_WORK/runs.tsv"
        return 0
    fi
    if [ "$status" -ne 0 ]; then
        mkdir -p "fuzz/regressions/$target"
        cp "$found"/* "fuzz/regressions/$target/" 2>/dev/null || true
        grep -E -m3 'panicked|ERROR: libFuzzer|SUMMARY' "$log" >&2 || tail -20 "$log" >&2
        printf '%s\tFAILED after %s executions in %ss: input kept in fuzz/regressions/%s (log %s)\n' \
            "$target" "${execs:-?}" "$seconds" "$target" "$log" | tee -a "$FUZZ_WORK/runs.tsv"
        return 1
    fi
    minimize "$target" "$work"
    printf '%s\t%s executions\t%s s\t%s/s\tcorpus %s inputs\tpeak RSS %s MB\n' "$target" "$execs" \
        "$seconds" "$(stat average_exec_per_sec "$log")" "$(ls "$CORPUS/$target" | wc -l)" \
        "$(stat peak_rss_mb "$log")" | tee -a "$FUZZ_WORK/runs.tsv"
}

case "${1:-}" in
check) fuzz_cargo check ;;
build) build ;;
run)
    build
    run "${2:?which target}" "${3:-10000000}"
    ;;
minimize)
    build
    minimize "${2:?which target}"
    ;;
corpus)
    for target in ${2:-$(targets)}; do corpus "$target"; done
    ;;
campaign)
    build
    export -f run stat minimize corpus ensure_corpus
    export BIN MAX_LEN FUZZ_WORK INTERRUPTED CORPUS CORPUS_AT
    targets | xargs -P "${3:-2}" -I{} bash -c 'run "$1" "$2"' _ {} "${2:-10000000}"
    ;;
*)
    sed -n '2,21p' "$0"
    exit 2
    ;;
esac
