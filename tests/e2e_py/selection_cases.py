"""End-to-end cases of frame selection (JobSpec start/end/duration_seconds, max_frames,
keyframes_only), each held to the ffmpeg CLI on the same file.

The clip is 10 s of testsrc2 at 25 fps, H.264 with a keyframe every 25 frames, in Matroska
and in a faststart MP4. For each selection the expected frames are the source's frames
(their pts from ffprobe, in the stream's time base) that the selection's definition keeps;
conveyord's JPEGs must carry exactly those pts, in order, and each must match the ffmpeg
CLI's decode of that frame (PSNR per frame, far above what the frame next to it gets).
Where the ffmpeg CLI's own options select the same frames (`-ss S -to E` before -i,
`-t`, `-frames:v N`, `-skip_frame nokey`), its output is the reference, and its frame
count must be ours. The input is streamed (decoded from the start, frames before start
dropped), seekable or spooled (the demuxer seeks, so fewer frames are decoded). A selection that
ends before the input does ends the call OK while the client is still sending; the
client's later writes go nowhere. Bad selections get INVALID_ARGUMENT naming the field.
"""

import threading

import conveyor_harness as h
import random_access_cases
from conveyor_harness import check, log
from picture_checks import psnr_limited_ref_vs_jpeg, write_jpeg_sequence

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


W, H, RATE, SECONDS, GOP = 320, 240, 25, 10, 25
FRAME_BYTES = W * H * 3 // 2
# Frames a session may decode past the last one it needs: the decode thread's hand-off
# (kDecodeAheadFrames, session_memory.h), the frame it holds while the hand-off is full,
# and the one it is decoding when the pipeline stops.
READ_AHEAD = 3 + 2


def make_clips(ctx):
    src = ["-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=%d" % (W, H, RATE), "-t", str(SECONDS), "-c:v", "libx264",
           "-preset", "veryfast", "-g", str(GOP), "-pix_fmt", "yuv420p"]
    mkv, mp4 = ctx.path("clip.mkv"), ctx.path("clip.mp4")
    h.ffmpeg(*(src + [mkv]))
    h.ffmpeg(*(src + ["-movflags", "faststart", mp4]))
    return mkv, mp4


def source_frames(path, keyframes_only=False):
    """(time_base (num, den), [pts of each decoded frame in presentation order])."""
    args = ["-select_streams", "v:0", "-show_entries", "stream=time_base:frame=pts,best_effort_timestamp"]
    if keyframes_only:
        args = ["-skip_frame", "nokey"] + args
    j = h.ffprobe_json(path, *args)
    num, den = (int(x) for x in j["streams"][0]["time_base"].split("/"))
    pts = [f.get("pts", f.get("best_effort_timestamp")) for f in j["frames"]]
    check(None not in pts, "%s: a frame without pts" % path)
    return (num, den), pts


def cli_decode(ctx, path, tag, before_input=(), after_input=()):
    """The ffmpeg CLI's frames (raw yuv420p, one per decoded frame, none duplicated)."""
    out = ctx.path(tag + ".cli.yuv")
    h.ffmpeg(*(list(before_input) + ["-i", path] + list(after_input) +
               ["-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", out]))
    with open(out, "rb") as f:
        data = f.read()
    check(len(data) % FRAME_BYTES == 0, "%s: the CLI gave %d bytes, not whole frames" % (tag, len(data)))
    return [data[k:k + FRAME_BYTES] for k in range(0, len(data), FRAME_BYTES)]


def decode_jpegs(ctx, frames, tag):
    pattern = write_jpeg_sequence(frames, ctx.path(tag + "_jpeg"))
    out = ctx.path(tag + ".ours.yuv")
    h.ffmpeg("-f", "image2", "-i", pattern, "-f", "rawvideo", "-pix_fmt", "yuvj420p", out)
    with open(out, "rb") as f:
        data = f.read()
    return [data[k:k + FRAME_BYTES] for k in range(0, len(data), FRAME_BYTES)]


def expected_pts(tb, pts, start=None, end=None, max_frames=0):
    """The selection's definition: pts at or after start, before end, the first max_frames."""
    seconds = lambda p: p * tb[0] / tb[1]  # noqa: E731
    kept = [p for p in pts if (start is None or seconds(p) >= start) and (end is None or seconds(p) < end)]
    return kept[:max_frames] if max_frames else kept


def spec(pb, seekable=False, size=0, **selection):
    s = pb.JobSpec(container=pb.ContainerInput(seekable=seekable, size=size), client_label="pye2e selection",
                   **selection)
    s.renditions.append(pb.RenditionSpec())
    return s


def check_frames_match(ours, ref, tag):
    """Frame k of ours against frame k of ref: Y PSNR well above that against frame k+-1."""
    check(len(ours) == len(ref), "%s: %d frames decoded from the JPEGs, %d references" % (tag, len(ours), len(ref)))
    worst = None
    for k in range(len(ours)):
        p = psnr_limited_ref_vs_jpeg(ref[k], ours[k], W, H, 1)
        check(p["y"] >= 30.0, "%s frame %d: Y PSNR %.2f dB against the CLI's frame, want >= 30" % (tag, k, p["y"]))
        worst = p["y"] if worst is None else min(worst, p["y"])
        for j in (k - 1, k + 1):
            if 0 <= j < len(ref):
                other = psnr_limited_ref_vs_jpeg(ref[j], ours[k], W, H, 1)["y"]
                check(other < p["y"] - 3.0, "%s frame %d: matches the CLI's frame %d (%.2f dB) about as well as its "
                      "own (%.2f dB)" % (tag, k, j, other, p["y"]))
    return worst


class HeldInput:
    """Streams a file in chunks up to half of it, then holds the rest back until released
    (or for hold_s). A call that ends while the rest is held ended without it, whatever the
    host's speed."""

    def __init__(self, pb, path, chunk=8192, hold_s=30.0):
        with open(path, "rb") as f:
            self.data = f.read()
        self.pb, self.chunk, self.hold_s = pb, chunk, hold_s
        self.sent = 0
        self.chunks = (len(self.data) + chunk - 1) // chunk
        self.hold_at = self.chunks // 2
        self.released = threading.Event()

    def __iter__(self):
        for off in range(0, len(self.data), self.chunk):
            if self.sent == self.hold_at:
                self.released.wait(self.hold_s)
            self.sent += 1
            yield self.pb.TranscodeRequest(container_chunk=self.data[off:off + self.chunk])


# name, JobSpec selection fields, ffmpeg options before -i / after -i (None: the CLI's own
# options select otherwise), expected-pts arguments.
SELECTIONS = [
    ("ss2.3_to5.7", dict(start_seconds=2.3, end_seconds=5.7), (["-ss", "2.3", "-to", "5.7"], []),
     dict(start=2.3, end=5.7)),
    ("ss3_t2", dict(start_seconds=3.0, duration_seconds=2.0), (["-ss", "3", "-t", "2"], []), dict(start=3.0, end=5.0)),
    ("ss2.52_to3.04", dict(start_seconds=2.52, end_seconds=3.04), (["-ss", "2.52", "-to", "3.04"], []),
     dict(start=2.52, end=3.04)),
    ("frames7", dict(max_frames=7), ([], ["-frames:v", "7"]), dict(max_frames=7)),
    ("ss6.1_frames5", dict(start_seconds=6.1, max_frames=5), (["-ss", "6.1"], ["-frames:v", "5"]),
     dict(start=6.1, max_frames=5)),
    # The ffmpeg CLI's trim measures -to/-t from the first frame it keeps, so with a start
    # between frames it keeps 2.60 s as well; the selection's end is start + duration.
    ("ss2.5_to2.6", dict(start_seconds=2.5, end_seconds=2.6), None, dict(start=2.5, end=2.6)),
]


@case
def selection_vs_ffmpeg_cli(ctx):
    pb = ctx.pb
    mkv, mp4 = make_clips(ctx)
    failures = []
    for path, fmt in ((mkv, "mkv"), (mp4, "mp4")):
        tb, all_pts = source_frames(path)
        check(len(all_pts) == RATE * SECONDS, "%s: ffprobe decodes %d frames" % (fmt, len(all_pts)))
        full = cli_decode(ctx, path, fmt + "_full")
        with open(path, "rb") as f:
            data = f.read()
        for name, fields, cli, want_args in SELECTIONS:
            want = expected_pts(tb, all_pts, **want_args)
            ref = [full[all_pts.index(p)] for p in want]
            if cli is not None:
                via_cli = cli_decode(ctx, path, "%s_%s" % (fmt, name), cli[0], cli[1])
                check(len(via_cli) == len(want), "%s %s: the ffmpeg CLI gives %d frames, the definition %d" %
                      (fmt, name, len(via_cli), len(want)))
                ref = via_cli
            runs = [("streamed", lambda: h.transcode(ctx.stub, pb, spec(pb, **fields),
                                                     h.bytes_requests(pb, data, 16384))),
                    ("seekable", lambda: random_access_cases.SeekingClient(ctx, data).run(
                        spec(pb, True, len(data), **fields)))]
            for how, call in runs:
                tag = "%s_%s_%s" % (fmt, name, how)
                try:
                    o = call()
                    h.expect_ok(o, tag)
                    tbo = (o.started.time_base.num, o.started.time_base.den)
                    check(tbo == tb, "%s: Started.time_base %s, the stream's %s" % (tag, tbo, tb))
                    got = [f.pts for f in o.frames[0]]
                    check(got == want, "%s: pts %s, want %s" % (tag, got, want))
                    worst = check_frames_match(decode_jpegs(ctx, o.frames[0], tag), ref, tag)
                    s = o.summary
                    check(s.frames_out == len(want), "%s: Summary.frames_out %d" % (tag, s.frames_out))
                    first = all_pts.index(want[0])
                    if how == "streamed":
                        # Decoded from the beginning, and no further than the frame after the
                        # last and the decode thread's read-ahead.
                        check(s.frames_in >= first + len(want), "%s: frames_in %d" % (tag, s.frames_in))
                        check(s.frames_in <= first + len(want) + 1 + READ_AHEAD,
                              "%s: frames_in %d, read past the end" % (tag, s.frames_in))
                    elif first >= GOP:
                        # From the keyframe before start (a GOP at most, and a second more
                        # where the index pointed past start).
                        check(s.frames_in <= len(want) + 2 * GOP + 1,
                              "%s: frames_in %d for %d frames from frame %d: no seek?" %
                              (tag, s.frames_in, len(want), first))
                    log("%-28s OK: %3d frames, pts %s..%s, frames_in %d, read_requests %d, worst Y %.2f dB" %
                        (tag, len(got), got[0], got[-1], s.frames_in, s.read_requests, worst))
                except h.CheckFailed as e:
                    failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def selection_on_mpegts_where_the_seek_lands_late(ctx):
    """MPEG-TS seeks by a search over dts: asked for a time just before a keyframe, it can
    land on that keyframe, a GOP after the frames due. The session sees the first frame
    after the seek lie past start and seeks earlier, so the frames are those of the
    definition, as from a stream, on the input's own timeline (which starts at 1.48 s)."""
    pb = ctx.pb
    ts = ctx.path("clip.ts")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=%d" % (W, H, RATE), "-f", "lavfi", "-i",
             "sine=frequency=440:sample_rate=48000", "-t", str(SECONDS), "-c:v", "libx264", "-preset", "veryfast",
             "-g", str(GOP), "-pix_fmt", "yuv420p", "-c:a", "mp2", ts)
    tb, all_pts = source_frames(ts)
    full = cli_decode(ctx, ts, "ts_full")
    check(len(full) == len(all_pts), "ts: the CLI decodes %d frames, ffprobe %d" % (len(full), len(all_pts)))
    seconds = [p * tb[0] / tb[1] for p in all_pts]
    # Between the two frames before the third keyframe: the first frame due is in the
    # GOP before it.
    k = 2 * GOP
    start = (seconds[k - 2] + seconds[k - 1]) / 2
    want = expected_pts(tb, all_pts, start=start, end=start + 1.0)
    check(want[0] == all_pts[k - 1], "the first frame due is not the one before the keyframe")
    ref = [full[all_pts.index(p)] for p in want]
    with open(ts, "rb") as f:
        data = f.read()
    failures = []
    fields = dict(start_seconds=start, duration_seconds=1.0)
    for how, call in (("streamed", lambda: h.transcode(ctx.stub, pb, spec(pb, **fields),
                                                         h.bytes_requests(pb, data, 16384))),
                      ("seekable", lambda: random_access_cases.SeekingClient(ctx, data).run(
                          spec(pb, True, len(data), **fields)))):
        tag = "ts_" + how
        try:
            o = call()
            h.expect_ok(o, tag)
            got = [f.pts for f in o.frames[0]]
            check(got == want, "%s: pts %s, want %s" % (tag, got, want))
            worst = check_frames_match(decode_jpegs(ctx, o.frames[0], tag), ref, tag)
            log("%-12s OK: %d frames from %.2f s, pts %s..%s, frames_in %d, read_requests %d, worst Y %.2f dB" %
                (tag, len(got), start, got[0], got[-1], o.summary.frames_in, o.summary.read_requests, worst))
        except h.CheckFailed as e:
            failures.append(str(e))
    # With audio passthrough into Matroska: the seek that goes back reads some audio a
    # second time, which must not reach the muxer twice.
    job = spec(pb, True, len(data), audio_passthrough=True, **fields)
    job.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    o = random_access_cases.SeekingClient(ctx, data).run(job)
    try:
        h.expect_ok(o, "ts_audio")
        out = ctx.path("ts_audio.mkv")
        with open(out, "wb") as f:
            f.write(o.containers[0])
        sp, p = h.VideoProbe(ts), h.VideoProbe(out)
        want_audio = [t for t in sp.audio_packet_pts if start <= t < start + 1.0]
        got_audio = p.audio_packet_pts
        check(len(p.frame_pts) == len(want), "ts_audio: %d video frames, want %d" % (len(p.frame_pts), len(want)))
        check(h.strictly_increasing(got_audio), "ts_audio: audio pts not increasing: %s" % got_audio)
        check(len(got_audio) == len(want_audio) and all(abs(a - b) <= 0.0015 for a, b in zip(got_audio, want_audio)),
              "ts_audio: audio pts %s, want %s" % (got_audio, want_audio))
        log("ts_audio     OK: %d frames, %d audio packets" % (len(p.frame_pts), len(got_audio)))
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def keyframes_only_vs_skip_frame_nokey(ctx):
    pb = ctx.pb
    mkv, _ = make_clips(ctx)
    tb, key_pts = source_frames(mkv, keyframes_only=True)
    check(len(key_pts) == SECONDS * RATE // GOP, "ffprobe -skip_frame nokey gives %d frames" % len(key_pts))
    with open(mkv, "rb") as f:
        data = f.read()
    failures = []
    for name, fields, before, want_args in (
            ("all", dict(), [], dict()),
            ("ss2.5_to7.5", dict(start_seconds=2.5, end_seconds=7.5), ["-ss", "2.5", "-to", "7.5"],
             dict(start=2.5, end=7.5))):
        want = expected_pts(tb, key_pts, **want_args)
        ref = cli_decode(ctx, mkv, "nokey_" + name, ["-skip_frame", "nokey"] + before)
        check(len(ref) == len(want), "%s: the CLI gives %d frames, the definition %d" % (name, len(ref), len(want)))
        for how, seekable in (("streamed", False), ("seekable", True)):
            tag = "nokey_%s_%s" % (name, how)
            try:
                job = spec(pb, seekable, len(data) if seekable else 0, keyframes_only=True, **fields)
                if seekable:
                    o = random_access_cases.SeekingClient(ctx, data).run(job)
                else:
                    o = h.transcode(ctx.stub, pb, job, h.bytes_requests(pb, data, 16384))
                h.expect_ok(o, tag)
                got = [f.pts for f in o.frames[0]]
                check(got == want, "%s: pts %s, want %s" % (tag, got, want))
                worst = check_frames_match(decode_jpegs(ctx, o.frames[0], tag), ref, tag)
                # Only keyframes are decoded: from the first (streamed) or from the one
                # before start (seekable), to the one after the end, and the decode
                # thread's read-ahead.
                most = (key_pts.index(want[0]) if not seekable else 1) + len(want) + 1 + READ_AHEAD
                check(o.summary.frames_in <= most, "%s: %d frames decoded for %d keyframes, want at most %d" %
                      (tag, o.summary.frames_in, len(want), most))
                log("%-24s OK: %d frames, pts %s, frames_in %d, worst Y %.2f dB" %
                    (tag, len(got), got, o.summary.frames_in, worst))
            except h.CheckFailed as e:
                failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def selection_on_a_spooled_input(ctx):
    """An MP4 with moov after mdat, streamed: the daemon spools it, and seeks in the spool
    as in a seekable input, so it decodes from the keyframe before start."""
    pb = ctx.pb
    late = ctx.path("late.mp4")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=%d" % (W, H, RATE), "-t", str(SECONDS), "-c:v",
             "libx264", "-preset", "veryfast", "-g", str(GOP), "-pix_fmt", "yuv420p", late)
    tb, all_pts = source_frames(late)
    want = expected_pts(tb, all_pts, start=6.1, max_frames=5)
    ref = cli_decode(ctx, late, "late", ["-ss", "6.1"], ["-frames:v", "5"])
    check(len(ref) == len(want), "the CLI gives %d frames, the definition %d" % (len(ref), len(want)))
    o = h.transcode(ctx.stub, pb, spec(pb, start_seconds=6.1, max_frames=5), h.container_requests(pb, late, 16384))
    h.expect_ok(o, "spooled")
    got = [f.pts for f in o.frames[0]]
    check(got == want, "spooled: pts %s, want %s" % (got, want))
    worst = check_frames_match(decode_jpegs(ctx, o.frames[0], "spooled"), ref, "spooled")
    s = o.summary
    check(s.spooled_bytes > 0, "the input was not spooled")
    check(s.frames_in <= len(want) + GOP, "frames_in %d: decoded from before the keyframe before start" % s.frames_in)
    log("spooled OK: pts %s, frames_in %d, %d bytes spooled, worst Y %.2f dB" % (got, s.frames_in, s.spooled_bytes,
                                                                                   worst))


@case
def selection_trims_passthrough_audio(ctx):
    """Container output with audio_passthrough: the audio packets of [start, end) go with
    the video frames of that range, on the source's timeline."""
    pb = ctx.pb
    src = ctx.path("av.mkv")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=%d" % (W, H, RATE), "-f", "lavfi", "-i",
             "sine=frequency=440:sample_rate=48000", "-t", "6", "-c:v", "libx264", "-preset", "veryfast", "-g",
             str(GOP), "-pix_fmt", "yuv420p", "-c:a", "aac", src)
    sp = h.VideoProbe(src)
    start, end = 2.0, 4.0
    want_video = [t for t in sp.frame_pts if start <= t < end]
    want_audio = [t for t in sp.audio_packet_pts if start <= t < end]
    job = spec(pb, start_seconds=start, end_seconds=end, audio_passthrough=True)
    job.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    o = h.transcode(ctx.stub, pb, job, h.container_requests(pb, src, 16384))
    h.expect_ok(o, "audio")
    path = ctx.path("out.mkv")
    with open(path, "wb") as f:
        f.write(o.containers[0])
    p = h.VideoProbe(path)
    log("video %d frames %.3f..%.3f s (want %d from %.3f); audio %d packets %.3f..%.3f s (want %d, %.3f..%.3f)" %
        (len(p.frame_pts), p.frame_pts[0], p.frame_pts[-1], len(want_video), want_video[0], len(p.audio_packet_pts),
         min(p.audio_packet_pts), max(p.audio_packet_pts), len(want_audio), want_audio[0], want_audio[-1]))
    check(p.audio_codecs() == ["aac"], "audio streams in the output: %s" % p.audio_codecs())
    check(len(p.frame_pts) == len(want_video) and all(abs(a - b) <= 0.0015 for a, b in zip(p.frame_pts, want_video)),
          "video pts %s, want %s" % (p.frame_pts, want_video))
    check(len(p.audio_packet_pts) == len(want_audio) and
          all(abs(a - b) <= 0.0015 for a, b in zip(sorted(p.audio_packet_pts), want_audio)),
          "audio pts %s, want %s" % (sorted(p.audio_packet_pts), want_audio))


@case
def selection_ends_a_streamed_input_early(ctx):
    pb = ctx.pb
    mkv, _ = make_clips(ctx)
    failures = []
    for name, fields in (("end 2 s", dict(end_seconds=2.0)), ("5 frames", dict(max_frames=5))):
        source = HeldInput(pb, mkv)
        o = h.transcode(ctx.stub, pb, spec(pb, **fields), source, timeout_s=60)
        sent = source.sent
        source.released.set()
        log("%-8s %s: %d frames, the client sent %d of %d chunks, %.2f s" %
            (name, o.describe(), len(o.frames.get(0, [])), sent, source.chunks, o.seconds))
        try:
            h.expect_ok(o, name)
            check(sent <= source.hold_at, "%s: the call took %d of %d chunks before it ended; it should end "
                  "while the last %d are held back" % (name, sent, source.chunks, source.chunks - source.hold_at))
        except h.CheckFailed as e:
            failures.append(str(e))
    # Raw input: pts in 1/frame_rate; start 0.2 s is pts 5 at 25 fps.
    frame = bytes([128]) * FRAME_BYTES
    raw = pb.JobSpec(raw=pb.RawInput(pixel_format=pb.PIXEL_FORMAT_YUV420P, width=W, height=H,
                                     frame_rate=pb.Rational(num=25, den=1)), start_seconds=0.2, max_frames=4)
    raw.renditions.append(pb.RenditionSpec())
    o = h.transcode(ctx.stub, pb, raw, h.raw_frame_requests(pb, ((p, frame) for p in range(40))))
    try:
        h.expect_ok(o, "raw")
        got = [f.pts for f in o.frames[0]]
        check(got == [5, 6, 7, 8], "raw: pts %s, want [5, 6, 7, 8]" % got)
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def selection_bad_specs(ctx):
    pb = ctx.pb
    INVALID = ctx.grpc.StatusCode.INVALID_ARGUMENT
    raw = pb.RawInput(pixel_format=pb.PIXEL_FORMAT_YUV420P, width=W, height=H)
    bad = [
        ("negative start", dict(start_seconds=-1.0), "spec.start_seconds"),
        ("NaN start", dict(start_seconds=float("nan")), "spec.start_seconds"),
        ("end before start", dict(start_seconds=3.0, end_seconds=2.0), "spec.end_seconds"),
        ("end at start", dict(start_seconds=3.0, end_seconds=3.0), "spec.end_seconds"),
        ("end 0", dict(end_seconds=0.0), "spec.end_seconds"),
        ("end and duration", dict(end_seconds=3.0, duration_seconds=1.0), "spec.end_seconds"),
        ("zero duration", dict(duration_seconds=0.0), "spec.duration_seconds"),
        ("infinite duration", dict(duration_seconds=float("inf")), "spec.duration_seconds"),
        ("negative max_frames", dict(max_frames=-1), "spec.max_frames"),
    ]
    failures = []
    for name, fields, needle in bad:
        o = h.transcode(ctx.stub, pb, spec(pb, **fields), timeout_s=20)
        log("%-20s %s" % (name, o.describe()))
        if o.code != INVALID or needle not in o.details:
            failures.append("%s: got %s, want INVALID_ARGUMENT naming %s" % (name, o.describe(), needle))
    job = pb.JobSpec(raw=raw, keyframes_only=True)
    job.renditions.append(pb.RenditionSpec())
    o = h.transcode(ctx.stub, pb, job, timeout_s=20)
    log("%-20s %s" % ("raw keyframes_only", o.describe()))
    if o.code != INVALID or "spec.keyframes_only" not in o.details:
        failures.append("raw keyframes_only: got %s" % o.describe())
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))
