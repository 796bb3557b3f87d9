#!/usr/bin/env bash
# tests/skip_reasons.py on what ctest really writes: a small ctest project whose tests skip
# as Conveyor's do (GTEST_SKIP with a message and with a SCOPED_TRACE after it, the Python
# cases' and shell tests' exit 77 with a SKIP line), one that skips without a word, one
# whose reason follows 4 KiB of output, one that passes and one disabled. Each skipped test
# must come out with its reason, the silent ones with none, and nothing else.
#   skip_reasons_test.sh [CMAKE [CTEST]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmake=${1:-cmake}
ctest=${2:-ctest}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/src"
cat >"$tmp/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(skips NONE)
enable_testing()
function(case name rc text)
  add_test(NAME ${name} COMMAND sh -c "printf '${text}'; exit ${rc}")
endfunction()
case(gtest.Message 0 "[ RUN      ] A.B\\na_test.cpp:12: Skipped\\nno GPU: hipGetDeviceCount returned hipErrorNoDevice\\n[  SKIPPED ] A.B (0 ms)\\n")
case(gtest.Traced 0 "a_test.cpp:40: Skipped\\nthe CPU worker has no readback\\nGoogle Test trace:\\na_test.cpp:30: lanes\\n[  SKIPPED ] A.C (0 ms)\\n")
case(gtest.Silent 0 "a_test.cpp:50: Skipped\\n\\n[  SKIPPED ] A.D (0 ms)\\n")
set_tests_properties(gtest.Message gtest.Traced gtest.Silent PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
case(e2e_py.case 77 "[  SKIPPED ] e2e_py.case: this ffmpeg has no libx265 encoder\\n")
case(python_client.case 77 "SKIP case: djpeg is missing\\n")
case(shell.pip 77 "pip_install_test: SKIP: no protoc (apt-get install protobuf-compiler)\\n")
case(shell.silent 77 "")
add_test(NAME shell.long COMMAND sh -c "head -c 4096 /dev/zero | tr '\\\\0' x; echo; echo 'tool: SKIP: after a long log'; exit 77")
set_tests_properties(e2e_py.case python_client.case shell.pip shell.silent shell.long PROPERTIES SKIP_RETURN_CODE 77)
case(passes 0 "ok\\n")
case(disabled 77 "SKIP: never run\\n")
set_tests_properties(disabled PROPERTIES DISABLED TRUE SKIP_RETURN_CODE 77)
CMAKE

"$cmake" -S "$tmp/src" -B "$tmp/build" >/dev/null
# As tests/run.sh runs ctest. (A skipped test's output is kept up to 300 KiB, as a failed
# test's, not cut at 1 KiB as a passed test's: shell.long's reason is there.)
"$ctest" --test-dir "$tmp/build" --output-junit "$tmp/junit.xml" >"$tmp/ctest.log" 2>&1 \
  || { cat "$tmp/ctest.log"; echo "FAIL: ctest"; exit 1; }

got=$("$here/../skip_reasons.py" "$tmp/junit.xml" | sort)
want=$(printf '%s\t%s\n' \
  e2e_py.case "this ffmpeg has no libx265 encoder" \
  gtest.Message "no GPU: hipGetDeviceCount returned hipErrorNoDevice" \
  gtest.Silent "" \
  gtest.Traced "the CPU worker has no readback" \
  python_client.case "djpeg is missing" \
  shell.long "after a long log" \
  shell.pip "no protoc (apt-get install protobuf-compiler)" \
  shell.silent "" | sort)
if [[ $got != "$want" ]]; then
  echo "FAIL: skip_reasons.py printed:"
  cat -A <<<"$got"
  echo "want:"
  cat -A <<<"$want"
  exit 1
fi
echo "ok: $(wc -l <<<"$got") skipped tests, each with its reason or none"
