#!/usr/bin/env bash
# Makes python3-conveyor, the Python client as a Debian package (architecture all): the
# module in /usr/lib/python3/dist-packages/conveyor, the copyright and changelog, and
# maintainer scripts that byte-compile it with py3compile and clean up with py3clean, as
# dh_python3 would write them.
#   make-python-deb.sh OUT.deb VERSION MODULE_DIR DEBIAN_DIR
set -euo pipefail
out=${1:?usage: make-python-deb.sh OUT.deb VERSION MODULE_DIR DEBIAN_DIR}
version=${2:?} module=${3:?} debian=${4:?}
stage=$(mktemp -d "${out%.deb}.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

dist=$stage/usr/lib/python3/dist-packages/conveyor
doc=$stage/usr/share/doc/python3-conveyor
mkdir -p "$dist" "$doc" "$stage/DEBIAN"
(cd "$module" && find . -name '*.py' -print0 | xargs -0 -I{} install -D -m 0644 {} "$dist/{}")
install -m 0644 "$debian/copyright" "$doc/copyright"
gzip -9n <"$debian/changelog" >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

cat >"$stage/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ] && command -v py3compile >/dev/null 2>&1; then
	py3compile -p python3-conveyor
fi
SCRIPT
cat >"$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if command -v py3clean >/dev/null 2>&1; then
	py3clean -p python3-conveyor
else
	dpkg -L python3-conveyor | sed -n 's/\.py$/.pyc/p' | xargs -r rm -f
	find /usr/lib/python3/dist-packages/conveyor -type d -name __pycache__ -empty -delete 2>/dev/null || true
fi
SCRIPT
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: python3-conveyor
Source: conveyor
Version: $version
Architecture: all
Maintainer: Conveyor maintainers <maintainers@users.noreply.a-seed-caa55275.example>
Installed-Size: $size
Depends: python3:any, python3-grpcio, python3-protobuf
Section: python
Priority: optional
Description: Python client of conveyord, the GPU video transcode daemon
 The conveyor module talks to conveyord over gRPC: conveyor.frames() yields
 the JPEGs of a video with their times as they are encoded, and
 conveyor.transcode() writes a Motion-JPEG container (Matroska, MOV or AVI).
 It sends seekable files as random-access input and takes the JPEGs from the
 daemon's shared memory on a local socket.
CONTROL
find "$stage" -type d -exec chmod 0755 {} +
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
