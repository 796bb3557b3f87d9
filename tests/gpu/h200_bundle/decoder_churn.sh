#!/usr/bin/env bash
# The hardware decoders' lifecycle under churn, on the GPU host: conveyor-bench-libav-decode
# --churn-seconds opens, decodes a few frames with and closes NVDEC decoders on STREAMS
# threads for SECONDS, while a releaser frees their frames a few milliseconds later, often
# after their decoder has closed (libav_decode.h). It runs FFmpeg's plain use first, then
# conveyord's discipline (the decode device's DecoderLifecycle: its thread and lock), each in
# a process of its own, and prints how each ended: a crash shows as a signal.
#   bash tests/gpu/h200_bundle/stage.sh targets     (on the development machine)
#   bash .h200/decoder_churn.sh                     (on the GPU host)
# SECONDS_EACH (60), STREAMS (32), FRAMES_PER_OPEN (8), DISCIPLINES ("plain daemon").
set -u
cd "${BUNDLE_DIR:-.h200}" || exit 1
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
[[ -x conveyor-bench-libav-decode ]] || { xz -dkf conveyor-bench-libav-decode.xz && chmod +x conveyor-bench-libav-decode; }
export LD_LIBRARY_PATH=$PWD/$B/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
worst=0
for discipline in ${DISCIPLINES:-plain daemon}; do
  echo "== churn, $discipline: ${STREAMS:-32} streams, ${SECONDS_EACH:-60} s, ${FRAMES_PER_OPEN:-8} frames a decoder"
  ./conveyor-bench-libav-decode --input a1080.h264 --decoder cuda --streams "${STREAMS:-32}" \
    --churn-seconds "${SECONDS_EACH:-60}" --frames-per-open "${FRAMES_PER_OPEN:-8}" --discipline "$discipline" 2>&1 |
    grep -vE '^\{'
  rc=${PIPESTATUS[0]}
  if ((rc > 128)); then
    echo "churn, $discipline: killed by signal $((rc - 128))"
  else
    echo "churn, $discipline: exit $rc"
  fi
  ((rc > worst)) && worst=$rc
done
exit "$worst"
