#!/usr/bin/env bash
# The long chaos soak (CI runs a short one with the tests): three hosts of one queue on a
# real PostgreSQL and one tmux server, 200 tasks run by the real Claude Code against the fake
# model API, the database paused three times for 20 s and restarted once, a host SIGKILLed
# and started again twice, 50 MCP clients calling cheap tools throughout. 12 to 16 minutes
# on 2 cores; it prints its figures (docs/benchmarks.md, chaos_soak). Needs what the tests
# need (scripts/ensure-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}"
scripts/ensure-deps.sh
CHAOS_SOAK=full cargo test --test it chaos_soak:: -- --nocapture
