#!/usr/bin/env bash
# Where a kernel's warps wait: Nsight Compute's launch, occupancy, warp-state, scheduler
# and memory sections for one launch of the worker (1080p yuv420p, q85 4:2:0). The build
# carries -lineinfo.
#   tests/gpu/h200_kernel_stalls.sh [KERNEL [FRAMES_A_LAUNCH]]
# KERNEL is SegmentCodeKernel (default) or ColorDctKernel. FRAMES_A_LAUNCH > 1 profiles
# a batched launch, which loads the GPU the way several frames in flight do.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
kernel=${1:-SegmentCodeKernel}
frames=${2:-1}
log="$out/ncu_${kernel}_x${frames}.txt"
ncu --clock-control none --kernel-name regex:$kernel --launch-skip 60 --launch-count 1 \
  --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section SpeedOfLight \
  $bin/conveyor-bench pipeline --size 1920x1080 --format yuv420p --worker gpu --frames 96 --modes on \
  --launch-frames "$frames" >"$log" 2>&1
grep -vE "^==PROF==|^\s*$" "$log" | sed -n "/$kernel/,\$p" | head -200
