#!/usr/bin/env bash
# Shows that the compiler keeps drydock's layers (ARCHITECTURE.md, "Layers"): on a copy of the
# workspace, a lower crate tries to use a higher one in the two ways there are, and each must
# fail to build with the error that says why:
#   1. the terminal crate imports the agents capability (`use crate::agents`): it is not there;
#   2. the terminal crate's Cargo.toml names drydock-agents: a cycle, which cargo refuses.
# Exits 0 when both fail as they should, 1 when either builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drydock-target}"
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT

fresh_copy() {
    rm -rf "${copy:?}/ws" && mkdir -p "$copy/ws"
    tar -c --exclude=./target --exclude=./.git --exclude=./models --exclude=./fuzz \
        --exclude=./test-projects --exclude=./docs --exclude=./tests . | tar -x -C "$copy/ws"
    # The copy is a workspace of its own, without the fuzz crate left out of it.
    sed -i 's|^members = \[".", "crates/\*", "fuzz"\]|members = [".", "crates/*"]|' "$copy/ws/Cargo.toml"
}

# Runs `cargo check -p drydock-terminal` in the copy; passes when it fails saying `expected`.
refused() {
    local what="$1" expected="$2" log="$copy/check.log"
    if (cd "$copy/ws" && cargo check --offline --quiet -p drydock-terminal) >"$log" 2>&1; then
        echo "layers-hold: $what built; the layers do not hold" >&2
        return 1
    fi
    if ! grep -q -- "$expected" "$log"; then
        echo "layers-hold: $what failed, but not with \"$expected\":" >&2
        tail -20 "$log" >&2
        return 1
    fi
    echo "layers-hold: $what is refused: $(grep -m1 -- "$expected" "$log")"
}

fresh_copy
sed -i '1i use crate::agents::Agents;' "$copy/ws/crates/terminal/src/terminal/mod.rs"
refused "an import of agents in terminal" "unresolved import \`crate::agents\`"

fresh_copy
sed -i 's|^drydock-base = { path = "../base" }|&\ndrydock-agents = { path = "../agents" }|' \
    "$copy/ws/crates/terminal/Cargo.toml"
refused "terminal depending on drydock-agents" "cyclic package dependency"
