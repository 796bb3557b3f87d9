#!/usr/bin/env bash
# GPU-host checks beyond the tests: memcheck over the encoder's kernels and a per-kernel
# time breakdown with Nsight Compute (clock control off: the card is measured as found).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
echo "== compute-sanitizer memcheck (restart intervals and band splits)"
compute-sanitizer --tool memcheck --error-exitcode 9 $bin/gpu_encoder_test \
  --gtest_filter='*RestartIntervals*:*ColourSignalling*' 2>&1 | tail -4
echo "== ncu: one 1080p yuv420p frame, q85 4:2:0"
ncu --clock-control none --launch-skip 12 --launch-count 24 --print-summary per-kernel \
  $bin/conveyor-bench encode --size 1920x1080 --format yuv420p --worker gpu --frames 2 >"$out/ncu.txt" 2>&1
grep -E "^\s+[A-Za-z]+Kernel|Duration|Registers Per|Achieved Occupancy" "$out/ncu.txt" | grep -E "Kernel|Duration" | head -40
