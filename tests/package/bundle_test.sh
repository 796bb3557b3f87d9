#!/usr/bin/env bash
# The portable bundle end to end: build it (`bundle` target of a build dir, build/cpu by
# default), unpack it, check that every library outside glibc and the GCC runtime comes
# from its lib/, then run the bundled conveyord (CPU worker) and transcode a clip with the
# bundled conveyorctl.   tests/package/bundle_test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(readlink -f "${1:-build/cpu}")
fail() { echo "bundle_test: FAIL: $*" >&2; exit 1; }
step() { echo "bundle_test: $*"; }

tmp=$(mktemp -d -t conveyor-bundle.XXXXXX)  # under $TMPDIR, else /tmp
daemon=
cleanup() {
  [[ -n $daemon ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

start=$SECONDS
cmake --build "$build" --target bundle >"$tmp/build.log" 2>&1 \
  || { tail -30 "$tmp/build.log"; fail "building the bundle in $build"; }
tarball=$(ls -t "$build"/conveyor-bundle-*-x86_64.tar.gz | head -1)
step "built $(basename "$tarball") ($(du -h "$tarball" | cut -f1)) in $((SECONDS - start)) s"

tar -C "$tmp" -xzf "$tarball"
dir=$tmp/$(basename "$tarball" .tar.gz)
for f in bin/conveyord bin/conveyorctl conveyord conveyorctl conveyord.toml conveyord.service lib; do
  [[ -e $dir/$f ]] || fail "the bundle lacks $f"
done

# Only the host's glibc and GCC runtime may resolve outside the bundle.
host_libs='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libstdc\+\+|libgcc_s)\.so'
for bin in "$dir/bin/conveyord" "$dir/bin/conveyorctl"; do
  while read -r soname _ path _; do
    [[ $soname =~ $host_libs ]] && continue
    [[ $path == "$dir/lib/"* ]] || fail "$(basename "$bin") takes $soname from $path, not the bundle"
  done < <(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$dir/lib" ldd "$bin" | grep '=>')
done
step "$(ls "$dir/lib" | wc -l) libraries in lib/, $(du -sh "$dir" | cut -f1) unpacked"

cd "$dir"
out=$(env -i PATH=/usr/bin:/bin ./conveyord --version) || fail "./conveyord --version"
step "$out"
ln -s "$dir/conveyorctl" "$tmp/ctl-link"  # the launchers follow symlinks to the bundle
"$tmp/ctl-link" --help >/dev/null || fail "conveyorctl through a symlink"

ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25 -t 1 -c:v libx264 \
  -pix_fmt yuv420p -movflags +faststart "$tmp/clip.mp4"  # moov first: it is streamed
sock=$tmp/conveyord.sock
env -i PATH=/usr/bin:/bin ./conveyord --config "" --listen "unix:$sock" --workers cpu \
  --metrics-listen "" 2>"$tmp/conveyord.log" &
daemon=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { cat "$tmp/conveyord.log"; fail "conveyord did not listen on $sock"; }
grep -q " $dir/lib/libavcodec" "/proc/$daemon/maps" \
  || fail "the running conveyord did not load the bundle's libavcodec"

env -i PATH=/usr/bin:/bin ./conveyorctl --target "unix:$sock" transcode "$tmp/clip.mp4" \
  -o "$tmp/out.mkv" --container mkv --no-progress-bar >/dev/null || fail "conveyorctl transcode"
got=$(ffprobe -v error -select_streams v:0 -count_frames \
  -show_entries stream=codec_name,nb_read_frames -of csv=p=0 "$tmp/out.mkv")
[[ $got == mjpeg,25 ]] || fail "expected 25 mjpeg frames, ffprobe says '$got'"
step "transcoded the clip: $got"

kill -TERM "$daemon"
wait "$daemon" || { rc=$?; cat "$tmp/conveyord.log"; fail "conveyord exited with $rc on SIGTERM"; }
daemon=
step "passed in $((SECONDS - start)) s"
