#!/usr/bin/env bash
# On a machine with a GPU (e.g. a lent H100): build ember for that machine's
# python3, run the CUDA tests, then the GPU benchmark, logging to $OUT (or
# ./gpu-logs). Steps can be run separately: tools/gpu_check.sh build test bench
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
steps=${*:-build test bench}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/build/gpu/pkg
for step in $steps; do
  case $step in
    build)
      nvidia-smi > "$out/nvidia-smi.txt" 2>&1
      start=$SECONDS
      CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) tools/dev_build.sh build/gpu > "$out/build.log" 2>&1 \
        || { tail -60 "$out/build.log"; exit 1; }
      echo "build: $((SECONDS - start)) s"
      python3 -c "import ember; n = ember.cuda.device_count(); print('ember sees', n, 'GPU(s)', ember.cuda.get_device_name() if n else '')"
      ;;
    test)
      python3 -m pytest -q -p no:cacheprovider --maxfail=50 tests/test_cuda*.py 2>&1 | tee "$out/tests.log" | tail -40
      ;;
    test-all)
      python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$out/tests-all.log" | tail -40
      ;;
    bench)
      python3 tools/bench.py --device cuda --json "$out/bench.json" 2>&1 | tee "$out/bench.log" | tail -45
      ;;
    *) echo "unknown step $step (build, test, test-all, bench)"; exit 2 ;;
  esac
done
