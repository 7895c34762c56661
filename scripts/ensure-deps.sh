#!/usr/bin/env bash
# Installs the system packages the tests drive for real, when they are missing: Elixir and
# Erlang (with dialyzer) for the mix tools, tmux and zsh for the terminals, bubblewrap for
# tasks' sandboxes, python3 for the
# scripts that check the history replay and write the tests' ONNX models, Chromium and its
# chromedriver (the same Debian source and version) for the dashboard's browser tests,
# PostgreSQL's server for the shared task queue's tests (they start their own clusters; the
# system's is not used). Debian/Ubuntu (apt); uses sudo when not root.
set -euo pipefail

packages=()
command -v mix >/dev/null || packages+=(elixir)
command -v erlc >/dev/null || packages+=(erlang-dev)
command -v dialyzer >/dev/null || packages+=(erlang-dialyzer)
command -v tmux >/dev/null || packages+=(tmux)
command -v zsh >/dev/null || packages+=(zsh)
command -v bwrap >/dev/null || packages+=(bubblewrap)
command -v python3 >/dev/null || packages+=(python3)
# The sandbox proxy's TLS test makes its certificate authority with it.
command -v openssl >/dev/null || packages+=(openssl)
# libFuzzer (scripts/fuzz.sh, which the tests type-check) is C++.
command -v c++ >/dev/null || packages+=(g++)
command -v chromium >/dev/null || packages+=(chromium)
command -v chromedriver >/dev/null || packages+=(chromium-driver)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || packages+=(fonts-dejavu-core)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || packages+=(postgresql)

"$(dirname "$0")/apt-install.sh" ${packages[@]+"${packages[@]}"}
"$(dirname "$0")/setup-docs.sh"
"$(dirname "$0")/agent-clis.sh"
