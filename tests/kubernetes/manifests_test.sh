#!/usr/bin/env bash
# deploy/kubernetes checked offline: every overlay rendered with `kubectl kustomize`, each
# object validated against the Kubernetes schemas (validate.mjs, with the npm packages
# pinned in package-lock.json installed under the build tree), then held to the config that
# conveyord resolves from it, to the other overlays, to deploy/container/Containerfile and
# to the packaging (check_manifests.py). Both halves break copies on purpose first and fail
# unless each breakage is found. Needs kubectl, node, npm and python3 >= 3.11: a missing
# one fails the test, it is not skipped.
# Usage: manifests_test.sh CONVEYORD BUILD_DIR
set -euo pipefail
conveyord=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fail() { echo "manifests_test: FAIL: $*" >&2; exit 1; }
start=$SECONDS

command -v kubectl >/dev/null || fail "kubectl is not installed: it renders the overlays (kubectl kustomize)"
for tool in node npm; do
  command -v "$tool" >/dev/null || fail "$tool is not installed: the schema check runs on node, npm installs its packages"
done
python3 -c 'import tomllib' 2>/dev/null || fail "python3 with tomllib (3.11 or newer) is needed to read the resolved config"
[[ -x $conveyord ]] || fail "no conveyord at $conveyord"
[[ -f $build/CPackConfig.cmake ]] || fail "no $build/CPackConfig.cmake: the package name the Containerfile takes comes from there"
echo "manifests_test: $(kubectl version --client 2>/dev/null | paste -sd' '), node $(node --version)"

# The validator's packages, once per build tree and again when the lock file changes. The
# packages ask for node 22; the validator's self-test below shows they work on Debian's.
modules=$build/k8s-validate
stamp=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [[ $(cat "$modules/.installed" 2>/dev/null) != "$stamp" ]]; then
  rm -rf "$modules"
  mkdir -p "$modules"
  cp "$here/package.json" "$here/package-lock.json" "$modules/"
  npm ci --prefix "$modules" --no-audit --no-fund --loglevel=error >"$modules/npm.log" 2>&1 \
    || { cat "$modules/npm.log"; fail "npm ci of the validator's packages into $modules"; }
  echo "$stamp" >"$modules/.installed"
  echo "manifests_test: installed the validator's packages into $modules"
fi

work=$(mktemp -d "$build/k8s-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
overlays=$root/deploy/kubernetes/overlays
rendered=()
for dir in "$overlays"/*/; do
  name=$(basename "$dir")
  kubectl kustomize "$dir" >"$work/$name.yaml" 2>"$work/$name.err" \
    || { cat "$work/$name.err"; fail "kubectl kustomize $dir"; }
  echo "manifests_test: rendered $name: $(grep -c '^kind:' "$work/$name.yaml") objects"
  rendered+=("$name=$work/$name.yaml")
done

node "$here/validate.mjs" "$modules" "$work" "${rendered[@]}" || fail "an overlay does not validate (above)"
node "$here/validate.mjs" "$modules" --self-test "$work/nvidia.yaml" || fail "the validator let a broken object through"
node "$here/validate.mjs" "$modules" --json "$overlays/cpu/prometheus-adapter-rules.yaml" "$work/adapter-rules.json"

python3 "$here/check_manifests.py" --self-test --rendered "$work" --overlays "$overlays" --conveyord "$conveyord" \
  --containerfile "$root/deploy/container/Containerfile" --cmake-lists "$root/CMakeLists.txt" \
  --cpack-config "$build/CPackConfig.cmake" --daemon-metrics "$root/daemon/metrics/daemon_metrics.cpp" \
  --adapter-rules "$work/adapter-rules.json" || fail "the checks above"
echo "manifests_test: passed in $((SECONDS - start)) s"
