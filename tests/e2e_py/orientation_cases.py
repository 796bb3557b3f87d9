"""End-to-end cases of rotated and mirrored input, each held to the ffmpeg CLI's autorotate.

A 320x240 H.264 MP4 is tagged three ways: `-metadata:s:v rotate=90` (which the CLI shows
turned 270 degrees clockwise), `rotate=180`, and a mirrored track matrix written into its
tkhd box (the CLI's hflip). The reference is `ffmpeg -i IN -f rawvideo -pix_fmt yuv420p`,
which autorotates. conveyord's JPEG frames, decoded by ffmpeg, must have the turned size
and match that reference (PSNR, limited-range source against full-range JPEG) within
0.5 dB of what the untagged clip gets against its own CLI decode, and far better than the
unturned picture does. With JobSpec.autorotate false the pixels stay
as decoded: each JPEG carries the orientation as an Exif tag, which FFmpeg's own JPEG
decoder reads back as the same display rotation; MOV output carries the display matrix,
and Matroska output says in Started.notes that it cannot.
"""

import os
import struct

import conveyor_harness as h
import input_corpus
from conveyor_harness import check, log
from picture_checks import check_jpeg_frames, psnr_limited_ref_vs_jpeg, write_jpeg_sequence

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


W, H, FRAMES = 320, 240, 8


def make_clips(ctx):
    """name -> (path, turned width, turned height)."""
    plain = ctx.path("plain.mp4")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=%dx%d:rate=25" % (W, H), "-frames:v", str(FRAMES), "-c:v", "libx264",
             "-preset", "veryfast", "-pix_fmt", "yuv420p", "-movflags", "faststart", plain)
    clips = {"plain": (plain, W, H)}
    for tag, turned in (("90", (H, W)), ("180", (W, H))):
        path = ctx.path("rotate%s.mp4" % tag)
        h.ffmpeg("-i", plain, "-c", "copy", "-metadata:s:v", "rotate=" + tag, "-movflags", "faststart", path)
        clips["rotate" + tag] = (path, turned[0], turned[1])
    mirrored = ctx.path("mirrored.mp4")
    input_corpus.write_tkhd_matrix(plain, mirrored, input_corpus.MIRRORED)
    clips["mirrored"] = (mirrored, W, H)
    return clips


def cli_frames(ctx, path, name):
    """The CLI's autorotated frames as raw yuv420p, and their size from ffprobe of them."""
    out = ctx.path(name + ".cli.yuv")
    h.ffmpeg("-i", path, "-f", "rawvideo", "-pix_fmt", "yuv420p", out)
    with open(out, "rb") as f:
        return f.read()


def decode_jpegs(ctx, frames, name):
    pattern = write_jpeg_sequence(frames, ctx.path(name + "_jpeg"))
    out = ctx.path(name + ".ours.yuv")
    h.ffmpeg("-f", "image2", "-i", pattern, "-f", "rawvideo", "-pix_fmt", "yuvj420p", out)
    with open(out, "rb") as f:
        return f.read()


def spec(pb, autorotate=None, container=None):
    s = pb.JobSpec(container=pb.ContainerInput(), client_label="pye2e orientation")
    if autorotate is not None:
        s.autorotate = autorotate
    s.renditions.append(pb.RenditionSpec())
    if container is not None:
        s.output.container.format = container
    return s


def exif_orientation(jpeg):
    """The Orientation tag of a JPEG's Exif APP1, or None."""
    i = 2
    while i + 4 <= len(jpeg) and jpeg[i] == 0xFF:
        marker, length = jpeg[i + 1], struct.unpack(">H", jpeg[i + 2:i + 4])[0]
        body = jpeg[i + 4:i + 2 + length]
        if marker == 0xE1 and body[:6] == b"Exif\0\0":
            tiff = body[6:]
            e = "<" if tiff[:2] == b"II" else ">"
            ifd = struct.unpack(e + "I", tiff[4:8])[0]
            for k in range(struct.unpack(e + "H", tiff[ifd:ifd + 2])[0]):
                tag, typ, _count, value = struct.unpack(e + "HHI4s", tiff[ifd + 2 + 12 * k:ifd + 14 + 12 * k])
                if tag == 0x0112:
                    return struct.unpack(e + "H", value[:2])[0]
        if marker == 0xDA:
            break
        i += 2 + length
    return None


@case
def rotated_and_mirrored_inputs(ctx):
    pb = ctx.pb
    clips = make_clips(ctx)
    plain_ref = cli_frames(ctx, clips["plain"][0], "plain")
    failures = []
    # The bar: the same clip untagged against its own CLI decode (what JPEG at quality 85
    # and 4:2:0 costs testsrc2's hard edges, chroma most).
    o = h.transcode(ctx.stub, pb, spec(pb), h.container_requests(pb, clips["plain"][0]))
    h.expect_ok(o, "plain")
    bar = psnr_limited_ref_vs_jpeg(plain_ref, decode_jpegs(ctx, o.frames[0], "plain"), W, H, FRAMES)
    log("plain      PSNR against the CLI's decode: Y %.2f Cb %.2f Cr %.2f dB" % (bar["y"], bar["cb"], bar["cr"]))
    for name in ("rotate90", "rotate180", "mirrored"):
        path, tw, th = clips[name]
        ref = cli_frames(ctx, path, name)
        check(len(ref) == tw * th * 3 // 2 * FRAMES, "%s: the CLI gave %d bytes, not %d frames of %dx%d" %
              (name, len(ref), FRAMES, tw, th))
        o = h.transcode(ctx.stub, pb, spec(pb), h.container_requests(pb, path))
        try:
            h.expect_ok(o, name)
            check(o.started.autorotated, "%s: Started.autorotated is false" % name)
            check(len(o.frames[0]) == FRAMES, "%s: %d frames" % (name, len(o.frames[0])))
            check_jpeg_frames(o.frames[0], tw, th, ctx.work, name)
            ours = decode_jpegs(ctx, o.frames[0], name)
            p = psnr_limited_ref_vs_jpeg(ref, ours, tw, th, FRAMES)
            log("%-10s Started rotation %d, EXIF %d; %dx%d; PSNR against the CLI's autorotate: Y %.2f Cb %.2f "
                "Cr %.2f dB" % (name, o.started.rotation_degrees, o.started.exif_orientation, tw, th, p["y"], p["cb"],
                                p["cr"]))
            for plane in ("y", "cb", "cr"):
                check(p[plane] >= bar[plane] - 0.5, "%s: %s PSNR %.2f dB against the CLI's frames, the untagged "
                      "clip gets %.2f" % (name, plane, p[plane], bar[plane]))
            if (tw, th) == (W, H):  # the same size unturned: it must match far worse
                wrong = psnr_limited_ref_vs_jpeg(plain_ref, ours, W, H, FRAMES)
                check(wrong["y"] < p["y"] - 15, "%s: the unturned picture matches as well (%.2f dB)" %
                      (name, wrong["y"]))
        except h.CheckFailed as e:
            failures.append(str(e))

    # autorotate false: pixels as decoded, the orientation as metadata.
    path = clips["rotate90"][0]
    o = h.transcode(ctx.stub, pb, spec(pb, autorotate=False), h.container_requests(pb, path))
    try:
        h.expect_ok(o, "no autorotate, JPEG")
        check(not o.started.autorotated, "no autorotate: Started.autorotated is true")
        check_jpeg_frames(o.frames[0], W, H, ctx.work, "kept")
        tags = {exif_orientation(f.data) for f in o.frames[0]}
        check(tags == {8}, "no autorotate: Exif orientations %s, want {8} (rotate 270 clockwise)" % tags)
        jpg = os.path.join(ctx.work, "kept_0.jpg")
        with open(jpg, "wb") as f:
            f.write(o.frames[0][0].data)
        # FFmpeg's own JPEG decoder reads the tag as its display matrix.
        probe = h.run(["ffprobe", "-v", "error", "-show_frames", "-of", "flat", jpg]).stdout.decode()
        log("ffprobe of a kept frame's side data: %s" %
            [l for l in probe.splitlines() if "side_data" in l and ("rotation" in l or "type" in l)])
        check('rotation=90' in probe.replace('"', '') or 'rotation=-270' in probe.replace('"', ''),
              "no autorotate: FFmpeg's JPEG decoder does not read the Exif tag as a rotation")
    except h.CheckFailed as e:
        failures.append(str(e))
    o = h.transcode(ctx.stub, pb, spec(pb, autorotate=False, container=pb.CONTAINER_FORMAT_MOV),
                    h.container_requests(pb, path))
    try:
        h.expect_ok(o, "no autorotate, MOV")
        mov = os.path.join(ctx.work, "kept.mov")
        with open(mov, "wb") as f:
            f.write(bytes(o.containers[0]))
        ours, theirs = (h.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                               "stream_side_data=rotation", "-of", "csv=p=0", p]).stdout.decode().strip()
                        for p in (mov, path))
        check(ours == theirs and ours != "", "no autorotate, MOV: display rotation %r, the input's %r" % (ours, theirs))
    except h.CheckFailed as e:
        failures.append(str(e))
    o = h.transcode(ctx.stub, pb, spec(pb, autorotate=False, container=pb.CONTAINER_FORMAT_MATROSKA),
                    h.container_requests(pb, path))
    try:
        h.expect_ok(o, "no autorotate, Matroska")
        check(any("cannot carry the display matrix" in n for n in o.started.notes),
              "no autorotate, Matroska: no note: %s" % list(o.started.notes))
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))
