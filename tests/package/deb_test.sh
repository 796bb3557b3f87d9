#!/usr/bin/env bash
# The Debian package end to end, as root: build it with cpack from a build dir (build/cpu by
# default), install it, check files, conffile, user, groups, unit, Depends and the binary,
# install it again (an upgrade), purge it and check nothing is left. Always purges on exit.
# Then deb_daemon_user_test.sh puts the same .deb against a hostile daemon user.
#   tests/package/deb_test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(readlink -f "${1:-build/cpu}")
fail() { echo "deb_test: FAIL: $*" >&2; exit 1; }
step() { echo "deb_test: $*"; }

[[ $EUID -eq 0 ]] || fail "must run as root (it installs and purges the package); CI runs as root"
if dpkg-query -W -f='${Status}' conveyor 2>/dev/null | grep -q installed; then
  fail "package conveyor is already installed here; run 'dpkg --purge conveyor' first"
fi
getent passwd conveyor >/dev/null && fail "user conveyor already exists; remove it first"
getent group conveyor >/dev/null && fail "group conveyor already exists; remove it first"
had_render=$(getent group render >/dev/null && echo yes || echo no)
pkg_state=/var/lib/conveyor-package  # what the package created, recorded by root only
[[ -e $pkg_state || -L $pkg_state ]] && fail "$pkg_state is left from an earlier install; remove it first"

start=$SECONDS
cmake --build "$build" --target conveyord conveyorctl >"$build/deb_test-build.log" 2>&1 \
  || { tail -30 "$build/deb_test-build.log"; fail "building conveyord and conveyorctl in $build"; }
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log"; fail "cpack -G DEB"; }
grep -i warn "$build/cpack.log" && fail "cpack printed warnings (see above)"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
deb=$build/conveyor_${version}_amd64.deb
[[ -f $deb ]] || fail "no $deb"
step "built $(basename "$deb") ($(du -h "$deb" | cut -f1)) in $((SECONDS - start)) s"

# Only the two binaries, the unit, the config and the docs: no tests or benchmarks.
expected="./etc/conveyor/conveyord.toml
./lib/systemd/system/conveyord.service
./usr/bin/conveyorctl
./usr/bin/conveyord
./usr/share/doc/conveyor/README.md
./usr/share/doc/conveyor/copyright"
actual=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sort)
[[ $actual == "$expected" ]] || fail "package files differ from the expected list:
$(diff <(echo "$expected") <(echo "$actual"))"

trap 'dpkg --purge conveyor >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null || fail "dpkg -i"
step "installed"

for f in /usr/bin/conveyord /usr/bin/conveyorctl /lib/systemd/system/conveyord.service \
    /etc/conveyor/conveyord.toml /usr/share/doc/conveyor/README.md; do
  [[ -f $f ]] || fail "missing $f"
done
dpkg-query --showformat='${Conffiles}' -W conveyor | grep -q '^ /etc/conveyor/conveyord.toml ' \
  || fail "/etc/conveyor/conveyord.toml is not a conffile"

ids=$(id conveyor) || fail "no user conveyor"
for g in conveyor render video; do
  id -nG conveyor | tr ' ' '\n' | grep -qx "$g" || fail "conveyor is not in group $g: $ids"
done
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd conveyor)
((uid < 1000)) || fail "conveyor is not a system user (uid $uid)"
[[ $home == /var/lib/conveyor ]] || fail "conveyor's home is $home"
[[ $shell == */nologin || $shell == /bin/false ]] || fail "conveyor's shell is $shell"
step "user: $ids"

[[ -d $pkg_state && ! -L $pkg_state ]] || fail "no directory $pkg_state"
[[ $(stat -c '%U:%G %a' "$pkg_state") == "root:root 755" ]] \
  || fail "$pkg_state is $(stat -c '%U:%G %a' "$pkg_state"), not root:root 755"
records=$(find "$pkg_state" -mindepth 1 -printf '%f\n' | sort | xargs)
expected_records="created-group-conveyor created-user-conveyor"
[[ $had_render == no ]] && expected_records="created-group-conveyor created-group-render created-user-conveyor"
[[ $records == "$expected_records" ]] || fail "$pkg_state holds '$records', not '$expected_records'"
step "records in $pkg_state: $records"

err=$(systemd-analyze verify /lib/systemd/system/conveyord.service 2>&1 >/dev/null) \
  || fail "systemd-analyze verify: $err"
[[ -z $err ]] || fail "systemd-analyze verify printed: $err"

out=$(/usr/bin/conveyord --version) || fail "conveyord --version"
[[ $out == *"$version"* ]] || fail "conveyord --version says '$out', package is $version"
/usr/bin/conveyorctl --help >/dev/null || fail "conveyorctl --help"

# Every library a binary names (NEEDED) must come from a package, or a name it Provides,
# that Depends lists.
depends=$(dpkg-deb -f "$deb" Depends)
in_depends() { [[ ", $depends," == *", $1 "* || ", $depends," == *", $1,"* ]]; }
for bin in /usr/bin/conveyord /usr/bin/conveyorctl; do
  for lib in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
    path=$(ldd "$bin" | awk -v l="$lib" '{n = split($1, a, "/")} a[n] == l {print ($2 == "=>" ? $3 : $1)}')
    # dpkg knows a file by the path its package ships (/lib or /usr/lib under merged /usr).
    real=$(readlink -f "$path")
    pkg=$({ dpkg -S "$path" "$real" "${real#/usr}" 2>/dev/null || true; } | head -1 | cut -d: -f1)
    [[ -n $pkg ]] || fail "$lib ($path) belongs to no package"
    found=no
    for name in $pkg $(dpkg-query -W -f='${Provides}' "$pkg" | sed 's/([^)]*)//g; s/,/ /g'); do
      if in_depends "$name"; then found=yes; fi
    done
    [[ $found == yes ]] || fail "$bin needs $lib from $pkg, which Depends lacks: $depends"
  done
done
in_depends adduser || fail "Depends lacks adduser: $depends"
step "Depends: $depends"

dpkg -i "$deb" >/dev/null || fail "dpkg -i over the installed package (postinst not idempotent?)"
step "reinstalled"

echo "# changed" >>/etc/conveyor/conveyord.toml  # a changed conffile must go on purge too
dpkg --purge conveyor >/dev/null || fail "dpkg --purge"
trap - EXIT
for f in /usr/bin/conveyord /usr/bin/conveyorctl /lib/systemd/system/conveyord.service \
    /etc/conveyor /var/lib/conveyor "$pkg_state" /usr/share/doc/conveyor; do
  [[ ! -e $f ]] || fail "$f is left after purge"
done
getent passwd conveyor >/dev/null && fail "user conveyor is left after purge"
getent group conveyor >/dev/null && fail "group conveyor is left after purge"
if [[ $had_render == no ]] && getent group render >/dev/null; then
  fail "group render, created by postinst, is left after purge"
fi
step "purged: no files, user or group left"

tests/package/deb_daemon_user_test.sh "$deb"
step "passed in $((SECONDS - start)) s"
