#!/usr/bin/env bash
# The test command: installs what it needs, builds every flavour whose toolchain is on
# this host and runs all tests through ctest.
#   cpu (CONVEYOR_GPU=off)  always; the full suite
#   amd                     when hipcc is present; the full suite (GPU tests skip with
#                           the runtime's reason when there is no AMD GPU)
#   nvidia                  when nvcc is present; the full suite where an NVIDIA GPU is
#                           present, otherwise compile-only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)

deploy/install-deps.sh --test

# build/<flavour>, where flavour is cpu, amd or nvidia (cpu is CONVEYOR_GPU=off).
build() {
  local gpu=$1
  [[ $1 == cpu ]] && gpu=off
  local log="build/configure-$1.log"
  mkdir -p build
  cmake -S "$root" -B "build/$1" -G Ninja -DCONVEYOR_GPU="$gpu" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 \
    || { cat "$log"; return 1; }
  cmake --build "build/$1" -j "$jobs"
}

run_tests() {
  echo "=== ctest: $1 ==="
  ctest --test-dir "build/$1" -j "$jobs" --output-on-failure --timeout 900
}

echo "=== build: cpu ==="
build cpu
run_tests cpu

if command -v hipcc >/dev/null; then
  echo "=== build: amd ==="
  build amd
  run_tests amd
else
  echo "=== amd: skipped, hipcc not found ==="
fi

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [[ -x "$nvcc" ]]; then
  echo "=== build: nvidia ==="
  build nvidia
  if [[ -e /dev/nvidiactl ]]; then
    run_tests nvidia
  else
    echo "=== nvidia: compile-only (no NVIDIA GPU on this host) ==="
  fi
else
  echo "=== nvidia: skipped, nvcc not found ==="
fi
echo "=== tests/run.sh: all passed ==="
