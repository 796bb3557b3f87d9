#!/usr/bin/env bash
# Builds the portable bundle: conveyord and conveyorctl with every shared library they need
# except glibc and the GCC runtime (which the host must provide), plus launchers that point
# LD_LIBRARY_PATH at those libraries. Run by the `bundle` target:
#   make-bundle.sh OUT.tar.gz CONVEYORD CONVEYORCTL CONVEYORD_TOML CONVEYORD_SERVICE
set -euo pipefail
[[ $# -eq 5 ]] || { echo "usage: $0 OUT.tar.gz CONVEYORD CONVEYORCTL TOML SERVICE" >&2; exit 2; }
out=$(readlink -f "$1") conveyord=$2 conveyorctl=$3 toml=$4 service=$5
here=$(dirname "$(readlink -f "$0")")
name=$(basename "$out" .tar.gz)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir=$stage/$name
mkdir -p "$dir/bin" "$dir/lib"

cp "$conveyord" "$conveyorctl" "$dir/bin/"
strip --strip-unneeded "$dir/bin/"*
cp "$toml" "$service" "$dir/"
for launcher in conveyord conveyorctl; do
  install -m 755 "$here/launcher.sh" "$dir/$launcher"
done

# Every base image has these, and they must match the host's kernel and loader.
host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
ldd "$conveyord" "$conveyorctl" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r soname path; do
    [[ $soname =~ $host_libs ]] || cp -L "$path" "$dir/lib/$soname"
  done
if ldd "$conveyord" "$conveyorctl" | grep -q 'not found'; then
  echo "make-bundle: unresolved libraries:" >&2
  ldd "$conveyord" "$conveyorctl" | grep 'not found' >&2
  exit 1
fi

tar -C "$stage" -cf - "$name" | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "make-bundle: $out ($(ls "$dir/lib" | wc -l) libraries, $(du -sh "$dir" | cut -f1) unpacked, $(du -h "$out" | cut -f1) packed)"
