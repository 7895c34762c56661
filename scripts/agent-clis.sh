#!/usr/bin/env bash
# Installs the coding-agent CLIs the agent tests drive for real, pinned, with npm, each into
# its own prefix under ${DRYDOCK_AGENT_CLIS:-~/.cache/drydock/agent-clis}/<name>-<version>.
# Idempotent: a CLI whose `--version` already names the pinned version is left alone.
# Prints where each binary is. The tests (tests/it/agent_kit) look there. npm comes from apt
# when it is missing (Debian/Ubuntu; sudo when not root).
set -euo pipefail

root="${DRYDOCK_AGENT_CLIS:-$HOME/.cache/drydock/agent-clis}"

# name, npm package, version, binary under node_modules/.bin
clis=(
    "claude @anthropic-ai/claude-code 2.1.330 claude"
    "codex @openai/codex 0.169.0 codex"
)

command -v npm >/dev/null || "$(dirname "$0")/apt-install.sh" npm

for cli in "${clis[@]}"; do
    read -r name package version bin <<<"$cli"
    prefix="$root/$name-$version"
    exe="$prefix/node_modules/.bin/$bin"
    if [ -x "$exe" ] && "$exe" --version 2>/dev/null | grep -qF "$version"; then
        echo "$name $version: $exe"
        continue
    fi
    echo "agent-clis: installing $package@$version into $prefix" >&2
    mkdir -p "$prefix"
    # A private prefix with its own package.json, so npm never walks up to another project.
    [ -f "$prefix/package.json" ] || echo '{"private": true}' >"$prefix/package.json"
    npm install --prefix "$prefix" --no-audit --no-fund --no-update-notifier \
        --loglevel=error "$package@$version" >&2
    if ! "$exe" --version | grep -qF "$version"; then
        echo "agent-clis: $exe --version does not say $version" >&2
        exit 1
    fi
    echo "$name $version: $exe"
done
