"""End-to-end cases of damaged container input, each held to the ffmpeg CLI on the same bytes.

H.264 clips in Matroska, MP4 (faststart) and MPEG-TS get 3000 bytes of garbage at half
their length, or lose their last 7 % (a cut inside the last frames). The reference is
`ffmpeg -i IN -fps_mode passthrough -f framemd5 -`: the frames the CLI decodes and their
pts. conveyord must deliver as many frames, at the same times, end OK, and say in its
Summary what it concealed (decode_errors) and whether the input was cut (truncated).
With ContainerInput.strict the same inputs end with INVALID_ARGUMENT.
"""

import random
from fractions import Fraction

import conveyor_harness as h
from conveyor_harness import check, log
from picture_checks import check_jpeg_frames

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def start_time(path):
    """The container's start time in seconds, which the ffmpeg CLI subtracts from every pts."""
    out = h.run(["ffprobe", "-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", path])
    return Fraction(out.stdout.decode().strip() or "0")


def ffmpeg_frames(path):
    """[(pts in seconds as a Fraction)] of what the ffmpeg CLI decodes from `path`, in order,
    from the container's start time."""
    out = h.run(["ffmpeg", "-nostdin", "-v", "quiet", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                 "-f", "framemd5", "-"], check_rc=False)
    check(out.returncode == 0, "ffmpeg -f framemd5 %s: exit %d" % (path, out.returncode))
    tb = None
    pts = []
    for line in out.stdout.decode().splitlines():
        if line.startswith("#tb 0:"):
            num, den = line.split(":", 1)[1].strip().split("/")
            tb = Fraction(int(num), int(den))
        elif line and not line.startswith("#"):
            pts.append(int(line.split(",")[1]) * tb)
    return pts


def make_clips(ctx):
    """name -> path of each damaged or cut clip, from 48 frames of testsrc2 at 25 frames/s."""
    clips = {}
    for ext, extra in (("mkv", []), ("mp4", ["-movflags", "faststart"]), ("ts", [])):
        src = ctx.path("src." + ext)
        h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "48", "-c:v", "libx264",
                 "-preset", "veryfast", "-g", "12", "-pix_fmt", "yuv420p", *extra, src)
        with open(src, "rb") as f:
            data = f.read()
        rnd = random.Random(7)
        mid = len(data) // 2
        damaged = data[:mid] + bytes(rnd.randrange(256) for _ in range(3000)) + data[mid + 3000:]
        for kind, body in (("damaged", damaged), ("truncated", data[:int(len(data) * 0.93)])):
            path = ctx.path("%s.%s" % (kind, ext))
            with open(path, "wb") as f:
                f.write(body)
            clips["%s_%s" % (kind, ext)] = path
    return clips


def spec(pb, strict=False, container=False):
    s = pb.JobSpec(container=pb.ContainerInput(strict=strict), client_label="pye2e damaged")
    s.renditions.append(pb.RenditionSpec())
    if container:
        s.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    return s


@case
def damaged_inputs(ctx):
    pb = ctx.pb
    clips = make_clips(ctx)
    failures = []
    for name, path in sorted(clips.items()):
        want = ffmpeg_frames(path)
        o = h.transcode(ctx.stub, pb, spec(pb), h.container_requests(pb, path, chunk=16384))
        frames = o.frames.get(0, [])
        s = o.summary
        log("%-14s ffmpeg %2d frames; conveyord %2d, %s, decode_errors %s, truncated %s" %
            (name, len(want), len(frames), o.describe(), s.decode_errors if s else "-",
             s.truncated if s else "-"))
        try:
            h.expect_ok(o, name)
            check(0 < len(want) < 48, "%s: the ffmpeg CLI decodes %d of 48 frames: the damage did not bite" %
                  (name, len(want)))
            check(len(frames) == len(want), "%s: %d frames, the ffmpeg CLI decodes %d" %
                  (name, len(frames), len(want)))
            # conveyord keeps the source's timestamps (as the CLI's -copyts would).
            tb = Fraction(o.started.time_base.num, o.started.time_base.den)
            t0 = start_time(path)
            got = [f.pts * tb - t0 for f in frames]
            off = [float(g - w) for g, w in zip(got, want) if abs(g - w) > Fraction(1, 50)]
            check(not off, "%s: %d frames more than half a frame away from the CLI's pts (first %.3f s)" %
                  (name, len(off), off[0] if off else 0))
            check_jpeg_frames(frames, 320, 240, ctx.work, name)
            check(s.frames_in == len(frames) and s.frames_out == len(frames),
                  "%s: Summary frames_in %d / frames_out %d, want %d" % (name, s.frames_in, s.frames_out, len(frames)))
            if name.startswith("damaged"):
                check(s.decode_errors > 0, "%s: Summary.decode_errors is 0 for a damaged input" % name)
            else:
                check(s.truncated, "%s: Summary.truncated is false for a cut input" % name)
        except h.CheckFailed as e:
            failures.append(str(e))

    # Strict: the first error ends the session, naming the input.
    for name in ("damaged_mkv", "truncated_mp4"):
        o = h.transcode(ctx.stub, pb, spec(pb, strict=True), h.container_requests(pb, clips[name], chunk=16384))
        log("%-14s strict: %s" % (name, o.describe()))
        if o.code != ctx.grpc.StatusCode.INVALID_ARGUMENT or "input" not in o.details:
            failures.append("%s strict: got %s, want INVALID_ARGUMENT naming the input" % (name, o.describe()))

    # Container output of a damaged input plays and has every frame the session counted.
    o = h.transcode(ctx.stub, pb, spec(pb, container=True), h.container_requests(pb, clips["damaged_ts"]))
    try:
        h.expect_ok(o, "damaged_ts to mkv")
        out = ctx.path("damaged_ts_out.mkv")
        with open(out, "wb") as f:
            f.write(o.containers[0])
        n = h.VideoProbe(out).nb_read_frames
        check(n == o.summary.frames_out and n + o.summary.frames_dropped == o.summary.frames_in,
              "damaged_ts to mkv: ffprobe reads %d frames; Summary in %d, out %d, dropped %d" %
              (n, o.summary.frames_in, o.summary.frames_out, o.summary.frames_dropped))
        log("damaged_ts to mkv: %d frames in, %d out, %d dropped" %
            (o.summary.frames_in, o.summary.frames_out, o.summary.frames_dropped))
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))
