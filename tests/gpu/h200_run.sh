#!/usr/bin/env bash
# What runs on the GPU host (an NVIDIA H200 reached through the device tool). Expects the
# nvidia-flavour binaries in .device/bin, libjpeg-turbo's two shared libraries in
# .device/lib and test images in .device/media (see BENCHMARKS.md for how they are made);
# writes logs to $OUT.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/gpu.txt"
nproc | tee -a "$out/gpu.txt"
$bin/unit_tests 2>&1 | tail -3
$bin/gpu_encoder_test 2>&1 | tee "$out/gpu_encoder_test.log" | grep -E "OK|FAIL|PASSED|byte-identical|Skipped"
for args in "--input .device/media/n1080.ppm" "--input .device/media/n2160.ppm" \
            "--size 1920x1080 --format yuv420p" "--size 3840x2160 --format yuv420p" \
            "--size 1280x720 --format nv12"; do
  for worker in gpu cpu; do
    $bin/conveyor-bench encode $args --worker $worker --frames 60 --quality 85 --subsampling 420 2>&1 \
      | tee -a "$out/bench_encode.log" | grep -E "^conveyor|^libjpeg|^per-core|^\{" 
  done
done
