#!/usr/bin/env bash
# Installs the Debian 12 packages Conveyor needs, only those missing (idempotent).
#   deploy/install-deps.sh [--flavour auto|cpu|amd|nvidia]   build + run one flavour
#   deploy/install-deps.sh --test                            also what tests/run.sh uses
# The flavour (CONVEYOR_GPU) decides the GPU toolchain. auto, the default, is amd on a
# host with an AMD GPU (/dev/kfd) and cpu otherwise, as CMake's CONVEYOR_GPU=auto picks.
# Only amd takes Debian's ROCm toolchain (hipcc, the HIP runtime and device libraries:
# about 20 packages, 335 MiB); nvidia takes nvcc from NVIDIA's CUDA, which Debian does not
# ship. --test installs the AMD toolchain too, since tests/run.sh builds every flavour.
set -euo pipefail

flavour=auto
test=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --flavour) flavour=${2:-}; shift 2 ;;
    --test) test=1; shift ;;
    *) echo "usage: $0 [--flavour auto|cpu|amd|nvidia] [--test]" >&2; exit 2 ;;
  esac
done
if [[ $flavour == auto ]]; then
  if [[ -e /dev/kfd ]]; then flavour=amd; else flavour=cpu; fi
fi
case $flavour in
  cpu|amd|nvidia) ;;
  *) echo "install-deps: --flavour must be auto, cpu, amd or nvidia (got '$flavour')" >&2; exit 2 ;;
esac

packages=(
  cmake ninja-build g++ pkg-config
  ffmpeg libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
  libcli11-dev libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev
  libspdlog-dev libtomlplusplus-dev libcpp-httplib-dev libsystemd-dev
)
if [[ $flavour == amd || $test == 1 ]]; then
  packages+=(hipcc libamdhip64-dev rocm-device-libs)
fi
if [[ $flavour == nvidia ]] && ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: the nvidia flavour needs nvcc from NVIDIA's CUDA toolkit (/usr/local/cuda), which Debian does not ship" >&2
fi
if [[ $test == 1 ]]; then
  packages+=(libgtest-dev libgmock-dev prometheus dpkg-dev fakeroot openssl lintian)
  # tests/e2e_py: the independent Python client (Debian's grpcio, not pip's; its stubs come from
  # protobuf-compiler-grpc above) and the standard health and reflection protos.
  packages+=(python3-grpcio python3-protobuf grpc-proto)
  # tests/python_client: `pip install clients/python` offline into a venv (Debian's pip,
  # setuptools and wheel).
  packages+=(python3-pip python3-setuptools python3-wheel python3-venv)
  # tests/fuzz: clang with libFuzzer and the sanitizer runtimes, llvm-symbolizer for traces.
  packages+=(clang-15 libclang-common-15-dev llvm-15)
  # tests/run.sh: the CPU encoder's baseline code (the target_clones "default" variants and
  # the portable DCT) run on an emulated CPU without AVX2 (qemu-x86_64 -cpu Westmere).
  packages+=(qemu-user)
  # tests/player: headless Chromium loads the storyboard page.
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
