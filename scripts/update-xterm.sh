#!/usr/bin/env bash
# Refreshes the vendored xterm.js (assets/vendor/xterm) from the npm registry: a developer's
# tool, never run by the build or the tests. Usage: scripts/update-xterm.sh [XTERM] [FIT]
set -euo pipefail
xterm="${1:-6.0.0}"
fit="${2:-0.11.0}"
out="$(cd "$(dirname "$0")/.." && pwd)/assets/vendor/xterm"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "@xterm/xterm@$xterm" "@xterm/addon-fit@$fit" >/dev/null
mkdir xterm fit
tar xzf xterm-xterm-"$xterm".tgz -C xterm
tar xzf xterm-addon-fit-"$fit".tgz -C fit
cp xterm/package/lib/xterm.js xterm/package/css/xterm.css fit/package/lib/addon-fit.js "$out/"
cp xterm/package/LICENSE "$out/LICENSE"
cp fit/package/LICENSE "$out/LICENSE.addon-fit"
cd "$out"
{
  echo "Vendored with scripts/update-xterm.sh (npm pack; never run by the build)."
  echo "@xterm/xterm@$xterm: lib/xterm.js, css/xterm.css, LICENSE"
  echo "@xterm/addon-fit@$fit: lib/addon-fit.js, LICENSE (as LICENSE.addon-fit)"
  echo
  sha256sum xterm.js xterm.css addon-fit.js
} > VERSIONS
