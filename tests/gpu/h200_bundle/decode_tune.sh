#!/usr/bin/env bash
# Container decoding on the GPU host under the settings that bound a session's pipeline:
# decode.held_frames (device frames between decoder and encoder),
# limits.session_queue_frames (the worker lane) and workers.gpu_wait (how host threads wait
# for the GPU), against the NVDEC decode-only rate at the same concurrency (sharing one
# CUDA context, as conveyord does, and with a context per stream), with each run's
# per-stage time a frame (the sessions' Summary).
#   bash .h200/decode_tune.sh
# SESSIONS (16 32), MODES (gpu; any of gpu cpu auto), HELD (8 16 24), QUEUE (4 8),
# WAIT (auto block), ROUNDS (1). INPUT (a1080.mp4) is the clip; REPEAT=N streams an Annex B
# H.264 INPUT N times over (stage.sh makes a1080.h264), so that start-up weighs less.
set -u
cd "${BUNDLE_DIR:-.h200}"
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$B/lib
./$B/conveyord --version
input=${INPUT:-a1080.mp4}
if [[ -n ${REPEAT:-} ]]; then
  for _ in $(seq "$REPEAT"); do cat "$input"; done >/tmp/tune-input.h264
  input=/tmp/tune-input.h264
  echo "input: ${INPUT:-a1080.mp4} $REPEAT times over"
fi
D="--conveyord $PWD/$B/bin/conveyord --daemon-arg=--metrics-listen --daemon-arg=127.0.0.1:0"
for s in ${SESSIONS:-16 32}; do
  echo "== decode-only, $s streams, one CUDA context (as conveyord)"
  ./conveyor-bench-libav-decode --input "$input" --decoder cuda --streams "$s" 2>&1 | grep -vE '^\{'
  if [[ -z ${NO_CONTEXT_EACH:-} ]]; then
    echo "== decode-only, $s streams, a CUDA context each"
    ./conveyor-bench-libav-decode --input "$input" --decoder cuda --streams "$s" --context-per-stream 2>&1 |
      grep -vE '^\{'
  fi
  for i in $(seq "${ROUNDS:-1}"); do
    for mode in ${MODES:-gpu}; do
      for held in ${HELD:-8 16 24}; do
        for queue in ${QUEUE:-4 8}; do
          for wait in ${WAIT:-auto block}; do
            cfg=/tmp/tune-$held-$queue-$wait.toml
            printf '[limits]\nsession_queue_frames = %s\n[workers]\ngpu_wait = "%s"\n[decode]\nheld_frames = %s\n' \
              "$queue" "$wait" "$held" >"$cfg"
            echo "== $mode, $s sessions, held_frames $held, session_queue_frames $queue, gpu_wait $wait, round $i"
            ./conveyor-bench-daemon $D --daemon-arg=--config --daemon-arg="$cfg" --input "$input" --quality 85 \
              --reference none --sessions "$s" --decode "$mode" 2>&1 |
              grep -E "conveyord \(|first frame|daemon CPU|decoder:|session stages|worker stages|session failed"
          done
        done
      done
    done
  done
done
