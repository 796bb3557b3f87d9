"""End-to-end cases of JobSpec.frame_rate, each held to the ffmpeg CLI's fps filter on the
same input: `ffmpeg [-copyts -ss S -to E] -i IN -vf fps=R [-frames:v N]`.

The CLI's framemd5 gives the reference: the grid points written (pts in 1/R) and each
output frame's picture hash. conveyord's packets must carry the same pts, and its JPEGs must
match the CLI's frames in order (PSNR per frame against the CLI's rawvideo), where the CLI
repeats a frame conveyord must send the same JPEG bytes again, and where the CLI's frames
differ, so must its JPEGs. The grid counts from the input's time 0, as the CLI's does with
-copyts. Inputs: the 25 fps clip of selection_cases, a variable frame rate clip (frames
missing in runs), raw frames and container output.
"""

import conveyor_harness as h
from conveyor_harness import check, log
from picture_checks import psnr_limited_ref_vs_jpeg
from selection_cases import FRAME_BYTES, GOP, H, RATE, W, cli_decode, decode_jpegs, make_clips, spec

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def cli_fps(ctx, path, rate, before=(), after=(), tag="cli"):
    """The ffmpeg CLI's fps filter: ([pts on the 1/rate grid], [raw yuv420p frames])."""
    args = list(before) + ["-i", path, "-vf", "fps=%s" % rate] + list(after)
    p = h.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"] + args + ["-f", "framemd5", "-"])
    pts = []
    for line in p.stdout.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        pts.append(int(line.split(",")[2]))
    frames = cli_decode(ctx, path, tag, before, ["-vf", "fps=%s" % rate] + list(after))
    check(len(frames) == len(pts), "%s: framemd5 lists %d frames, rawvideo has %d" % (tag, len(pts), len(frames)))
    return pts, frames


def rational(pb, rate):
    num, _, den = rate.partition("/")
    return pb.Rational(num=int(num), den=int(den or 1))


def check_against_cli(ctx, o, rate, want_pts, ref, tag):
    """pts, time base, pictures and repeats of one call against the CLI's."""
    r = rational(ctx.pb, rate)
    tbo = (o.started.time_base.num, o.started.time_base.den)
    check(tbo == (r.den, r.num), "%s: Started.time_base %s, want %d/%d" % (tag, tbo, r.den, r.num))
    frames = o.frames[0]
    got = [f.pts for f in frames]
    check(got == want_pts, "%s: pts %s, the CLI's %s" % (tag, got, want_pts))
    check([f.index for f in frames] == list(range(len(frames))), "%s: frame_index is not 0, 1, ..." % tag)
    check(o.summary.frames_out == len(want_pts), "%s: Summary.frames_out %d" % (tag, o.summary.frames_out))
    ours = decode_jpegs(ctx, frames, tag)
    check(len(ours) == len(ref), "%s: %d JPEGs decoded, %d CLI frames" % (tag, len(ours), len(ref)))
    worst = None
    for k in range(len(ref)):
        own = psnr_limited_ref_vs_jpeg(ref[k], ours[k], W, H, 1)["y"]
        check(own >= 30.0, "%s frame %d: Y PSNR %.2f dB against the CLI's frame, want >= 30" % (tag, k, own))
        worst = own if worst is None else min(worst, own)
        if k + 1 < len(ref):
            repeat = ref[k + 1] == ref[k]
            same = frames[k + 1].data == frames[k].data
            check(repeat == same, "%s frames %d, %d: the CLI %s, conveyord %s" %
                  (tag, k, k + 1, "repeats a frame" if repeat else "writes two frames",
                   "sends the same JPEG" if same else "sends two JPEGs"))
            if not repeat:
                other = psnr_limited_ref_vs_jpeg(ref[k + 1], ours[k], W, H, 1)["y"]
                check(other < own - 3.0, "%s frame %d: matches the CLI's next frame (%.2f dB) about as well as "
                      "its own (%.2f dB)" % (tag, k, other, own))
    repeats = sum(1 for k in range(1, len(frames)) if frames[k].data == frames[k - 1].data)
    return worst, repeats


# name, fps, JobSpec selection fields, ffmpeg options before -i, after -i
RUNS = [
    ("fps1", "1", {}, [], []),
    ("fps3", "3", {}, [], []),
    ("fps7_3", "7/3", {}, [], []),
    ("fps60", "60", {}, [], []),  # more than the source's 25: repeats
    ("fps30000_1001", "30000/1001", {}, [], []),
    ("fps2_ss2.3_to5.7", "2", dict(start_seconds=2.3, end_seconds=5.7), ["-copyts", "-ss", "2.3", "-to", "5.7"], []),
    ("fps60_ss2.3_to5.7", "60", dict(start_seconds=2.3, end_seconds=5.7), ["-copyts", "-ss", "2.3", "-to", "5.7"],
     []),
    ("fps60_frames9", "60", dict(max_frames=9), [], ["-frames:v", "9"]),
    ("fps0.5_ss3", "1/2", dict(start_seconds=3.0), ["-copyts", "-ss", "3"], []),
]


def make_vfr(ctx):
    """25 fps testsrc2 with frames 20..34 and every 7th frame left out, kept at their times."""
    vfr = ctx.path("vfr.mkv")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=%d" % (W, H, RATE), "-t", "6", "-vf",
             "select='not(between(n\\,20\\,34))*not(eq(mod(n\\,7)\\,3))'", "-fps_mode", "vfr", "-c:v", "libx264",
             "-preset", "veryfast", "-g", str(GOP), "-pix_fmt", "yuv420p", vfr)
    return vfr


@case
def frame_rate_vs_fps_filter(ctx):
    pb = ctx.pb
    mkv, _ = make_clips(ctx)
    vfr = make_vfr(ctx)
    gaps = h.ffprobe_json(vfr, "-select_streams", "v:0", "-show_entries", "frame=pts")["frames"]
    check(len(gaps) < 6 * RATE - 15, "the VFR clip has %d frames: nothing left out?" % len(gaps))
    failures = []
    runs = [(mkv, "cfr") + r for r in RUNS]
    runs += [(vfr, "vfr", "fps10", "10", {}, [], []), (vfr, "vfr", "fps25", "25", {}, [], []),
             (vfr, "vfr", "fps4_ss0.5_to4", "4", dict(start_seconds=0.5, end_seconds=4.0),
              ["-copyts", "-ss", "0.5", "-to", "4"], [])]
    for path, kind, name, rate, fields, before, after in runs:
        tag = "%s_%s" % (kind, name)
        try:
            want_pts, ref = cli_fps(ctx, path, rate, before, after, tag + "_cli")
            check(want_pts, "%s: the CLI wrote no frame" % tag)
            o = h.transcode(ctx.stub, pb, spec(pb, frame_rate=rational(pb, rate), **fields),
                            h.container_requests(pb, path, 65536))
            h.expect_ok(o, tag)
            worst, repeats = check_against_cli(ctx, o, rate, want_pts, ref, tag)
            log("%-22s OK: %3d frames, pts %d..%d, %d repeats, frames_in %d, worst Y %.2f dB" %
                (tag, len(want_pts), want_pts[0], want_pts[-1], repeats, o.summary.frames_in, worst))
        except h.CheckFailed as e:
            failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def frame_rate_into_a_container(ctx):
    """Matroska output at fps=60 from 25 fps: the packets are on the 1/60 grid, as the
    CLI's, and each repeat is the same JPEG packet again (no second encode)."""
    pb = ctx.pb
    mkv, _ = make_clips(ctx)
    want_pts, _ = cli_fps(ctx, mkv, "60", ["-copyts", "-ss", "1", "-to", "3"], [], "cli")
    job = spec(pb, frame_rate=pb.Rational(num=60, den=1), start_seconds=1.0, end_seconds=3.0)
    job.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    o = h.transcode(ctx.stub, pb, job, h.container_requests(pb, mkv, 65536))
    h.expect_ok(o, "container")
    out = ctx.path("out.mkv")
    with open(out, "wb") as f:
        f.write(o.containers[0])
    j = h.ffprobe_json(out, "-select_streams", "v:0", "-show_entries", "packet=pts_time,size", "-show_data_hash",
                       "md5", "-show_packets")
    packets = j["packets"]
    got = [round(float(p["pts_time"]) * 60) for p in packets]
    check(got == want_pts, "packet times x 60: %s, the CLI's %s" % (got, want_pts))
    hashes = [p["data_hash"] for p in packets]
    distinct = len(set(hashes))
    # 25 fps over 2 s: 50 source frames, each on 2 or 3 points of the 120.
    check(distinct == 50, "%d distinct JPEG packets among %d, want the 50 source frames" % (distinct, len(hashes)))
    runs = [k for k in range(1, len(hashes)) if hashes[k] != hashes[k - 1]]
    check(len(runs) == distinct - 1, "a JPEG comes back after another: %d changes for %d distinct" %
          (len(runs), distinct))
    log("container OK: %d packets, %d distinct, pts %d..%d on 1/60" % (len(packets), distinct, got[0], got[-1]))


@case
def frame_rate_on_raw_frames(ctx):
    """Raw frames at 25 fps, frame p a flat grey of luma 16 + 4p, sampled at 10 fps: the
    CLI's fps filter on the same frames says which frame goes at each point."""
    pb = ctx.pb
    n = 40
    frames = [bytes([16 + 4 * p]) * (W * H) + bytes([128]) * (W * H // 2) for p in range(n)]
    raw_path = ctx.path("grey.yuv")
    with open(raw_path, "wb") as f:
        f.write(b"".join(frames))
    before = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-video_size", "%dx%d" % (W, H), "-framerate", str(RATE)]
    want_pts, ref = cli_fps(ctx, raw_path, "10", before, [], "raw_cli")
    raw = pb.JobSpec(raw=pb.RawInput(pixel_format=pb.PIXEL_FORMAT_YUV420P, width=W, height=H,
                                     frame_rate=pb.Rational(num=RATE, den=1)),
                     frame_rate=pb.Rational(num=10, den=1))
    raw.renditions.append(pb.RenditionSpec())
    o = h.transcode(ctx.stub, pb, raw, h.raw_frame_requests(pb, enumerate(frames)))
    h.expect_ok(o, "raw")
    got = [f.pts for f in o.frames[0]]
    check(got == want_pts, "raw: pts %s, the CLI's %s" % (got, want_pts))
    ours = decode_jpegs(ctx, o.frames[0], "raw")
    # Which source frame each output is: the grey level of its centre sample.
    centre = (H // 2) * W + W // 2
    want_frames = [(r[centre] - 16) // 4 for r in ref]
    # The JPEG holds full range: luma 16 + 4p is 4p * 255 / 219.
    got_frames = [round(frame[centre] * 219.0 / 255.0 / 4) for frame in ours]
    check(got_frames == want_frames, "raw: source frames %s, the CLI's %s" % (got_frames, want_frames))
    log("raw OK: %d frames at 10 fps from %d at 25: source frames %s" % (len(got), n, got_frames))


@case
def frame_rate_bad_specs(ctx):
    pb = ctx.pb
    INVALID = ctx.grpc.StatusCode.INVALID_ARGUMENT
    bad = [("negative", pb.Rational(num=-1, den=1)), ("zero num", pb.Rational(num=0, den=1)),
           ("zero den", pb.Rational(num=25, den=0)), ("above the limit", pb.Rational(num=100000, den=1))]
    frame = bytes([128]) * FRAME_BYTES
    for name, rate in bad:
        job = pb.JobSpec(raw=pb.RawInput(pixel_format=pb.PIXEL_FORMAT_YUV420P, width=W, height=H), frame_rate=rate)
        job.renditions.append(pb.RenditionSpec())
        o = h.transcode(ctx.stub, pb, job, h.raw_frame_requests(pb, [(0, frame)]))
        h.expect_error(o, name, INVALID, "spec.frame_rate")
        log("%-16s INVALID_ARGUMENT: %s" % (name, o.details))

