#!/usr/bin/env bash
# Stages the real daemon for the GPU host in the ignored folder .h200/: the nvidia
# portable bundle recompressed with xz (the gzip one is past the 64 MiB limit
# on what travels), conveyor-bench-daemon, conveyor-bench-libav-mjpeg (the ffmpeg reference for a
# host without the ffmpeg CLI; it runs on the bundle's libav*), a 150-frame 1080p H.264
# clip and this folder's scripts.
# Then, on the GPU host, with .h200 in the working tree: bash .h200/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.h200/' "$exclude" 2>/dev/null || echo '/.h200/' >> "$exclude"
cmake -S . -B build/nvidia -G Ninja -DCONVEYOR_GPU=nvidia -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/nvidia --target bundle conveyor-bench-daemon conveyor-bench-libav-mjpeg
rm -rf .h200 && mkdir -p .h200/stage
name=$(basename build/nvidia/conveyor-bundle-*-nvidia-x86_64.tar.gz .tar.gz)
tar xzf "build/nvidia/$name.tar.gz" -C .h200/stage
tar cf - -C .h200/stage "$name" | xz -6 -T2 > .h200/bundle.tar.xz
# The reference must find every library in the bundle (or among the host's base ones that
# make-bundle.sh leaves out), or it would time different code from the daemon's.
ref=build/nvidia/tests/bench/daemon/conveyor-bench-libav-mjpeg
host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
LD_LIBRARY_PATH=$PWD/.h200/stage/$name/lib ldd "$ref" | awk '$2 == "=>" {print $1, $3}' |
  while read -r soname path; do
    [[ $soname =~ $host_libs || $path == "$PWD/.h200/stage/$name/lib/"* ]] ||
      { echo "stage: $ref needs $soname, which is not in the bundle ($path)" >&2; exit 1; }
  done
rm -rf .h200/stage
cp build/nvidia/tests/bench/daemon/conveyor-bench-daemon "$ref" tests/gpu/h200_bundle/{run.sh,frames.py} .h200/
strip --strip-unneeded .h200/conveyor-bench-libav-mjpeg
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=4:allf=t" -frames:v 150 \
  -c:v libx264 -preset fast -crf 26 -pix_fmt yuv420p -movflags +faststart .h200/n1080.mp4
du -sh --apparent-size .h200
