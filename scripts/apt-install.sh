#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages named as arguments with apt (sudo when not root);
# does nothing without arguments. Used by ensure-deps.sh and setup-docs.sh, which decide
# what is missing.
set -euo pipefail
[ $# -gt 0 ] || exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing $* (apt)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
