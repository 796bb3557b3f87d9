#!/usr/bin/env bash
# On the GPU host, with .h200 staged (stage.sh): the real conveyord decodes each clip in
# .h200/decode/ on the CPU (--decode cpu), on NVDEC with frames left on the GPU
# (--decode gpu) and on NVDEC with frames brought to host memory (a second daemon with
# decode.frames = host, the path VA-API takes), and the JPEGs of the three must be byte
# for byte the same: H.264, HEVC and VP9 decoding is exact, so the engines' pictures are
# the CPU decoder's. Clips named *_cpu_* are ones the engines do not take: auto must decode
# them on the CPU and say why, and --decode gpu must be refused. Exits non-zero on any
# difference or refusal that should not be. Then the failover to the CPU mid-stream:
# failover/h264_g6.mkv through a daemon with decode.fault_at_packet = 8 (the engines' decode
# of packet 8 fails as a hwaccel error would; the CPU must decode from the keyframe at
# packet 12 on, those frames the CPU decoder's, and --decode gpu must end UNAVAILABLE), and
# failover/h264_420_then_444.h264, whose 4:4:4 half the engines do not take (auto: the
# whole output the CPU decoder's; gpu: refused). Then selection on the engines (keyframes
# only; a time range at 7 frames/s, also with decode.held_frames = 2), and storyboards on
# the GPU worker against the CPU worker's. Last, 16 sessions of clip A at once.
#   bash tests/gpu/h200_bundle/stage.sh identity, then on the GPU host: bash .h200/decode_identity.sh
set -uo pipefail
cd "${BUNDLE_DIR:-.h200}"
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$B/lib
work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
start() {  # start NAME [CONFIG]: a daemon on a unix socket in $work, with that config file
  local name=$1
  ./$B/bin/conveyord --config "${2:-}" --listen "unix:$work/$name.sock" --metrics-listen 127.0.0.1:0 \
    --endpoints-file "$work/$name.endpoints" 2>"$work/$name.log" &
  for _ in $(seq 100); do [[ -S $work/$name.sock ]] && break; sleep 0.1; done
  [[ -S $work/$name.sock ]] || { fail "daemon $name did not start: $(tail -3 "$work/$name.log")"; }
}
printf '[decode]\nframes = "host"\n' >"$work/host.toml"
start device
start host "$work/host.toml"
printf '[decode]\nfault_at_packet = 8\n' >"$work/fault.toml"
start fault "$work/fault.toml"
ctl() { ./$B/bin/conveyorctl --target "unix:$work/$1.sock" "${@:2}"; }
# The engines the driver counts: in the start-up log and as conveyor_video_engines.
grep -m1 "decode engines" "$work/device.log" || fail "the device daemon's log does not count the decode engines"
metrics=$(awk '$1 == "metrics" {print $2}' "$work/device.endpoints")
engines=$(python3 -c "import urllib.request, sys; print(urllib.request.urlopen('http://$metrics/metrics').read().decode())" |
  awk '$1 ~ /^conveyor_video_engines[{]/ {print $1, $2}')
echo "metrics: ${engines:-no conveyor_video_engines series}"
[[ $engines =~ \ [1-9][0-9]*$ ]] || fail "conveyor_video_engines does not count the decode engines"
cases=0
for clip in decode/*; do
  name=$(basename "$clip"); name=${name%.*}
  if [[ $name == *_cpu_* ]]; then
    ctl device transcode "$clip" -o "$work/$name.auto" --quality 85 >"$work/$name.auto.log" 2>&1 \
      || fail "$name: auto failed: $(tail -2 "$work/$name.auto.log")"
    grep -q "decoded on the CPU" "$work/$name.auto.log" || fail "$name: auto did not decode on the CPU"
    grep -q "note: decode: the CPU decodes" "$work/$name.auto.log" || fail "$name: auto gave no reason"
    grep -m1 "note: decode" "$work/$name.auto.log"
    if ctl device transcode "$clip" -o "$work/$name.gpu" --decode gpu >"$work/$name.gpu.log" 2>&1; then
      fail "$name: --decode gpu was not refused"
    fi
    grep -m1 -i "decode: gpu" "$work/$name.gpu.log" || fail "$name: the refusal does not say decode: gpu"
    continue
  fi
  ctl device transcode "$clip" -o "$work/$name.cpu" --quality 85 --decode cpu >"$work/$name.cpu.log" 2>&1 \
    || { fail "$name: --decode cpu failed: $(tail -2 "$work/$name.cpu.log")"; continue; }
  for d in device host; do
    ctl $d transcode "$clip" -o "$work/$name.$d" --quality 85 --decode gpu >"$work/$name.$d.log" 2>&1 \
      || { fail "$name ($d frames): --decode gpu failed: $(tail -2 "$work/$name.$d.log")"; continue; }
    grep -q "decoded on the GPU" "$work/$name.$d.log" || fail "$name ($d frames): not decoded on the GPU"
    n=$(ls "$work/$name.cpu" | wc -l)
    m=$(ls "$work/$name.$d" | wc -l)
    ((n > 0 && n == m)) || { fail "$name ($d frames): $m frames, the CPU decoder gave $n"; continue; }
    differing=0
    for f in "$work/$name.cpu"/*; do
      cmp -s "$f" "$work/$name.$d/$(basename "$f")" || differing=$((differing + 1))
    done
    echo "$name ($d frames): $n JPEGs, $differing differ from the CPU decoder's"
    ((differing == 0)) || fail "$name ($d frames): $differing of $n JPEGs differ from the CPU decoder's"
    cases=$((cases + 1))
  done
done
# same_tail A B N: the last N JPEGs of output folders A and B are byte for byte the same.
same_tail() {
  local a b i
  mapfile -t a < <(ls "$1" | sort | tail -n "$3")
  mapfile -t b < <(ls "$2" | sort | tail -n "$3")
  ((${#a[@]} == $3 && ${#b[@]} == $3)) || return 1
  for i in "${!a[@]}"; do cmp -s "$1/${a[$i]}" "$2/${b[$i]}" || return 1; done
}
f=failover/h264_g6.mkv
ctl fault transcode "$f" -o "$work/g6.cpu" --quality 85 --decode cpu >"$work/g6.cpu.log" 2>&1 \
  || fail "h264_g6: --decode cpu failed: $(tail -2 "$work/g6.cpu.log")"
if ctl fault transcode "$f" -o "$work/g6.auto" --quality 85 >"$work/g6.auto.log" 2>&1; then
  grep -q "decoded on the GPU" "$work/g6.auto.log" || fail "h264_g6: auto did not start on the GPU"
  grep -m1 "decoder failover: the video engine failed" "$work/g6.auto.log" || fail "h264_g6: no failover in the summary"
  n=$(ls "$work/g6.auto" | wc -l)
  echo "h264_g6 with a fault at packet 8: $n of 24 frames"
  ((n >= 12 && n < 24)) || fail "h264_g6: $n frames after the failover, expected 12 to 23"
  same_tail "$work/g6.cpu" "$work/g6.auto" 12 || fail "h264_g6: the frames from the keyframe at 12 on are not the CPU decoder's"
  cases=$((cases + 1))
else
  fail "h264_g6: auto with a fault failed: $(tail -2 "$work/g6.auto.log")"
fi
if ctl fault transcode "$f" -o "$work/g6.gpu" --decode gpu >"$work/g6.gpu.log" 2>&1; then
  fail "h264_g6: --decode gpu with a fault did not fail"
fi
grep -m1 "UNAVAILABLE.*the video engine failed" "$work/g6.gpu.log" || fail "h264_g6: --decode gpu did not end UNAVAILABLE"
f=failover/h264_420_then_444.h264
ctl device transcode "$f" -o "$work/mixed.cpu" --quality 85 --decode cpu >"$work/mixed.cpu.log" 2>&1 \
  || fail "420_then_444: --decode cpu failed: $(tail -2 "$work/mixed.cpu.log")"
if ctl device transcode "$f" -o "$work/mixed.auto" --quality 85 >"$work/mixed.auto.log" 2>&1; then
  grep -q "decoded on the GPU" "$work/mixed.auto.log" || fail "420_then_444: auto did not start on the GPU"
  grep -m1 "decoder failover: the video engines do not take" "$work/mixed.auto.log" ||
    fail "420_then_444: no failover in the summary"
  n=$(ls "$work/mixed.cpu" | wc -l)
  echo "420_then_444: $(ls "$work/mixed.auto" | wc -l) frames, the CPU decoder $n"
  ((n == 24)) && same_tail "$work/mixed.cpu" "$work/mixed.auto" 24 ||
    fail "420_then_444: the output is not the CPU decoder's"
  cases=$((cases + 1))
else
  fail "420_then_444: auto failed: $(tail -2 "$work/mixed.auto.log")"
fi
if ctl device transcode "$f" -o "$work/mixed.gpu" --decode gpu >"$work/mixed.gpu.log" 2>&1; then
  fail "420_then_444: --decode gpu was not refused"
fi
grep -m1 "decode: gpu: the video engines do not take" "$work/mixed.gpu.log" || fail "420_then_444: gpu refusal unclear"
# Selection on the engines, each the CPU decoder's JPEGs: keyframes only (the decoder
# discards the rest, AVDISCARD_NONKEY, with the hwaccel on), and a time range sampled at 7
# frames/s, where the session holds a frame back for the sampler and two for the
# deinterlace window beside the decoder's surfaces; the sampled case also on a daemon with
# decode.held_frames = 2, the least it takes (it must not wait for room that only the next
# frame would make: timeout 120).
f=selection/h264_g25_720.mp4
printf '[decode]\nheld_frames = 2\n' >"$work/held2.toml"
start held2 "$work/held2.toml"
held2_pid=$!
for sel in "keyframes:8:--keyframes" "fps:34:--ss 1.3 --to 6.1 --fps 7"; do
  tag=${sel%%:*} rest=${sel#*:}
  want=${rest%%:*} args=${rest#*:}
  # shellcheck disable=SC2086  # $args is several flags
  ctl device transcode "$f" -o "$work/sel_$tag.cpu" --quality 85 --decode cpu $args >"$work/sel_$tag.cpu.log" 2>&1 \
    || { fail "selection $tag: --decode cpu failed: $(tail -2 "$work/sel_$tag.cpu.log")"; continue; }
  n=$(ls "$work/sel_$tag.cpu" | wc -l)
  ((n == want)) || fail "selection $tag: the CPU decoder's run gave $n JPEGs, want $want"
  for d in device held2; do
    # shellcheck disable=SC2086
    timeout 120 ./$B/bin/conveyorctl --target "unix:$work/$d.sock" transcode "$f" -o "$work/sel_$tag.$d" \
      --quality 85 --decode gpu $args >"$work/sel_$tag.$d.log" 2>&1 \
      || { fail "selection $tag ($d): --decode gpu failed or hung: $(tail -2 "$work/sel_$tag.$d.log")"; continue; }
    grep -q "decoded on the GPU" "$work/sel_$tag.$d.log" || fail "selection $tag ($d): not decoded on the GPU"
    m=$(ls "$work/sel_$tag.$d" | wc -l)
    if ((m == n)) && same_tail "$work/sel_$tag.cpu" "$work/sel_$tag.$d" "$n"; then
      echo "selection $tag ($d): $m JPEGs, the CPU decoder's"
      cases=$((cases + 1))
    else
      fail "selection $tag ($d): $m JPEGs, not the CPU decoder's $n"
    fi
  done
done
kill -TERM "$held2_pid" 2>/dev/null
# Storyboards: the GPU worker's tiling stage, from host frames (--decode cpu) and from the
# engines' device frames (--decode gpu), against the CPU worker's (a daemon with workers =
# cpu): 8 thumbnails of 160x90 in 3x2 sprites, a full one and one with two black cells,
# the sprites byte for byte the same and the same index.
printf '[workers]\nworkers = "cpu"\n' >"$work/cpuworker.toml"
start cpuworker "$work/cpuworker.toml"
cpuworker_pid=$!
board=(thumbnails "$f" --every 1 --tile 3x2 --size 160x90)
if ctl cpuworker "${board[@]}" -o "$work/board.cpuworker" >"$work/board.cpuworker.log" 2>&1; then
  for d in cpu gpu; do
    if ! timeout 120 ./$B/bin/conveyorctl --target "unix:$work/device.sock" "${board[@]}" --decode "$d" \
      -o "$work/board.$d" >"$work/board.$d.log" 2>&1; then
      fail "storyboard (--decode $d): failed or hung: $(tail -2 "$work/board.$d.log")"
      continue
    fi
    if diff -r "$work/board.cpuworker" "$work/board.$d" >/dev/null && [[ -f $work/board.$d/sprite_2.jpg ]]; then
      echo "storyboard (GPU worker, --decode $d): $(ls "$work/board.$d" | xargs), the CPU worker's bytes"
      cases=$((cases + 1))
    else
      fail "storyboard (GPU worker, --decode $d): $(ls "$work/board.$d" | xargs) differ from the CPU worker's"
    fi
  done
else
  fail "storyboard: the CPU worker failed: $(tail -2 "$work/board.cpuworker.log")"
fi
kill -TERM "$cpuworker_pid" 2>/dev/null
# Many sessions at once, frames in device memory: each session holds a bounded number of
# the decoder's surfaces and the decoders must not run out of them (the first GPU-host run
# at 8 sessions got frames without a picture). 16 concurrent --decode gpu sessions of
# clip A (120 frames with B-frames; a1080.mp4, or the same stream as Annex B where only that
# was staged), each the CPU decoder's JPEGs.
clip_a=a1080.mp4
[[ -f $clip_a ]] || clip_a=a1080.h264
if [[ -f $clip_a ]]; then
  if ctl device transcode "$clip_a" -o "$work/a.cpu" --quality 85 --decode cpu >"$work/a.cpu.log" 2>&1; then
    pids=()
    for i in $(seq 16); do
      ctl device transcode "$clip_a" -o "$work/a.$i" --quality 85 --decode gpu >"$work/a.$i.log" 2>&1 &
      pids+=($!)
    done
    n=$(ls "$work/a.cpu" | wc -l) sessions_same=0
    for i in $(seq 16); do
      wait "${pids[$((i - 1))]}" || { fail "a1080 session $i of 16: $(tail -2 "$work/a.$i.log")"; continue; }
      grep -q "decoded on the GPU" "$work/a.$i.log" || { fail "a1080 session $i of 16: not decoded on the GPU"; continue; }
      if same_tail "$work/a.cpu" "$work/a.$i" "$n" && (($(ls "$work/a.$i" | wc -l) == n)); then
        sessions_same=$((sessions_same + 1))
      else
        fail "a1080 session $i of 16: its $(ls "$work/a.$i" | wc -l) JPEGs are not the CPU decoder's $n"
      fi
    done
    echo "$clip_a x 16 concurrent sessions (device frames): $sessions_same of 16 gave the CPU decoder's $n JPEGs"
    cases=$((cases + 1))
  else
    fail "a1080: --decode cpu failed: $(tail -2 "$work/a.cpu.log")"
  fi
else
  fail "neither a1080.mp4 nor a1080.h264 is staged: the concurrent sessions were not run"
fi
kill -TERM %1 %2 %3 2>/dev/null; wait
# The daemons' logs where the caller keeps files ($OUT), and their warnings here.
[[ -n ${OUT:-} ]] && cp "$work"/{device,host,fault,held2,cpuworker}.log "$OUT/" 2>/dev/null
grep -h -E "warn|error" "$work"/{device,host,fault,held2,cpuworker}.log | tail -20
echo "decode identity: $cases clip x frames-path cases compared, $failures failure(s)"
((cases > 0)) || fail "no clip was compared"
((failures == 0))
