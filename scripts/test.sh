#!/usr/bin/env bash
# The test command: installs the system packages the tests need (scripts/ensure-deps.sh),
# then formatting, clippy, unit and integration tests (real cargo and mix on the projects in
# test-projects/, a real server driven by real MCP clients), then the official MCP
# conformance suite against the server.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}"
# The tests read what children print; a login shell's backtrace setting must not leak in.
unset RUST_BACKTRACE
# The tests' terminals start the user's interactive shell, which reads ~/.bashrc. Where it
# runs `pyenv init`, a shell the tests kill while pyenv rehashes leaves pyenv's lock behind,
# and every later shell then waits 60 s for it before its first prompt: a second will do.
export PYENV_REHASH_TIMEOUT=1

scripts/ensure-deps.sh

cargo fmt --all --check
cargo clippy --all-targets -- -D warnings
# The layers are crates: an import up a layer does not compile (tried on a copy).
scripts/layers-hold.sh
# The conformance suite's fixtures are a test-only feature: linted and unit-tested here too.
cargo clippy -p drydock-server --lib --features conformance-fixtures --profile test -- -D warnings
cargo test -p drydock-server --lib --features conformance-fixtures -- mcp::conformance
# The fuzz targets still build as the fuzzers build them (their corpora replay in `cargo test`).
scripts/fuzz.sh check
# A failed test's own words come again at the very end, where a report cut to its tail keeps
# them: each failure's first lines after its panic.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! cargo test 2>&1 | tee "$log"; then
  echo "== the failed tests and what they said =="
  awk '/^---- .* stdout ----$/ { name = $2; shown = 0; next }
       /panicked at/ && name != "" { print "# " name; shown = 8 }
       shown > 0 && !/^stack backtrace:/ { print "  " substr($0, 1, 400); shown-- }
       /^stack backtrace:/ { shown = 0 }' "$log"
  exit 101
fi
scripts/conformance.sh
