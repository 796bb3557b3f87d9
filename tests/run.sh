#!/usr/bin/env bash
# The test command: installs what it needs, builds every flavour whose toolchain is on
# this host and runs all tests through ctest.
#   tree                    first: the tree's own checks (tests/repo/check_tree.sh)
#   cpu (CONVEYOR_GPU=off)  always; the full suite, daemon and end-to-end tests included
#   amd                     when hipcc is present: kernels, engine, GPU tests (they skip
#                           with the runtime's reason when there is no AMD GPU) and
#                           conveyord itself; the daemon's tests run in cpu and asan
#   nvidia                  when nvcc is present: the same, compile-only where there is
#                           no NVIDIA GPU
#   asan                    CPU build with AddressSanitizer + UBSan; the full suite
#   tsan                    CPU build with ThreadSanitizer; the engine, worker, thread-pool,
#                           session (tests/session: sessions without gRPC) and decoder
#                           lifecycle tests; only their targets are built
#   fuzz                    clang-15 libFuzzer targets with ASan + UBSan, 45 s each (tests/fuzz/)
#   package                 from the cpu build: the .deb (linted, installed, checked and purged;
#                           needs root) and the portable bundle (tests/package/)
#   simd                    the CPU encoder's SIMD variants: those this CPU has, natively;
#                           the baseline ones (target_clones "default", the portable DCT)
#                           under qemu-x86_64 emulating a CPU without AVX2
# Each ctest stage must run at least the tests listed in min_tests and skip none but those
# that skip by design on this host (expected_skips; the Python end-to-end tests, which
# skip with exit 77 when a tool is missing, are not among them); the TSan stage must run. Where a host cannot run a stage, CONVEYOR_ALLOW_SKIP=tsan,skipped (comma list)
# lets the run go on, saying so; CI's machine runs everything. Each ctest stage lists the
# tests it skipped with the reason each gave, and fails if one gave none.
# Every flavour is built with CONVEYOR_WERROR=ON: a warning in Conveyor's own code fails it.
# From the build of cpu on, TMPDIR is a directory of this run's (/tmp/cvr-XXXXXX), and every
# stage must leave it empty: a test removes what it made. The run ends with each stage's
# wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)
allow_skip=",${CONVEYOR_ALLOW_SKIP:-},"

# The fewest tests each ctest stage runs. Raise a number when tests are added: a stage
# that runs fewer (a test binary not built, a discovery that found nothing) fails.
declare -A min_tests=([cpu]=795 [asan]=793 [tsan]=140 [amd]=154 [nvidia]=154)

# Each stage's wall time, for the table the run ends with (passed or failed): stage NAME
# ends the stage before (and checks that it left TMPDIR empty) and begins NAME.
stage_names=()
stage_seconds=()
stage_now=
stage_start=0
run_tmp=
dirty_stage=
end_stage() {
  [[ -n $stage_now ]] || return 0
  local ended=$stage_now
  stage_names+=("$ended")
  stage_seconds+=($((SECONDS - stage_start)))
  stage_now=
  [[ -z $run_tmp ]] || check_tmp "$ended"
}
stage() {
  end_stage
  stage_now=$1
  stage_start=$SECONDS
}
# Fails, listing it, when a stage left anything in TMPDIR: media, configs, keys and sockets
# go with the test that made them.
check_tmp() {
  local left
  left=$(find "$run_tmp" -mindepth 1 -maxdepth 1 | sort)
  [[ -n $left ]] || return 0
  echo "=== $1: FAILED, left behind in TMPDIR ($run_tmp): ==="
  find "$run_tmp" -mindepth 1 -maxdepth 2 | sort | head -40 | sed 's/^/  /'
  dirty_stage=$1
  return 1
}
finish() {
  local rc=$? failed=
  set +e
  ((rc == 0)) || failed=$stage_now
  end_stage || rc=1
  echo "=== stage times ==="
  printf '  %-26s %7s\n' stage seconds
  for i in "${!stage_names[@]}"; do
    local mark=
    [[ ${stage_names[i]} == "$failed" || ${stage_names[i]} == "$dirty_stage" ]] && mark='  (failed)'
    printf '  %-26s %7d%s\n' "${stage_names[i]}" "${stage_seconds[i]}" "$mark"
  done
  printf '  %-26s %7d\n' total "$SECONDS"
  [[ -z $run_tmp ]] || rm -rf "$run_tmp"
  exit "$rc"
}
trap finish EXIT

stage tree
echo "=== tree checks (tests/repo) ==="
tests/repo/check_tree_test.sh

stage deps
deploy/install-deps.sh --test

# The tests' temporary files go to this run's own directory, not /tmp, so that what a test
# leaves behind is seen (check_tmp) and the run's end removes it. A short path: a unix
# socket's path has at most 107 bytes, and the tests make theirs two levels below it. Open
# to all as /tmp is: some tests act as another user (nobody) in a directory of theirs.
run_tmp=$(mktemp -d /tmp/cvr-XXXXXX)
chmod 1777 "$run_tmp"
export TMPDIR=$run_tmp

# build/<flavour>, where flavour is cpu, amd or nvidia (cpu is CONVEYOR_GPU=off); any
# further arguments go to the build (e.g. --target a b).
build() {
  local flavour=$1 gpu=$1
  shift
  [[ $flavour == cpu ]] && gpu=off
  local log="build/configure-$flavour.log"
  mkdir -p build
  cmake -S "$root" -B "build/$flavour" -G Ninja -DCONVEYOR_GPU="$gpu" -DCMAKE_BUILD_TYPE=Release -DCONVEYOR_WERROR=ON \
    >"$log" 2>&1 \
    || { cat "$log"; return 1; }
  local start=$SECONDS
  cmake --build "build/$flavour" -j "$jobs" "$@"
  echo "=== build $flavour: $((SECONDS - start)) s ==="
}

# A CPU build with sanitizers, in build/<name>: further arguments go to the configure, and
# any after a `--` to the build (e.g. -- --target a b). Debug information is -g1: the line
# tables and function names a sanitizer's report is made of, inlined frames included. The
# full -g of RelWithDebInfo adds only what a debugger reads (local variables), and costs
# GCC about 30% more compile time and objects twice the size.
build_sanitized() {
  local name=$1 flags=$2
  shift 2
  local configure=()
  while (($#)) && [[ $1 != -- ]]; do configure+=("$1"); shift; done
  (($#)) && shift
  local log="build/configure-$name.log"
  mkdir -p build
  cmake -S "$root" -B "build/$name" -G Ninja -DCONVEYOR_GPU=off -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVEYOR_WERROR=ON \
    "-DCMAKE_CXX_FLAGS=$flags -fno-omit-frame-pointer" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "-DCMAKE_EXE_LINKER_FLAGS=$flags" "${configure[@]}" >"$log" 2>&1 \
    || { cat "$log"; return 1; }
  local start=$SECONDS
  cmake --build "build/$name" -j "$jobs" "$@"
  echo "=== build $name: $((SECONDS - start)) s ==="
}

# Tests that skip by design on this host, each printing its reason: worker_test's /cpu
# cases of GPU-only behaviour everywhere; the GPU tests and the decode soak (it needs the
# video engines) where no GPU device is present;
# the unwritable-directory test when run as root (root may write anywhere).
expected_skips='^worker\..*/cpu( |$)'
if [[ ! -e /dev/nvidiactl && ! -e /dev/kfd ]]; then expected_skips+='|^(gpu|worker)\.|^soak\.Soak\.DecodeMix'; fi
if (($(id -u) == 0)); then expected_skips+='|^config\.DefaultSocketPath\.SystemDirSkippedWhenNotWritable$'; fi

# ctest_stage NAME [ctest arguments...]: runs build/NAME's tests, lists the skipped ones
# with their reasons, then fails unless at least min_tests[NAME] ran, every skipped test
# gave a reason and is one that skips by design here.
ctest_stage() {
  local name=$1
  shift
  local log="build/ctest-$name.log" junit="$root/build/ctest-$name.xml"
  # The JUnit file keeps each test's output, where a skipped test says why.
  rm -f "$junit"
  local rc=0
  ctest --test-dir "build/$name" -j "$jobs" --output-on-failure --timeout 900 --output-junit "$junit" "$@" 2>&1 \
    | tee "$log" || rc=$?
  local skips=
  [[ -f $junit ]] && skips=$(python3 tests/skip_reasons.py "$junit")
  if [[ -n $skips ]]; then
    echo "=== ctest $name: skipped, by reason ==="
    # Grouped by reason, in the order first seen: "  REASON (N):" and then each test.
    awk -F'\t' '{ r = $2 == "" ? "(no reason given)" : $2; if (!(r in n)) order[++k] = r
                   n[r]++; t[r] = t[r] "\n    " $1 }
      END { for (i = 1; i <= k; i++) printf "  %s (%d):%s\n", order[i], n[order[i]], t[order[i]] }' <<<"$skips"
  fi
  ((rc == 0)) || return "$rc"
  local ran skipped unexpected reasonless
  ran=$(sed -nE 's/.* tests failed out of ([0-9]+)$/\1/p' "$log" | tail -1)
  skipped=$(cut -f1 <<<"$skips")
  reasonless=$(awk -F'\t' '$2 == "" { print $1 }' <<<"$skips")
  unexpected=$(grep -vE "$expected_skips" <<<"$skipped" | sed '/^$/d' || true)
  local n_skipped n_unexpected
  n_skipped=$(sed '/^$/d' <<<"$skipped" | wc -l)
  n_unexpected=$(sed '/^$/d' <<<"$unexpected" | wc -l)
  echo "=== ctest $name: ${ran:-0} tests run (at least ${min_tests[$name]} expected), $n_skipped skipped:" \
    "$((n_skipped - n_unexpected)) by design on this host, $n_unexpected not ==="
  if ((${ran:-0} < min_tests[$name])); then
    echo "=== ctest $name: FAILED, fewer tests than expected ==="
    return 1
  fi
  if [[ -n $reasonless ]]; then
    printf '  skipped without a reason: %s\n' $reasonless
    echo "=== ctest $name: FAILED, tests above skipped without saying why (GTEST_SKIP() << why; a SKIP: line) ==="
    return 1
  fi
  if [[ -n $unexpected ]]; then
    printf '  skipped: %s\n' $unexpected
    if [[ $allow_skip == *,skipped,* ]]; then
      echo "=== ctest $name: tests above skipped, allowed by CONVEYOR_ALLOW_SKIP ==="
    else
      echo "=== ctest $name: FAILED, tests above skipped (CONVEYOR_ALLOW_SKIP=skipped allows it) ==="
      return 1
    fi
  fi
}

run_tests() {
  echo "=== ctest: $1 ==="
  ctest_stage "$1"
}

stage "build cpu"
echo "=== build: cpu ==="
build cpu
stage "ctest cpu"
run_tests cpu

# The Debian packages (installed and purged again: needs root, which CI has), the daemon's
# and the Python client's, and the portable bundle, all from the cpu build.
stage package
echo "=== package: Debian packages and portable bundle (cpu) ==="
tests/package/deb_test.sh build/cpu
tests/package/deb_python_test.sh build/cpu
tests/package/bundle_test.sh build/cpu

# SIMD: the DCT test checks every hand-written variant this CPU has and names the ones it
# lacks; the baseline code (the target_clones "default" variants of the colour and
# Huffman loops, the portable DCT) runs only on CPUs without AVX2, so the encoder's unit
# tests and the exact libjpeg comparisons at the sizes that run in a minute run again on
# an emulated Westmere (SSE4.2, no AVX).
stage simd
echo "=== simd: variants on this CPU ==="
build/cpu/tests/unit/unit_tests --gtest_filter='Dct.HostStageEqualsPerRowAndColumnDefinition' | grep -E 'checked'
echo "=== simd: baseline variants under qemu-x86_64 -cpu Westmere ==="
qemu-x86_64 -cpu Westmere build/cpu/tests/unit/unit_tests --gtest_brief=1 \
  --gtest_filter='ColorXform.*:CpuHuffman.*:Dct.*:EncodePlan.*:JpegTables.*:ScaleHost.*:StageColor.*' | tail -3
qemu-x86_64 -cpu Westmere build/cpu/tests/unit/unit_tests --gtest_filter='Dct.HostStage*' | grep -E 'checked'
qemu-x86_64 -cpu Westmere build/cpu/tests/conformance/conformance_test --gtest_brief=1 \
  --gtest_filter='LibjpegExact.*:*LibjpegExactTest*_1x1:*LibjpegExactTest*_17x9:*LibjpegExactTest*_641x359' | tail -3

stage "build asan"
echo "=== build: asan (AddressSanitizer + UndefinedBehaviorSanitizer) ==="
build_sanitized asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
stage "ctest asan"
echo "=== ctest: asan ==="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_segv_handler=1 ctest_stage asan

stage "build tsan"
echo "=== build: tsan (ThreadSanitizer) ==="
# Configured with the daemon (the session tests need its session, media and protobuf
# libraries; ON spelled out, as a build/tsan from before cached OFF), but only the tested
# targets are built: no conveyord, gRPC server or end-to-end tests. The session tests'
# FFmpeg suppressions: tests/session/tsan.supp.
build_sanitized tsan "-fsanitize=thread" -DCONVEYOR_BUILD_DAEMON=ON -- --target unit_tests worker_test worker_storyboard_test session_test \
  decoder_lifecycle_tests
stage "ctest tsan"
# GCC 12's TSan runtime cannot map its shadow memory under the highest mmap
# randomisation some kernels use; lower it where we may (we run as root in CI).
if ! build/tsan/tests/unit/unit_tests --gtest_filter='Status*' >/dev/null 2>&1; then
  sysctl -w vm.mmap_rnd_bits=28 >/dev/null 2>&1 || true
fi
if build/tsan/tests/unit/unit_tests --gtest_filter='Status*' >/dev/null 2>&1; then
  echo "=== ctest: tsan (engine, thread pool, sessions and the decoder lifecycle) ==="
  TSAN_OPTIONS=halt_on_error=1 ctest_stage tsan \
    -R '^(worker|session)\.|^unit\.(ThreadPool|StageColor|Scheduler|Heartbeat|StreamOverlap)|^media\.DecoderLifecycle\.'
else
  why="its runtime cannot start on this kernel ($(uname -r), vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits))"
  if [[ $allow_skip == *,tsan,* ]]; then
    echo "=== tsan: SKIPPED, allowed by CONVEYOR_ALLOW_SKIP: $why ==="
  else
    echo "=== tsan: FAILED, $why (CONVEYOR_ALLOW_SKIP=tsan allows it) ==="
    exit 1
  fi
fi

# libFuzzer targets (clang-15, ASan + UBSan) from their seed corpora, 45 s each, as many
# at once as there are cores (each fuzzes on one); prints the executions of each and
# fails on any crash (tests/fuzz/run_fuzzers.sh).
stage fuzz
echo "=== fuzz: libFuzzer targets, 45 s each, $jobs at a time ==="
JOBS=$jobs FUZZ_JOBS=$jobs WERROR=ON tests/fuzz/run_fuzzers.sh 45

# The GPU flavours build the daemon's own code once more only to link conveyord (its
# sources are the same in every flavour; what differs is the engine under it).
gpu_targets=(unit_tests gpu_encoder_test gpu_scale_test gpu_orient_test gpu_deinterlace_test gpu_narrow_test worker_test
  worker_storyboard_test worker_device_input_test conveyor-bench conveyord)

if command -v hipcc >/dev/null; then
  stage "build amd"
  echo "=== build: amd ==="
  build amd --target "${gpu_targets[@]}"
  stage "ctest amd"
  echo "=== ctest: amd (kernels, engine and GPU tests) ==="
  ctest_stage amd -R '^(unit|gpu|worker)\.'
  echo "=== amd: a GPU flavour with no GPU it can open ==="
  tests/flavour/cpu_fallback_test.sh build/amd
else
  echo "=== amd: skipped, hipcc not found ==="
fi

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [[ -x "$nvcc" ]]; then
  stage "build nvidia"
  echo "=== build: nvidia ==="
  build nvidia --target "${gpu_targets[@]}"
  if [[ -e /dev/nvidiactl ]]; then
    stage "ctest nvidia"
    ctest_stage nvidia -R '^(unit|gpu|worker)\.'
  else
    echo "=== nvidia: compile-only (no NVIDIA GPU on this host) ==="
  fi
else
  echo "=== nvidia: skipped, nvcc not found ==="
fi
end_stage
echo "=== tests/run.sh: all passed ==="
