#!/usr/bin/env bash
# Two conveyord builds against each other on the GPU host, alternating run by run: the
# bundle's own (a) and .h200/conveyord-b.xz (b), both on the bundle's libraries. Container
# input; OUTPUTS (mkv jpeg: the muxer on the output path, JPEG frames); SESSIONS (8 32)
# concurrent streams; ROUNDS (3) rounds. RAW=N adds raw 1080p frames in messages from N
# sessions (their input backs up, so the reactor's read retries run).
#   bash .h200/run_output_ab.sh
set -u
cd "${BUNDLE_DIR:-.h200}"
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
tar xJf bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$B/lib
xz -dc conveyord-b.xz >"$B/bin/conveyord-b" && chmod +x "$B/bin/conveyord-b"
for v in conveyord conveyord-b; do echo "$v: $("./$B/bin/$v" --version)"; done
common=(--input n1080.mp4 --reference none --daemon-arg=--metrics-listen --daemon-arg=127.0.0.1:0)
if [[ -n ${RAW:-} ]]; then /opt/torch/.venv/bin/python frames.py n1080.mp4 /tmp/n1080.yuv 120 2>&1 | tail -1; fi
for i in $(seq "${ROUNDS:-3}"); do
  for s in ${SESSIONS:-8 32}; do
    for out in ${OUTPUTS:-mkv jpeg}; do
      extra=()
      [[ $out == mkv ]] && extra=(--container mkv)
      for v in a b; do
        bin=$PWD/$B/bin/conveyord
        [[ $v == b ]] && bin=$PWD/$B/bin/conveyord-b
        echo "== round $i, $s sessions, $out output, conveyord $v"
        ./conveyor-bench-daemon --conveyord "$bin" "${common[@]}" --sessions "$s" "${extra[@]}" 2>&1 |
          grep -E "conveyord \(|daemon CPU|worker stages|session failed"
      done
    done
  done
  for v in a b; do
    [[ -n ${RAW:-} ]] || break
    bin=$PWD/$B/bin/conveyord
    [[ $v == b ]] && bin=$PWD/$B/bin/conveyord-b
    echo "== round $i, $RAW sessions, raw input, conveyord $v"
    ./conveyor-bench-daemon --conveyord "$bin" "${common[@]}" --raw 1920x1080 --raw-file /tmp/n1080.yuv \
      --sessions "$RAW" 2>&1 | grep -E "conveyord \(|daemon CPU|worker stages|session failed"
  done
done
