#!/usr/bin/env bash
# What runs on the GPU host (an NVIDIA H200). Expects
# .device/ as tests/gpu/prepare_device.sh stages it (binaries, libjpeg-turbo, images);
# writes logs to $OUT.   tests/gpu/h200_run.sh [tests|doctor|encode|pipeline|rss]...
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=.device/bin
out=${OUT:-/tmp/out}
parts=${*:-tests encode pipeline}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
for part in $parts; do
  case $part in
    tests)
      for t in unit_tests gpu_encoder_test gpu_scale_test worker_test doctor_tests; do
        [[ -x $bin/$t ]] || continue
        echo "== $t"
        $bin/$t 2>&1 | tee "$out/$t.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |byte-identical|Failure|bands checked|worker:" | sort | uniq -c
      done ;;
    doctor)
      $bin/conveyor-doctor 2>&1 | tee "$out/doctor.log"; echo "conveyor-doctor exit: ${PIPESTATUS[0]}" ;;
    encode)
      for args in "--input .device/media/n1080.ppm" "--input .device/media/n2160.ppm" \
                  "--size 1920x1080 --format yuv420p" "--size 3840x2160 --format yuv420p"; do
        for worker in gpu cpu; do
          $bin/conveyor-bench encode $args --worker $worker --frames 60 --quality 85 --subsampling 420 2>&1 \
            | tee -a "$out/bench_encode.log" | grep -E "^conveyor|^libjpeg|^per-core"
        done
      done ;;
    pipeline)
      # Frames enough for about 1.2 s a mode, so that a run of timed frames (one a second,
      # as in the daemon) lands in each measurement and fills the engine columns.
      for args in "--size 1920x1080 --format yuv420p --modes serial,off,on --frames 20000" \
                  "--size 1920x1080 --format rgb24 --modes serial,off,on --frames 10000" \
                  "--size 3840x2160 --format yuv420p --modes serial,off,on --frames 5000" \
                  "--size 1920x1080 --format yuv420p --renditions 1920x1080,1280x720,640x360 --modes on --frames 20000" \
                  "--size 1920x1080 --format yuv420p --stall-every 8 --stall-size 3840x2160 --stall-quality 100 --frames 3000" \
                  "--size 1920x1080 --format yuv420p --stall-every 8 --stall-size 3840x2160 --stall-quality 100 --frames 10000 --modes off,on --rate 8000"; do
        $bin/conveyor-bench pipeline $args --worker gpu 2>&1 | tee -a "$out/bench_pipeline.log" \
          | grep -vE '^\{|^copy bandwidth'
      done ;;
    rss)
      $bin/conveyor-bench pipeline --size 1920x1080 --format yuv420p --frames 100000 --modes on --worker gpu 2>&1 \
        | tee -a "$out/bench_rss.log" | grep -E "frames/s|pinned|^pipelined" ;;
  esac
done
