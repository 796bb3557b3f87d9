"""End-to-end cases of interlaced input against the ffmpeg CLI's yadif.

A 50 fields/s MPEG-2 MPEG-TS of testsrc2 scrolling sideways (so that every moving edge
combs when the fields are woven), top field first and bottom field first. By default
(JobSpec.deinterlace auto) conveyord deinterlaces the frames the decoder flags interlaced:
its JPEGs, decoded by ffmpeg, must be at least 35 dB from `ffmpeg -vf
yadif=mode=0:parity=auto:deint=interlaced` of the same file, and clearly closer to it than
to the woven frames the CLI gives without the filter. With DEINTERLACE_OFF the frames keep
their fields and Matroska output says the source's field order; deinterlaced Matroska
output says progressive. DEINTERLACE_ON deinterlaces a progressive clip's every frame, as
yadif's deint=all does.
"""

import os

import conveyor_harness as h
import corpus_cases
from conveyor_harness import check, log

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


W, H = 320, 240


def make(ctx, name, order):
    path = ctx.path(name + ".ts")
    mode = "interleave_top" if order == "tff" else "interleave_bottom"
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=50,scroll=h=0.004,tinterlace=mode=%s,setfield=%s" %
             (W, H, mode, order), "-t", "0.8", "-c:v", "mpeg2video", "-flags", "+ilme+ildct",
             "-top", "1" if order == "tff" else "0", "-b:v", "6M", path)
    return path


def spec(pb, deinterlace=None, mkv=False):
    s = pb.JobSpec(container=pb.ContainerInput(), client_label="pye2e interlace")
    if deinterlace is not None:
        s.deinterlace = deinterlace
    s.renditions.append(pb.RenditionSpec())
    if mkv:
        s.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    return s


def field_order(ctx, data, name):
    path = ctx.path(name)
    with open(path, "wb") as f:
        f.write(bytes(data))
    return h.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=field_order", "-of",
                  "csv=p=0", path]).stdout.decode().strip()


@case
def interlaced_input_against_yadif(ctx):
    pb = ctx.pb
    failures = []
    for order in ("tff", "bff"):
        name = "interlaced_" + order
        path = make(ctx, name, order)
        o = h.transcode(ctx.stub, pb, spec(pb), h.container_requests(pb, path))
        try:
            h.expect_ok(o, name)
            frames = o.frames[0]
            _, _, yadif = corpus_cases.cli_reference(ctx, name + "_yadif", path, "420",
                                                     "yadif=mode=0:parity=auto:deint=interlaced")
            _, _, woven = corpus_cases.cli_reference(ctx, name + "_woven", path, "420", None)
            check(len(frames) == len(yadif), "%s: %d frames, the CLI gives %d" % (name, len(frames), len(yadif)))
            ours = corpus_cases.our_picture(ctx, name, frames, "420")
            p = corpus_cases.psnr(b"".join(yadif), ours, W, H, "420")
            q = corpus_cases.psnr(b"".join(woven), ours, W, H, "420")
            log("%s: %d frames, %d deinterlaced; Y PSNR against the CLI's yadif %.2f dB, against its woven frames "
                "%.2f dB" % (name, len(frames), o.summary.frames_deinterlaced, p["y"], q["y"]))
            check(o.summary.frames_deinterlaced == len(frames), "%s: %d frames deinterlaced of %d" %
                  (name, o.summary.frames_deinterlaced, len(frames)))
            check(min(p.values()) >= 35.0, "%s: PSNR against the CLI's yadif below 35 dB: %s" % (name, p))
            check(p["y"] > q["y"] + 3.0, "%s: no closer to yadif (%.2f dB) than to the woven frames (%.2f dB)" %
                  (name, p["y"], q["y"]))
            # Kept as they are: Matroska says the source's field order; deinterlaced: progressive.
            off = h.transcode(ctx.stub, pb, spec(pb, pb.DEINTERLACE_OFF, mkv=True), h.container_requests(pb, path))
            h.expect_ok(off, name + " off")
            check(off.summary.frames_deinterlaced == 0, "%s off: frames deinterlaced" % name)
            kept = field_order(ctx, off.containers[0], name + "_off.mkv")
            check(kept == ("tt" if order == "tff" else "bb"), "%s off: Matroska field order %r" % (name, kept))
            auto = h.transcode(ctx.stub, pb, spec(pb, mkv=True), h.container_requests(pb, path))
            h.expect_ok(auto, name + " auto, mkv")
            made = field_order(ctx, auto.containers[0], name + "_auto.mkv")
            check(made == "progressive", "%s auto: Matroska field order %r, want progressive" % (name, made))
            log("%s: Matroska field order kept %s, deinterlaced %s" % (name, kept, made))
        except h.CheckFailed as e:
            failures.append(str(e))

    # DEINTERLACE_ON: a progressive clip's every frame, as yadif deint=all.
    path = ctx.path("progressive.mkv")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=25" % (W, H), "-t", "0.4", "-c:v", "libx264",
             "-preset", "veryfast", "-pix_fmt", "yuv420p", path)
    o = h.transcode(ctx.stub, pb, spec(pb, pb.DEINTERLACE_ON), h.container_requests(pb, path))
    try:
        h.expect_ok(o, "progressive, on")
        _, _, ref = corpus_cases.cli_reference(ctx, "progressive_all", path, "420", "yadif=mode=0:parity=auto:deint=all")
        p = corpus_cases.psnr(b"".join(ref), corpus_cases.our_picture(ctx, "progressive", o.frames[0], "420"), W, H,
                              "420")
        log("progressive, on: %d of %d frames deinterlaced; Y PSNR against yadif deint=all %.2f dB" %
            (o.summary.frames_deinterlaced, len(o.frames[0]), p["y"]))
        check(o.summary.frames_deinterlaced == len(o.frames[0]) == len(ref), "progressive, on: %d deinterlaced, %d "
              "frames, the CLI %d" % (o.summary.frames_deinterlaced, len(o.frames[0]), len(ref)))
        check(min(p.values()) >= 35.0, "progressive, on: PSNR against yadif deint=all: %s" % p)
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))
