#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-15, ASan + UBSan, build/fuzz) and runs each for
# SECONDS (default 60), starting from a copy of its committed seed corpus, after replaying
# its reproducers in tests/fuzz/regressions/<target>/. Fails if any target crashes, leaks,
# times out or runs out of memory; the input that did it is left in build/fuzz/artifacts/.
#   tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]
# JOBS sets the build's parallelism (default: nproc), FUZZ_JOBS how many targets fuzz at
# once (default 1); WERROR=ON makes warnings in Conveyor's code fail the build
# (CONVEYOR_WERROR). tests/run.sh sets all three.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_job_spec fuzz_container_input fuzz_seekable_input fuzz_raw_frames fuzz_encoder)

# Inputs past these sizes only slow a target down: a spec is a few hundred bytes, a raw
# stream of small frames or a container of a few tiny frames fits in 64 KiB, and the
# encoder repeats its pixel bytes to fill the frame.
declare -A max_len=([fuzz_job_spec]=4096 [fuzz_container_input]=65536 [fuzz_seekable_input]=65536 [fuzz_raw_frames]=65536
  [fuzz_encoder]=4096)

build=build/fuzz
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-15 -DCMAKE_CXX_COMPILER=clang++-15 \
  -DCONVEYOR_GPU=off -DCONVEYOR_BUILD_FUZZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVEYOR_WERROR="${WERROR:-OFF}" \
  "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
start=$SECONDS
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
echo "=== fuzz: build $((SECONDS - start)) s ==="

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
command -v llvm-symbolizer-15 >/dev/null && export ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer-15)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/artifacts"

# fuzz_one TARGET: its reproducers, then SECONDS of fuzzing; writes its summary line to
# $work/TARGET.summary and, when it fails, the log to show to $work/TARGET.failed.
fuzz_one() {
  local t=$1
  local bin="$build/tests/fuzz/$t" log="$build/$t.log" corpus="$work/$t"
  local common=(-rss_limit_mb=2048 -timeout=30 -max_len="${max_len[$t]}" -artifact_prefix="$build/artifacts/$t-")
  # Reproducers of fixed bugs first: each file runs once and must pass.
  if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then
    if ! "$bin" "${common[@]}" tests/fuzz/regressions/"$t"/* >"$log.regressions" 2>&1; then
      printf '%-22s regression reproducer failed (see %s)\n' "$t" "$log.regressions" >"$work/$t.summary"
      echo "$log.regressions" >"$work/$t.failed"
      return
    fi
  fi
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  # Inputs the long campaigns found (BENCHMARKS.md, Fuzzing), merged down to those that
  # add coverage to the seeds, so that a short run starts where they got to.
  if compgen -G "tests/fuzz/found/$t/*" >/dev/null; then cp tests/fuzz/found/"$t"/* "$corpus"/; fi
  echo "=== fuzz: $t for $seconds s ==="
  local status=0 runs rate cov
  "$bin" "${common[@]}" -max_total_time="$seconds" -print_final_stats=1 "$corpus" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [[ $status -ne 0 ]]; then
    printf '%-22s FAILED (exit %d) after %s execs; input: %s\n' "$t" "$status" "$runs" \
      "$(ls -t "$build"/artifacts/"$t"-* 2>/dev/null | head -1)" >"$work/$t.summary"
    echo "$log" >"$work/$t.failed"
  else
    printf '%-22s %10s execs  %6s exec/s  %s  corpus %d files\n' "$t" "$runs" "${rate:-?}" "$cov" \
      "$(ls "$corpus" | wc -l)" >"$work/$t.summary"
  fi
}

# FUZZ_JOBS targets at a time (default 1): libFuzzer runs on one core, so with a core
# each they make as many executions as one after another, in less time.
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= ${FUZZ_JOBS:-1})); do wait -n || true; done
  fuzz_one "$t" &
done
wait

failed=0
for t in "${targets[@]}"; do
  if [[ -f $work/$t.failed ]]; then
    tail -60 "$(cat "$work/$t.failed")"
    failed=1
  fi
  [[ -f $work/$t.summary ]] || failed=1  # its run stopped before it could say how it went
done
echo "=== fuzz: summary ($seconds s per target) ==="
for t in "${targets[@]}"; do cat "$work/$t.summary" 2>/dev/null || printf '%-22s no result\n' "$t"; done
exit $failed
