#!/usr/bin/env bash
# On the GPU host, with .h200 staged (stage.sh): the real conveyord decodes each clip in
# .h200/decode/ on the CPU (--decode cpu), on NVDEC with frames left on the GPU
# (--decode gpu) and on NVDEC with frames brought to host memory (a second daemon with
# decode.frames = host, the path VA-API takes), and the JPEGs of the three must be byte
# for byte the same: H.264, HEVC and VP9 decoding is exact, so the engines' pictures are
# the CPU decoder's. Clips named *_cpu_* are ones the engines do not take: auto must decode
# them on the CPU and say why, and --decode gpu must be refused. Exits non-zero on any
# difference or refusal that should not be.   bash .h200/decode_identity.sh
set -uo pipefail
cd "${BUNDLE_DIR:-.h200}"
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$B/lib
work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
start() {  # start NAME [conveyord args...]: a daemon on a unix socket in $work
  local name=$1; shift
  ./$B/bin/conveyord --config "" --listen "unix:$work/$name.sock" --metrics-listen 127.0.0.1:0 "$@" \
    2>"$work/$name.log" &
  for _ in $(seq 100); do [[ -S $work/$name.sock ]] && break; sleep 0.1; done
}
printf '[decode]\nframes = "host"\n' >"$work/host.toml"
start device
start host --config "$work/host.toml"
ctl() { ./$B/bin/conveyorctl --target "unix:$work/$1.sock" "${@:2}"; }
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
kill -TERM %1 %2 2>/dev/null; wait
echo "decode identity: $cases clip x frames-path cases compared, $failures failure(s)"
((cases > 0)) || fail "no clip was compared"
((failures == 0))
