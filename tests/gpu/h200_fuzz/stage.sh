#!/usr/bin/env bash
# Stages one libFuzzer target (built by tests/fuzz/run_fuzzers.sh in build/fuzz, ASan +
# UBSan) for the GPU host's 16 CPU cores in the ignored folder .h200fuzz/: the binary, the
# shared libraries it needs beyond the host's base ones (the FFmpeg closure comes from
# the conveyord bundle that tests/gpu/h200_bundle/stage.sh made in .h200/), a corpus and
# run.sh. Then, on the GPU host: bash .h200fuzz/run.sh.
#   tests/gpu/h200_fuzz/stage.sh TARGET [CORPUS_DIR]   (default: the committed seeds)
set -euo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
target=$1
corpus=${2:-tests/fuzz/corpus/$target}
bin=build/fuzz/tests/fuzz/$target
[[ -x $bin ]] || { echo "stage: no $bin; run tests/fuzz/run_fuzzers.sh 1 $target first" >&2; exit 1; }
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.h200fuzz/' "$exclude" 2>/dev/null || echo '/.h200fuzz/' >> "$exclude"
rm -rf .h200fuzz && mkdir -p .h200fuzz/lib
strip --strip-debug -o ".h200fuzz/$target" "$bin"
echo "$target" > .h200fuzz/target
# (grep without -q: with pipefail, -q can stop reading early and ldd then dies of SIGPIPE)
if ldd "$bin" | grep libavcodec >/dev/null; then
  [[ -f .h200/bundle.tar.xz ]] || { echo "stage: $target needs FFmpeg: run tests/gpu/h200_bundle/stage.sh first" >&2; exit 1; }
  cp .h200/bundle.tar.xz .h200fuzz/
else
  host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
  ldd "$bin" | awk '$2 == "=>" {print $1, $3}' | while read -r soname path; do
    [[ $soname =~ $host_libs ]] || cp -L "$path" .h200fuzz/lib/
  done
fi
# Compressed: a grown corpus is thousands of small files, and the carry limit is 64 MiB.
# A snapshot first: a fuzzer running here may be adding to the corpus.
cp -r "$corpus" .h200fuzz/corpus
tar cJf .h200fuzz/corpus.tar.xz -C .h200fuzz/corpus . && rm -r .h200fuzz/corpus
cp tests/gpu/h200_fuzz/run.sh .h200fuzz/
du -sh --apparent-size .h200fuzz
