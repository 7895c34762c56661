#!/usr/bin/env bash
# Set-up for the docs index (src/docs): protoc, needed to build LanceDB, and the ONNX Runtime
# shared library that fastembed loads at run time (ort's load-dynamic mode).
#
# ONNX Runtime comes from PyPI's onnxruntime wheel (the .so inside does not depend on Python);
# it is extracted to ~/.cache/drydock/ort/libonnxruntime.so.1.31.1 ($XDG_CACHE_HOME when set),
# the second place drydock looks (after $ORT_DYLIB_PATH). Idempotent: returns at once when both are already there.
# Debian/Ubuntu (apt); uses sudo when not root.
set -euo pipefail

ort_version=1.31.1
ort_dir="${XDG_CACHE_HOME:-$HOME/.cache}/drydock/ort"
ort_lib="$ort_dir/libonnxruntime.so.$ort_version"

# LanceDB's build scripts run protoc on protos that import google/protobuf/empty.proto,
# which Debian ships in libprotobuf-dev (only recommended by protobuf-compiler).
packages=()
command -v protoc >/dev/null || packages+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/empty.proto ] || packages+=(libprotobuf-dev)
# pip fetches ONNX Runtime's wheel from PyPI (below), only while it is not there yet.
if [ ! -s "$ort_lib" ] && ! command -v pip3 >/dev/null && ! command -v pip >/dev/null; then
    packages+=(python3-pip)
fi
"$(dirname "$0")/apt-install.sh" ${packages[@]+"${packages[@]}"}

if [ ! -s "$ort_lib" ]; then
    pip=$(command -v pip3 || command -v pip || true)
    if [ -z "$pip" ]; then
        echo "setup-docs: pip is needed to fetch ONNX Runtime from PyPI (apt-get install python3-pip)" >&2
        exit 1
    fi
    echo "fetching onnxruntime==$ort_version from PyPI into $ort_dir" >&2
    mkdir -p "$ort_dir"
    wheel_dir=$(mktemp -d)
    trap 'rm -rf "$wheel_dir"' EXIT
    "$pip" download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_x86_64 "onnxruntime==$ort_version" -d "$wheel_dir"
    # A wheel is a zip file; python is there since pip is, so no unzip is needed.
    python3 - "$wheel_dir" "$ort_lib" "$ort_version" <<'PY'
import glob, shutil, sys, zipfile
wheel_dir, target, version = sys.argv[1:]
wheel = glob.glob(f"{wheel_dir}/onnxruntime-{version}-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open(f"onnxruntime/capi/libonnxruntime.so.{version}") as src, \
        open(target + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    mv "$ort_lib.part" "$ort_lib"
fi
