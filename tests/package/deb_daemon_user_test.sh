#!/usr/bin/env bash
# The Debian package against its own daemon user, as root. StateDirectory= hands
# /var/lib/conveyor to the user `conveyor`, so the maintainer scripts must trust nothing there.
# Playing that user turned hostile, this plants there what the earlier scripts read and wrote
# (a marker .created-group-GROUP made purge delete GROUP; postinst wrote it with `touch`):
#   1. a symlink where postinst writes the render marker, then postinst creates render again:
#      nothing may be written through the link, and purge still removes the groups and the
#      user that the package created (run only where the host has no render group of its own,
#      so that the package creates it);
#   2. markers claiming the package made render and video, where the host had both (render
#      made here as udev makes it, when the host has none): purge must keep both.
# Leaves the host as it found it: purges, and puts back any group a purge wrongly deleted.
#   tests/package/deb_daemon_user_test.sh DEB   (deb_test.sh runs it with the .deb it built)
set -euo pipefail
deb=$(readlink -f "${1:?usage: deb_daemon_user_test.sh DEB}")
fail() { echo "deb_daemon_user_test: FAIL: $*" >&2; exit 1; }
step() { echo "deb_daemon_user_test: $*"; }
# Checks of what the daemon user achieved note it and go on, so that one run shows them all.
breaches=0
breach() { echo "deb_daemon_user_test: FAIL: $*" >&2; breaches=$((breaches + 1)); }

[[ $EUID -eq 0 ]] || fail "must run as root (it installs and purges the package)"
[[ -f $deb ]] || fail "no $deb"
package=$(dpkg-deb -f "$deb" Package)  # conveyor-cpu, conveyor-amd or conveyor-nvidia
readonly package  # what the traps purge
if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q installed; then
  fail "package $package is already installed here; run 'dpkg --purge $package' first"
fi
getent passwd conveyor >/dev/null && fail "user conveyor already exists; remove it first"
getent group conveyor >/dev/null && fail "group conveyor already exists; remove it first"
video_before=$(getent group video) || fail "no group video here (base-passwd makes it)"
render_before=$(getent group render || true)
scratch=$(mktemp -d)
target=$scratch/written-through-symlink

# restore_group NAME LINE: make group NAME what `getent group` printed before (LINE, or none).
restore_group() {
  local name=$1 before=$2 gid members
  if [[ -z $before ]]; then
    if getent group "$name" >/dev/null; then
      groupdel "$name" && echo "deb_daemon_user_test: removed group $name, which this run made" >&2
    fi
  elif ! getent group "$name" >/dev/null; then
    IFS=: read -r _ _ gid members <<<"$before"
    groupadd -g "$gid" "$name"
    if [[ -n $members ]]; then gpasswd -M "$members" "$name" >/dev/null; fi
    echo "deb_daemon_user_test: put back group $name ($before)" >&2
  fi
}
cleanup() {
  dpkg --purge "$package" >/dev/null 2>&1 || true
  rm -rf "$scratch"
  if getent passwd conveyor >/dev/null; then userdel conveyor || true; fi
  restore_group conveyor ""
  restore_group render "$render_before"
  restore_group video "$video_before"
}
trap cleanup EXIT

# What StateDirectory= does when the service starts (there is no systemd here).
hand_over_state_dir() {
  mkdir -p /var/lib/conveyor
  chown conveyor:conveyor /var/lib/conveyor
  chmod 0755 /var/lib/conveyor
}
as_daemon_user() { runuser -u conveyor -- "$@"; }
check_purged() {  # check_purged SCENARIO
  getent passwd conveyor >/dev/null && breach "$1: purge left user conveyor, which postinst created"
  getent group conveyor >/dev/null && breach "$1: purge left group conveyor, which postinst created"
  if ! video_after=$(getent group video); then
    breach "$1: purge deleted group video (base-passwd's), which a marker of the daemon user claimed"
  elif [[ $video_after != "$video_before" ]]; then
    breach "$1: purge changed group video: '$video_before' -> '$video_after'"
  fi
  return 0
}

if [[ -n $render_before ]]; then
  step "1: skipped: this host has a group render, so postinst never creates one"
else
  dpkg -i "$deb" >/dev/null || fail "dpkg -i"
  hand_over_state_dir
  # shellcheck disable=SC2016  # $1 is the inner shell's argument
  as_daemon_user sh -eu -c 'cd /var/lib/conveyor
    touch .created-group-video
    rm -f .created-group-render
    ln -s "$1" .created-group-render' sh "$target" || fail "1: planting as user conveyor"
  # render goes missing (a container without udev, a hand cleanup); configure makes it again.
  groupdel render || fail "groupdel render"
  dpkg -i "$deb" >/dev/null || fail "1: dpkg -i over the installed package"
  [[ -e $target ]] && breach "1: postinst wrote through the symlink the daemon user planted in /var/lib/conveyor"
  getent group render >/dev/null || fail "1: postinst did not create group render again"
  dpkg --purge "$package" >/dev/null || fail "1: dpkg --purge"
  [[ -e $target ]] && breach "1: a maintainer script wrote through the planted symlink"
  getent group render >/dev/null && breach "1: purge left group render, which postinst created"
  check_purged 1
  step "1: planted symlink and video marker, render made by postinst: checked"
fi

if ! getent group render >/dev/null; then
  groupadd --system render || fail "groupadd --system render"  # as udev makes it
fi
render_host=$(getent group render)
dpkg -i "$deb" >/dev/null || fail "2: dpkg -i"
hand_over_state_dir
as_daemon_user sh -eu -c 'cd /var/lib/conveyor; touch .created-group-render .created-group-video' \
  || fail "2: planting as user conveyor"
dpkg --purge "$package" >/dev/null || fail "2: dpkg --purge"
if ! render_after=$(getent group render); then
  breach "2: purge deleted the host's group render, which a marker of the daemon user claimed"
elif [[ $render_after != "$render_host" ]]; then
  breach "2: purge changed group render: '$render_host' -> '$render_after'"
fi
check_purged 2
if [[ -z $render_before ]]; then groupdel render || true; fi  # the one made here, if purge left it
step "2: markers for the host's render and video: checked"

((breaches == 0)) || fail "$breaches check(s) failed (see above)"
trap - EXIT
cleanup
step "the daemon user cannot make purge delete a group or root write through a link"
