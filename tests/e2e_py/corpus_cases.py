"""End-to-end: every file of the input corpus (input_corpus.py) through conveyord, held to the
ffmpeg CLI on the same file.

For each file the CLI's reference is its decode as `ffmpeg -i IN OUT` makes it (autorotated,
every frame with -fps_mode passthrough; for interlaced input with -vf yadif, which conveyord
runs by default and the CLI only when asked), written as Y4M (size) and framemd5 (pts). conveyord's JPEG frames, with the input streamed as a pipe would send it
(a late moov is spooled), must be as many, at the same times, of the same size, and close
to the CLI's picture: PSNR of our JPEGs (decoded by ffmpeg) against the CLI's frames within
2 dB of what the plain H.264 clip gets, on every plane (4:4:4 sources compared at 4:4:4,
with a 4:4:4 rendition, so that neither side's chroma filter is measured). Inputs the daemon refuses on
purpose must get the status and words the corpus names.
"""

from fractions import Fraction

import conveyor_harness as h
import damaged_input_cases
import input_corpus
from conveyor_harness import check, log
from picture_checks import LIMITED_TO_FULL, check_jpeg_frames, psnr_from_sse, sse_against, write_jpeg_sequence

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def chroma_size(w, h_, chroma):
    return (w, h_) if chroma == "444" else ((w + 1) // 2, (h_ + 1) // 2)


def read_y4m(path, chroma):
    """(width, height, [frame bytes]) of a 4:2:0 or 4:4:4 Y4M file."""
    with open(path, "rb") as f:
        data = f.read()
    header, _, rest = data.partition(b"\n")
    fields = {t[:1]: t[1:] for t in header.split(b" ")[1:]}
    w, h_ = int(fields[b"W"]), int(fields[b"H"])
    cw, ch = chroma_size(w, h_, chroma)
    size = w * h_ + 2 * cw * ch
    frames = []
    while rest:
        _, _, rest = rest.partition(b"\n")  # FRAME[ params]
        frames.append(rest[:size])
        rest = rest[size:]
    return w, h_, frames


def cli_reference(ctx, name, path, chroma, cli_filter):
    out = ctx.path(name + ".cli.y4m")
    vf = ["-vf", cli_filter] if cli_filter else []
    h.ffmpeg("-i", path, "-map", "0:v:0", "-fps_mode", "passthrough", *vf, "-pix_fmt", "yuv%sp" % chroma, "-f",
             "yuv4mpegpipe", out)
    return read_y4m(out, chroma)


def our_picture(ctx, name, frames, chroma):
    pattern = write_jpeg_sequence(frames, ctx.path(name + "_jpeg"))
    out = ctx.path(name + ".ours.yuv")
    h.ffmpeg("-f", "image2", "-i", pattern, "-f", "rawvideo", "-pix_fmt", "yuvj%sp" % chroma, out)
    with open(out, "rb") as f:
        return f.read()


def psnr(ref, ours, w, h_, chroma):
    """Y, Cb, Cr PSNR of full-range JPEG planes against the limited-range reference."""
    cw, ch = chroma_size(w, h_, chroma)
    n, c = w * h_, cw * ch
    frame = n + 2 * c
    check(len(ref) == len(ours), "picture sizes differ: %d vs %d bytes" % (len(ref), len(ours)))
    planes = {"y": (0, n, "y"), "cb": (n, c, "c"), "cr": (n + c, c, "c")}
    out = {}
    for name, (at, size, kind) in planes.items():
        r = b"".join(ref[k + at:k + at + size] for k in range(0, len(ref), frame))
        o = b"".join(ours[k + at:k + at + size] for k in range(0, len(ours), frame))
        out[name] = psnr_from_sse(sse_against(r, o, LIMITED_TO_FULL[kind]), len(r))
    return out


def spec(pb, chroma):
    s = pb.JobSpec(container=pb.ContainerInput(), client_label="pye2e corpus")
    s.renditions.append(pb.RenditionSpec(subsampling=pb.SUBSAMPLING_444 if chroma == "444" else pb.SUBSAMPLING_420))
    return s


@case
def input_corpus_vs_ffmpeg_cli(ctx):
    pb = ctx.pb
    made = input_corpus.make(ctx.path("corpus"))
    failures = []
    bar = None  # the plain H.264 clip's PSNR: what JPEG at quality 85 costs testsrc2
    order = ["h264_moov_at_end"] + [n for n in made if n != "h264_moov_at_end"]
    for name in order:
        path, e = made[name]
        o = h.transcode(ctx.stub, pb, spec(pb, e["chroma"]), h.container_requests(pb, path, chunk=65536))
        try:
            if e["expect"] != "same":
                _, code, words = e["expect"]
                log("%-26s %s (the CLI writes an audio-only file; the daemon transcodes video)" % (name, o.describe()))
                h.expect_error(o, name, getattr(ctx.grpc.StatusCode, code), words)
                continue
            h.expect_ok(o, name)
            w, h_, ref = cli_reference(ctx, name, path, e["chroma"], e["cli_filter"])
            frames = o.frames.get(0, [])
            check(len(frames) == len(ref), "%s: %d frames, the ffmpeg CLI decodes %d" % (name, len(frames), len(ref)))
            want = damaged_input_cases.ffmpeg_frames(path)
            tb = Fraction(o.started.time_base.num, o.started.time_base.den)
            t0 = damaged_input_cases.start_time(path)
            # The CLI's framemd5 writes times in 1/frame rate: half a frame is its rounding.
            off = [float(f.pts * tb - t0 - p) for f, p in zip(frames, want) if abs(f.pts * tb - t0 - p) > Fraction(1, 50)]
            check(not off, "%s: %d frames off the CLI's pts (first by %.3f s)" % (name, len(off), off[0] if off else 0))
            check_jpeg_frames(frames, w, h_, ctx.work, name)
            p = psnr(b"".join(ref), our_picture(ctx, name, frames, e["chroma"]), w, h_, e["chroma"])
            if bar is None:
                bar = p
            log("%-26s %2d frames %dx%d, pts as the CLI's, PSNR against its decode Y %.2f Cb %.2f Cr %.2f dB%s%s" %
                (name, len(frames), w, h_, p["y"], p["cb"], p["cr"],
                 ", autorotated (EXIF %d)" % o.started.exif_orientation if o.started.autorotated else "",
                 ", %d deinterlaced (CLI: -vf %s)" % (o.summary.frames_deinterlaced, e["cli_filter"])
                 if e["cli_filter"] else ""))
            if e["cli_filter"]:
                check(o.summary.frames_deinterlaced == len(frames), "%s: %d of %d frames deinterlaced" %
                      (name, o.summary.frames_deinterlaced, len(frames)))
            for plane in ("y", "cb", "cr"):
                check(p[plane] >= bar[plane] - 2.0, "%s: %s PSNR %.2f dB against the CLI's frames; the plain clip "
                      "gets %.2f" % (name, plane, p[plane], bar[plane]))
        except h.CheckFailed as err:
            failures.append(str(err))
    check(not failures, "%d of %d inputs differ from the ffmpeg CLI:\n  " % (len(failures), len(made)) +
          "\n  ".join(failures))
