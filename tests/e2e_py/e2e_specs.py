"""What the end-to-end cases share: the job specs they send, the media they make with the
ffmpeg CLI, and the checks of container output, Summary and frame pts."""

import conveyor_harness as h
from conveyor_harness import check, log


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
