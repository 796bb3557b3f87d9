#!/usr/bin/env bash
# Where the coding kernel's warps wait: Nsight Compute's warp-state and source sections
# for one worker-sized band (1080p yuv420p, q85 4:2:0). The build carries -lineinfo.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
ncu --clock-control none --kernel-name regex:SegmentCodeKernel --launch-skip 6 --launch-count 1 \
  --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section SourceCounters --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  $bin/conveyor-bench pipeline --size 1920x1080 --format yuv420p --worker gpu --frames 8 --modes on \
  >"$out/ncu_stalls.txt" 2>&1
grep -vE "^==PROF==|^\s*$" "$out/ncu_stalls.txt" | sed -n '/SegmentCodeKernel/,$p' | head -150
