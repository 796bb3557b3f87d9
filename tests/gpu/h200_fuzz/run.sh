# Runs the staged libFuzzer target (stage.sh) on N cores of the GPU host: N workers on one
# shared corpus with the flags of tests/fuzz/run_fuzzers.sh, SECONDS_EACH each. Prints
# each worker's executions and error lines and the total; crash inputs go to $OUT, with
# the grown corpus (corpus.tgz) to merge back.
set -u
cd "${FUZZ_DIR:-.h200fuzz}"
target=$(cat target)
N=${N:-16}; SECONDS_EACH=${SECONDS_EACH:-450}
declare -A max_len=([fuzz_job_spec]=4096 [fuzz_container_input]=65536 [fuzz_raw_frames]=65536 [fuzz_encoder]=4096)
libs=$PWD/lib
if [[ -f bundle.tar.xz ]]; then
  b=$(basename "$(tar tJf bundle.tar.xz | head -1)")
  tar xJf bundle.tar.xz
  libs=$PWD/$b/lib
fi
export LD_LIBRARY_PATH=$libs
if ldd "./$target" | grep "not found"; then exit 1; fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "$target: $N workers x $SECONDS_EACH s on $(nproc) cores"
rm -rf work fuzz-*.log && mkdir work && tar xJf corpus.tar.xz -C work
"./$target" -rss_limit_mb=2048 -timeout=30 -max_len="${max_len[$target]}" -max_total_time="$SECONDS_EACH" \
  -print_final_stats=1 -jobs="$N" -workers="$N" -artifact_prefix="$OUT/$target-" work > main.log 2>&1
echo "main exit $?"
total=0
for f in fuzz-*.log; do
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$f" | tail -1)
  total=$((total + ${n:-0}))
  echo "$f: ${n:-?} executions, $(grep -c 'ERROR\|SUMMARY' "$f") error lines, $(grep -o 'cov: [0-9]*' "$f" | tail -1)"
done
echo "total executions: $total"
cat fuzz-*.log | grep -B2 -A30 "ERROR\|SUMMARY" | head -300 > "$OUT/errors.log"
tar czf "$OUT/corpus.tgz" work
