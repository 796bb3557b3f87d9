#!/usr/bin/env bash
# The man pages of a build dir (BUILD/man, target man_pages) against the programs they
# describe:
#   - each page formats without a warning from man (the check lintian makes);
#   - conveyord(8), conveyorctl(1) and conveyor-doctor(8) name every flag and command that
#     the program's --help lists, and document no other (conveyord(8) with the same value
#     names as --help, and its commands with the flags of their own --help);
#   - conveyord.toml(5) lists every key of `conveyord --print-config`, with its default.
# Needs no root.
#   tests/package/man_pages_test.sh [BUILD_DIR]   (deb_test.sh runs it on the build it packages)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(readlink -f "${1:-build/cpu}")
fail() { echo "man_pages_test: FAIL: $*" >&2; exit 1; }
step() { echo "man_pages_test: $*"; }

conveyord=$build/daemon/conveyord
conveyorctl=$build/daemon/ctl/conveyorctl
doctor=$build/daemon/doctor/conveyor-doctor
for f in "$conveyord" "$conveyorctl" "$doctor"; do [[ -x $f ]] || fail "no $f (build it first)"; done
for page in conveyord.8 conveyord.toml.5 conveyorctl.1 conveyor-doctor.8; do
  [[ -f $build/man/$page.gz ]] || fail "no $build/man/$page.gz (build the target man_pages)"
  warnings=$(man --warnings -E UTF-8 -l -Tutf8 -Z "$build/man/$page.gz" 2>&1 >/dev/null) \
    || fail "man cannot format $page: $warnings"
  [[ -z $warnings ]] || fail "man warns about $page: $warnings"
done

# The page as text, in ASCII and wide enough that no tag wraps.
render() { LC_ALL=C MANWIDTH=250 man -l "$build/man/$1.gz" 2>/dev/null | col -bx; }
# The tag lines (.TP) of section $2 of page $1, as "word word ...".
tags() {
  render "$1" | awk -v section="$2" '
    /^[A-Z]/ { inside = ($0 == section); next }
    inside && /^       [^ ]/ { sub(/^ +/, ""); print }'
}
# The flags that lines of --help name in their option column: "  -o,--output X" gives -o
# and --output.
help_flags() {
  sed -n 's/^  \(-[^ ]*\).*/\1/p' | tr ',' '\n' | grep -E '^--?[A-Za-z]' | sort -u
}
# The flags that tag lines name: --name or -x at the start or after "[" or ", ".
tag_flags() {
  grep -oE '(^|\[|, )--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^\[//; s/^, //' | sort -u
}
same_sets() {  # same_sets WHAT DOCUMENTED ACTUAL
  local missing extra
  missing=$(comm -13 <(echo "$2") <(echo "$3") | xargs)
  extra=$(comm -23 <(echo "$2") <(echo "$3") | xargs)
  [[ -z $missing ]] || fail "$1: not in the man page: $missing"
  [[ -z $extra ]] || fail "$1: in the man page but not in --help: $extra"
}

# conveyord(8): OPTIONS against --help, each flag with its value name; COMMANDS against the
# commands the help's footer shows ("  conveyord doctor [--help]").
help=$("$conveyord" --help)
documented=$(tags conveyord.8 OPTIONS | sed 's/^\([^ ]*\) \([^ ]*\).*/\1 \2/' | sort)
# The option column of "  --listen ADDR ...   Addresses to ..." is "--listen ADDR".
actual=$(while IFS= read -r line; do
  [[ $line == "  --"* ]] || continue
  line=${line#  }
  line=${line%%  *}
  echo "${line% ...}"
done <<<"$help" | sort)
[[ $(wc -l <<<"$actual") -ge 20 ]] || fail "could not read the flags of conveyord --help"
documented_flags=$(tags conveyord.8 OPTIONS | tag_flags)
same_sets "conveyord flags" "$documented_flags" "$(help_flags <<<"$help")"
while read -r flag value; do
  [[ -z $value ]] && continue
  grep -qxF -e "$flag $value" <<<"$documented" \
    || fail "conveyord(8) shows $flag with another value name than --help's '$value'"
done <<<"$actual"
# COMMANDS: at least those the help's footer shows ("  conveyord doctor [--help]"), each one
# a command that answers --help, with the flags of that help.
commands=$(tags conveyord.8 COMMANDS | cut -d' ' -f1 | sort -u)
missing=$(comm -13 <(echo "$commands") <(sed -n 's/^  conveyord \([a-z][a-z-]*\).*/\1/p' <<<"$help" | sort -u) | xargs)
[[ -z $missing ]] || fail "conveyord commands: not in the man page: $missing"
command_help=
for c in $commands; do
  out=$("$conveyord" "$c" --help 2>&1) || out=$help
  [[ $out != "$help" ]] || fail "conveyord(8) shows a command '$c' that conveyord does not take"
  command_help+=$'\n'$out
done
same_sets "conveyord command flags" "$(tags conveyord.8 COMMANDS | tag_flags)" \
  "$(help_flags <<<"$command_help")"
step "conveyord(8): $(wc -l <<<"$documented_flags") flags; commands: $(xargs <<<"$commands")"

# conveyorctl(1): the global flags, the commands and each command's flags.
help=$("$conveyorctl" --help)
commands=$(sed -n '/^Subcommands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$help" | sort -u)
[[ -n $commands ]] || fail "could not read the commands of conveyorctl --help"
same_sets "conveyorctl commands" "$(tags conveyorctl.1 COMMANDS | cut -d' ' -f1 | sort -u)" "$commands"
all_help=$help
for c in $commands; do all_help+=$'\n'$("$conveyorctl" "$c" --help); done
documented_flags=$( { tags conveyorctl.1 OPTIONS; tags conveyorctl.1 COMMANDS; tags conveyorctl.1 "TRANSCODE OPTIONS";
  tags conveyorctl.1 "THUMBNAILS OPTIONS"; } | tag_flags)
same_sets "conveyorctl flags" "$documented_flags" "$(help_flags <<<"$all_help")"
step "conveyorctl(1): $(wc -l <<<"$documented_flags") flags, commands: $(xargs <<<"$commands")"

# conveyor-doctor(8): its usage lists the flags but not -h/--help, which it takes too.
help=$("$doctor" --help)
documented_flags=$(tags conveyor-doctor.8 OPTIONS | tag_flags)
same_sets "conveyor-doctor flags" "$documented_flags" "$( { help_flags <<<"$help"; printf '%s\n' -h --help; } | sort -u)"
step "conveyor-doctor(8): $(wc -l <<<"$documented_flags") flags"

# conveyord.toml(5): "key = default" under "[table]", as --print-config writes the defaults.
defaults=$("$conveyord" --config "" --print-config |
  awk '/^\[/ { table = $0; next } /^[a-z_]+ = / { sub(/  # .*/, ""); print table " " $0 }' | sort)
documented=$(render conveyord.toml.5 | awk '
  /^[A-Z]/ { inside = ($0 == "KEYS"); next }
  inside && /^   \[/ { sub(/^ +/, ""); table = $0; next }
  inside && /^       [a-z_]+ = / { sub(/^ +/, ""); print table " " $0 }' | sort)
[[ $(wc -l <<<"$defaults") -ge 30 ]] || fail "could not read conveyord --print-config"
if [[ $documented != "$defaults" ]]; then
  fail "conveyord.toml(5) and --print-config differ (< man page, > --print-config):
$(diff <(echo "$documented") <(echo "$defaults") || true)"
fi
step "conveyord.toml(5): $(wc -l <<<"$defaults") keys with their defaults"
