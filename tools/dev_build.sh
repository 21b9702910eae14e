#!/usr/bin/env bash
# Incremental development build without pip: configures once, rebuilds what
# changed, and stages an importable package at BUILD_DIR/pkg.
#   tools/dev_build.sh [BUILD_DIR]   then   PYTHONPATH=BUILD_DIR/pkg python ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build/dev}")
if [ ! -f "$build/build.ninja" ]; then
  # One kernel file per translation unit: editing an op recompiles its own kernels only.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_KERNEL_BATCH=1 \
    -DPython_EXECUTABLE="$(command -v python3)" \
    -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >/dev/null
fi
cmake --build "$build"
mkdir -p "$build/pkg"
ln -sfn "$root/python/ember" "$build/pkg/ember.src"
# The package directory mixes the sources (symlinked) with the built module.
pkg="$build/pkg/ember"
mkdir -p "$pkg"
for f in "$root"/python/ember/*; do ln -sfn "$f" "$pkg/$(basename "$f")"; done
ln -sfn "$build"/_C*.so "$pkg/"
rm -f "$pkg/_C.pyi"  # the stubs are the package _C/ now
ln -sfn "$build/generated/_C" "$pkg/_C"
rm -f "$build/pkg/ember.src"
