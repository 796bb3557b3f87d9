#!/usr/bin/env bash
# The soak test (tests/soak) against the real conveyord's GPU worker on the GPU
# host, from what stage_soak.sh put in .h200soak/: the portable bundle (nvidia flavour)
# and soak_tests on the bundle's libraries. Unpacks outside the folder, so that nothing
# unpacked travels next time. CONVEYOR_E2E_WORKERS=cpu runs the same on the CPU worker
# (a check of the packaging on a host without a GPU); CONVEYOR_SOAK_SECONDS (60 here)
# and the other CONVEYOR_SOAK_* variables pass through (soak_test.cpp), as do
# CONVEYOR_DECODE_SOAK_SECONDS and _WARMUP_SECONDS (decode_soak_test.cpp) and GTEST_FILTER
# (Soak.Decode* runs the decode soak alone).
set -uo pipefail
cd "${BUNDLE_DIR:-$(dirname "$0")}"
here=$PWD
B=$(cat BUNDLE)
work=$(mktemp -d /tmp/h200soak.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar xJf soak.tar.xz -C "$work"
export LD_LIBRARY_PATH=$work/$B/lib
"$work/$B/bin/conveyord" --version
echo "== conveyord doctor"
"$work/$B/bin/conveyord" doctor || echo "(doctor exited $?)"
export CONVEYOR_E2E_CONVEYORD=$work/$B/bin/conveyord
export CONVEYOR_E2E_WORKERS=${CONVEYOR_E2E_WORKERS:-gpu}
export CONVEYOR_SOAK_MEDIA=$here/h264.mkv
export CONVEYOR_DECODE_SOAK_MEDIA=$here/decode
export CONVEYOR_SOAK_SECONDS=${CONVEYOR_SOAK_SECONDS:-60}
# The soak reads one worker's counters: one GPU.
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
echo "== soak: workers $CONVEYOR_E2E_WORKERS, tests ${GTEST_FILTER:-all}; the session soak $CONVEYOR_SOAK_SECONDS s" \
  "(and two warm-ups as long), the decode soak ${CONVEYOR_DECODE_SOAK_SECONDS:-its default} s" \
  "(after ${CONVEYOR_DECODE_SOAK_WARMUP_SECONDS:-its default} s of warm-up)"
log=${OUT:-$work}/soak.log
"$work/soak_tests" --gtest_color=no 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "== soak_tests exited $rc ($([[ $rc == 0 ]] && echo PASSED || echo FAILED))"
exit "$rc"
