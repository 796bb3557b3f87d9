#!/usr/bin/env bash
# Stages what tests/gpu/h200_run.sh and h200_profile.sh need on the GPU host, in the
# ignored folder .device/ that travels to the GPU host:
#   .device/bin    the nvidia-flavour test and benchmark binaries (static cudart; no
#                  FFmpeg or gRPC, so they run on the GPU host as built here)
#   .device/lib    libjpeg-turbo's two shared libraries (the benchmark's reference)
#   .device/media  1080p and 4K noisy testsrc2 frames made with ffmpeg's lavfi
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.device/' "$exclude" 2>/dev/null || echo '/.device/' >> "$exclude"
cmake -S . -B build/nvidia -G Ninja -DCONVEYOR_GPU=nvidia -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/nvidia --target unit_tests gpu_encoder_test gpu_scale_test gpu_orient_test gpu_deinterlace_test gpu_narrow_test worker_test worker_storyboard_test worker_device_input_test conveyor-bench \
  conveyor-doctor doctor_tests
rm -rf .device && mkdir -p .device/bin .device/lib .device/media
cp build/nvidia/tests/unit/unit_tests build/nvidia/tests/gpu/{gpu_encoder_test,gpu_scale_test,gpu_orient_test,gpu_deinterlace_test,gpu_narrow_test,worker_test,worker_storyboard_test,worker_device_input_test} \
   build/nvidia/tests/bench/conveyor-bench build/nvidia/daemon/doctor/conveyor-doctor \
   build/nvidia/tests/doctor/doctor_tests .device/bin/
cp -L /usr/lib/x86_64-linux-gnu/libjpeg.so.62 /usr/lib/x86_64-linux-gnu/libturbojpeg.so.0 .device/lib/
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=1920x1080,noise=alls=20:allf=t" -frames:v 1 .device/media/n1080.ppm
ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=3840x2160,noise=alls=12:allf=t" -frames:v 1 .device/media/n2160.ppm
du -sh .device
echo "then, on the GPU host with .device/ in the working tree: tests/gpu/h200_run.sh tests encode pipeline"
