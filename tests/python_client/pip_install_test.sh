#!/usr/bin/env bash
# `pip install clients/python` offline, as the package's README says: into a venv that sees
# Debian's grpcio, protobuf, setuptools and wheel (--system-site-packages), without the
# network (--no-index) or an isolated build environment (--no-build-isolation). The build
# generates the stubs from proto/; then the venv's python imports the package and its stubs
# from the venv, and the installed files are those of clients/python plus the stubs.
# Works on a copy of the tree's clients/python and proto, so the tree gets no build files.
#   tests/python_client/pip_install_test.sh [PYTHON]   (exit 77: a tool is missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-/usr/bin/python3}
fail() { echo "pip_install_test: FAIL: $*" >&2; exit 1; }
skip() { echo "pip_install_test: SKIP: $*"; exit 77; }

# One module a process: Debian's pip imports distutils, which setuptools must come before.
for module in pip setuptools wheel; do
  "$python" -c "import $module" 2>/dev/null || skip "$python lacks $module (apt-get install python3-pip python3-setuptools python3-wheel)"
done
"$python" -c 'import venv, grpc, google.protobuf' 2>/dev/null \
  || skip "$python lacks venv, grpc or protobuf (apt-get install python3-venv python3-grpcio python3-protobuf)"
command -v protoc >/dev/null || skip "no protoc (apt-get install protobuf-compiler)"
command -v grpc_python_plugin >/dev/null || skip "no grpc_python_plugin (apt-get install protobuf-compiler-grpc)"

work=$(mktemp -d -t conveyor-pip-XXXXXX)  # under $TMPDIR, else /tmp
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/clients"
cp -r clients/python "$work/src/clients/python"
cp -r proto "$work/src/proto"
rm -rf "$work/src/clients/python/build" "$work/src/clients/python/"*.egg-info

"$python" -m venv --system-site-packages --without-pip "$work/venv" || fail "python3 -m venv"
venv_python=$work/venv/bin/python
# Debian's pip, run by the venv's python, installs into the venv.
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv_python" -m pip install --no-build-isolation --no-index \
  "$work/src/clients/python" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip install"; }
tail -2 "$work/pip.log"

out=$(cd "$work" && "$venv_python" -c '
import conveyor, conveyor.v1.transcoder_pb2 as pb, conveyor.v1.transcoder_pb2_grpc as g
print(conveyor.__file__)
print(pb.JobSpec.DESCRIPTOR.fields_by_name["frame_rate"].message_type.full_name)
print(hasattr(g, "TranscoderStub"), callable(conveyor.frames), callable(conveyor.transcode))
')
echo "$out" | sed 's/^/pip_install_test: /'
site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[[ $(sed -n 1p <<<"$out") == "$site/conveyor/__init__.py" ]] || fail "conveyor imported from elsewhere than $site"
[[ $(sed -n 2p <<<"$out") == conveyor.v1.Rational ]] || fail "the stubs lack JobSpec.frame_rate"
[[ $(sed -n 3p <<<"$out") == "True True True" ]] || fail "the package lacks TranscoderStub, frames or transcode"

want=$(cd clients/python && find conveyor -name '*.py' | sort; printf '%s\n' conveyor/v1/transcoder_pb2.py conveyor/v1/transcoder_pb2_grpc.py)
got=$(cd "$site" && find conveyor -name '*.py' | sort)
[[ $(sort <<<"$want") == "$got" ]] || fail "installed files differ from the package's: $(diff <(sort <<<"$want") - <<<"$got")"
"$venv_python" -m pip uninstall -y conveyor >/dev/null || fail "pip uninstall"
[[ ! -e $site/conveyor ]] || fail "pip uninstall left $site/conveyor"
echo "pip_install_test: PASS ($(wc -l <<<"$got") files installed and removed)"
