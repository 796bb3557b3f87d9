#!/usr/bin/env bash
# Where the pipeline's time goes, from an Nsight Systems timeline of the worker: kernel
# overlap between the encode streams, the gaps between consecutive launches on a stream,
# and the host API calls (the issue and delivery threads' costs).
#   tests/gpu/h200_timeline.sh [conveyor-bench pipeline options]
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
args=${*:---size 1920x1080 --format yuv420p}
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
[[ -n $nsys ]] || { echo "nsys not found"; exit 1; }
$nsys profile --trace=cuda,osrt --sample=none --cpuctxsw=none -o "$out/timeline" --force-overwrite true \
  $bin/conveyor-bench pipeline $args --modes on --frames 300 --worker gpu >"$out/timeline_bench.txt" 2>&1
grep -E "^pipelined" "$out/timeline_bench.txt"
$nsys stats --force-export=true --report cuda_gpu_trace --format csv --output "$out/trace" "$out/timeline.nsys-rep" >/dev/null 2>&1
$nsys stats --report cuda_api_sum --format table "$out/timeline.nsys-rep" 2>/dev/null | head -30
python3 tests/gpu/timeline_overlap.py "$out"/trace*cuda_gpu_trace*.csv
