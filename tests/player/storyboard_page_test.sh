#!/bin/bash
# conveyorctl thumbnails' sprites and thumbnails.vtt in a real player page: conveyord makes
# a storyboard of a testsrc2 clip, and headless Chromium loads tests/player/storyboard.html
# on it; storyboard_page_check.py checks from the page's DOM and a screenshot that the
# tile the index names for a time shows under the seek bar.
# Usage: storyboard_page_test.sh CONVEYORD CONVEYORCTL
set -euo pipefail
conveyord=$1
conveyorctl=$2
here=$(cd "$(dirname "$0")" && pwd)
chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
  echo "storyboard_page_test: chromium is not installed (deploy/install-deps.sh --test installs it)" >&2
  exit 1
fi
work=$(mktemp -d -t conveyor-player.XXXXXX)  # under $TMPDIR, else /tmp
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# 43 s at a thumbnail every 5 s: 9 cells, a full 3x2 sprite and a second with 3 black cells.
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=640x360:rate=25 -t 43 -c:v libx264 -preset veryfast \
  -g 50 -pix_fmt yuv420p "$work/in.mp4"
"$conveyord" --config "" --listen "unix:$work/c.sock" --metrics-listen "" >"$work/conveyord.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $work/c.sock ]] && break; sleep 0.1; done
"$conveyorctl" --target "unix:$work/c.sock" thumbnails "$work/in.mp4" --every 5s --tile 3x2 --size 160x90 \
  -o "$work/thumbs"
ls "$work/thumbs"
[[ -f $work/thumbs/sprite_1.jpg && -f $work/thumbs/sprite_2.jpg && ! -e $work/thumbs/sprite_3.jpg ]] || {
  echo "storyboard_page_test: expected sprite_1.jpg and sprite_2.jpg only" >&2
  exit 1
}
# The first cue, one in the middle of the second row, the first of sprite 2 and the last.
python3 "$here/storyboard_page_check.py" --dir "$work/thumbs" --chromium "$chromium" --ffmpeg ffmpeg \
  --times 2,27.5,30,44
