#!/usr/bin/env bash
# A GPU flavour of conveyord on a host where it can open no GPU (the AMD flavour on the
# 2-core development machine, which answers hipErrorNoDevice): under workers = "auto" it
# serves on the CPU and says so in a warning, in conveyor_workers_cpu_fallback and on
# /readyz; under workers = "gpu" it refuses to start. The flavour's package ships
# workers = "gpu".
#   tests/flavour/cpu_fallback_test.sh BUILD_DIR   (tests/run.sh runs it on build/amd)
set -euo pipefail
build=$(readlink -f "${1:?usage: cpu_fallback_test.sh BUILD_DIR}")
conveyord=$build/daemon/conveyord
fail() { echo "cpu_fallback_test: FAIL: $*" >&2; exit 1; }
[[ -x $conveyord ]] || fail "no $conveyord"

grep -qx 'workers = "gpu"' "$build/deploy/conveyord.toml" || fail "the package's config does not say workers = \"gpu\""

scratch=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

common=(--config '' --listen "unix:$scratch/s.sock" --cpu-threads 1 --log-level info)
if "$conveyord" "${common[@]}" --workers gpu --metrics-listen '' 2>"$scratch/gpu.log"; then
  fail "workers = gpu started with no GPU"
fi
grep -q 'workers = "gpu" but no GPU worker could start' "$scratch/gpu.log" || fail "workers = gpu: $(cat "$scratch/gpu.log")"

"$conveyord" "${common[@]}" --workers auto --metrics-listen 127.0.0.1:0 --endpoints-file "$scratch/endpoints" \
  2>"$scratch/auto.log" &
pid=$!
for _ in $(seq 100); do
  [[ -s $scratch/endpoints ]] && break
  kill -0 "$pid" 2>/dev/null || fail "conveyord exited: $(cat "$scratch/auto.log")"
  sleep 0.1
done
metrics=$(sed -n 's/^metrics //p' "$scratch/endpoints")
[[ -n $metrics ]] || fail "no metrics address in $scratch/endpoints"
grep -q '\[warning\] workers = "auto" serves on the CPU on this hip-amd build: .*hipErrorNoDevice' "$scratch/auto.log" \
  || fail "no warning: $(cat "$scratch/auto.log")"
ready=$(curl -fsS "http://$metrics/readyz")
[[ $ready == $'ok\nwarning: workers = "auto" serves on the CPU: '*hipErrorNoDevice* ]] || fail "/readyz: $ready"
curl -fsS "http://$metrics/metrics" | grep -qx 'conveyor_workers_cpu_fallback 1' \
  || fail "conveyor_workers_cpu_fallback is not 1"
echo "cpu_fallback_test: passed"
