#!/usr/bin/env bash
# Stages the real daemon for the GPU host in the ignored folder .h200/: the nvidia
# portable bundle recompressed with xz (the gzip one is past the 64 MiB limit
# on what travels), conveyor-bench-daemon, conveyor-bench-libav-mjpeg (the ffmpeg reference for a
# host without the ffmpeg CLI; it runs on the bundle's libav*), conveyor-bench-libav-decode
# (the decode-only reference, NVDEC or the CPU, on the same libav*), a 150-frame 1080p H.264
# clip, clip A (4 s of noisy 1080p30 H.264 at about 8 Mbit/s, for the decode runs), the
# decode and failover clips and this folder's scripts. `stage.sh decode` leaves out the
# 150-frame clip and the MJPEG reference, which only the other parts use, so that the decode
# runs and decode_identity.sh travel together within the 64 MiB (with the working tree);
# `stage.sh tune` is that and the Annex B stream decode_tune.sh repeats (REPEAT=N), and
# `stage.sh identity` leaves the benchmark binaries out too, for decode_identity.sh;
# `stage.sh targets` is `tune` with clip A only as Annex B and the benchmark binaries in xz,
# for decode_targets.sh and decode_identity.sh in one call (and decoder_churn.sh, and
# decode_ab.sh with a second conveyord). Then, on the GPU host, with .h200 in the working
# tree: bash .h200/run.sh (or decode_identity.sh, decode_tune.sh, decode_targets.sh,
# decoder_churn.sh, decode_ab.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.h200/' "$exclude" 2>/dev/null || echo '/.h200/' >> "$exclude"
cmake -S . -B build/nvidia -G Ninja -DCONVEYOR_GPU=nvidia -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/nvidia --target bundle conveyor-bench-daemon conveyor-bench-libav-mjpeg conveyor-bench-libav-decode
rm -rf .h200 && mkdir -p .h200/stage
name=$(basename build/nvidia/conveyor-bundle-*-nvidia-x86_64.tar.gz .tar.gz)
tar xzf "build/nvidia/$name.tar.gz" -C .h200/stage
tar cf - -C .h200/stage "$name" | xz -9e -T2 > .h200/bundle.tar.xz
# The references must find every library in the bundle (or among the host's base ones that
# make-bundle.sh leaves out), or they would time different code from the daemon's.
refs=(build/nvidia/tests/bench/daemon/conveyor-bench-libav-{mjpeg,decode})
host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
for ref in "${refs[@]}"; do
  LD_LIBRARY_PATH=$PWD/.h200/stage/$name/lib ldd "$ref" | awk '$2 == "=>" {print $1, $3}' |
    while read -r soname path; do
      [[ $soname =~ $host_libs || $path == "$PWD/.h200/stage/$name/lib/"* ]] ||
        { echo "stage: $ref needs $soname, which is not in the bundle ($path)" >&2; exit 1; }
    done
done
rm -rf .h200/stage
cp build/nvidia/tests/bench/daemon/conveyor-bench-daemon "${refs[@]}" tests/gpu/h200_bundle/{run.sh,frames.py} .h200/
strip --strip-unneeded .h200/conveyor-bench-daemon .h200/conveyor-bench-libav-{mjpeg,decode}
mode=${1:-all}
[[ $mode == all ]] || rm .h200/conveyor-bench-libav-mjpeg
[[ $mode != identity ]] || rm .h200/conveyor-bench-daemon .h200/conveyor-bench-libav-decode
[[ $mode != all ]] ||
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=4:allf=t" -frames:v 150 \
    -c:v libx264 -preset fast -crf 26 -pix_fmt yuv420p -movflags +faststart .h200/n1080.mp4
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=alls=6:allf=t" -t 4 \
  -c:v libx264 -preset medium -crf 23 -pix_fmt yuv420p -movflags +faststart .h200/a1080.mp4
# The same stream as Annex B, which decode_tune.sh (REPEAT=N) concatenates into a longer one.
[[ $mode == decode || $mode == identity ]] ||
  ffmpeg -loglevel error -y -i .h200/a1080.mp4 -c copy -bsf:v h264_mp4toannexb -f h264 .h200/a1080.h264
# decode_identity.sh's clips: every codec the engines take, odd sizes and sizes cropped
# from the coded size, 10-bit; and streams they do not take or that auto keeps on the CPU
# (*_cpu_*: 4:4:4, AV1 through libdav1d, MPEG-2 with its inexact IDCT).
mkdir -p .h200/decode
clip() {  # clip NAME SIZE ARGS...
  local name=$1 size=$2; shift 2
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=$size:rate=25,noise=alls=3:allf=t" -frames:v 12 "$@" \
    ".h200/decode/$name"
}
clip h264_1080.mp4 1920x1080 -c:v libx264 -preset fast -pix_fmt yuv420p
clip h264_642x362.mkv 642x362 -c:v libx264 -preset fast -pix_fmt yuv420p
clip h264_full_range.mp4 640x360 -c:v libx264 -preset fast -pix_fmt yuvj420p
clip hevc_1080.mp4 1920x1080 -c:v libx265 -x265-params log-level=error -pix_fmt yuv420p
clip hevc10_1080.mkv 1920x1080 -c:v libx265 -x265-params log-level=error -pix_fmt yuv420p10le
clip hevc10_722x406.mkv 722x406 -c:v libx265 -x265-params log-level=error -pix_fmt yuv420p10le
clip vp9_641x359.webm 641x359 -c:v libvpx-vp9 -deadline realtime -pix_fmt yuv420p
clip vp9_1280x720.webm 1280x720 -c:v libvpx-vp9 -deadline realtime -pix_fmt yuv420p
clip h264_cpu_444.mkv 640x360 -c:v libx264 -preset fast -pix_fmt yuv444p
clip av1_cpu_640x360.mkv 640x360 -c:v libaom-av1 -cpu-used 8 -pix_fmt yuv420p
clip mpeg2_cpu_720x576.ts 720x576 -c:v mpeg2video -b:v 2M
# The failover clips: keyframes every 6 frames (the CPU decoder takes over at one), and an
# Annex B stream that turns 4:4:4 halfway (the engines give it up at the new SPS).
mkdir -p .h200/failover
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=25,noise=alls=3:allf=t" -frames:v 24 \
  -c:v libx264 -preset fast -g 6 -keyint_min 6 -sc_threshold 0 -pix_fmt yuv420p .h200/failover/h264_g6.mkv
for chroma in 420 444; do
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=25,noise=alls=3:allf=t" -frames:v 12 \
    -c:v libx264 -preset fast -pix_fmt yuv${chroma}p -f h264 ".h200/failover/part$chroma.h264"
done
cat .h200/failover/part{420,444}.h264 >.h200/failover/h264_420_then_444.h264
rm .h200/failover/part{420,444}.h264
# The selection clip: 8 s of 720p25 with a keyframe every 25 frames and B-frames between.
mkdir -p .h200/selection
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1280x720:rate=25,noise=alls=2:allf=t" -t 8 \
  -c:v libx264 -preset fast -crf 30 -g 25 -keyint_min 25 -sc_threshold 0 -pix_fmt yuv420p \
  .h200/selection/h264_g25_720.mp4
cp tests/gpu/h200_bundle/{decode_identity.sh,decode_tune.sh,decode_targets.sh,decoder_churn.sh,decode_ab.sh} .h200/
if [[ $mode == targets ]]; then  # decode_identity.sh takes clip A as Annex B where the MP4 is not staged
  rm .h200/a1080.mp4
  xz -9e -T2 .h200/conveyor-bench-daemon .h200/conveyor-bench-libav-decode
fi
# What travels to the GPU host, the working tree and its git folder included, is at most
# 64 MiB; this part of it should stay under about 61 MB (decode: 62.5 MB, identity: 61.0,
# targets: 61.4).
du -sh --apparent-size .h200
