#!/usr/bin/env bash
# What runs on the GPU host (an NVIDIA H200). Expects
# .device/ as tests/gpu/prepare_device.sh stages it (binaries, libjpeg-turbo, images);
# writes logs to $OUT.   tests/gpu/h200_run.sh [tests|doctor|encode|pipeline|orient|rss]...
# Exits non-zero when any part failed (each failure is printed as FAIL: and listed in
# $OUT/failures.txt): a test binary that exits non-zero, runs no test or skips its GPU
# tests, no byte-identical case compared, no output decoded by libjpeg-turbo,
# conveyor-doctor or a benchmark exiting non-zero. BIN picks another folder of binaries
# (default .device/bin).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.device/lib
bin=${BIN:-.device/bin}
out=${OUT:-/tmp/out}
parts=${*:-tests encode pipeline}
failures=0
fail() {
  echo "FAIL: $*" | tee -a "$out/failures.txt"
  failures=$((failures + 1))
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt" \
  || fail "nvidia-smi found no NVIDIA GPU"
for part in $parts; do
  case $part in
    tests)
      # Gated: every binary must be there and exit 0, must have run tests without
      # skipping the GPU ones, the two byte-identity suites must have compared cases and
      # the encoder and worker tests must have decoded outputs with libjpeg-turbo.
      for t in unit_tests gpu_encoder_test gpu_scale_test gpu_orient_test gpu_deinterlace_test gpu_narrow_test worker_test worker_storyboard_test \
        worker_device_input_test doctor_tests; do
        echo "== $t"
        if [[ ! -x $bin/$t ]]; then fail "$t: not staged in $bin"; continue; fi
        $bin/$t >"$out/$t.log" 2>&1
        rc=$?
        grep -E "^\[  (PASSED|FAILED|SKIPPED) |byte-identical|libjpeg-turbo checked|Failure|bands checked|worker:" \
          "$out/$t.log" | sort | uniq -c
        ((rc == 0)) || fail "$t exited $rc (log: $t.log)"
        grep -q "^\[  PASSED  \] [1-9]" "$out/$t.log" || fail "$t: no test passed"
        # worker_test's /cpu cases of GPU-only behaviour skip by design; a /gpu case or
        # any case of the two GPU encoder suites must not.
        skipped=$(grep -E "^\[  SKIPPED \] " "$out/$t.log" | grep -E "/gpu|^\[  SKIPPED \] Gpu" | head -1)
        [[ -z $skipped ]] || fail "$t skipped GPU tests: ${skipped#\[  SKIPPED \] } ($(grep -m1 'no GPU' "$out/$t.log"))"
      done
      for t in gpu_encoder_test gpu_scale_test gpu_orient_test gpu_deinterlace_test gpu_narrow_test worker_device_input_test; do
        cases=$(sed -nE 's/.*byte-identical cases: ([0-9]+).*/\1/p' "$out/$t.log" | tail -1)
        ((${cases:-0} > 0)) || fail "$t: no byte-identical cases were compared"
      done
      for t in gpu_encoder_test worker_test; do
        decoded=$(sed -nE 's/^libjpeg-turbo checked outputs: ([0-9]+)/\1/p' "$out/$t.log" | awk '{n += $1} END {print n + 0}')
        ((decoded > 0)) || fail "$t: no output was decoded by libjpeg-turbo"
        echo "$t: $decoded outputs decoded by libjpeg-turbo"
      done ;;
    doctor)
      $bin/conveyor-doctor 2>&1 | tee "$out/doctor.log"
      rc=${PIPESTATUS[0]}; echo "conveyor-doctor exit: $rc"; ((rc == 0)) || fail "conveyor-doctor exited $rc" ;;
    encode)
      for args in "--input .device/media/n1080.ppm" "--input .device/media/n2160.ppm" \
                  "--size 1920x1080 --format yuv420p" "--size 3840x2160 --format yuv420p"; do
        for worker in gpu cpu; do
          $bin/conveyor-bench encode $args --worker $worker --frames 60 --quality 85 --subsampling 420 2>&1 \
            | tee -a "$out/bench_encode.log" | grep -E "^conveyor|^libjpeg|^per-core"
          rc=${PIPESTATUS[0]}; ((rc == 0)) || fail "conveyor-bench encode $args --worker $worker exited $rc"
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
        rc=${PIPESTATUS[0]}; ((rc == 0)) || fail "conveyor-bench pipeline $args exited $rc"
      done ;;
    orient)
      # The orientation stage's cost: the same 1080p stream unturned (the reference),
      # rotated 180 and rotated 90, alternating, three rounds.
      for round in 1 2 3; do
        for orientation in 1 3 6; do
          echo "== round $round, orientation $orientation"
          $bin/conveyor-bench pipeline --size 1920x1080 --format yuv420p --modes on --frames 20000 \
            --orientation $orientation --worker gpu 2>&1 | tee -a "$out/bench_orient.log" \
            | grep -E '^pipelined|^orientation|frames/s'
          rc=${PIPESTATUS[0]}; ((rc == 0)) || fail "conveyor-bench pipeline --orientation $orientation exited $rc"
        done
      done ;;
    rss)
      $bin/conveyor-bench pipeline --size 1920x1080 --format yuv420p --frames 100000 --modes on --worker gpu 2>&1 \
        | tee -a "$out/bench_rss.log" | grep -E "frames/s|pinned|^pipelined"
      rc=${PIPESTATUS[0]}; ((rc == 0)) || fail "conveyor-bench pipeline (rss) exited $rc" ;;
    *) fail "unknown part $part" ;;
  esac
done
if ((failures > 0)); then
  echo "h200_run: $failures failure(s)"
  exit 1
fi
echo "h200_run: all parts passed"
