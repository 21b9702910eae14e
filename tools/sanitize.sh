#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the op harness, the
# differential sweep, the fuzz test and the accuracy/layout tests.
#   tools/sanitize.sh [BUILD_DIR] [pytest args...]     (default build/asan)
# Builds ember (CPU only, -O1 -g, every UB check fatal) into BUILD_DIR, then
# runs the tests with the ASan runtime preloaded into Python. Any report fails
# the run. Leak checking is off: CPython itself does not free everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build/asan}")
shift || true
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF \
    -DEMBER_SANITIZE=address,undefined \
    -DPython_EXECUTABLE="$(command -v python3)" \
    -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >/dev/null
fi
"$root/tools/dev_build.sh" "$build"
tests=(tests/test_ops.py tests/test_sweep.py tests/test_fuzz.py tests/test_accuracy.py tests/test_reduce_layouts.py
       tests/test_overlap.py tests/test_overflow.py)
present=()
for t in "${tests[@]}"; do [ -f "$root/$t" ] && present+=("$t"); done
cd "$root"
# The tests' children inherit the preload; EMBER_SANITIZED tells tests not to
# cap address space (ASan reserves terabytes of shadow memory).
export EMBER_SANITIZED=1
# libstdc++ too: ASan must find the real __cxa_throw when it starts (python does not link it).
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
# Reports go to files (pytest's capture would swallow them when a process
# aborts): any file there fails the run, children's reports included.
reports="$build/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=1024:detect_stack_use_after_return=0:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
status=0
PYTHONPATH="$build/pkg" python3 -m pytest "${present[@]}" -q -p no:cacheprovider "$@" || status=$?
# A report counts when ember's code is on its stack (the fuzz test's planted
# crash in ctypes is not); allocation-failure warnings are not reports.
found=0
for r in "$reports"/*; do
  [ -e "$r" ] || continue
  if grep -qE "ERROR: AddressSanitizer|runtime error" "$r" && grep -qE "_C\.cpython|/aten/|generated/|python/src/" "$r"; then
    cat "$r" >&2
    found=1
  fi
done
[ $found = 0 ] || { echo "sanitizer reports above" >&2; exit 1; }
exit $status
