#!/usr/bin/env bash
# The long chaos soak (CI runs a short one with the tests): three hosts of one queue on a
# real PostgreSQL and one tmux server, 200 tasks run by the real Claude Code against the fake
# model API, the database paused three times for 20 s and restarted once, a host SIGKILLed
# and started again twice, 50 MCP clients calling cheap tools throughout. 12 to 16 minutes
# on 2 cores; it prints its figures (docs/benchmarks.md, chaos_soak). Needs what the tests
# need (scripts/ensure-deps.sh).
#
# The hosts are a release build of drydock, as performance is judged (built here into
# $CARGO_TARGET_DIR, an hour cold), or the binary CHAOS_SOAK_BINARY names. CHAOS_SOAK_NICE
# sets the agents' [tasks] nice (the plan's: 10), CHAOS_SOAK_TASKS the number of tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}"
scripts/ensure-deps.sh
if [ -z "${CHAOS_SOAK_BINARY:-}" ]; then
    cargo build --release --locked --bin drydock
    export CHAOS_SOAK_BINARY="$CARGO_TARGET_DIR/release/drydock"
fi
echo "chaos soak: hosts run $CHAOS_SOAK_BINARY"
CHAOS_SOAK=full cargo test --test it chaos_soak:: -- --nocapture
