#!/usr/bin/env bash
# check_tree.sh on this repository (must pass), then on small trees that each break one of
# its rules (each must fail, naming the file): a check that cannot fail proves nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/check_tree.sh
"$check"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect_finding() {  # expect_finding NAME FILE CONTENT-COMMAND
  local name=$1 file=$2
  shift 2
  local tree=$tmp/$name
  mkdir -p "$tree/$(dirname "$file")"
  "$@" >"$tree/$file"
  if out=$("$check" "$tree" 2>&1); then
    echo "FAIL: $name: check_tree.sh passed a tree with $file"
    exit 1
  fi
  grep -q "$file" <<<"$out" || { echo "FAIL: $name: the finding does not name $file:"; echo "$out"; exit 1; }
  echo "ok: $name is found"
}
expect_finding long-file daemon/engine/big.cpp seq 601
# (The numbers come from variables, so that this file itself breaks no rule.)
n=12
expect_finding work-label README.md echo "Measured in session $n on the GPU host."
expect_finding issue-number kernels/x.h echo "// Fixed for issue $n."
expect_finding issue-hash tests/x.py echo "# see issue #$n"

# What the rules allow: 600 lines, the history's labels, sessions counted as streams.
tree=$tmp/allowed
mkdir -p "$tree/daemon" "$tree/docs"
seq 600 >"$tree/daemon/ok.cpp"
echo "2026-12-02 (session $n): the ring is kept." >"$tree/docs/benchmarks-history.md"
echo "With 32 sessions the delivery thread is busy." >"$tree/README.md"
"$check" "$tree"
echo "check_tree_test: passed"
