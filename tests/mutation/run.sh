#!/usr/bin/env bash
# Mutation check of the JPEG encoder: applies one deliberate fault at a time to a copy of
# the tree, rebuilds the CPU flavour and runs unit_tests and conformance_test, which must
# fail for every fault. Run it once per change to the encoder (kernels/); it is no part of
# tests/run.sh or ctest.
# Usage: tests/mutation/run.sh [--list] [--keep] [FAULT...]  (default: every fault)
#   --list  prints the faults and exits
#   --keep  keeps the scratch copy (build, logs) and prints where it is
# Exit: 0 every fault caught; 1 a fault not caught; 2 the check cannot run (the unmutated
# build or its tests fail, a fault's pattern no longer matches, a mutant does not build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${MUTATION_JOBS:-2}
start=$SECONDS
say() { echo "=== [$((SECONDS - start)) s] $*"; }

# A fault: its name, the file it edits, a sed expression that changes exactly one line,
# and what it does. Each pattern is exact, so that a change to the source shows up as a
# pattern that no longer matches instead of a fault that silently does nothing.
names=()
declare -A fault_file fault_sed fault_what
add_fault() {
  names+=("$1")
  fault_file[$1]=$2 fault_sed[$1]=$3 fault_what[$1]=$4
}
add_fault quant-entry kernels/jpeg_tables.cpp \
  's/^    16, 11, 10, 16, 24,  40,  51,  61,  12, 12,/    16, 11, 10, 16, 24,  40,  51,  61,  21, 12,/' \
  'kLumaQuant[8] 12 -> 21 (DQT and quantiser alike)'
add_fault huffman-length kernels/jpeg_tables.cpp \
  's/kDcLumaCounts\[16\] = {0, 1, 5, 1,/kDcLumaCounts[16] = {0, 1, 4, 2,/' \
  'kDcLumaCounts {0,1,5,1,..} -> {0,1,4,2,..} (DHT written from the same counts)'
add_fault restart-marker kernels/stage_huffman.h \
  's/out\[1\] = static_cast<uint8_t>(0xD0 + (segment & 7));/out[1] = static_cast<uint8_t>(0xD0 + ((segment + 1) \& 7));/' \
  'RSTn after segment s is RST((s+1) mod 8) instead of RST(s mod 8)'
add_fault byte-stuffing kernels/cpu_huffman.cpp \
  's/^    if (b == 0xFF) \*out++ = 0x00;$/    if (b == 0xFF) {}/' \
  'CPU coder writes 0xFF without the stuffed 0x00 (the one byte path every 0xFF takes)'
add_fault dct-constant kernels/stage_dct.h \
  's/k0_298631336 = Fix(0.298631336);/k0_298631336 = Fix(0.308631336);/' \
  'FIX(0.298631336) 2446 -> 2528, shared by the portable, AVX2 and AVX-512 DCTs'
add_fault colour-coefficient kernels/color_xform.cpp \
  's/case ColorMatrix::kBt601: return {0.299, 0.114};/case ColorMatrix::kBt601: return {0.298, 0.114};/' \
  'BT.601 Kr 0.299 -> 0.298 (the JFIF target matrix and BT.601 input)'

keep=0
selected=()
for arg in "$@"; do
  case $arg in
    --list)
      for n in "${names[@]}"; do printf '%-20s %-26s %s\n' "$n" "${fault_file[$n]}" "${fault_what[$n]}"; done
      exit 0 ;;
    --keep) keep=1 ;;
    -*) echo "run.sh: unknown option $arg (see the header of $0)" >&2; exit 2 ;;
    *)
      [[ -v fault_file[$arg] ]] || { echo "run.sh: no fault named $arg (--list lists them)" >&2; exit 2; }
      selected+=("$arg") ;;
  esac
done
((${#selected[@]})) || selected=("${names[@]}")
command -v ffmpeg >/dev/null || { echo "run.sh: conformance_test needs the ffmpeg CLI" >&2; exit 2; }

# The scratch copy: the files git tracks or would track, as they are in the working tree
# (uncommitted changes included), so the caller's tree and build are never touched.
say "copy the tree"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/conveyor-mutation.XXXXXX")
src=$scratch/src logs=$scratch/logs pristine=$scratch/pristine
cleanup() { if ((keep)); then echo "run.sh: scratch copy kept in $scratch"; else rm -rf "$scratch"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$src" "$logs" "$pristine"
git -C "$root" ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [[ -f $root/$f ]] && printf '%s\0' "$f"; done |
  tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -

# Every selected fault must change exactly one line of its file, checked before the
# configure and the first build so that a stale pattern stops the run at once.
for n in "${selected[@]}"; do
  f=$src/${fault_file[$n]}
  lines=$(sed -e "${fault_sed[$n]}" "$f" | diff "$f" - | grep -c '^>' || true)
  if ((lines != 1)); then
    echo "run.sh: fault $n changes $lines lines of ${fault_file[$n]}, not 1: its pattern no longer matches" >&2
    exit 2
  fi
done

# ccache, where present, with paths taken relative to the scratch directory, so a later
# run in another scratch directory hits the same entries.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$scratch
fi
say "configure (CPU flavour, Release) in $src"
nice -n 10 cmake -S "$src" -B "$src/build" -G Ninja -DCONVEYOR_GPU=off -DCMAKE_BUILD_TYPE=Release \
  "${launcher[@]}" >"$logs/configure.log" 2>&1 || { cat "$logs/configure.log"; exit 2; }

unit=$src/build/tests/unit/unit_tests
conformance=$src/build/tests/conformance/conformance_test
bench=$src/build/tests/bench/conveyor-bench
build() {  # build LOG: the two test binaries, and conveyor-bench for the output digest
  nice -n 10 cmake --build "$src/build" -j "$jobs" --target unit_tests conformance_test conveyor-bench >"$1" 2>&1
}

# Runs both test binaries into LOG-unit.log and LOG-conformance.log; sets failed_count
# and failed_names (the failing tests, or the test running when a binary died).
run_tests() {
  local log=$1 bin rc part names
  failed_names=()
  for part in unit conformance; do
    [[ $part == unit ]] && bin=$unit || bin=$conformance
    rc=0
    (cd "$src/build" && nice -n 10 timeout 1200 "$bin" --gtest_color=no) >"$log-$part.log" 2>&1 || rc=$?
    mapfile -t names < <(grep -E '^\[  FAILED  \] [^ ]+\.[^ ]+' "$log-$part.log" | awk '{sub(/,$/, "", $4); print $4}' |
      awk '!seen[$0]++')
    if ((rc != 0 && ${#names[@]} == 0)); then
      names=("$(basename "$bin") exit $rc in $(grep -E '^\[ RUN +\]' "$log-$part.log" | tail -1 | awk '{print $4}')")
    fi
    failed_names+=("${names[@]}")
  done
  failed_count=${#failed_names[@]}
}

# One frame encoded by the mutant: synthetic rgb24 (so the colour matrix applies), 4:2:0,
# restart markers every 16 MCUs. Its digest against the unmutated one's shows whether the
# fault changes the bytes at all, which tells a weak test from a fault without effect.
sample_digest() {
  "$bench" encode --worker cpu --format rgb24 --size 640x480 --subsampling 420 --restart -1 \
    --frames 1 --output "$scratch/sample.jpg" >/dev/null 2>&1 || { echo "encode-failed"; return; }
  sha256sum "$scratch/sample.jpg" | cut -c1-16
}

say "build and test the unmutated copy"
build "$logs/baseline-build.log" || { tail -30 "$logs/baseline-build.log"; exit 2; }
run_tests "$logs/baseline"
if ((failed_count)); then
  echo "run.sh: the unmutated tree fails $failed_count tests (baseline broken):" >&2
  printf '  %s\n' "${failed_names[@]}" >&2
  exit 2
fi
baseline_digest=$(sample_digest)
say "unmutated copy: every test passes"

declare -A caught count example changed
for n in "${selected[@]}"; do
  f=${fault_file[$n]}
  say "$n: ${fault_what[$n]}"
  cp -p "$src/$f" "$pristine/${f//\//_}"
  sed -i -e "${fault_sed[$n]}" "$src/$f"
  diff "$pristine/${f//\//_}" "$src/$f" | sed -n 's/^[<>]/  &/p' || true
  fault_start=$SECONDS
  build "$logs/$n-build.log" || { tail -30 "$logs/$n-build.log"; echo "run.sh: fault $n does not build" >&2; exit 2; }
  run_tests "$logs/$n"
  [[ $(sample_digest) == "$baseline_digest" ]] && changed[$n]=same || changed[$n]=changed
  count[$n]=$failed_count
  if ((failed_count)); then caught[$n]=yes example[$n]=${failed_names[0]}; else caught[$n]=no example[$n]=-; fi
  echo "  caught: ${caught[$n]}, $failed_count failing tests, output ${changed[$n]}, $((SECONDS - fault_start)) s"
  # Back to the original bytes, with a new mtime so that ninja recompiles it (a ccache hit).
  cp "$pristine/${f//\//_}" "$src/$f"
done

echo
printf '%-20s %-26s %-6s %8s %-8s %s\n' fault file caught failing output "a failing test"
status=0
for n in "${selected[@]}"; do
  printf '%-20s %-26s %-6s %8s %-8s %s\n' "$n" "${fault_file[$n]}" "${caught[$n]}" "${count[$n]}" \
    "${changed[$n]}" "${example[$n]}"
  [[ ${caught[$n]} == yes ]] || status=1
done
echo "run.sh: ${#selected[@]} faults, $((SECONDS - start)) s; $( ((status)) && echo 'NOT every fault caught' || echo 'every fault caught')"
exit "$status"
