#!/usr/bin/env bash
# Every figure of BENCHMARKS.md's hardware decoding table in one call on the GPU host,
# most wanted first, so that a call cut short still brings back the throughput targets:
#   1. 32 sessions on the 20 s Annex B stream (clip A five times over): the NVDEC
#      decode-only reference, then the daemon with decode gpu, auto at each
#      decode.engines_full_percent in FULL (90 = the default, 60), and cpu;
#   2. time to first frame at one session on clip A, gpu against cpu, with the daemon's
#      debug line that splits it (input opened, the hardware decoder settled, first frame),
#      then gpu at decode.held_frames 2 and 16 (HELD_TTFF), for what the surfaces cost,
#      and eight sessions in a row, for what a session's end costs the next one's start;
#   3. decode_identity.sh (where it is staged), capped at IDENTITY_S seconds;
#   4. 16 sessions: the reference, gpu and auto.
# Each daemon run also samples `nvidia-smi dmon` (SM % / decoder %), once a second.
#   bash tests/gpu/h200_bundle/stage.sh targets     (on the development machine)
#   bash .h200/decode_targets.sh                    (on the GPU host)
# FULL ("90 60"), ROUNDS (TTFF rounds, 2), HELD_TTFF ("2 16"), IDENTITY_S (200),
# ROW_FRAMES (decode.frames for the sessions in a row, "device host"), and PARTS, the
# parts to run ("32 ttff row identity 16", all by default).
set -u
cd "${BUNDLE_DIR:-.h200}" || exit 1
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
for f in conveyor-bench-daemon conveyor-bench-libav-decode; do
  [[ -x $f ]] || { xz -dkf "$f.xz" && chmod +x "$f"; }
done
export LD_LIBRARY_PATH=$PWD/$B/lib
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cores: $(nproc); conveyord: $("./$B/bin/conveyord" --version 2>&1 | head -1)"
D=(--conveyord "$PWD/$B/bin/conveyord" --daemon-arg=--metrics-listen --daemon-arg=127.0.0.1:0)
shown="conveyord \(|time to first|first frame|daemon CPU|decoder:|session stages|worker stages|session failed"
stream=/tmp/decode-targets.h264
for _ in 1 2 3 4 5; do cat a1080.h264; done >"$stream"

# daemon_run SESSIONS MODE [ENGINES_FULL_PERCENT]
daemon_run() {
  local sessions=$1 mode=$2 full=${3:-} cfg=()
  if [[ -n $full ]]; then
    printf '[decode]\nengines_full_percent = %s\n' "$full" >/tmp/decode-targets.toml
    cfg=(--daemon-arg=--config --daemon-arg=/tmp/decode-targets.toml)
  fi
  echo "== $sessions sessions, decode $mode${full:+, engines_full_percent $full}"
  nvidia-smi dmon -s u -d 1 >/tmp/decode-targets.dmon 2>&1 &
  local dmon=$!
  ./conveyor-bench-daemon "${D[@]}" "${cfg[@]}" --input "$stream" --quality 85 --reference none \
    --sessions "$sessions" --decode "$mode" 2>&1 | grep -E "$shown"
  kill "$dmon" 2>/dev/null
  wait "$dmon" 2>/dev/null
  echo "dmon sm%/dec%: $(awk '$1 ~ /^[0-9]+$/ {printf "%s/%s ", $2, $5}' /tmp/decode-targets.dmon)"
}
reference() {
  echo "== decode-only, $1 streams (NVDEC, frames left on the GPU)"
  ./conveyor-bench-libav-decode --input "$stream" --decoder cuda --streams "$1" 2>&1 | grep -vE '^\{'
}

PARTS=" ${PARTS:-32 ttff row identity 16} "
part() { [[ $PARTS == *" $1 "* ]]; }

if part 32; then
echo "### 32 sessions, 20 s stream"
reference 32
daemon_run 32 gpu
for full in ${FULL:-90 60}; do daemon_run 32 auto "$full"; done
daemon_run 32 cpu
fi

if part ttff; then
echo "### time to first frame, 1 session, clip A"
for i in $(seq "${ROUNDS:-2}"); do
  for mode in gpu cpu; do
    echo "== $mode, round $i"
    ./conveyor-bench-daemon "${D[@]}" --daemon-arg=--log-level --daemon-arg=debug --input a1080.h264 --quality 85 \
      --reference none --sessions 1 --decode "$mode" 2>&1 |
      grep -E "first frame written|time to first|session failed|frames/s" | sed -E 's/^[0-9-]+ [0-9:.]+ //'
  done
done
# Whether creating the hardware decoder (the settling the debug line times) grows with the
# surfaces it is asked for: the decoder's own plus decode.held_frames (8 by default).
for held in ${HELD_TTFF:-2 16}; do
  echo "== gpu, decode.held_frames $held"
  printf '[decode]\nheld_frames = %s\n' "$held" >/tmp/decode-targets-held.toml
  ./conveyor-bench-daemon "${D[@]}" --daemon-arg=--log-level --daemon-arg=debug \
    --daemon-arg=--config --daemon-arg=/tmp/decode-targets-held.toml --input a1080.h264 --quality 85 \
    --reference none --sessions 1 --decode gpu 2>&1 |
    grep -E "first frame written|time to first|session failed" | sed -E 's/^[0-9-]+ [0-9:.]+ //'
done
fi

# Sessions in a row on one daemon: the first four each start as the one before has closed,
# the last four a second apart. The debug lines split each start (settling, and the wait
# for the device's lifecycle lock in it) and give, at each session's end, the decoders
# the device holds retired and how long its teardowns took. With decode.frames = host no
# frame outlives its decoder's session.
if part row && [[ -f decode/h264_1080.mp4 ]]; then
for frames in ${ROW_FRAMES:-device host}; do
  echo "== gpu, decode.frames $frames, sessions in a row (decode/h264_1080.mp4): four back to back, four a second apart"
  row=$(mktemp -d)
  printf '[decode]\nframes = "%s"\n' "$frames" >"$row/c.toml"
  "./$B/bin/conveyord" --log-level debug --config "$row/c.toml" --listen "unix:$row/s.sock" \
    --metrics-listen 127.0.0.1:0 2>"$row/d.log" &
  rowd=$!
  for _ in $(seq 100); do [[ -S $row/s.sock ]] && break; sleep 0.1; done
  for gap in 0 0 0 0 1 1 1 1; do
    sleep "$gap"
    "./$B/bin/conveyorctl" --target "unix:$row/s.sock" transcode decode/h264_1080.mp4 -o "$row/out.$RANDOM" \
      --decode gpu >/dev/null 2>&1 || echo "sessions in a row: a session failed"
  done
  kill "$rowd"
  wait "$rowd" 2>/dev/null
  grep -E "first frame written|decoder retired" "$row/d.log" | sed -E 's/^[0-9-]+ //'
done
fi

if part identity && [[ -f decode_identity.sh ]]; then
  echo "### decode_identity.sh"
  timeout "${IDENTITY_S:-200}" bash decode_identity.sh 2>&1 | grep -vE '^(same|ok)' | tail -40
  echo "decode_identity.sh: exit ${PIPESTATUS[0]}"
fi

if part 16; then
echo "### 16 sessions, 20 s stream"
reference 16
daemon_run 16 gpu
daemon_run 16 auto
fi
