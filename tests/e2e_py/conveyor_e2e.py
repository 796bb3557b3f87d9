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
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conveyor_harness as h  # noqa: E402
from conveyor_harness import MiB, check, log  # noqa: E402
from e2e_specs import (check_container_output, check_frame_pts, check_summary, container_output,  # noqa: E402
                       container_spec, raw_spec, testsrc)
from picture_checks import (check_jpeg_frames, jpeg_size, psnr_bytes, psnr_limited_ref_vs_jpeg,  # noqa: E402
                            psnr_rgb_input_vs_jpeg, read_ppm, write_jpeg_sequence)

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
    check_jpeg_frames(frames, w, hh, ctx.work, "hevc10")
    info = jpeg_size(frames[0].data)
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
    conv_pattern = write_jpeg_sequence(frames, ctx.path("conveyor"))
    conv_yuv = decode_to_yuv(conv_pattern, ctx.path("conveyor.yuv"), "yuvj420p", ["-f", "image2"])
    turbo_yuv = decode_to_yuv(os.path.join(turbo_dir, "%04d.jpg"), ctx.path("turbo.yuv"), "yuvj420p", ["-f", "image2"])
    pc = psnr_limited_ref_vs_jpeg(ref_yuv, conv_yuv, w, hh, n)
    pt = psnr_limited_ref_vs_jpeg(ref_yuv, turbo_yuv, w, hh, n)
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
        pw, ph, rgb = read_ppm(path)
        rgb_frames.append((k, rgb))
    spec = raw_spec(pb, pb.PIXEL_FORMAT_RGB24, w, hh, renditions=[
        pb.RenditionSpec(name="q85", quality=quality, subsampling=pb.SUBSAMPLING_420)], label="pye2e hevc10 rgb")
    rgb_out = h.transcode(ctx.stub, pb, spec, h.raw_frame_requests(pb, rgb_frames))
    h.expect_ok(rgb_out, "the PPM frames as raw rgb24")
    check(len(rgb_out.frames[0]) == n, "rgb24: %d frames" % len(rgb_out.frames[0]))
    crgb_yuv = decode_to_yuv(write_jpeg_sequence(rgb_out.frames[0], ctx.path("conveyor_rgb")),
                             ctx.path("conveyor_rgb.yuv"), "yuvj420p", ["-f", "image2"])
    qc = psnr_rgb_input_vs_jpeg(ppms, crgb_yuv, w, hh)
    qt = psnr_rgb_input_vs_jpeg(ppms, turbo_yuv, w, hh)
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
    check_jpeg_frames(out.frames[0], w, hh, ctx.work, "raw_r0")
    check_jpeg_frames(out.frames[1], 320, 180, ctx.work, "raw_r1")
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
    pattern = write_jpeg_sequence(out.frames[0][:k], ctx.path("raw_jpeg"))
    dec_rgb = ctx.path("raw_dec.rgb")
    h.ffmpeg(*(["-f", "image2", "-i", pattern] + sws + ["-vf", "scale=in_color_matrix=bt601:in_range=pc",
                                                        "-f", "rawvideo", "-pix_fmt", "rgb24", dec_rgb]))
    with open(src_rgb, "rb") as a, open(dec_rgb, "rb") as b:
        psnr_rgb = psnr_bytes(a.read(), b.read())
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
    check_jpeg_frames(out.frames[1], 160, 120, ctx.work, "shm_r1")
    check_summary(out, "shared_memory_both_ways", n, n)


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
import service_cases  # noqa: E402
import storyboard_cases  # noqa: E402

for _fn in (corpus_cases.CASES + damaged_input_cases.CASES + decode_cases.CASES + frame_rate_cases.CASES +
            interlace_cases.CASES + orientation_cases.CASES + random_access_cases.CASES + selection_cases.CASES +
            service_cases.CASES + storyboard_cases.CASES):
    CASES[_fn.__name__] = _fn
CASE_FLAGS.update(random_access_cases.FLAGS)
CASE_FLAGS.update(service_cases.FLAGS)


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
