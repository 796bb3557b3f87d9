#!/usr/bin/env bash
# The stall scenario (every 8th frame 4K q100 among 1080p q85 frames) with the GPU
# worker's first-byte levers each on and off, interleaved in one call so that the pairs
# share the machine's state, then the throughput cases the same way. Expects .device/ as
# tests/gpu/prepare_device.sh stages it; logs to $OUT.
#   tests/gpu/h200_stall_ab.sh [rounds] [first band blocks]
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
rounds=${1:-2}
first=${2:-8192}
stall="--size 1920x1080 --format yuv420p --stall-every 8 --stall-size 3840x2160 --stall-quality 100 --worker gpu"
variants=("--first-band-blocks 0 --balance-lanes off"
          "--first-band-blocks 0 --balance-lanes on"
          "--first-band-blocks $first --balance-lanes off"
          "--first-band-blocks $first --balance-lanes on")
summary() { grep -E "^progress events on vs off|^stall scenario, light|^pipelined, progress events (on|off) +[0-9]"; }
for round in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    echo "== paced 8000/s, round $round: $v"
    $bin/conveyor-bench pipeline $stall --frames 10000 --modes off,on --rate 8000 $v 2>&1 \
      | tee -a "$out/stall_paced.log" | summary
  done
done
for v in "${variants[0]}" "${variants[3]}"; do
  echo "== closed loop: $v"
  $bin/conveyor-bench pipeline $stall --frames 3000 --modes off,on $v 2>&1 | tee -a "$out/stall_closed.log" | summary
  echo "== paced 8000/s, every frame timed: $v"
  csv="$out/times_$(echo "$v" | tr -c 'a-z0-9\n' '_' | tr -s '_').csv"
  $bin/conveyor-bench pipeline $stall --frames 10000 --modes off,on --rate 8000 --stage-timing all \
    --times-csv "$csv" $v 2>&1 | tee -a "$out/stall_timed.log" | summary
done
for round in $(seq "$rounds"); do
  for v in "${variants[0]}" "${variants[3]}"; do
    for args in "--size 1920x1080 --format yuv420p --frames 20000" "--size 3840x2160 --format yuv420p --frames 5000" \
                "--size 1920x1080 --format yuv420p --renditions 1920x1080,1280x720,640x360 --frames 20000"; do
      echo "== throughput, round $round: $args $v"
      $bin/conveyor-bench pipeline $args --modes on --worker gpu $v 2>&1 | tee -a "$out/throughput.log" \
        | grep -E "^pipelined, progress events on +[0-9]"
    done
  done
done
