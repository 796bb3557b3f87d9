#!/usr/bin/env bash
# Checks of the tree itself, so that it keeps reading as a product:
#   - no file of the product (base/, kernels/, daemon/) is over 600 lines;
#   - no file but docs/benchmarks-history.md carries a numbered work label (the word
#     "session" followed by a number);
#   - no file cites an issue number (the word "issue" followed by a number, with or
#     without "#").
# Usage: check_tree.sh [ROOT]  (default: this repository). Lists what it finds and exits 1
# when it finds anything. In a git checkout it reads the tracked files, elsewhere all files.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [[ $(git rev-parse --show-toplevel) == "$(pwd -P)" ]]; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -type f -not -path './.git/*' -not -path './build/*' | sed 's|^\./||' | sort)
fi
max_lines=600
failed=0

report() {  # report RULE LINES...
  local rule=$1
  shift
  (($#)) || return 0
  echo "check_tree: $rule:"
  printf '  %s\n' "$@"
  failed=1
}

long=()
for f in "${files[@]}"; do
  case $f in base/* | kernels/* | daemon/*) ;; *) continue ;; esac
  [[ -f $f ]] || continue
  n=$(wc -l <"$f")
  ((n > max_lines)) && long+=("$f: $n lines")
done
report "product files over $max_lines lines" "${long[@]}"

# Prose files only: the fuzzers' corpora are inputs, not text.
prose=()
for f in "${files[@]}"; do
  case $f in tests/fuzz/found/* | tests/fuzz/regressions/* | tests/fuzz/corpus/*) continue ;; esac
  [[ -f $f ]] && prose+=("$f")
done

labels=()
issues=()
if ((${#prose[@]})); then
  mapfile -t labels < <(printf '%s\0' "${prose[@]}" | grep -v -z -x 'docs/benchmarks-history.md' |
    xargs -0 grep -HnIiE '\bsession [0-9]+\b' -- 2>/dev/null || true)
  mapfile -t issues < <(printf '%s\0' "${prose[@]}" |
    xargs -0 grep -HnIiE '\bissues? #?[0-9]+\b' -- 2>/dev/null || true)
fi
report "numbered work labels (say what was done, and when, in docs/benchmarks-history.md)" "${labels[@]}"
report "issue numbers cited (say what the code does instead)" "${issues[@]}"

((failed == 0)) && echo "check_tree: ${#files[@]} files, no finding"
exit "$failed"
