#!/usr/bin/env bash
# Stages the soak test (tests/soak) for the GPU host in the ignored folder
# .h200soak/: the nvidia portable bundle and the stripped soak_tests in one xz tarball (the
# gzip bundle alone is past the 64 MiB carry), the soak's H.264 clip made
# and the decode soak's clips made here (the host has no ffmpeg CLI), and run_soak.sh.
# Then, on the GPU host, with .h200soak in the working tree: bash .h200soak/run_soak.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.h200soak/' "$exclude" 2>/dev/null || echo '/.h200soak/' >> "$exclude"
cmake -S . -B build/nvidia -G Ninja -DCONVEYOR_GPU=nvidia -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/nvidia --target bundle soak_tests
rm -rf .h200soak && mkdir -p .h200soak/stage
name=$(basename build/nvidia/conveyor-bundle-*-nvidia-x86_64.tar.gz .tar.gz)
tar xzf "build/nvidia/$name.tar.gz" -C .h200soak/stage
soak=build/nvidia/tests/soak/soak_tests
cp "$soak" .h200soak/stage/soak_tests
strip --strip-unneeded .h200soak/stage/soak_tests
# The test must find every library in the bundle (or among the host's base ones that
# make-bundle.sh leaves out): the GPU host has no gRPC of its own.
host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
LD_LIBRARY_PATH=$PWD/.h200soak/stage/$name/lib ldd .h200soak/stage/soak_tests | awk '$2 == "=>" {print $1, $3}' |
  while read -r soname path; do
    [[ $soname =~ $host_libs || $path == "$PWD/.h200soak/stage/$name/lib/"* ]] ||
      { echo "stage_soak: soak_tests needs $soname, which is not in the bundle ($path)" >&2; exit 1; }
  done
tar cf - -C .h200soak/stage "$name" soak_tests | xz -6 -T2 > .h200soak/soak.tar.xz
rm -rf .h200soak/stage
echo "$name" > .h200soak/BUNDLE
cp tests/gpu/h200_bundle/run_soak.sh .h200soak/
# The clip exactly as soak_test.cpp makes it when CONVEYOR_SOAK_MEDIA is unset.
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 12 \
  -c:v libx264 -pix_fmt yuv420p .h200soak/h264.mkv
# The decode soak's clips, exactly as decode_soak_test.cpp makes them.
mkdir -p .h200soak/decode
decode_clip() {  # decode_clip FILE SIZE ARGS...
  local file=$1 size=$2; shift 2
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=$size:rate=30,noise=alls=6:allf=t" -frames:v 60 "$@" \
    ".h200soak/decode/$file"
}
decode_clip h264_1080.mp4 1920x1080 -c:v libx264 -preset fast -crf 23 -pix_fmt yuv420p
decode_clip hevc_1080.mkv 1920x1080 -c:v libx265 -x265-params log-level=error -crf 26 -pix_fmt yuv420p
decode_clip h264_444_640x360.mkv 640x360 -c:v libx264 -preset fast -pix_fmt yuv444p
# What travels is the working tree plus this folder; the tool takes 64 MiB in all.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | awk 'END {print $1}')
soak_bytes=$(du -sb .h200soak | cut -f1)
echo "stage_soak: .h200soak $((soak_bytes >> 20)) MiB, working tree $((tree_bytes >> 20)) MiB"
(( soak_bytes + tree_bytes < 64 << 20 )) || { echo "stage_soak: past the 64 MiB carry" >&2; exit 1; }
