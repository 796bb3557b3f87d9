#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine: installs what is missing, builds with the
# best backend this host has (CONVEYOR_GPU=auto), generates a test clip with ffmpeg and
# encodes every frame to JPEG with the best worker available, printing frames/s and
# where the output went.
#   deploy/quickstart.sh [--frames N] [--size WxH]
set -euo pipefail
cd "$(dirname "$0")/.."
frames=60
size=1280x720
while [[ $# -gt 0 ]]; do
  case $1 in
    --frames) frames=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    *) echo "usage: $0 [--frames N] [--size WxH]" >&2; exit 2 ;;
  esac
done

deploy/install-deps.sh

cmake -S . -B build/release -G Ninja -DCONVEYOR_GPU=auto -DCMAKE_BUILD_TYPE=Release -DCONVEYOR_BUILD_TESTS=ON \
  >build/quickstart-configure.log 2>&1 || { cat build/quickstart-configure.log; exit 1; }
grep "GPU flavour" build/quickstart-configure.log || true
cmake --build build/release -j "$(nproc)" --target conveyor-bench

out=$(pwd)/out/quickstart
mkdir -p "$out"
clip=$out/clip.y4m
# A colourful moving test pattern with grain, limited-range BT.709 like real video.
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=${size}:rate=30,noise=alls=12:allf=t" \
  -frames:v "$frames" -vf "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p" "$clip"

build/release/tests/bench/conveyor-bench encode --input "$clip" --matrix bt709 --worker auto \
  --frames "$frames" --quality 85 --subsampling 420 --output-dir "$out/jpeg"
echo "quickstart: clip $clip, JPEG frames in $out/jpeg"
