#!/usr/bin/env bash
# lintian on a Debian package of Conveyor: prints lintian's whole verdict, informational
# tags included, and fails on any error (E:) or warning (W:). An override would go in
# deploy/debian/lintian-overrides, each with its reason; there is none.
#   tests/package/lintian_test.sh DEB   (deb_test.sh runs it on the .deb it built)
set -euo pipefail
deb=$(readlink -f "${1:?usage: lintian_test.sh DEB}")
fail() { echo "lintian_test: FAIL: $*" >&2; exit 1; }

command -v lintian >/dev/null || fail "no lintian here (deploy/install-deps.sh --test installs it)"
[[ -f $deb ]] || fail "no $deb"

# lintian leaves a database file (mldbm-elf-XXXXXXXX) in TMPDIR when it has read ELF files:
# it gets a TMPDIR of its own, removed on exit.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# lintian's own remark that it runs as root says nothing about the package.
out=$(TMPDIR=$scratch lintian --fail-on none --display-info --pedantic "$deb" 2>&1 |
  grep -v '^running with root privileges is not recommended!$' || true)
echo "lintian_test: $(lintian --version) on $(basename "$deb"):"
if [[ -n $out ]]; then
  while IFS= read -r line; do echo "  $line"; done <<<"$out"
else
  echo "  (no tags)"
fi
bad=$(grep -cE '^[EW]: ' <<<"$out" || true)
((bad == 0)) || fail "$bad error or warning tag(s) (see above)"
tags=$(grep -cE '^[A-Z]: ' <<<"$out" || true)
echo "lintian_test: no error or warning ($tags informational or pedantic tag(s))"
