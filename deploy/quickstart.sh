#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine: installs what is missing, builds with the
# best backend this host has (CONVEYOR_GPU=auto), starts conveyord (its GPUs, or the CPU
# worker on a host without one), transcodes a generated H.264 clip with conveyorctl to
# JPEG frames and to an MJPEG Matroska file, prints what came back, and stops the daemon.
#   deploy/quickstart.sh [--frames N] [--size WxH]
set -euo pipefail
cd "$(dirname "$0")/.."
frames=120
size=1280x720
while [[ $# -gt 0 ]]; do
  case $1 in
    --frames) frames=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    *) echo "usage: $0 [--frames N] [--size WxH]" >&2; exit 2 ;;
  esac
done

# The GPU toolchain only for the flavour this host builds (install-deps.sh says which).
deploy/install-deps.sh --flavour auto

mkdir -p build
cmake -S . -B build/release -G Ninja -DCONVEYOR_GPU=auto -DCMAKE_BUILD_TYPE=Release -DCONVEYOR_BUILD_TESTS=OFF \
  >build/quickstart-configure.log 2>&1 || { cat build/quickstart-configure.log; exit 1; }
grep "GPU flavour" build/quickstart-configure.log || true
cmake --build build/release -j "$(nproc)" --target conveyord conveyorctl
bin=build/release/daemon

out=$(pwd)/out/quickstart
rm -rf "$out" && mkdir -p "$out"
clip=$out/clip.mp4
# A colourful moving test pattern with grain and a tone, H.264 + AAC like a real upload.
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=${size}:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440" -frames:v "$frames" -shortest -c:v libx264 -pix_fmt yuv420p \
  -c:a aac -movflags +faststart "$clip"

socket=unix:$out/conveyord.sock
# Metrics on a free loopback port (an installed conveyord service may hold the default).
"$bin/conveyord" --config "" --listen "$socket" --metrics-listen 127.0.0.1:0 --log-level info \
  2>"$out/conveyord.log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -S $out/conveyord.sock ]] && break; sleep 0.1; done

ctl="$bin/ctl/conveyorctl --target $socket"
$ctl status
$ctl transcode "$clip" -o "$out/jpeg" --quality 85
$ctl transcode "$clip" -o "$out/clip.mkv" --container mkv --audio --renditions "$size,640x0"
echo
echo "quickstart: $(ls "$out/jpeg" | wc -l) JPEG frames in $out/jpeg"
for f in "$out/clip.mkv" "$out/clip.1.mkv"; do
  echo "quickstart: $f: $(ffprobe -v error -show_entries stream=codec_name,width,height -of csv=p=0 "$f" | paste -sd' ')"
done
metrics=$(grep -o 'http://[0-9.:]*' "$out/conveyord.log" | head -1)
echo "quickstart: $metrics/metrics says:"
curl -s "$metrics/metrics" | grep -E '^conveyor_(frames_out_total|sessions_started_total)' || true
kill -TERM $daemon
wait $daemon
trap - EXIT
echo "quickstart: conveyord stopped cleanly (its log: $out/conveyord.log)"
echo
echo "quickstart: the programs are not installed; they are at"
echo "  $(pwd)/$bin/conveyord"
echo "  $(pwd)/$bin/ctl/conveyorctl"
echo "quickstart: for this shell: export PATH=\"$(pwd)/$bin:$(pwd)/$bin/ctl:\$PATH\""
echo "quickstart: to install them: cmake --build build/release --target package, then"
echo "  sudo apt install ./build/release/conveyor-*.deb (with the systemd unit, config and man pages)"
