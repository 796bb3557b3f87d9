# The real conveyord (portable bundle, nvidia flavour) end to end on the GPU host.
#   bash .h200/run.sh [container] [raw] [shm] [assembly] [decode]   (default: the first four)
# ROUNDS (3) sets the alternating rounds of the assembly A/B. `decode` (about 2 to 3 minutes)
# is asked for by name; DECODE_SESSIONS (1 4 8 16 32) sets its concurrencies.
set -u
parts=" ${*:-container raw shm assembly} "
want() { [[ $parts == *" $1 "* ]]; }
cd "${BUNDLE_DIR:-.h200}"
B=$(basename "$(tar tJf bundle.tar.xz | head -1)")
tar xJf bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/$B/lib
./$B/conveyord --version
./$B/conveyord doctor | tail -4
PY=/opt/torch/.venv/bin/python
if want raw || want shm || want assembly; then $PY frames.py n1080.mp4 /tmp/n1080.yuv 120 2>&1 | tail -4; fi
D="--conveyord $PWD/$B/bin/conveyord --daemon-arg=--metrics-listen --daemon-arg=127.0.0.1:0"
# No ffmpeg CLI here: the reference is the CLI's pipeline rebuilt on the bundle's own
# libav* (same LD_LIBRARY_PATH as the daemon). One run first, to show what it loaded.
R="--reference libav --reference-bin $PWD/conveyor-bench-libav-mjpeg"
if want container; then
echo "== reference check"; ./conveyor-bench-libav-mjpeg --input n1080.mp4 --q 5 2>&1 | head -3
for s in 1 4 8; do echo "== container, $s sessions"; ./conveyor-bench-daemon $D $R --input n1080.mp4 --sessions $s 2>&1 | grep -vE "^\{"; done
fi
if want raw; then
for s in 1 4; do echo "== raw, $s sessions"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions $s 2>&1 | grep -vE "^\{"; done
echo "== raw lockstep"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions 1 --lockstep 2>&1 | grep -vE "^\{"
fi
if want shm; then
# Raw frames through shared memory (RawInput.shared_memory_slots): the GPU worker uploads
# from the registered mapping, or copies where the runtime refuses read-only pages.
for s in 1 4; do echo "== raw shared memory, $s sessions"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions $s --shared-memory 4 2>&1 | grep -vE "^\{"; done
# JPEGs back through the daemon's shared memory too (JpegFramesOutput.shared_memory_slots).
for s in 1 4; do echo "== raw shared memory both ways, $s sessions"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions $s --shared-memory 4 --shared-output 4 2>&1 | grep -vE "^\{"; done
# Lockstep, JPEGs in messages and in shared memory, alternating.
for i in 1 2 3; do
  echo "== raw shared memory lockstep, round $i"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions 1 --lockstep --shared-memory 2 2>&1 | grep -E "lockstep|conveyord \("
  echo "== raw shared memory both ways lockstep, round $i"; ./conveyor-bench-daemon $D --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions 1 --lockstep --shared-memory 2 --shared-output 2 2>&1 | grep -E "lockstep|conveyord \("
done
fi
if want assembly; then
# Raw frames in messages, assembled in registered memory (the default) or in ordinary
# memory and copied by the worker (workers.pinned_input_bytes = 0), alternating.
printf '[workers]\npinned_input_bytes = 0\n' > /tmp/pinned0.toml
for i in $(seq "${ROUNDS:-3}"); do
  for c in on off; do
    A=""; [[ $c == off ]] && A="--daemon-arg=--config --daemon-arg=/tmp/pinned0.toml"
    echo "== raw in messages lockstep, registered assembly $c, round $i"; ./conveyor-bench-daemon $D $A --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions 1 --lockstep 2>&1 | grep -E "lockstep|conveyord \("
    echo "== raw in messages, 4 sessions, registered assembly $c, round $i"; ./conveyor-bench-daemon $D $A --input n1080.mp4 --raw 1920x1080 --raw-file /tmp/n1080.yuv --sessions 4 2>&1 | grep -E "conveyord \("
  done
done
fi
if want decode; then
# Clip A (4 s of 1080p30 H.264) decoded on NVDEC, on the CPU and where `auto` puts it, q85
# JPEG frames, no MJPEG reference. The gpu run first times the decoder alone at the same
# concurrency (conveyor-bench-libav-decode --decoder cuda, before its daemon starts); every
# mode's frames/s is then put against that ceiling in the table at the end.
field() { sed -nE "s/.*\"$1\":(\"([^\"]*)\"|([^,}]*)).*/\2\3/p" <<<"$2"; }
rows=""
for s in ${DECODE_SESSIONS:-1 4 8 16 32}; do
  ceiling=0 ceiling_cpu=-
  for mode in gpu cpu auto; do
    extra=()
    [[ $mode == gpu ]] && extra=(--decode-reference "$PWD/conveyor-bench-libav-decode")
    echo "== decode $mode, $s sessions"
    out=$(./conveyor-bench-daemon $D --input a1080.mp4 --quality 85 --reference none --sessions "$s" --decode "$mode" "${extra[@]}" 2>&1)
    rc=$?
    grep -E "conveyord \(|first frame|daemon CPU|decoder:|decode-only|session stages|session failed|conveyor-bench-" <<<"$out"
    j=$(grep -E '^\{"bench":"daemon"' <<<"$out")
    if [[ -z $j ]]; then rows+=$(printf '%8s  %-4s  failed (exit %d)' "$s" "$mode" "$rc")$'\n'; continue; fi
    [[ $mode == gpu ]] && ceiling=$(field decode_ref_fps "$j") ceiling_cpu=$(field decode_ref_cpu_ms_per_frame "$j")
    fps=$(field fps "$j")
    rows+=$(printf '%8s  %-4s %10s %14s %14s %9s  %s%s' "$s" "$mode" "$fps" "$(field cpu_ms_per_frame "$j")" \
      "$(field first_frame_p50_ms "$j")" "$(awk -v a="$fps" -v b="$ceiling" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')" \
      "$(field decoders "$j")" "$( ((rc == 0)) || echo " (exit $rc)")")$'\n'
  done
  rows+=$(printf '%8s  %-5s%10s %14s %14s %9s  %s' "$s" nvdec "$ceiling" "$ceiling_cpu" - - "decode only")$'\n'
done
echo "== decode summary: a1080.mp4, q85 JPEG frames; x NVDEC: against the decode-only run at the same concurrency"
printf '%8s  %-4s %10s %14s %14s %9s  %s\n' sessions mode frames/s "CPU ms/frame" "first p50 ms" "x NVDEC" decoders
printf '%s' "$rows"
fi
