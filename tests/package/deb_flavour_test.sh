#!/usr/bin/env bash
# One flavour of the Debian package replacing another, as root. The flavours
# (conveyor-cpu, conveyor-amd, conveyor-nvidia) ship the same files and each Provides,
# Conflicts with and Replaces conveyor. From DEB this makes a stand-in for another flavour
# (the same contents under another package name), installs DEB, enables the unit as
# `systemctl enable` would and changes the config, then installs the other one, which must
# remove DEB and keep the user, the groups, the records, the changed config and the enabled
# unit. Purging what is left of DEB must keep them too; purging the other one then leaves
# nothing. Leaves the host as it found it.
#   tests/package/deb_flavour_test.sh DEB   (deb_test.sh runs it with the .deb it built)
set -euo pipefail
deb=$(readlink -f "${1:?usage: deb_flavour_test.sh DEB}")
fail() { echo "deb_flavour_test: FAIL: $*" >&2; exit 1; }
step() { echo "deb_flavour_test: $*"; }

[[ $EUID -eq 0 ]] || fail "must run as root (it installs and purges the package)"
[[ -f $deb ]] || fail "no $deb"
package=$(dpkg-deb -f "$deb" Package)
case $package in
  conveyor-nvidia) other=conveyor-cpu ;;
  conveyor-*) other=conveyor-nvidia ;;
  *) fail "$deb is package '$package', not a flavour conveyor-FLAVOUR" ;;
esac
readonly package other  # what the traps purge
for p in "$package" "$other"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv not-installed; then
    fail "package $p is installed here; run 'dpkg --purge $p' first"
  fi
done
getent passwd conveyor >/dev/null && fail "user conveyor already exists; remove it first"
getent group conveyor >/dev/null && fail "group conveyor already exists; remove it first"
had_render=$(getent group render >/dev/null && echo yes || echo no)

scratch=$(mktemp -d)
cleanup() {
  dpkg --purge "$other" "$package" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# The stand-in: DEB's files and scripts, its docs moved to the other name.
dpkg-deb -R "$deb" "$scratch/root"
others=$(printf '%s\n' conveyor-cpu conveyor-amd conveyor-nvidia | grep -vx "$other" | paste -sd, | sed 's/,/, /g')
sed -i "s/^Package: .*/Package: $other/; s/^Replaces: .*/Replaces: conveyor, $others/" "$scratch/root/DEBIAN/control"
mv "$scratch/root/usr/share/doc/$package" "$scratch/root/usr/share/doc/$other"
sed -i "s|usr/share/doc/$package/|usr/share/doc/$other/|" "$scratch/root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -b "$scratch/root" "$scratch/$other.deb" >/dev/null
[[ $(dpkg-deb -f "$scratch/$other.deb" Provides) == conveyor ]] || fail "the stand-in does not provide conveyor"

status() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo not-installed; }
records=/var/lib/conveyor-package
wants=/etc/systemd/system/multi-user.target.wants/conveyord.service
mask=/etc/systemd/system/conveyord.service
dsh_state=/var/lib/systemd/deb-systemd-helper-enabled/conveyord.service.dsh-also

dpkg -i "$deb" >/dev/null || fail "dpkg -i $package"
mkdir -p "$(dirname "$wants")"
ln -s /lib/systemd/system/conveyord.service "$wants"
echo "# changed here" >>/etc/conveyor/conveyord.toml
user_before=$(getent passwd conveyor)
records_before=$(cd "$records" && grep -r . | sort)
step "installed $package: enabled, config changed"

dpkg -i "$scratch/$other.deb" >/dev/null 2>"$scratch/dpkg.err" || { cat "$scratch/dpkg.err"; fail "dpkg -i $other over $package"; }
[[ $(status "$other") == installed ]] || fail "$other is not installed: $(status "$other")"
[[ $(status "$package") != installed ]] || fail "$package is still installed beside $other"
check_kept() {  # check_kept WHEN
  [[ -x /usr/bin/conveyord && -f /lib/systemd/system/conveyord.service ]] || fail "$1: the binaries or the unit are gone"
  [[ $(getent passwd conveyor) == "$user_before" ]] || fail "$1: user conveyor changed or went: $(getent passwd conveyor || true)"
  getent group conveyor >/dev/null || fail "$1: group conveyor is gone"
  [[ $(cd "$records" 2>/dev/null && grep -r . | sort) == "$records_before" ]] || fail "$1: the records in $records changed"
  grep -qx '# changed here' /etc/conveyor/conveyord.toml || fail "$1: the changed config is lost"
  dpkg-query --showformat='${Conffiles}' -W "$other" | grep -q '^ /etc/conveyor/conveyord.toml ' \
    || fail "$1: /etc/conveyor/conveyord.toml is not a conffile of $other"
  [[ -L $wants ]] || fail "$1: the unit is no longer enabled ($wants is gone)"
  [[ ! -e $mask && ! -L $mask ]] || fail "$1: the unit is masked ($mask)"
  [[ -f $dsh_state ]] || fail "$1: deb-systemd-helper's state for the unit is gone"
}
check_kept "$other replacing $package"
step "installed $other: $package is $(status "$package"), user, groups, records, config and unit kept"

dpkg --purge "$package" >/dev/null 2>"$scratch/dpkg.err" || { cat "$scratch/dpkg.err"; fail "dpkg --purge $package"; }
check_kept "purging $package after $other replaced it"
step "purged $package: $other keeps all"

dpkg --purge "$other" >/dev/null || fail "dpkg --purge $other"
for f in /usr/bin/conveyord /etc/conveyor /var/lib/conveyor "$records" "$wants" "$mask" "$dsh_state"; do
  [[ ! -e $f && ! -L $f ]] || fail "$f is left after purging $other"
done
getent passwd conveyor >/dev/null && fail "user conveyor is left after purging $other"
getent group conveyor >/dev/null && fail "group conveyor is left after purging $other"
if [[ $had_render == no ]] && getent group render >/dev/null; then
  fail "group render, which the package created, is left after purging $other"
fi
trap - EXIT
cleanup
step "purged $other: nothing left"
