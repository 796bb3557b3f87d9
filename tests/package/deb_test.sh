#!/usr/bin/env bash
# The Debian package end to end, as root: build it with cpack from a build dir (build/cpu by
# default), check its changelog, man pages (man_pages_test.sh) and lintian's verdict
# (lintian_test.sh), install it, check files, conffile, user, groups, unit, Depends and the
# binaries, install it again (an upgrade), remove it (the unit stays enabled, masked) and
# install it again, purge it and check nothing is left. Always purges on exit.
# Then deb_daemon_user_test.sh puts the same .deb against a hostile daemon user, and
# deb_flavour_test.sh lets another flavour replace it.
#   tests/package/deb_test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(readlink -f "${1:-build/cpu}")
fail() { echo "deb_test: FAIL: $*" >&2; exit 1; }
step() { echo "deb_test: $*"; }

[[ $EUID -eq 0 ]] || fail "must run as root (it installs and purges the package); CI runs as root"
for p in conveyor conveyor-cpu conveyor-amd conveyor-nvidia; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv not-installed; then
    fail "package $p is installed here; run 'dpkg --purge $p' first"
  fi
done
getent passwd conveyor >/dev/null && fail "user conveyor already exists; remove it first"
getent group conveyor >/dev/null && fail "group conveyor already exists; remove it first"
had_render=$(getent group render >/dev/null && echo yes || echo no)
pkg_state=/var/lib/conveyor-package  # what the package created, recorded by root only
[[ -e $pkg_state || -L $pkg_state ]] && fail "$pkg_state is left from an earlier install; remove it first"

start=$SECONDS
cmake --build "$build" --target conveyord conveyorctl conveyor-doctor man_pages debian_changelog \
  >"$build/deb_test-build.log" 2>&1 \
  || { tail -30 "$build/deb_test-build.log"; fail "building the binaries and man pages in $build"; }
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { cat "$build/cpack.log"; fail "cpack -G DEB"; }
grep -i warn "$build/cpack.log" && fail "cpack printed warnings (see above)"
config_value() { sed -n "s/^set($1 \"\\(.*\\)\")\$/\\1/p" "$build/CPackConfig.cmake"; }
version=$(config_value CPACK_PACKAGE_VERSION)
package=$(config_value CPACK_PACKAGE_NAME)  # conveyor-cpu, conveyor-amd or conveyor-nvidia
[[ $package =~ ^conveyor-(cpu|amd|nvidia)$ ]] || fail "package name '$package' does not say the flavour"
readonly package  # what the traps purge: never a library's package
deb=$build/${package}_${version}_amd64.deb
[[ -f $deb ]] || fail "no $deb"
step "built $(basename "$deb") ($(du -h "$deb" | cut -f1)) in $((SECONDS - start)) s"

changelog_version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
[[ $changelog_version == "$version" ]] \
  || fail "deploy/debian/changelog's latest entry is $changelog_version, the package $version: add an entry"
# One flavour replaces another (deb_flavour_test.sh): Replaces names the other two.
for field in Provides Conflicts; do
  [[ $(dpkg-deb -f "$deb" "$field") == conveyor ]] || fail "$field is not 'conveyor': $(dpkg-deb -f "$deb" "$field")"
done
others=$(printf '%s\n' conveyor-cpu conveyor-amd conveyor-nvidia | grep -vx "$package" | paste -sd, | sed 's/,/, /g')
[[ $(dpkg-deb -f "$deb" Replaces) == "conveyor, $others" ]] \
  || fail "Replaces is not 'conveyor, $others': $(dpkg-deb -f "$deb" Replaces)"

tests/package/man_pages_test.sh "$build"
tests/package/lintian_test.sh "$deb"

# The three binaries, their man pages, the unit, the config and the docs: no tests or
# benchmarks.
doc=./usr/share/doc/$package
expected="./etc/conveyor/conveyord.toml
./lib/systemd/system/conveyord.service
./usr/bin/conveyor-doctor
./usr/bin/conveyorctl
./usr/bin/conveyord
$doc/README.md
$doc/changelog.gz
$doc/copyright
./usr/share/man/man1/conveyorctl.1.gz
./usr/share/man/man5/conveyord.toml.5.gz
./usr/share/man/man8/conveyor-doctor.8.gz
./usr/share/man/man8/conveyord.8.gz"
actual=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sort)
[[ $actual == "$expected" ]] || fail "package files differ from the expected list:
$(diff <(echo "$expected") <(echo "$actual"))"

trap 'dpkg --purge "$package" >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null || fail "dpkg -i"
step "installed"

for f in /usr/bin/conveyord /usr/bin/conveyorctl /usr/bin/conveyor-doctor \
    /lib/systemd/system/conveyord.service /etc/conveyor/conveyord.toml /usr/share/doc/"$package"/README.md; do
  [[ -f $f ]] || fail "missing $f"
done
dpkg-query --showformat='${Conffiles}' -W "$package" | grep -q '^ /etc/conveyor/conveyord.toml ' \
  || fail "/etc/conveyor/conveyord.toml is not a conffile"
for page in conveyord.8 conveyord.toml.5 conveyorctl.1 conveyor-doctor.8; do
  name=${page%.*}
  [[ $(man -w "${page##*.}" "$name" 2>/dev/null) == /usr/share/man/man${page##*.}/$page.gz ]] \
    || fail "man ${page##*.} $name does not find /usr/share/man/man${page##*.}/$page.gz"
done

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
/usr/bin/conveyor-doctor --help >/dev/null || fail "conveyor-doctor --help"

# Every library a binary names (NEEDED) must come from a package, or a name it Provides,
# that Depends lists.
depends=$(dpkg-deb -f "$deb" Depends)
in_depends() { [[ ", $depends," == *", $1 "* || ", $depends," == *", $1,"* ]]; }
for bin in /usr/bin/conveyord /usr/bin/conveyorctl /usr/bin/conveyor-doctor; do
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

# The unit as `systemctl enable` leaves it. A remove stops the daemon but does not disable
# it: the link stays, and deb-systemd-helper masks the unit until the package is back.
wants=/etc/systemd/system/multi-user.target.wants/conveyord.service
mask=/etc/systemd/system/conveyord.service
dsh_state=/var/lib/systemd/deb-systemd-helper-enabled/conveyord.service.dsh-also
mkdir -p "$(dirname "$wants")"
ln -s /lib/systemd/system/conveyord.service "$wants"
[[ -f $dsh_state ]] || fail "postinst left no deb-systemd-helper state ($dsh_state)"
dpkg -r "$package" >/dev/null || fail "dpkg -r"
[[ -L $wants ]] || fail "remove disabled the unit ($wants is gone)"
[[ $(readlink "$mask") == /dev/null ]] || fail "remove did not mask the unit ($mask)"
[[ -f /etc/conveyor/conveyord.toml ]] || fail "remove took the conffile"
getent passwd conveyor >/dev/null || fail "remove took user conveyor"
dpkg -i "$deb" >/dev/null || fail "dpkg -i after remove"
[[ ! -e $mask && ! -L $mask ]] || fail "installing again left the mask $mask"
[[ -L $wants ]] || fail "installing again lost $wants"
step "removed (still enabled, masked) and installed again (unmasked)"

echo "# changed" >>/etc/conveyor/conveyord.toml  # a changed conffile must go on purge too
dpkg --purge "$package" >/dev/null || fail "dpkg --purge"
trap - EXIT
for f in /usr/bin/conveyord /usr/bin/conveyorctl /usr/bin/conveyor-doctor /lib/systemd/system/conveyord.service \
    /etc/conveyor /var/lib/conveyor "$pkg_state" /usr/share/doc/"$package" /usr/share/man/man8/conveyord.8.gz \
    "$wants" "$mask" "$dsh_state" /var/lib/systemd/deb-systemd-helper-masked/conveyord.service; do
  [[ ! -e $f && ! -L $f ]] || fail "$f is left after purge"
done
getent passwd conveyor >/dev/null && fail "user conveyor is left after purge"
getent group conveyor >/dev/null && fail "group conveyor is left after purge"
if [[ $had_render == no ]] && getent group render >/dev/null; then
  fail "group render, created by postinst, is left after purge"
fi
step "purged: no files, user or group left"

tests/package/deb_daemon_user_test.sh "$deb"
tests/package/deb_flavour_test.sh "$deb"
step "passed in $((SECONDS - start)) s"
