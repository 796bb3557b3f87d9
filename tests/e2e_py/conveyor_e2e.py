#!/usr/bin/python3
"""End-to-end tests of conveyord with an independent client in Python (grpcio).

Each case starts its own conveyord (CPU worker, unix socket in a temp dir), makes its media
with the ffmpeg CLI, streams it through conveyor.v1.Transcoder, checks the output with
ffprobe, djpeg (libjpeg-turbo) and plain Python, and stops the daemon with SIGTERM,
expecting exit code 0.

  /usr/bin/python3 tests/e2e_py/conveyor_e2e.py --conveyord build/x/daemon/conveyord \
      --proto-dir proto --case h264_aac_to_mkv        (--case all runs every case)

Exit codes: 0 passed, 1 failed, 77 skipped (ctest SKIP_RETURN_CODE).
Environment: CONVEYOR_E2E_KEEP=1 keeps the temp dir; CONVEYOR_E2E_LOG_LEVEL sets the
daemon's log level (default warn).
"""

import argparse
import os
import shutil
import signal
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conveyor_harness as h  # noqa: E402
from conveyor_harness import MiB, check, log  # noqa: E402

CASES = {}
CASE_FLAGS = {}  # extra conveyord flags of a case


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Ctx:
    """What a case gets: its temp dir, the stubs, the daemon, a stub, the pb module."""

    def __init__(self, work, stubs, daemon):
        self.work, self.stubs, self.daemon = work, stubs, daemon
        self.pb = stubs.pb
        self.stub = daemon.pb_stub()
        self.grpc = daemon.grpc

    def path(self, *names):
        return os.path.join(self.work, *names)


def container_spec(pb, renditions, output=None, audio=False, label="", hint=""):
    spec = pb.JobSpec(container=pb.ContainerInput(format_hint=hint), audio_passthrough=audio, client_label=label)
    spec.renditions.extend(renditions)
    if output is not None:
        spec.output.CopyFrom(output)
    return spec


def raw_spec(pb, fmt, w, h_, rate=(25, 1), renditions=(), label="", matrix=None):
    spec = pb.JobSpec(raw=pb.RawInput(pixel_format=fmt, width=w, height=h_,
                                      frame_rate=pb.Rational(num=rate[0], den=rate[1]),
                                      color_matrix=matrix if matrix is not None else pb.COLOR_MATRIX_BT709,
                                      color_range=pb.COLOR_RANGE_LIMITED),
                      client_label=label)
    spec.renditions.extend(renditions)
    return spec


def container_output(pb, fmt):
    return pb.OutputSpec(container=pb.ContainerOutput(format=fmt))


def testsrc(size, rate=25):
    # testsrc2 rounds an odd size down when it is asked for a subsampled format (1279x719
    # becomes 1278x718 in yuv420p); generating RGB keeps the size, the encoder converts.
    w, hh = (int(x) for x in size.split("x"))
    fmt = ",format=rgb24" if (w | hh) & 1 else ""
    return ["-f", "lavfi", "-i", "testsrc2=size=%s:rate=%d%s" % (size, rate, fmt)]


def h264_file(path, size, frames, rate=25, extra=()):
    h.ffmpeg(*(testsrc(size, rate) + ["-frames:v", str(frames), "-c:v", "libx264", "-preset", "veryfast",
                                      "-pix_fmt", "yuv420p"] + list(extra) + [path]))
    return path


def check_container_output(ctx, out, tag, src_probe, codec_want="mjpeg"):
    """Writes rendition 0's container and checks it against the source with ffprobe."""
    check(not out.frames, "%s: container output also sent OutputPackets" % tag)
    check(sorted(out.containers) == [0], "%s: container chunks for renditions %s" % (tag, sorted(out.containers)))
    ext = {"h264_aac_to_mkv": "mkv", "vp9_odd_size_to_mov": "mov"}.get(tag, "bin")
    path = ctx.path("out_%s.%s" % (tag, ext))
    with open(path, "wb") as f:
        f.write(out.containers[0])
    p = h.VideoProbe(path)
    src_span, out_span = src_probe.span_seconds(), p.span_seconds()
    frame_s = 1.0 / src_probe.fps
    log("%s: output %s (%d bytes): codec %s %dx%d, %d frames (source %d), span %.4f s (source %.4f s, "
        "format duration %s / source %s), first pts %.4f (source %.4f), audio %s" %
        (tag, p.format_name, len(out.containers[0]), p.codec, p.width, p.height, p.nb_read_frames,
         src_probe.nb_read_frames, out_span, src_span, p.format_duration, src_probe.format_duration,
         min(x for x in p.packet_pts if x is not None), min(x for x in src_probe.frame_pts if x is not None),
         p.audio_codecs()))
    check(p.codec == codec_want, "%s: video codec %s, want %s" % (tag, p.codec, codec_want))
    check((p.width, p.height) == (src_probe.width, src_probe.height),
          "%s: %sx%s, want %dx%d" % (tag, p.width, p.height, src_probe.width, src_probe.height))
    check(p.nb_read_frames == src_probe.nb_read_frames,
          "%s: %d frames decoded from the output, the source has %d" % (tag, p.nb_read_frames, src_probe.nb_read_frames))
    check(len(p.packets) == src_probe.nb_read_frames,
          "%s: %d video packets, want %d" % (tag, len(p.packets), src_probe.nb_read_frames))
    check(None not in p.packet_pts, "%s: a video packet without pts" % tag)
    check(h.strictly_increasing(p.packet_pts), "%s: packet pts not increasing: %s" % (tag, p.packet_pts))
    check(None not in p.frame_pts and h.strictly_increasing(p.frame_pts),
          "%s: frame pts not increasing: %s" % (tag, p.frame_pts))
    check(abs(out_span - src_span) <= frame_s + 1e-6,
          "%s: duration %.4f s, source %.4f s (more than one frame, %.4f s, apart)" % (tag, out_span, src_span, frame_s))
    # Frame by frame, the output keeps the source's timing: the same intervals (to the
    # millisecond a Matroska timestamp holds), and a start within one frame of the source's.
    # (A muxer may shift all streams together: Matroska makes the AAC priming packet at
    # -21 ms start at 0, so the video starts at 21 ms. A/V sync is checked in case 1.)
    src_pts = sorted(x for x in src_probe.frame_pts if x is not None)
    shift = p.frame_pts[0] - src_pts[0]
    check(abs(shift) <= frame_s + 1e-6, "%s: video starts at %.4f s, the source at %.4f s" % (tag, p.frame_pts[0], src_pts[0]))
    for k, (a, b) in enumerate(zip(p.frame_pts, src_pts)):
        check(abs(a - shift - b) <= 0.0015, "%s: frame %d at %.4f s (shift %.4f s removed: %.4f s), source frame at %.4f s" %
              (tag, k, a, shift, a - shift, b))
    return p


def check_summary(out, tag, frames_in, frames_out):
    check(out.summary is not None, "%s: no Summary" % tag)
    check(out.summary.frames_in == frames_in and out.summary.frames_out == frames_out,
          "%s: Summary frames_in %d / frames_out %d, want %d / %d" %
          (tag, out.summary.frames_in, out.summary.frames_out, frames_in, frames_out))


def check_frame_pts(out, tag, rendition, want_pts):
    frames = out.frames.get(rendition, [])
    got = [f.pts for f in frames]
    idx = [f.index for f in frames]
    check(len(frames) == len(want_pts), "%s r%d: %d frames, want %d" % (tag, rendition, len(frames), len(want_pts)))
    check(idx == list(range(len(frames))), "%s r%d: frame_index %s, want 0..%d" % (tag, rendition, idx, len(frames) - 1))
    check(got == list(want_pts), "%s r%d: pts %s, want %s" % (tag, rendition, got, list(want_pts)))


# ================================================================ 1


@case
def h264_aac_to_mkv(ctx):
    pb = ctx.pb
    src = ctx.path("av.mp4")
    t0 = time.monotonic()
    h.ffmpeg(*(testsrc("1920x1080") + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                       "-t", "0.96", "-c:v", "libx264", "-preset", "veryfast",
                                       "-pix_fmt", "yuv420p", "-c:a", "aac", "-movflags", "+faststart", src]))
    sp = h.VideoProbe(src)
    log("source: %s %dx%d %s, %d frames at %.3f fps, audio %s, %d bytes (made in %.1f s)" %
        (sp.codec, sp.width, sp.height, sp.pix_fmt, sp.nb_read_frames, sp.fps, sp.audio_codecs(),
         os.path.getsize(src), time.monotonic() - t0))
    check(sp.nb_read_frames == 24 and sp.has_audio(), "the source is not what was asked for")
    spec = container_spec(pb, [pb.RenditionSpec(name="source")], container_output(pb, pb.CONTAINER_FORMAT_MATROSKA),
                          audio=True, label="pye2e h264_aac_to_mkv")
    out = h.transcode(ctx.stub, pb, spec, h.container_requests(pb, src))
    log("transcode: %s in %.2f s, %d progress messages, largest message %d bytes" %
        (out.describe(), out.seconds, out.progress, out.largest_message))
    h.expect_ok(out, "h264_aac_to_mkv")
    st = out.started
    check((st.source_width, st.source_height, st.source_codec) == (1920, 1080, "h264"),
          "Started: %dx%d %s" % (st.source_width, st.source_height, st.source_codec))
    check(st.backend == "cpu", "Started.backend %r" % st.backend)
    p = check_container_output(ctx, out, "h264_aac_to_mkv", sp)
    check(p.audio_codecs() == ["aac"], "audio streams in the output: %s, want [aac]" % p.audio_codecs())
    # A/V sync: the video's start relative to the audio's is the source's (first packets,
    # including AAC's priming packet), to Matroska's millisecond.
    av_src = min(sp.packet_pts) - min(sp.audio_packet_pts)
    av_out = min(p.packet_pts) - min(p.audio_packet_pts)
    a_span = max(p.audio_packet_pts) - min(p.audio_packet_pts)
    a_src_span = max(sp.audio_packet_pts) - min(sp.audio_packet_pts)
    log("A/V: video starts %.4f s after the audio (source %.4f s); audio packets %d over %.4f s (source %d over %.4f s)" %
        (av_out, av_src, len(p.audio_packet_pts), a_span, len(sp.audio_packet_pts), a_src_span))
    check(abs(av_out - av_src) <= 0.0015, "A/V offset %.4f s, source %.4f s" % (av_out, av_src))
    check(len(p.audio_packet_pts) == len(sp.audio_packet_pts),
          "%d audio packets, source %d" % (len(p.audio_packet_pts), len(sp.audio_packet_pts)))
    check_summary(out, "h264_aac_to_mkv", 24, 24)
    check(out.largest_message < 4 * MiB, "a response of %d bytes" % out.largest_message)


# ================================================================ 2


def decode_to_yuv(pattern_or_path, out_path, pix_fmt, extra_in=()):
    h.ffmpeg(*(list(extra_in) + ["-i", pattern_or_path, "-f", "rawvideo", "-pix_fmt", pix_fmt, out_path]))
    with open(out_path, "rb") as f:
        return f.read()


@case
def hevc10_to_frames(ctx):
    pb = ctx.pb
    if not h.has_encoder("libx265"):
        raise h.Skip("this ffmpeg has no libx265 encoder")
    for tool in ("cjpeg", "djpeg"):
        if shutil.which(tool) is None:
            raise h.Skip("%s is missing (apt-get install libjpeg-turbo-progs)" % tool)
    w, hh, n, quality = 640, 360, 24, 85
    src = ctx.path("hevc10.mkv")
    h.ffmpeg(*(testsrc("%dx%d" % (w, hh)) + ["-frames:v", str(n), "-c:v", "libx265", "-preset", "ultrafast",
                                             "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le", src]))
    sp = h.VideoProbe(src)
    log("source: %s %s %dx%d, %d frames" % (sp.codec, sp.pix_fmt, sp.width, sp.height, sp.nb_read_frames))
    check(sp.codec == "hevc" and sp.pix_fmt == "yuv420p10le" and sp.nb_read_frames == n, "unexpected source")

    spec = container_spec(pb, [pb.RenditionSpec(name="q85", quality=quality, subsampling=pb.SUBSAMPLING_420)],
                          label="pye2e hevc10_to_frames")
    out = h.transcode(ctx.stub, pb, spec, h.container_requests(pb, src))
    log("transcode: %s in %.2f s, largest message %d bytes" % (out.describe(), out.seconds, out.largest_message))
    h.expect_ok(out, "hevc10_to_frames")
    st = out.started
    check((st.source_width, st.source_height, st.source_codec) == (w, hh, "hevc"),
          "Started: %dx%d %s" % (st.source_width, st.source_height, st.source_codec))
    frames = out.frames[0]
    check(len(frames) == n, "%d JPEG frames, want %d" % (len(frames), n))
    check([f.index for f in frames] == list(range(n)), "frame_index %s" % [f.index for f in frames])
    pts = [f.pts for f in frames]
    check(h.strictly_increasing(pts), "pts not increasing: %s" % pts)
    tb = st.time_base
    src_pts = sorted(sp.frame_pts)
    for k, (a, b) in enumerate(zip(pts, src_pts)):
        check(abs(a * tb.num / tb.den - b) <= 0.5 / sp.fps, "frame %d at %d*%d/%d s, source %.4f s" % (k, a, tb.num, tb.den, b))
    h.check_jpeg_frames(frames, w, hh, ctx.work, "hevc10")
    info = h.jpeg_size(frames[0].data)
    check(info[2] == 3 and info[3] == ["2x2", "1x1", "1x1"], "JPEG sampling %s, want 4:2:0" % (info[3],))
    check_summary(out, "hevc10_to_frames", n, n)

    # Quality against libjpeg-turbo at the same quality and subsampling.
    #
    # Reference: the source decoded by ffmpeg to 8-bit yuv420p (limited range, BT.601, as
    # the stream is untagged and Conveyor also guesses BT.601 below 1280x720).
    # libjpeg-turbo: cjpeg -quality 85 -sample 2x2 from PPM frames of that reference (it only
    # takes RGB), so its input went YUV -> RGB (8-bit rounding, and clipping of what the
    # HEVC decode left outside the RGB gamut) before its own RGB -> YCbCr. Conveyor encodes
    # the YUV directly (only the limited -> full range change).
    # Both JPEGs are decoded by the same decoder (ffmpeg's mjpeg, to yuvj420p, so no chroma
    # upsampling) and compared in full-range YCbCr, the space both encoders quantise in,
    # against the exact (unrounded) full-range value of each reference sample, so neither
    # pays for a conversion in the measurement itself.
    # Gated: luma, the usual JPEG quality measure and where the quantiser's work shows, and
    # the 4:1:1-weighted average of Y, Cb, Cr, so that chroma cannot get worse unseen. On
    # this measurement cjpeg carries the cost of the RGB trip (about 47 dB of luma on this
    # clip by itself), which is the real cost of feeding libjpeg-turbo from YUV video; the
    # second comparison below removes it by giving both encoders the same RGB frames.
    # The PPMs are made so as to favour libjpeg-turbo (the strictest bar): accurate rounding,
    # and chroma replicated (neighbor, full_chroma_int) so that cjpeg's 2x2 average gives the
    # original chroma back. On this clip that gives cjpeg about 0.8 dB more luma and 0.5 dB
    # more average PSNR than ffmpeg's default conversion.
    ref_yuv = decode_to_yuv(src, ctx.path("ref.yuv"), "yuv420p")
    ppm_dir = ctx.path("ppm")
    os.makedirs(ppm_dir)
    h.ffmpeg("-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "%dx%d" % (w, hh), "-i", ctx.path("ref.yuv"),
             "-sws_flags", "accurate_rnd+full_chroma_int+full_chroma_inp+bitexact+neighbor",
             "-pix_fmt", "rgb24", "-f", "image2", os.path.join(ppm_dir, "%04d.ppm"))
    turbo_dir = ctx.path("turbo")
    os.makedirs(turbo_dir)
    turbo_bytes = 0
    for k in range(n):
        dst = os.path.join(turbo_dir, "%04d.jpg" % k)
        h.run(["cjpeg", "-quality", str(quality), "-sample", "2x2", "-outfile", dst,
               os.path.join(ppm_dir, "%04d.ppm" % (k + 1))])
        turbo_bytes += os.path.getsize(dst)
    conv_pattern = h.write_jpeg_sequence(frames, ctx.path("conveyor"))
    conv_yuv = decode_to_yuv(conv_pattern, ctx.path("conveyor.yuv"), "yuvj420p", ["-f", "image2"])
    turbo_yuv = decode_to_yuv(os.path.join(turbo_dir, "%04d.jpg"), ctx.path("turbo.yuv"), "yuvj420p", ["-f", "image2"])
    pc = h.psnr_limited_ref_vs_jpeg(ref_yuv, conv_yuv, w, hh, n)
    pt = h.psnr_limited_ref_vs_jpeg(ref_yuv, turbo_yuv, w, hh, n)
    conv_bytes = sum(len(f.data) for f in frames)
    bpp = lambda b: 8.0 * b / (w * hh * n)  # noqa: E731

    # The same comparison without the colour pipelines: Conveyor given the very PPM frames
    # cjpeg was given (raw rgb24 input), both measured against the exact JFIF YCbCr of those
    # frames (unrounded, chroma 2x2-averaged). This isolates the encoders (DCT, quantiser):
    # on the decoded-source measurement cjpeg also pays for the YUV -> RGB clipping, about
    # 47 dB of luma on this clip by itself.
    ppms = [os.path.join(ppm_dir, "%04d.ppm" % (k + 1)) for k in range(n)]
    rgb_frames = []
    for k, path in enumerate(ppms):
        pw, ph, rgb = h.read_ppm(path)
        rgb_frames.append((k, rgb))
    spec = raw_spec(pb, pb.PIXEL_FORMAT_RGB24, w, hh, renditions=[
        pb.RenditionSpec(name="q85", quality=quality, subsampling=pb.SUBSAMPLING_420)], label="pye2e hevc10 rgb")
    rgb_out = h.transcode(ctx.stub, pb, spec, h.raw_frame_requests(pb, rgb_frames))
    h.expect_ok(rgb_out, "the PPM frames as raw rgb24")
    check(len(rgb_out.frames[0]) == n, "rgb24: %d frames" % len(rgb_out.frames[0]))
    crgb_yuv = decode_to_yuv(h.write_jpeg_sequence(rgb_out.frames[0], ctx.path("conveyor_rgb")),
                             ctx.path("conveyor_rgb.yuv"), "yuvj420p", ["-f", "image2"])
    qc = h.psnr_rgb_input_vs_jpeg(ppms, crgb_yuv, w, hh)
    qt = h.psnr_rgb_input_vs_jpeg(ppms, turbo_yuv, w, hh)
    crgb_bytes = sum(len(f.data) for f in rgb_out.frames[0])

    def row(label, p, nbytes):
        log("  %-32s %6.2f  %6.2f  %6.2f  %6.2f   %.3f" % (label, p["y"], p["cb"], p["cr"], p["avg"], bpp(nbytes)))

    def diff(a, b):
        log("  %-32s %+6.2f  %+6.2f  %+6.2f  %+6.2f" % ("difference", a["y"] - b["y"], a["cb"] - b["cb"],
                                                          a["cr"] - b["cr"], a["avg"] - b["avg"]))
    log("PSNR (dB), q85 4:2:0                 Y       Cb      Cr      avg   bits/pixel")
    log(" against the decoded source (the bar):")
    row("conveyor, from the HEVC (YUV)", pc, conv_bytes)
    row("cjpeg, from PPMs of the source", pt, turbo_bytes)
    diff(pc, pt)
    log(" against the PPMs' own YCbCr (same input, encoders alone):")
    row("conveyor, raw rgb24 of the PPMs", qc, crgb_bytes)
    row("cjpeg, from the PPMs", qt, turbo_bytes)
    diff(qc, qt)
    check(pc["y"] >= pt["y"] - 0.3, "luma PSNR %.2f dB < libjpeg-turbo %.2f dB - 0.3" % (pc["y"], pt["y"]))
    check(pc["avg"] >= pt["avg"] - 0.3, "average PSNR %.2f dB < libjpeg-turbo %.2f dB - 0.3" % (pc["avg"], pt["avg"]))
    check(qc["y"] >= qt["y"] - 0.3 and qc["avg"] >= qt["avg"] - 0.3,
          "from the same RGB frames: Y %.2f / avg %.2f dB, libjpeg-turbo %.2f / %.2f dB (bar: 0.3 dB below)" %
          (qc["y"], qc["avg"], qt["y"], qt["avg"]))


# ================================================================ 3


@case
def vp9_odd_size_to_mov(ctx):
    pb = ctx.pb
    if not h.has_encoder("libvpx-vp9"):
        raise h.Skip("this ffmpeg has no libvpx-vp9 encoder")
    src = ctx.path("odd.webm")
    h.ffmpeg(*(testsrc("1279x719") + ["-frames:v", "24", "-c:v", "libvpx-vp9", "-deadline", "realtime",
                                      "-cpu-used", "8", "-pix_fmt", "yuv420p", src]))
    sp = h.VideoProbe(src)
    log("source: %s %dx%d, %d frames, format duration %s" % (sp.codec, sp.width, sp.height, sp.nb_read_frames,
                                                            sp.format_duration))
    check((sp.codec, sp.width, sp.height, sp.nb_read_frames) == ("vp9", 1279, 719, 24), "unexpected source")
    spec = container_spec(pb, [pb.RenditionSpec()], container_output(pb, pb.CONTAINER_FORMAT_MOV),
                          label="pye2e vp9_odd_size_to_mov")
    out = h.transcode(ctx.stub, pb, spec, h.container_requests(pb, src))
    log("transcode: %s in %.2f s" % (out.describe(), out.seconds))
    h.expect_ok(out, "vp9_odd_size_to_mov")
    check((out.started.source_width, out.started.source_height, out.started.source_codec) == (1279, 719, "vp9"),
          "Started: %s" % out.started)
    check_container_output(ctx, out, "vp9_odd_size_to_mov", sp)
    check_summary(out, "vp9_odd_size_to_mov", 24, 24)


# ================================================================ 4


def raw_yuv420p_frames(raw_path, w, hh, n):
    """n frames of testsrc at w x hh as yuv420p, written to raw_path; returns their bytes."""
    h.ffmpeg(*(testsrc("%dx%d" % (w, hh)) + ["-frames:v", str(n), "-pix_fmt", "yuv420p", "-f", "rawvideo", raw_path]))
    fs = w * hh * 3 // 2
    with open(raw_path, "rb") as f:
        data = f.read()
    check(len(data) == fs * n, "raw source is %d bytes, want %d" % (len(data), fs * n))
    return [data[k * fs:(k + 1) * fs] for k in range(n)]


@case
def raw_yuv420p_to_frames(ctx):
    pb = ctx.pb
    # 1280x720: a frame is 1,382,400 bytes, so each travels as two chunks (1 MiB + rest).
    w, hh, n = 1280, 720, 24
    raw_path = ctx.path("src.yuv")
    frames_in = list(enumerate(raw_yuv420p_frames(raw_path, w, hh, n)))
    spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, w, hh, rate=(25, 1), label="pye2e raw",
                    renditions=[pb.RenditionSpec(name="source"), pb.RenditionSpec(name="small", width=320)])
    out = h.transcode(ctx.stub, pb, spec, h.raw_frame_requests(pb, frames_in, chunk=MiB))
    log("transcode: %s in %.2f s (%d chunks sent), largest response %d bytes" %
        (out.describe(), out.seconds, 2 * n, out.largest_message))
    h.expect_ok(out, "raw_yuv420p_to_frames")
    st = out.started
    check((st.source_width, st.source_height, st.source_codec) == (w, hh, "rawvideo"), "Started: %s" % st)
    check((st.time_base.num, st.time_base.den) == (1, 25), "time_base %d/%d, want 1/25" % (st.time_base.num, st.time_base.den))
    check_frame_pts(out, "raw", 0, range(n))
    check_frame_pts(out, "raw", 1, range(n))
    h.check_jpeg_frames(out.frames[0], w, hh, ctx.work, "raw_r0")
    h.check_jpeg_frames(out.frames[1], 320, 180, ctx.work, "raw_r1")
    check_summary(out, "raw_yuv420p_to_frames", n, n)
    check(out.largest_message < 4 * MiB, "largest response %d bytes, not under 4 MiB" % out.largest_message)
    # Content: RGB PSNR of the first 4 frames against the raw input, both converted to RGB
    # by ffmpeg with the same flags; the input as the BT.709 limited range it was declared,
    # the JPEGs as JFIF (BT.601 full range). A matrix ignored or applied twice shows as a
    # large drop (24 dB instead of about 40 dB here when the input is read as BT.601).
    k = 4
    sws = ["-sws_flags", "accurate_rnd+full_chroma_int+full_chroma_inp+bitexact+bilinear"]
    src_rgb = ctx.path("raw_src.rgb")
    h.ffmpeg(*(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "%dx%d" % (w, hh), "-i", raw_path, "-frames:v", str(k)]
               + sws + ["-vf", "scale=in_color_matrix=bt709:in_range=tv", "-f", "rawvideo", "-pix_fmt", "rgb24", src_rgb]))
    pattern = h.write_jpeg_sequence(out.frames[0][:k], ctx.path("raw_jpeg"))
    dec_rgb = ctx.path("raw_dec.rgb")
    h.ffmpeg(*(["-f", "image2", "-i", pattern] + sws + ["-vf", "scale=in_color_matrix=bt601:in_range=pc",
                                                        "-f", "rawvideo", "-pix_fmt", "rgb24", dec_rgb]))
    with open(src_rgb, "rb") as a, open(dec_rgb, "rb") as b:
        psnr_rgb = h.psnr_bytes(a.read(), b.read())
    log("raw: %d+%d frames, pts %s..%s, JPEG sizes %d..%d bytes; RGB PSNR of frames 0-3 %.2f dB" %
        (len(out.frames[0]), len(out.frames[1]), out.frames[0][0].pts, out.frames[0][-1].pts,
         min(len(f.data) for f in out.frames[0]), max(len(f.data) for f in out.frames[0]), psnr_rgb))
    check(psnr_rgb > 30.0, "RGB PSNR %.2f dB of the raw input's JPEGs is implausibly low" % psnr_rgb)


@case
def shared_memory_both_ways(ctx):
    """Raw frames into the client's memfd and JPEGs out of the daemon's, from the proto's
    comments alone: memfd, seals, SCM_RIGHTS both ways on the attach socket, mmap. The
    client runs in lockstep and releases each JPEG slot once read, so every JPEG must come
    in a slot, and byte for byte as the same frames sent in messages."""
    import fcntl
    import mmap
    import queue
    import socket
    pb = ctx.pb
    w, hh, n = 320, 240, 10
    fs = w * hh * 3 // 2
    frames = raw_yuv420p_frames(ctx.path("shm_src.yuv"), w, hh, n)
    renditions = [pb.RenditionSpec(name="source"), pb.RenditionSpec(name="small", width=160, quality=60)]

    plain = h.transcode(ctx.stub, pb, raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, w, hh, renditions=renditions),
                        h.raw_frame_requests(pb, list(enumerate(frames))))
    h.expect_ok(plain, "frames and JPEGs in messages")

    spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, w, hh, renditions=renditions, label="pye2e shm")
    spec.raw.shared_memory_slots = 2
    spec.output.frames.shared_memory_slots = 3
    events = queue.Queue()  # Started, then ("jpeg", slot) and ("released", slot), from the reader
    mem = {}
    seen = {}

    def on_response(resp):
        kind = resp.WhichOneof("message")
        if kind == "started":
            events.put(("started", resp.started))
        elif kind == "slot_released":
            events.put(("released", resp.slot_released.slot))
        elif kind == "packet" and resp.packet.HasField("shared"):
            events.put(("jpeg", resp.packet.shared.slot))

    def read_shared(j):
        start = j.slot * mem["out"].slot_bytes
        return bytes(mem["jpegs"][start:start + j.size])

    def requests():
        kind, started = events.get(timeout=30)
        check(kind == "started", "the first response is %s, not Started" % kind)
        inp, out = started.shared_memory, started.shared_memory_output
        check(inp.attach_key == out.attach_key and inp.attach_socket == out.attach_socket,
              "input and output name different attaches: %s / %s" % (inp, out))
        mem["out"] = out
        fd = os.memfd_create("pye2e-frames", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, inp.slots * inp.slot_bytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        frames_map = mmap.mmap(fd, inp.slots * inp.slot_bytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(inp.attach_socket)
            socket.send_fds(s, [inp.attach_key.encode()], [fd])
            answer, fds, _, _ = socket.recv_fds(s, 256, 2)
        os.close(fd)  # the daemon has its own reference now
        check(answer.startswith(b"OK") and len(fds) == 1, "attach: %r with %d descriptors" % (answer, len(fds)))
        try:
            mmap.mmap(fds[0], out.slot_bytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            seen["writable"] = True
        except PermissionError:
            seen["writable"] = False
        mem["jpegs"] = mmap.mmap(fds[0], out.slots * out.slot_bytes, mmap.MAP_SHARED, mmap.PROT_READ)
        os.close(fds[0])
        free = list(range(inp.slots))
        for k in range(n):
            while not free:
                kind, slot = events.get(timeout=30)
                if kind == "released":
                    free.append(slot)
            slot = free.pop(0)
            frames_map[slot * inp.slot_bytes:slot * inp.slot_bytes + fs] = frames[k]
            yield pb.TranscodeRequest(shared_frame=pb.SharedFrame(slot=slot, pts=k))
            jpegs = 0  # this frame's two, read by the reader before it told us; now released
            while jpegs < len(renditions):
                kind, slot = events.get(timeout=30)
                if kind == "released":
                    free.append(slot)
                elif kind == "jpeg":
                    jpegs += 1
                    yield pb.TranscodeRequest(output_slot_released=pb.OutputSlotReleased(slot=slot))

    out = h.transcode(ctx.stub, pb, spec, requests(), read_shared=read_shared, on_response=on_response)
    log("transcode: %s in %.2f s; %d of %d JPEGs in slots of %d bytes" %
        (out.describe(), out.seconds, out.shared_packets, 2 * n, mem["out"].slot_bytes if "out" in mem else 0))
    h.expect_ok(out, "shared_memory_both_ways")
    check(seen.get("writable") is False, "the daemon's JPEG slots could be mapped writable")
    check(out.shared_packets == 2 * n, "%d of %d JPEGs came in slots" % (out.shared_packets, 2 * n))
    for r in range(2):
        got = [f.data for f in out.frames[r]]
        want = [f.data for f in plain.frames[r]]
        check(len(got) == n and got == want,
              "rendition %d: %d JPEGs, %d equal to the same frames sent in messages" %
              (r, len(got), sum(a == b for a, b in zip(got, want))))
    check_frame_pts(out, "shm", 0, range(n))
    h.check_jpeg_frames(out.frames[1], 160, 120, ctx.work, "shm_r1")
    check_summary(out, "shared_memory_both_ways", n, n)


# ================================================================ 5


@case
def health_and_reflection(ctx):
    s = ctx.stubs
    grpc = ctx.grpc
    ch = ctx.daemon.channel()
    health = s.health_grpc.HealthStub(ch)
    serving = s.health.HealthCheckResponse.SERVING
    for name in ("", "conveyor.v1.Transcoder"):
        r = health.Check(s.health.HealthCheckRequest(service=name), timeout=5)
        log("health %r: %s" % (name, s.health.HealthCheckResponse.ServingStatus.Name(r.status)))
        check(r.status == serving, "health %r is %s, want SERVING" % (name, r.status))
    try:
        r = health.Check(s.health.HealthCheckRequest(service="no.such.Service"), timeout=5)
        raise h.CheckFailed("health of an unknown service answered %s, want NOT_FOUND" % r.status)
    except grpc.RpcError as e:
        log("health 'no.such.Service': %s" % e.code().name)
        check(e.code() == grpc.StatusCode.NOT_FOUND, "unknown service: %s, want NOT_FOUND" % e.code())

    refl = s.refl_grpc.ServerReflectionStub(ch)
    R = s.refl.ServerReflectionRequest
    responses = list(refl.ServerReflectionInfo(iter([R(list_services=""),
                                                     R(file_containing_symbol="conveyor.v1.Transcoder")]), timeout=5))
    check(len(responses) == 2, "reflection gave %d responses to 2 requests" % len(responses))
    names = sorted(x.name for x in responses[0].list_services_response.service)
    log("reflection (v1alpha) lists: %s" % names)
    check("conveyor.v1.Transcoder" in names, "reflection does not list conveyor.v1.Transcoder: %s" % names)
    from google.protobuf import descriptor_pb2
    files = {}
    for raw in responses[1].file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        files[fd.name] = fd
    log("reflection: the file of conveyor.v1.Transcoder and its deps: %s" % sorted(files))
    fd = files.get("conveyor/v1/transcoder.proto")
    check(fd is not None, "no conveyor/v1/transcoder.proto in %s" % sorted(files))
    svc = {x.name: x for x in fd.service}.get("Transcoder")
    check(svc is not None, "the file holds no service Transcoder")
    methods = {m.name: (m.client_streaming, m.server_streaming) for m in svc.method}
    log("reflection: Transcoder methods %s" % methods)
    check(methods.get("Transcode") == (True, True), "Transcode is not bidirectional streaming: %s" % methods)
    for m in ("GetServerStatus", "ListSessions", "CancelSession"):
        check(m in methods, "method %s missing" % m)

    st = ctx.stub.GetServerStatus(ctx.pb.GetServerStatusRequest(), timeout=5)
    log("status: version %s, workers %s, sessions %d/%d, draining %s" %
        (st.version, [(x.name, x.backend) for x in st.workers], st.sessions_active, st.max_sessions, st.draining))
    check([x.backend for x in st.workers] == ["cpu"] and not st.draining and st.version, "unexpected status %s" % st)


# ================================================================ 6


def one_of(details, needles):
    return any(n.lower() in details.lower() for n in needles)


@case
def bad_inputs(ctx):
    pb = ctx.pb
    grpc = ctx.grpc
    INVALID = grpc.StatusCode.INVALID_ARGUMENT
    good_src = h264_file(ctx.path("good.mkv"), "640x360", 48)
    trunc_src = h264_file(ctx.path("whole.mkv"), "320x240", 24)
    with open(trunc_src, "rb") as f:
        whole = f.read()
    half = whole[:len(whole) // 2]
    h.ffmpeg(*(testsrc("320x240") + ["-frames:v", "6", "-c:v", "ffv1", ctx.path("ffv1.mkv")]))
    garbage = os.urandom(64 * 1024)
    src_frames = h.VideoProbe(trunc_src).nb_read_frames
    r0 = [pb.RenditionSpec()]
    yuv_64x48 = bytes(range(256)) * 18  # 4608 = 64*48*3/2

    def faststart_spec(container_format, seekable):
        spec = container_spec(pb, r0)
        spec.output.container.format = container_format
        spec.output.container.seekable = seekable
        spec.output.container.faststart = True
        return spec

    calls = {
        "garbage": (container_spec(pb, r0), lambda: h.bytes_requests(pb, garbage, 16384)),
        "truncated_mkv": (container_spec(pb, r0), lambda: h.bytes_requests(pb, half, 16384)),
        "ffv1_mkv": (container_spec(pb, r0), lambda: h.container_requests(pb, ctx.path("ffv1.mkv"))),
        "empty_input": (container_spec(pb, r0), lambda: iter(())),
        "raw_wrong_size": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                           lambda: h.raw_frame_requests(pb, [(0, yuv_64x48), (1, yuv_64x48[:-10])])),
        "raw_pts_backwards": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                              lambda: h.raw_frame_requests(pb, [(5, yuv_64x48), (9, yuv_64x48), (7, yuv_64x48)])),
        "raw_pts_repeated": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                             lambda: h.raw_frame_requests(pb, [(0, yuv_64x48), (0, yuv_64x48)])),
        "raw_0x0": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 0, 0, renditions=r0), lambda: iter(())),
        "raw_100000x100000": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 100000, 100000, renditions=r0), lambda: iter(())),
        "no_renditions": (container_spec(pb, []), lambda: h.container_requests(pb, good_src)),
        "faststart_mkv": (faststart_spec(pb.CONTAINER_FORMAT_MATROSKA, True), lambda: h.container_requests(pb, good_src)),
        "faststart_live": (faststart_spec(pb.CONTAINER_FORMAT_MOV, False), lambda: h.container_requests(pb, good_src)),
    }
    # The good session sends the first half of its file, then holds until every bad session
    # has ended, then sends the rest: so it is open all through them, whatever the load.
    good_size = os.path.getsize(good_src)
    half_sent, bad_done = threading.Event(), threading.Event()

    def good_requests():
        reqs = list(h.container_requests(pb, good_src, chunk=4096))
        for k, r in enumerate(reqs):
            if k == len(reqs) // 2:
                half_sent.set()
                bad_done.wait(120)
            yield r

    good_spec = container_spec(pb, [pb.RenditionSpec(), pb.RenditionSpec(width=320)], label="pye2e good")
    good_thread = h.Threads()
    good_thread.start("good", h.transcode, ctx.daemon.pb_stub(), pb, good_spec, good_requests())
    check(half_sent.wait(60), "the good session never sent half its input")
    threads = h.Threads()
    for name, (spec, inputs) in calls.items():
        spec.client_label = "pye2e bad " + name
        threads.start(name, h.transcode, ctx.daemon.pb_stub(), pb, spec, inputs(), 60)
    try:
        res = threads.join(180)
    finally:
        bad_done.set()
    res.update(good_thread.join(120))
    # The whole file the truncated one was cut from, for its pts (after the concurrent part).
    res["whole"] = h.transcode(ctx.stub, pb, container_spec(pb, r0), h.container_requests(pb, trunc_src))
    h.expect_ok(res["whole"], "the uncut file")
    for name in list(calls) + ["good"]:
        o = res[name]
        nf = {r: len(v) for r, v in o.frames.items()}
        log("%-18s %-17s %5.2f s  frames %s  %r" % (name, o.code.name, o.seconds, nf, o.details))

    failures = []

    def expect(name, code, needles):
        o = res[name]
        if o.code != code:
            hint = ""
            if o.code == grpc.StatusCode.CANCELLED and "server side" in o.details:
                hint = " (the daemon cancelled the call, losing its status: see e2e_py.bad_frame_status_repeated)"
            failures.append("%s: got %s (%r), want %s%s" % (name, o.code.name, o.details, code.name, hint))
        elif not one_of(o.details, needles):
            failures.append("%s: the message %r names none of %s" % (name, o.details, needles))

    expect("garbage", INVALID, ["format", "input", "invalid data"])
    expect("ffv1_mkv", INVALID, ["ffv1"])  # the codec allow-list refuses it; the message names it
    expect("empty_input", INVALID, ["empty"])
    expect("raw_wrong_size", INVALID, ["frame 1"])
    expect("raw_pts_backwards", INVALID, ["frame 2).pts: 7 is not after the previous frame's pts 9"])
    expect("raw_pts_repeated", INVALID, ["frame 1).pts: 0 is not after the previous frame's pts 0"])
    expect("raw_0x0", INVALID, ["spec.raw.width", "spec.raw.height"])
    expect("raw_100000x100000", INVALID, ["spec.raw.width", "spec.raw.height"])
    expect("no_renditions", INVALID, ["spec.renditions"])
    expect("faststart_mkv", INVALID, ["spec.output.container.faststart: only for MOV"])
    expect("faststart_live", INVALID, ["spec.output.container.faststart: needs seekable output"])

    # Truncated mid-stream (Matroska cut at half its bytes, inside a cluster). A live stream
    # that ends early looks like this, and the bytes before the cut are valid, so the right
    # outcome is what ffmpeg itself does with the file: every frame it can decode from those
    # bytes is delivered, in order, with the source's pts, and the stream ends OK with a
    # Summary that counts them (the frame cut in half is dropped). INVALID_ARGUMENT after
    # those frames would be acceptable too; losing them, or INTERNAL/UNKNOWN, would not.
    half_path = ctx.path("half.mkv")
    with open(half_path, "wb") as f:
        f.write(half)
    ffmpeg_n = h.VideoProbe(half_path).nb_read_frames
    src_pts = [f.pts for f in res["whole"].frames[0]]
    o = res["truncated_mkv"]
    n = len(o.frames.get(0, []))
    log("truncated_mkv: %d bytes of %d sent; %d of %d frames delivered (ffprobe decodes %d from the same bytes); %s" %
        (len(half), len(whole), n, src_frames, ffmpeg_n, o.describe()))
    if o.code not in (grpc.StatusCode.OK, INVALID):
        failures.append("truncated_mkv: got %s (%r), want OK or INVALID_ARGUMENT" % (o.code.name, o.details))
    if not 0 < n < src_frames or n != ffmpeg_n:
        failures.append("truncated_mkv: %d frames delivered from half of a %d-frame file; ffmpeg decodes %d" %
                        (n, src_frames, ffmpeg_n))
    else:
        try:
            h.check_jpeg_frames(o.frames[0], 320, 240, ctx.work, "trunc")
            check_frame_pts(o, "truncated_mkv", 0, src_pts[:n])
            if o.code == grpc.StatusCode.OK:
                h.expect_ok(o, "truncated_mkv")
                check_summary(o, "truncated_mkv", n, n)
        except h.CheckFailed as e:
            failures.append(str(e))

    g = res["good"]
    try:
        h.expect_ok(g, "good session")
        check_frame_pts(g, "good", 0, [f.pts for f in g.frames[0]])
        check(len(g.frames[0]) == 48 and len(g.frames[1]) == 48,
              "good: %d/%d frames, want 48/48" % (len(g.frames[0]), len(g.frames[1])))
        check(h.strictly_increasing([f.pts for f in g.frames[0]]), "good: pts not increasing")
        h.check_jpeg_frames(g.frames[0], 640, 360, ctx.work, "good0")
        h.check_jpeg_frames(g.frames[1], 320, 180, ctx.work, "good1")
        check_summary(g, "good", 48, 48)
        bad_start = min(res[k].t_start for k in calls) - g.t_start
        bad_end = max(res[k].t_end for k in calls) - g.t_start
        log("good session: %d bytes in %.2f s; the bad ones ran from %.2f s to %.2f s into it" %
            (good_size, g.seconds, bad_start, bad_end))
        check(bad_start > 0 and bad_end < g.seconds, "the good session was not running all along")
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


# ================================================================ 6b


@case
def bad_frame_status_repeated(ctx):
    """The wrong-size raw frame of bad_inputs, 210 times (3 variants, 3 threads): every call
    must end INVALID_ARGUMENT naming the frame. Once, a race can hide the status: a failure
    while a response write (Started, a packet) is still in flight must still reach the client
    as that failure, not as CANCELLED."""
    pb = ctx.pb
    good = bytes(range(256)) * 18  # one 64x48 yuv420p frame
    bad = good[:-10]
    variants = {
        "frame 0": [(0, bad)],
        "frame 1": [(0, good), (1, bad)],
        "frame 1 then more": [(0, good), (1, bad)] + [(k, good) for k in range(2, 30)],
    }
    reps = 70

    def spec():
        return raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=[pb.RenditionSpec()], label="pye2e repeat")

    def worker(name, frames):
        stub = ctx.daemon.pb_stub()
        counts = {}
        for _ in range(reps):
            o = h.transcode(stub, pb, spec(), h.raw_frame_requests(pb, frames), 30)
            key = (o.code.name, o.details)
            counts[key] = counts.get(key, 0) + 1
        return counts

    threads = h.Threads()
    for name, frames in variants.items():
        threads.start(name, worker, name, frames)
    t0 = time.monotonic()
    res = threads.join(240)
    log("%d calls in %.1f s" % (reps * len(variants), time.monotonic() - t0))
    failures = []
    for name, counts in res.items():
        want = "frame " + name.split()[1]
        for (code, details), k in sorted(counts.items(), key=lambda x: -x[1]):
            right = code == "INVALID_ARGUMENT" and want in details
            log("  wrong size at %-18s %3d x %s %r%s" % (name + ":", k, code, details, "" if right else "   <-- wrong"))
            if not right:
                failures.append("wrong size at %s: %d of %d calls ended %s %r, want INVALID_ARGUMENT naming %r" %
                                (name, k, reps, code, details, want))
    check(not failures, "\n  ".join(["status lost:"] + failures))


@case
def health_watch_follows_readiness(ctx):
    """grpc.health.v1 reports readiness as /readyz does: with max_sessions 1, Watch streams
    SERVING, NOT_SERVING while the one session is held open, and SERVING again once it
    ends; Check agrees for both service names."""
    s, pb = ctx.stubs, ctx.pb
    health = s.health_grpc.HealthStub(ctx.daemon.channel())
    H = s.health.HealthCheckResponse
    seen = []
    cv = threading.Condition()
    watch = health.Watch(s.health.HealthCheckRequest(service="conveyor.v1.Transcoder"))

    def read_watch():
        try:
            for r in watch:
                with cv:
                    seen.append(r.status)
                    cv.notify_all()
        except ctx.grpc.RpcError:
            pass  # cancelled at the end

    def wait_for(status, timeout_s=10):
        with cv:
            return cv.wait_for(lambda: seen and seen[-1] == status, timeout=timeout_s)

    def both_names():
        return [health.Check(s.health.HealthCheckRequest(service=n), timeout=5).status
                for n in ("", "conveyor.v1.Transcoder")]

    threading.Thread(target=read_watch, daemon=True).start()
    check(wait_for(H.SERVING), "Watch never said SERVING (saw %s)" % seen)

    release = threading.Event()
    frame = bytes(range(256)) * 18  # one 64x48 yuv420p frame

    def held_input():
        yield from h.raw_frame_requests(pb, [(0, frame)])
        release.wait(30)

    spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=[pb.RenditionSpec()], label="held")
    threads = h.Threads()
    threads.start("held", h.transcode, ctx.stub, pb, spec, held_input(), 60)
    check(wait_for(H.NOT_SERVING), "Watch did not turn NOT_SERVING at the session cap (saw %s)" % seen)
    check(both_names() == [H.NOT_SERVING] * 2, "Check at the cap: %s, want NOT_SERVING twice" % both_names())
    release.set()
    out = threads.join(60)["held"]
    h.expect_ok(out, "the held session")
    check(wait_for(H.SERVING), "Watch did not return to SERVING after the session ended (saw %s)" % seen)
    check(both_names() == [H.SERVING] * 2, "Check after: %s, want SERVING twice" % both_names())
    watch.cancel()
    log("Watch saw %s" % [H.ServingStatus.Name(x) for x in seen])


CASE_FLAGS["health_watch_follows_readiness"] = ["--max-sessions", "1"]


@case
def exit_with_health_watchers(ctx):
    """A balancing client holds a grpc.health.v1 Watch on every daemon for as long as it
    runs. On SIGTERM such a stream turns NOT_SERVING, and the daemon then exits at once
    (with no session, in well under a second) instead of waiting for the watchers to
    leave."""
    s = ctx.stubs
    health = s.health_grpc.HealthStub(ctx.daemon.channel())
    H = s.health.HealthCheckResponse
    seen = []
    watch = health.Watch(s.health.HealthCheckRequest(service="conveyor.v1.Transcoder"))

    def read_watch():
        try:
            for r in watch:
                seen.append(r.status)
        except ctx.grpc.RpcError:
            pass  # the daemon ended the stream

    reader = threading.Thread(target=read_watch, daemon=True)
    reader.start()
    t0 = time.monotonic()
    while not seen and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    check(seen[:1] == [H.SERVING], "Watch never said SERVING (saw %s)" % seen)
    t0 = time.monotonic()
    ctx.daemon.proc.send_signal(signal.SIGTERM)  # not stop(): that closes the watcher's channel first
    rc = ctx.daemon.proc.wait(timeout=10)
    took = time.monotonic() - t0
    reader.join(5)
    log("exit %s %.3f s after SIGTERM; Watch saw %s" % (rc, took, [H.ServingStatus.Name(x) for x in seen]))
    check(rc == 0, "conveyord exited %s" % rc)
    check(H.NOT_SERVING in seen, "the watcher was not told NOT_SERVING before the end (saw %s)" % seen)
    check(took < 1.0, "an idle daemon took %.2f s to exit with a watcher connected" % took)


# ================================================================ 7


@case
def concurrent_8(ctx):
    pb = ctx.pb
    n = 24
    t0 = time.monotonic()
    # Container sessions: each its own size, so that mixed-up output would show.
    containers = [
        ("h264_mkv", h264_file(ctx.path("c0.mkv"), "320x240", n)),
        ("h264_mp4", h264_file(ctx.path("c1.mp4"), "352x288", n, rate=30, extra=["-movflags", "+faststart"])),
        ("h264_ts", h264_file(ctx.path("c2.ts"), "256x144", n)),
    ]
    if h.has_encoder("libvpx-vp9"):
        vp9 = ctx.path("c3.webm")
        h.ffmpeg(*(testsrc("384x216") + ["-frames:v", str(n), "-c:v", "libvpx-vp9", "-deadline", "realtime",
                                         "-cpu-used", "8", vp9]))
        containers.append(("vp9_webm", vp9))
    else:
        containers.append(("h264_mkv2", h264_file(ctx.path("c3.mkv"), "384x216", n)))
    probes = {name: h.VideoProbe(path) for name, path in containers}
    log("media made in %.1f s" % (time.monotonic() - t0))

    # Raw sessions: flat frames whose luma encodes (session, frame), pts with gaps and offsets.
    raw = []
    for s, (w, hh) in enumerate([(160, 120), (192, 108), (96, 64), (224, 128)]):
        frames = []
        for k in range(n):
            y = 16 + (s * 53 + k * 8) % 219
            frames.append((1000 * s + 3 * k, bytes([y]) * (w * hh) + bytes([128]) * (2 * ((w + 1) // 2) * ((hh + 1) // 2))))
        raw.append(("raw%d_%dx%d" % (s, w, hh), w, hh, frames))

    # All 8 start together, and each holds after half its input until all 8 have sent half:
    # so all 8 are open at once, whatever the load.
    start, halfway = threading.Barrier(8, timeout=60), threading.Barrier(8, timeout=60)

    def held(requests):
        reqs = list(requests)
        for k, r in enumerate(reqs):
            if k == len(reqs) // 2:
                halfway.wait()
            yield r

    def run_container(name, path):
        spec = container_spec(pb, [pb.RenditionSpec(name=name)], label="pye2e c8 " + name)
        start.wait()
        return h.transcode(ctx.daemon.pb_stub(), pb, spec, held(h.container_requests(pb, path, chunk=8192)))

    def run_raw(name, w, hh, frames):
        spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, w, hh, rate=(30, 1), label="pye2e c8 " + name,
                        renditions=[pb.RenditionSpec(name=name)], matrix=pb.COLOR_MATRIX_BT601)
        start.wait()
        return h.transcode(ctx.daemon.pb_stub(), pb, spec, held(h.raw_frame_requests(pb, frames)))

    threads = h.Threads()
    for name, path in containers:
        threads.start(name, run_container, name, path)
    for name, w, hh, frames in raw:
        threads.start(name, run_raw, name, w, hh, frames)
    t1 = time.monotonic()
    res = threads.join(240)
    log("8 sessions in %.2f s" % (time.monotonic() - t1))
    last_start = max(o.t_start for o in res.values())
    first_end = min(o.t_end for o in res.values())
    log("all 8 were open together for %.2f s" % (first_end - last_start))
    check(last_start < first_end, "the 8 sessions did not overlap")
    failures = []
    for name, path in containers:
        o, p = res[name], probes[name]
        try:
            h.expect_ok(o, name)
            frames = o.frames.get(0, [])
            check(len(frames) == p.nb_read_frames == n, "%s: %d frames, source %d" % (name, len(frames), p.nb_read_frames))
            check([f.index for f in frames] == list(range(n)), "%s: frame_index out of order" % name)
            tb = o.started.time_base
            got = [f.pts * tb.num / tb.den for f in frames]
            want = sorted(p.frame_pts)
            check(h.strictly_increasing(got), "%s: pts not increasing" % name)
            check(all(abs(a - b) <= 0.5 / p.fps for a, b in zip(got, want)),
                  "%s: frame times %s, source %s" % (name, got[:4], want[:4]))
            h.check_jpeg_frames(frames, p.width, p.height, ctx.work, name)
            check_summary(o, name, n, n)
            log("%-16s OK %5.2f s  %d frames %dx%d, pts %s..%s (time_base %d/%d)" %
                (name, o.seconds, len(frames), p.width, p.height, frames[0].pts, frames[-1].pts, tb.num, tb.den))
        except h.CheckFailed as e:
            failures.append(str(e))
    for s, (name, w, hh, frames_in) in enumerate(raw):
        o = res[name]
        try:
            h.expect_ok(o, name)
            check_frame_pts(o, name, 0, [p for p, _ in frames_in])
            d = os.path.join(ctx.work, "gray_" + name)
            os.makedirs(d)
            for k, f in enumerate(o.frames[0]):
                info = h.jpeg_size(f.data)
                check(info and info[:2] == (w, hh), "%s frame %d: %s, want %dx%d" % (name, k, info, w, hh))
                gw, gh, px = h.djpeg_check(f.data, d, "%04d.jpg" % k, grayscale=True)
                mean = sum(px) / len(px)
                want = (frames_in[k][1][0] - 16) * 255.0 / 219.0
                check(abs(mean - want) <= 2.0, "%s frame %d: mean luma %.1f, want %.1f (someone else's frame?)" %
                      (name, k, mean, want))
            check_summary(o, name, n, n)
            log("%-16s OK %5.2f s  %d frames %dx%d, pts %s..%s, luma matches each frame" %
                (name, o.seconds, len(o.frames[0]), w, hh, o.frames[0][0].pts, o.frames[0][-1].pts))
        except h.CheckFailed as e:
            failures.append(str(e))
    check(not failures, "%d session(s) wrong:\n  " % len(failures) + "\n  ".join(failures))


# ================================================================ main


def run_case(name, args):
    work = h.make_work_dir(name)
    t0 = time.monotonic()
    daemon = None
    result = 1
    try:
        h.require_tools()
        stubs = h.Stubs(args.proto_dir, work)
        daemon = h.Daemon(args.conveyord, work, stubs, CASE_FLAGS.get(name, ()))
        CASES[name](Ctx(work, stubs, daemon))
        rc = daemon.stop()
        daemon = None
        check(rc == 0, "conveyord exited with %s after SIGTERM, want 0" % rc)
        log("[  PASSED  ] e2e_py.%s (%.1f s)" % (name, time.monotonic() - t0))
        result = 0
    except h.Skip as e:
        log("[  SKIPPED ] e2e_py.%s: %s" % (name, e))
        result = 77
    except Exception as e:
        if not isinstance(e, AssertionError):
            traceback.print_exc()
        log("FAILED: %s" % e)
        if daemon is not None:
            log("--- conveyord log (tail) ---\n%s" % daemon.log_tail())
        log("[  FAILED  ] e2e_py.%s (%.1f s)" % (name, time.monotonic() - t0))
    finally:
        if daemon is not None:
            rc = daemon.stop()
            if result == 0 and rc != 0:
                result = 1
        if os.environ.get("CONVEYOR_E2E_KEEP"):
            log("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return result


# Cases kept in their own modules.
import corpus_cases  # noqa: E402
import damaged_input_cases  # noqa: E402
import decode_cases  # noqa: E402
import frame_rate_cases  # noqa: E402
import interlace_cases  # noqa: E402
import orientation_cases  # noqa: E402
import random_access_cases  # noqa: E402
import selection_cases  # noqa: E402
import storyboard_cases  # noqa: E402

for _fn in (corpus_cases.CASES + damaged_input_cases.CASES + decode_cases.CASES + frame_rate_cases.CASES +
            interlace_cases.CASES + orientation_cases.CASES + random_access_cases.CASES + selection_cases.CASES +
            storyboard_cases.CASES):
    CASES[_fn.__name__] = _fn
CASE_FLAGS.update(random_access_cases.FLAGS)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conveyord", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--case", required=True, help="one of %s, or all" % ", ".join(CASES))
    args = ap.parse_args()
    names = list(CASES) if args.case == "all" else [args.case]
    for n in names:
        if n not in CASES:
            ap.error("unknown case %r (have %s)" % (n, ", ".join(CASES)))
    results = {n: run_case(n, args) for n in names}
    if len(names) > 1:
        log("results: %s" % results)
    if any(r == 1 for r in results.values()):
        return 1
    return 77 if all(r == 77 for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
