#!/usr/bin/env bash
# python3-conveyor, the Python client's Debian package, end to end as root: build it from a
# build dir (build/cpu by default; target python_deb), check its fields, files and
# lintian's verdict (lintian_test.sh), install it with its Depends from Debian, import it
# from another directory as the system python does, then purge it and check nothing is
# left. Always purges on exit. It installs into the system's dist-packages, so tests/run.sh
# runs it after the ctest stages, as deb_test.sh.
#   tests/package/deb_python_test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(readlink -f "${1:-build/cpu}")
fail() { echo "deb_python_test: FAIL: $*" >&2; exit 1; }
step() { echo "deb_python_test: $*"; }

[[ $EUID -eq 0 ]] || fail "must run as root (it installs and purges the package); CI runs as root"
if dpkg-query -W -f='${Status}' python3-conveyor 2>/dev/null | grep -qv not-installed; then
  fail "python3-conveyor is installed here; run 'dpkg --purge python3-conveyor' first"
fi
dist=/usr/lib/python3/dist-packages/conveyor
[[ -e $dist ]] && fail "$dist exists without the package; remove it first"

cmake --build "$build" --target python_deb >"$build/deb_python_test-build.log" 2>&1 \
  || { tail -30 "$build/deb_python_test-build.log"; fail "building target python_deb in $build"; }
version=$(sed -n 's/^project(conveyor VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
deb=$build/python3-conveyor_${version}_all.deb
[[ -f $deb ]] || fail "no $deb"
step "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"

field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == python3-conveyor ]] || fail "Package is $(field Package)"
[[ $(field Architecture) == all ]] || fail "Architecture is $(field Architecture), not all"
[[ $(field Version) == "$version" ]] || fail "Version $(field Version), the project's $version"
[[ $(field Depends) == "python3:any, python3-grpcio, python3-protobuf" ]] || fail "Depends: $(field Depends)"

expected="./usr/lib/python3/dist-packages/conveyor/__init__.py
./usr/lib/python3/dist-packages/conveyor/client.py
./usr/lib/python3/dist-packages/conveyor/errors.py
./usr/lib/python3/dist-packages/conveyor/request_stream.py
./usr/lib/python3/dist-packages/conveyor/shared_memory.py
./usr/lib/python3/dist-packages/conveyor/v1/__init__.py
./usr/lib/python3/dist-packages/conveyor/v1/transcoder_pb2.py
./usr/lib/python3/dist-packages/conveyor/v1/transcoder_pb2_grpc.py
./usr/share/doc/python3-conveyor/changelog.gz
./usr/share/doc/python3-conveyor/copyright"
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sort)
[[ $files == "$expected" ]] || fail "the package's files differ: $(diff <(echo "$expected") <(echo "$files"))"
# Every module of the package is shipped: a new file in clients/python/conveyor must be
# added above, or it would be missing from the package unnoticed.
sources=$(cd clients/python && find conveyor -name '*.py' | sed 's|^|./usr/lib/python3/dist-packages/|' | sort)
missing=$(comm -23 <(echo "$sources") <(echo "$files"))
[[ -z $missing ]] || fail "modules of clients/python not in the package: $missing"
dpkg-deb -c "$deb" | awk '{print $1, $2}' | grep -v '^-rw-r--r-- root/root$' | grep -v '^drwxr-xr-x root/root$' \
  && fail "files not 0644 or directories not 0755 of root (above)"
step "fields and $(wc -l <<<"$files") files as expected"

tests/package/lintian_test.sh "$deb"

cleanup() { dpkg --purge python3-conveyor >/dev/null 2>&1 || true; }
trap cleanup EXIT
apt-get install -y -qq --no-install-recommends "$deb" >"$build/deb_python_test-install.log" 2>&1 \
  || { tail -20 "$build/deb_python_test-install.log"; fail "apt-get install $deb"; }
out=$(cd / && /usr/bin/python3 -c '
import conveyor, conveyor.v1.transcoder_pb2 as pb
print(conveyor.__file__)
print(callable(conveyor.frames), callable(conveyor.transcode), pb.JobSpec.DESCRIPTOR.full_name)')
[[ $(sed -n 1p <<<"$out") == "$dist/__init__.py" ]] || fail "import conveyor found $(sed -n 1p <<<"$out")"
[[ $(sed -n 2p <<<"$out") == "True True conveyor.v1.JobSpec" ]] || fail "the installed package: $out"
ls "$dist"/__pycache__/*.pyc >/dev/null 2>&1 || fail "postinst did not byte-compile $dist"
step "installed: /usr/bin/python3 imports $dist, byte-compiled"

dpkg --purge python3-conveyor >/dev/null || fail "dpkg --purge python3-conveyor"
[[ -e $dist ]] && fail "purge left $(find "$dist" | head -5)"
[[ -e /usr/share/doc/python3-conveyor ]] && fail "purge left /usr/share/doc/python3-conveyor"
step "purged: nothing left"
echo "deb_python_test: PASS"
