#!/usr/bin/env bash
# Two conveyord builds against each other on the video engines, alternating run by run:
# the bundle's own (a) and .h200/conveyord-b.xz (b), both on the bundle's libraries, with
# the NVDEC decode-only reference first in each round. The 20 s Annex B stream (clip A
# five times over) as container input, decode MODE (gpu), SESSIONS ("32 16"), ROUNDS (2).
#   bash tests/gpu/h200_bundle/stage.sh targets; xz -9 -c OTHER/conveyord >.h200/conveyord-b.xz
#   bash .h200/decode_ab.sh                         (on the GPU host)
set -u
cd "${BUNDLE_DIR:-.h200}" || exit 1
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
[[ -d $B ]] || tar xJf bundle.tar.xz
for f in conveyor-bench-daemon conveyor-bench-libav-decode; do
  [[ -x $f ]] || { xz -dkf "$f.xz" && chmod +x "$f"; }
done
xz -dc conveyord-b.xz >"$B/bin/conveyord-b" && chmod +x "$B/bin/conveyord-b"
export LD_LIBRARY_PATH=$PWD/$B/lib
for v in conveyord conveyord-b; do echo "$v: $("./$B/bin/$v" --version 2>&1 | head -1)"; done
stream=/tmp/decode-ab.h264
for _ in 1 2 3 4 5; do cat a1080.h264; done >"$stream"
shown="conveyord \(|daemon CPU|decoder:|session stages|worker stages|session failed"
for i in $(seq "${ROUNDS:-2}"); do
  for s in ${SESSIONS:-32 16}; do
    echo "== round $i, decode-only, $s streams (NVDEC, frames left on the GPU)"
    ./conveyor-bench-libav-decode --input "$stream" --decoder cuda --streams "$s" 2>&1 | grep -vE '^\{'
    for v in a b; do
      bin=$PWD/$B/bin/conveyord
      [[ $v == b ]] && bin=$PWD/$B/bin/conveyord-b
      echo "== round $i, $s sessions, decode ${MODE:-gpu}, conveyord $v"
      ./conveyor-bench-daemon --conveyord "$bin" --daemon-arg=--metrics-listen --daemon-arg=127.0.0.1:0 \
        --input "$stream" --quality 85 --reference none --sessions "$s" --decode "${MODE:-gpu}" 2>&1 | grep -E "$shown"
    done
  done
done
