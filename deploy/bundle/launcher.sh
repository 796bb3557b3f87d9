#!/bin/sh
# Bundle launcher, installed as `conveyord` and `conveyorctl` at the bundle's top level:
# runs bin/<its own name> with the bundle's lib/ ahead of the host's libraries.
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$here/bin/$(basename "$(readlink -f "$0")")" "$@"
