#!/usr/bin/env python3
"""Tests of the Python client (clients/python, imported from the build's tree) against the
real conveyord: media from the ffmpeg CLI, results checked with ffprobe, djpeg and the
ffmpeg CLI itself. One ctest test per case; exit code 77: skipped, with the reason.
    client_cases.py --conveyord BIN --python-path DIR --case NAME
"""

import argparse
import fractions
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback

from client_tools import (CheckFailed, Daemon, Skip, check, close_to, djpeg_size, ffmpeg, log, make_h264,
                          probe_container, probe_frames, require_tools, run, work_dir)

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Ctx:
    def __init__(self, args, tag):
        self.work = work_dir(tag)
        self.daemon_binary = args.conveyord
        try:
            self.daemon = Daemon(args.conveyord, self.work)
        except BaseException:
            self.remove_work()
            raise
        self.target = self.daemon.target

    def remove_work(self):
        """Media, configs and the daemon's log go with the case; CONVEYOR_E2E_KEEP=1 keeps
        them for a look, as in tests/e2e_py."""
        if os.environ.get("CONVEYOR_E2E_KEEP"):
            log("kept %s" % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.work, name)


@case
def frames_selection_vs_ffprobe(ctx, conveyor):
    """start/max_frames and keyframes_only select the frames ffprobe lists; the JPEGs
    decode to the asked size, (W, 0) keeping the aspect ratio."""
    src = make_h264(ctx.path("src.mp4"), 4, size="320x180", gop=25, faststart=True)
    every = probe_frames(src)
    keys = probe_frames(src, "-skip_frame", "nokey")
    check(len(every) == 100 and len(keys) == 4, "ffprobe: %d frames, %d keyframes" % (len(every), len(keys)))

    fr = conveyor.frames(src, target=ctx.target, start=1.5, max_frames=10, size=(160, 0))
    got = list(fr)
    want = [t for t, _ in every if t >= 1.5 - 1e-9][:10]
    log("start=1.5 max_frames=10: pts %s" % [round(t, 3) for t, _ in got])
    check(close_to([t for t, _ in got], want), "pts %s, ffprobe says %s" % ([t for t, _ in got], want))
    check(fr.summary is not None and fr.summary.frames_out == 10, "summary: %s" % fr.summary)
    for k, (_, jpeg) in enumerate(got):
        size = djpeg_size(jpeg, ctx.work, "sel%02d.jpg" % k)
        check(size == (160, 90), "frame %d decodes to %s, want 160x90 (aspect kept)" % (k, size))

    got = list(conveyor.frames(src, target=ctx.target, keyframes_only=True, size=(0, 0)))
    log("keyframes_only: pts %s" % [t for t, _ in got])
    check(close_to([t for t, _ in got], [t for t, _ in keys]), "keyframes %s, ffprobe -skip_frame nokey says %s" %
          ([t for t, _ in got], [t for t, _ in keys]))
    for k, (_, jpeg) in enumerate(got):
        check(djpeg_size(jpeg, ctx.work, "key%02d.jpg" % k) == (320, 180), "keyframe %d is not 320x180" % k)


def ffmpeg_fps_pts(src, rate):
    """pts (seconds) of the frames `ffmpeg -copyts -i SRC -vf fps=RATE` writes."""
    p = run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-copyts", "-i", src, "-vf",
             "fps=%s" % rate, "-f", "framecrc", "-"])
    text = p.stdout.decode()
    num, den = map(int, re.search(r"^#tb 0: (\d+)/(\d+)$", text, re.M).groups())
    return [int(line.split(",")[2]) * num / den for line in text.splitlines() if line and not line.startswith("#")]


@case
def fps_vs_ffmpeg_cli(ctx, conveyor):
    """fps=1 and fps=0.5 give the frames (count and times) of `ffmpeg -copyts -vf fps=R`."""
    src = make_h264(ctx.path("src.mp4"), 6.5, faststart=True)
    for rate, arg in (("1", 1), ("1/2", 0.5), ("30000/1001", "30000/1001")):
        want = ffmpeg_fps_pts(src, rate)
        got = [t for t, _ in conveyor.frames(src, target=ctx.target, fps=arg)]
        log("fps=%s: %d frames (ffmpeg: %d); pts %s" % (rate, len(got), len(want), [round(t, 3) for t in got[:8]]))
        check(close_to(got, want), "fps=%s: %d frames at %s, ffmpeg -vf fps gives %d at %s" %
              (rate, len(got), got[:8], len(want), want[:8]))


@case
def random_access_input(ctx, conveyor):
    """An MP4 whose moov follows mdat is read through seekable input: the daemon asks for
    ranges and spools nothing; a pipe of the same video streams."""
    src = make_h264(ctx.path("moov_at_end.mp4"), 3, faststart=False)
    with open(src, "rb") as f:
        head = f.read(64)
    check(head.find(b"mdat") >= 0 and head.find(b"moov") < 0, "ffmpeg put moov first: %r" % head)
    want = [t for t, _ in probe_frames(src)]
    fr = conveyor.frames(src, target=ctx.target, shared_memory=False)
    got = list(fr)
    log("seekable: %d frames, %d ReadRequests, %d bytes spooled" %
        (len(got), fr.summary.read_requests, fr.summary.spooled_bytes))
    check(close_to([t for t, _ in got], want), "%d frames, ffprobe says %d" % (len(got), len(want)))
    check(fr.summary.read_requests >= 1, "the daemon sent no ReadRequest for a moov at the end")
    check(fr.summary.spooled_bytes == 0, "the daemon spooled %d bytes of a seekable input" % fr.summary.spooled_bytes)

    mkv = ctx.path("src.mkv")
    ffmpeg("-i", src, "-c", "copy", mkv)
    r, w = os.pipe()

    def feed():
        with open(mkv, "rb") as f, os.fdopen(w, "wb") as out:
            out.write(f.read())
    t = threading.Thread(target=feed)
    t.start()
    with os.fdopen(r, "rb", buffering=0) as pipe:
        fr = conveyor.frames(pipe, target=ctx.target)
        streamed = list(fr)
    t.join()
    log("pipe: %d frames, %d ReadRequests" % (len(streamed), fr.summary.read_requests))
    check(close_to([x for x, _ in streamed], want), "a pipe gave %d frames, want %d" % (len(streamed), len(want)))
    check([j for _, j in streamed] == [j for _, j in got], "JPEGs from the pipe differ from those of the file")


@case
def shared_memory_matches_messages(ctx, conveyor):
    """On the unix socket, JPEGs come through the daemon's shared memory, byte for byte
    those that come in messages; from a daemon with shared memory off, in messages."""
    src = make_h264(ctx.path("src.mp4"), 2, size="640x360", faststart=True)
    plain = conveyor.frames(src, target=ctx.target, shared_memory=False, size=(320, 0))
    by_message = list(plain)
    shm = conveyor.frames(src, target=ctx.target, size=(320, 0))  # on by default for unix:
    by_slot = list(shm)
    log("%d JPEGs; %d of %d through slots of %d bytes" % (len(by_message), shm.shared_jpegs, len(by_slot),
                                                           shm.started.shared_memory_output.slot_bytes))
    check(plain.shared_jpegs == 0, "shared_memory=False read %d JPEGs from slots" % plain.shared_jpegs)
    check(shm.started.shared_memory_output.slots > 0, "Started has no shared_memory_output")
    check(shm.shared_jpegs > 0, "no JPEG came through shared memory")
    check(len(by_slot) == len(by_message) == 50, "%d and %d JPEGs, want 50" % (len(by_slot), len(by_message)))
    check(by_slot == by_message, "%d of %d frames differ between slots and messages" %
          (sum(a != b for a, b in zip(by_slot, by_message)), len(by_slot)))

    # A local daemon with shared memory off: the default falls back to messages; asked
    # for explicitly, the daemon's refusal is the error.
    import grpc
    off_dir = os.path.join(ctx.work, "shm_off")
    os.makedirs(off_dir)
    config = os.path.join(off_dir, "conveyord.toml")
    with open(config, "w") as f:
        f.write("[server]\nshared_memory = false\n")
    off = Daemon(ctx.daemon_binary, off_dir, config=config)
    try:
        fallback = conveyor.frames(src, target=off.target, size=(320, 0))
        got = list(fallback)
        log("shared memory off: %d JPEGs, %d through slots" % (len(got), fallback.shared_jpegs))
        check(got == by_message and fallback.shared_jpegs == 0, "the fallback to messages gave other JPEGs")
        try:
            list(conveyor.frames(src, target=off.target, shared_memory=True))
            raise CheckFailed("shared_memory=True on a daemon without it gave no error")
        except conveyor.ConveyorError as e:
            log("shared_memory=True: %s" % e)
            check(e.code == grpc.StatusCode.FAILED_PRECONDITION and "shared_memory_slots" in e.details, str(e))
    finally:
        off.stop()


def top_level_boxes(path):
    """The MP4/MOV's top-level box types in file order, as FFmpeg's demuxer walks them."""
    trace = subprocess.run(["ffprobe", "-v", "trace", path], capture_output=True, text=True).stderr
    return re.findall(r"type:'(....)' parent:'root'", trace)


def packet_sums(path):
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f", "framemd5", "-"],
                         capture_output=True, text=True, check=True).stdout
    return [line.rsplit(",", 1)[-1].strip() for line in out.splitlines() if line and not line.startswith("#")]


@case
def transcode_to_containers(ctx, conveyor):
    """transcode() writes finished Matroska, MOV and AVI files (seekable output) that ffprobe
    reads with the selection's frames and their duration; a pipe gets live Matroska."""
    src = make_h264(ctx.path("src.mp4"), 3, faststart=False)
    for name in ("out.mkv", "out.mov", "out.avi"):
        result = conveyor.transcode(src, ctx.path(name), target=ctx.target, size=(160, 0), max_frames=30)
        fmt, duration, count, codec, w, h = probe_container(ctx.path(name))
        log("%s: %s, duration %s, %d %s frames %dx%d; summary frames_out %d" %
            (name, fmt, duration, count, codec, w, h, result.summary.frames_out))
        check(codec == "mjpeg" and (w, h) == (160, 90), "%s: %s %dx%d" % (name, codec, w, h))
        check(count == 30 and result.summary.frames_out == 30, "%s: %d frames, want 30" % (name, count))
        check(duration is not None and abs(duration - 1.2) < 0.1, "%s: duration %s, want 1.2 s" % (name, duration))
    # A path's MOV has its moov in front (faststart); a file object that cannot be read
    # back keeps it at the end. Both hold the same packets.
    with open(ctx.path("end.mov"), "wb") as write_only:
        conveyor.transcode(src, write_only, target=ctx.target, size=(160, 0), max_frames=30)
    boxes = {name: top_level_boxes(ctx.path(name)) for name in ("out.mov", "end.mov")}
    log("top-level boxes: %s" % boxes)
    check(boxes["out.mov"] == ["ftyp", "moov", "wide", "mdat"], "out.mov: %s, want moov before mdat" % boxes["out.mov"])
    check(boxes["end.mov"] == ["ftyp", "wide", "mdat", "moov"], "end.mov: %s, want moov after mdat" % boxes["end.mov"])
    check(packet_sums(ctx.path("out.mov")) == packet_sums(ctx.path("end.mov")),
          "the faststart MOV's packets differ from the plain one's")
    r, w = os.pipe()
    with os.fdopen(w, "wb") as pipe_out, os.fdopen(r, "rb") as pipe_in:
        got = {}
        reader = threading.Thread(target=lambda: got.setdefault("bytes", pipe_in.read()))
        reader.start()
        conveyor.transcode(src, pipe_out, format="mkv", target=ctx.target, max_frames=10)
        pipe_out.close()
        reader.join()
    with open(ctx.path("live.mkv"), "wb") as f:
        f.write(got["bytes"])
    fmt, duration, count, _, _, _ = probe_container(ctx.path("live.mkv"))
    log("live.mkv (a pipe): %s, duration %s, %d frames" % (fmt, duration, count))
    check(count == 10, "live Matroska: %d frames, want 10" % count)
    check(duration is None, "live Matroska (a pipe) has a duration: %s; it is written without seeking back" % duration)


@case
def close_cancels_the_call(ctx, conveyor):
    """close() on frames() mid-stream ends the daemon's session promptly: the input never
    ends by itself (a pipe held open), so only the cancellation can end it."""
    mkv = ctx.path("src.mkv")
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-t", "20", "-c:v", "libx264",
           "-preset", "ultrafast", "-g", "25", mkv)
    data = open(mkv, "rb").read()
    r, w = os.pipe()
    # Half the file, then nothing until the case ends: the pipe stays open. The writer never
    # blocks (once the call is cancelled nobody reads the pipe), so it stops when asked and
    # the write end can be closed, which ends the client's read of the pipe.
    os.set_blocking(w, False)
    stop = threading.Event()

    def feed(rest):
        while rest and not stop.is_set():
            try:
                rest = rest[os.write(w, rest):]
            except BlockingIOError:
                stop.wait(0.01)

    writer = threading.Thread(target=feed, args=(memoryview(data)[:len(data) // 2],))
    writer.start()
    pipe = os.fdopen(r, "rb", buffering=0)
    client = conveyor.Client(ctx.target)
    try:
        fr = client.frames(pipe, label="pyclient close test", shared_memory=True)
        first = [next(fr) for _ in range(3)]
        live = [s for s in client.list_sessions() if s.client_label == "pyclient close test"]
        log("3 frames at %s; sessions with the label: %d" % ([t for t, _ in first], len(live)))
        check(len(live) == 1, "the session is not listed while frames come: %s" % client.list_sessions())
        t0 = time.monotonic()
        fr.close()
        while any(s.client_label == "pyclient close test" for s in client.list_sessions()):
            check(time.monotonic() - t0 < 5, "the session is still listed 5 s after close()")
            time.sleep(0.02)
        log("the session ended %.3f s after close()" % (time.monotonic() - t0))
        check(fr.summary is None, "a Summary came for a cancelled call")
        try:
            next(fr)
            raise CheckFailed("the closed iterator yielded again")
        except StopIteration:
            pass
    finally:
        stop.set()
        writer.join(10)
        os.close(w)
        pipe.close()
        client.close()


@case
def errors_carry_the_status(ctx, conveyor):
    """A bad spec raises ConveyorError with INVALID_ARGUMENT and the daemon's message naming
    the field (and a failed transcode() leaves no file); a daemon that is not there gives
    UNAVAILABLE; a missing input file and a bad fps fail before any call."""
    import grpc
    src = make_h264(ctx.path("src.mp4"), 1, faststart=True)
    try:
        list(conveyor.frames(src, target=ctx.target, start=-1))
        raise CheckFailed("start=-1 gave no error")
    except conveyor.ConveyorError as e:
        log("start=-1: %s" % e)
        check(e.code == grpc.StatusCode.INVALID_ARGUMENT, "start=-1: %s, want INVALID_ARGUMENT" % e.code)
        check("start_seconds" in e.details, "the message does not name start_seconds: %r" % e.details)
    try:
        conveyor.transcode(src, ctx.path("x.mkv"), target=ctx.target, end=0.5, duration=0.2)
        raise CheckFailed("end and duration together gave no error")
    except conveyor.ConveyorError as e:
        log("end+duration: %s" % e)
        check(e.code == grpc.StatusCode.INVALID_ARGUMENT, "end+duration: %s" % e.code)
    check(not os.path.exists(ctx.path("x.mkv")), "a failed transcode() left its output file")
    try:
        conveyor.frames(ctx.path("missing.mp4"), target=ctx.target)
        raise CheckFailed("frames() of a missing file raised nothing")
    except FileNotFoundError:
        pass
    try:
        list(conveyor.frames(src, target="unix:" + ctx.path("nobody.sock"), timeout=5))
        raise CheckFailed("a missing daemon gave no error")
    except conveyor.ConveyorError as e:
        log("no daemon: %s" % e.code)
        check(e.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), "no daemon: %s" % e)
    for bad in (0, -1, "x"):
        try:
            conveyor.frames(src, target=ctx.target, fps=bad)
            raise CheckFailed("fps=%r was accepted" % (bad,))
        except ValueError:
            pass
    check(conveyor.to_rational(0.5) == conveyor.to_rational("1/2"), "fps 0.5 is not 1/2")
    r = conveyor.to_rational(30000 / 1001)
    check(fractions.Fraction(r.num, r.den) == fractions.Fraction(30000, 1001), "29.97: %d/%d" % (r.num, r.den))


def readme_example(readme):
    """The ```python block under the README's "## Python client" heading."""
    text = open(readme).read()
    m = re.search(r"^## Python client\n(.*?)(?=^## )", text, re.S | re.M)
    check(m, "README.md has no '## Python client' section")
    block = re.search(r"```python\n(.*?)```", m.group(1), re.S)
    check(block, "the README's Python client section has no python code block")
    return block.group(1)


@case
def readme_example_runs(ctx, conveyor):
    """The README's example runs as written, in a directory with an in.mp4, against the
    daemon named by CONVEYOR_TARGET, and leaves the files it says."""
    code = readme_example(os.path.join(os.path.dirname(__file__), "..", "..", "README.md"))
    make_h264(ctx.path("in.mp4"), 66, size="320x180", rate=5, gop=5, faststart=False)
    env = dict(os.environ, CONVEYOR_TARGET=ctx.target, PYTHONPATH=os.path.dirname(os.path.dirname(conveyor.__file__)))
    p = subprocess.run([sys.executable, "-c", code], cwd=ctx.work, env=env, timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log(p.stdout.decode(errors="replace")[-2000:])
    check(p.returncode == 0, "the README's example exited with %d" % p.returncode)
    jpegs = sorted(n for n in os.listdir(ctx.path("frames")))
    check(jpegs, "the example wrote no frames")
    check(djpeg_size(open(ctx.path("frames/" + jpegs[0]), "rb").read(), ctx.work, "readme0.jpg")[0] == 640,
          "the example's first frame is not 640 wide")
    fmt, duration, count, _, _, _ = probe_container(ctx.path("out.mkv"))
    log("example: %d JPEGs (%s..%s); out.mkv: %d frames, %.2f s" % (len(jpegs), jpegs[0], jpegs[-1], count, duration))
    check(count == 50, "out.mkv: %d frames, want 10 s at 5 fps" % count)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conveyord", required=True)
    ap.add_argument("--python-path", required=True, help="where the built conveyor package lies")
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    args = ap.parse_args()
    ctx = None
    try:
        require_tools()
        sys.path.insert(0, args.python_path)
        import conveyor
        check(os.path.dirname(os.path.dirname(os.path.abspath(conveyor.__file__))) == os.path.abspath(args.python_path),
              "imported conveyor from %s, not from %s" % (conveyor.__file__, args.python_path))
        ctx = Ctx(args, args.case)
        CASES[args.case](ctx, conveyor)
        log("PASS %s" % args.case)
        return 0
    except Skip as e:
        log("SKIP %s: %s" % (args.case, e))
        return 77
    except Exception:
        traceback.print_exc()
        if ctx is not None:
            log("conveyord log:\n" + ctx.daemon.log_tail())
        log("FAIL %s" % args.case)
        return 1
    finally:
        if ctx is not None:
            ctx.daemon.stop()
            ctx.remove_work()


if __name__ == "__main__":
    sys.exit(main())
