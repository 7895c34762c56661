#!/usr/bin/env bash
# Builds the tarball a team installs on its hosts: drydock (the `dist` profile: fat LTO, one
# codegen unit, stripped; its embedding model built in), the ONNX Runtime library it loads (next to it, where drydock looks),
# the README, and SHA256SUMS of the three. The same commit gives the same bytes: file times
# are the commit's, owners and order fixed, gzip without a name or time.
#
#   scripts/release.sh [--binary PATH] [--out DIR]
#
# --binary packages a drydock already built instead of running `cargo build --profile dist`.
# Writes DIR/drydock-VERSION-TARGET.tar.gz and its .sha256 beside it (DIR: dist/).
# ONNX Runtime comes from scripts/setup-docs.sh's cache (run it first on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
out="dist"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "release: unknown argument $1 (scripts/release.sh [--binary PATH] [--out DIR])" >&2; exit 2 ;;
    esac
done

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
target=$(rustc -vV | sed -n 's/^host: //p')
ort_version=1.31.1
ort_lib="${XDG_CACHE_HOME:-$HOME/.cache}/drydock/ort/libonnxruntime.so.$ort_version"
[ -s "$ort_lib" ] || { echo "release: no ONNX Runtime at $ort_lib (run scripts/setup-docs.sh)" >&2; exit 1; }

if [ -z "$binary" ]; then
    cargo build --profile dist --locked
    binary="${CARGO_TARGET_DIR:-target}/dist/drydock"
fi
[ -x "$binary" ] || { echo "release: $binary is not an executable" >&2; exit 1; }

name="drydock-$version-$target"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name"
chmod 0755 "$stage/$name"
install -m 0755 "$binary" "$stage/$name/drydock"
# drydock loads `libonnxruntime.so` from beside its executable when neither ORT_DYLIB_PATH
# nor its cache has one (src/docs/embed.rs).
install -m 0644 "$ort_lib" "$stage/$name/libonnxruntime.so"
install -m 0644 README.md "$stage/$name/README.md"
(cd "$stage/$name" && sha256sum drydock libonnxruntime.so README.md >SHA256SUMS)

epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
mkdir -p "$out"
tarball="$out/$name.tar.gz"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    --format=gnu -C "$stage" -cf - "$name" | gzip -n -9 >"$tarball.part"
mv "$tarball.part" "$tarball"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$tarball"
