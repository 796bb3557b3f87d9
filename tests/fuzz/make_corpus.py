#!/usr/bin/python3
"""Writes the committed seed corpus under tests/fuzz/corpus/<target>/ (small files only).

Proto seeds come from the real schema (protoc --python_out into a temp dir); container
seeds are tiny 32x32 clips rendered by ffmpeg's lavfi. Re-run after a schema change:
  tests/fuzz/make_corpus.py [TARGET...]   (all targets, or only those named)
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
MAX_SEED_BYTES = 8192  # seeds stay small: they are committed and every run starts from them


def load_proto(tmp):
    subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"), "--python_out=" + tmp,
                    "conveyor/v1/transcoder.proto"], check=True)
    sys.path.insert(0, tmp)
    from conveyor.v1 import transcoder_pb2  # noqa: E402 (generated above)
    return transcoder_pb2


def write(target, name, data):
    if len(data) > MAX_SEED_BYTES:
        raise SystemExit(f"{target}/{name}: {len(data)} bytes, more than {MAX_SEED_BYTES}")
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def specs(pb):
    """JobSpecs covering each input kind, output kind and rendition field."""
    out = {}
    s = pb.JobSpec()
    s.container.format_hint = "matroska"
    s.renditions.add(width=1280, height=0, quality=80, subsampling=pb.SUBSAMPLING_420)
    s.renditions.add(name="thumb", width=0, height=90, subsampling=pb.SUBSAMPLING_444, restart_interval=0)
    s.output.container.format = pb.CONTAINER_FORMAT_MOV
    s.audio_passthrough = True
    s.client_label = "seed"
    out["container_mov_audio"] = s
    s = pb.JobSpec()
    s.container.SetInParent()
    s.renditions.add()
    s.output.frames.SetInParent()
    out["container_probe_frames"] = s
    s = pb.JobSpec()
    s.raw.pixel_format = pb.PIXEL_FORMAT_NV12
    s.raw.width, s.raw.height = 1920, 1080
    s.raw.frame_rate.num, s.raw.frame_rate.den = 30000, 1001
    s.raw.color_matrix = pb.COLOR_MATRIX_BT709
    s.raw.color_range = pb.COLOR_RANGE_FULL
    s.renditions.add(width=640, height=360, quality=100, subsampling=pb.SUBSAMPLING_422, restart_interval=65535)
    s.output.container.format = pb.CONTAINER_FORMAT_AVI
    out["raw_nv12_avi"] = s
    return out


def raw_streams(pb):
    """Raw-input streams for fuzz_raw_frames: 2-byte length + TranscodeRequest, repeated."""
    def frame_size(fmt, w, h):
        cw, ch = (w + 1) // 2, (h + 1) // 2
        return {pb.PIXEL_FORMAT_YUV420P: w * h + 2 * cw * ch, pb.PIXEL_FORMAT_NV12: w * h + 2 * cw * ch,
                pb.PIXEL_FORMAT_YUV422P: w * h + 2 * cw * h, pb.PIXEL_FORMAT_YUV444P: 3 * w * h,
                pb.PIXEL_FORMAT_RGB24: 3 * w * h, pb.PIXEL_FORMAT_BGRA: 4 * w * h}[fmt]

    def stream(fmt, w, h, renditions, frames, chunks_per_frame, matrix=0, rng=0):
        req = pb.TranscodeRequest()
        req.spec.raw.pixel_format = fmt
        req.spec.raw.width, req.spec.raw.height = w, h
        req.spec.raw.color_matrix, req.spec.raw.color_range = matrix, rng
        for r in renditions:
            req.spec.renditions.add(**r)
        msgs = [req]
        size = frame_size(fmt, w, h)
        for f in range(frames):
            data = bytes((x * 7 + f * 29) & 0xFF for x in range(size))
            step = -(-size // chunks_per_frame)
            for i in range(0, size, step):
                c = pb.TranscodeRequest()
                c.frame_chunk.pts = f
                c.frame_chunk.data = data[i:i + step]
                c.frame_chunk.end_of_frame = i + step >= size
                msgs.append(c)
        return b"".join(struct.pack("<H", len(m.SerializeToString())) + m.SerializeToString() for m in msgs)

    def shared_stream(fmt, w, h, slots, frames):
        """Frames through shared memory: the fuzzer attaches a memfd when the input's first
        byte (the spec's length) is even, so the label pads the spec to an even length."""
        req = pb.TranscodeRequest()
        req.spec.raw.pixel_format = fmt
        req.spec.raw.width, req.spec.raw.height = w, h
        req.spec.raw.shared_memory_slots = slots
        req.spec.renditions.add()
        if len(req.SerializeToString()) % 2:
            req.spec.client_label = "shm"
        if len(req.SerializeToString()) % 2:
            req.spec.client_label = "shm!"
        msgs = [req]
        for f in range(frames):
            c = pb.TranscodeRequest()
            c.shared_frame.slot = f % slots
            c.shared_frame.pts = f
            msgs.append(c)
        return b"".join(struct.pack("<H", len(m.SerializeToString())) + m.SerializeToString() for m in msgs)

    return {
        "shared_yuv420p_2slots": shared_stream(pb.PIXEL_FORMAT_YUV420P, 32, 16, 2, 2),
        "yuv420p_16x8": stream(pb.PIXEL_FORMAT_YUV420P, 16, 8, [{}], 2, 1),
        "nv12_odd_scaled": stream(pb.PIXEL_FORMAT_NV12, 17, 9, [{}, {"width": 8, "height": 0}], 1, 2,
                                  pb.COLOR_MATRIX_BT709),
        "yuv422p_restart": stream(pb.PIXEL_FORMAT_YUV422P, 24, 16, [{"restart_interval": 1, "quality": 30}], 1, 1),
        "yuv444p_up": stream(pb.PIXEL_FORMAT_YUV444P, 8, 8, [{"width": 20, "height": 12,
                                                               "subsampling": pb.SUBSAMPLING_444}], 1, 3),
        "rgb24_full": stream(pb.PIXEL_FORMAT_RGB24, 13, 7, [{"subsampling": pb.SUBSAMPLING_422}], 2, 1,
                             pb.COLOR_MATRIX_BT2020, pb.COLOR_RANGE_FULL),
        "bgra_short_frame": stream(pb.PIXEL_FORMAT_BGRA, 5, 5, [{}], 1, 2)[:-10],
    }


def encoder_seeds():
    """fuzz_encoder reads: width, height, format, matrix, range, quality, subsampling, restart,
    band rows and padding through FuzzedDataProvider (integers from the end of the input),
    pixels from the front. Any bytes are valid; these just start from varied shapes."""
    seeds = {}
    for i, (w, h) in enumerate([(1, 1), (8, 8), (17, 33), (64, 16), (255, 3)]):
        pixels = bytes((x * 31 + i * 7) & 0xFF for x in range(200))
        params = bytes([w & 0xFF, h & 0xFF, i % 9, i % 3, i % 2, 40 + i * 10, i % 3, i % 5, 3, 1, 2, 3])
        seeds[f"shape_{w}x{h}"] = pixels + params[::-1]
    return seeds


def containers(tmp):
    """Tiny clips of each demuxer the daemon accepts; byte 0 of a fuzz_container_input
    input picks the format hint (0: probe), byte 1 the chunk size."""
    hints = ["", "mov", "matroska", "avi", "mpegts", "mpeg", "mpegvideo", "h264", "hevc", "mjpeg", "ivf", "obu"]
    src = ["-f", "lavfi", "-i", "testsrc2=size=32x32:rate=10:duration=0.3"]
    clips = [
        ("h264.mkv", "matroska", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "2"]),
        ("h264.mp4", "mov", ["-c:v", "libx264", "-preset", "ultrafast", "-movflags", "faststart"]),
        ("h264.ts", "mpegts", ["-c:v", "libx264", "-preset", "ultrafast"]),
        ("h264.264", "h264", ["-c:v", "libx264", "-preset", "ultrafast", "-f", "h264"]),
        ("hevc.mkv", "", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=none"]),
        ("vp9.ivf", "ivf", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"]),
        ("mpeg2.mpg", "mpeg", ["-c:v", "mpeg2video", "-f", "mpeg"]),
        ("mjpeg.avi", "avi", ["-c:v", "mjpeg", "-pix_fmt", "yuvj422p", "-q:v", "10", "-frames:v", "2"]),
        ("yuv444.mkv", "", ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p"]),
    ]
    out = {}
    for name, hint, args in clips:
        path = os.path.join(tmp, name)
        r = subprocess.run(["ffmpeg", "-v", "error", "-y"] + src + args + [path], capture_output=True)
        if r.returncode != 0:
            print(f"make_corpus: skipped {name}: {r.stderr.decode().strip()[:200]}", file=sys.stderr)
            continue
        with open(path, "rb") as f:
            data = f.read()
        out[name] = bytes([hints.index(hint), 0x10]) + data
    return out


def seekable_inputs(tmp):
    """MP4s with moov after mdat (and one faststart), behind fuzz_seekable_input's header:
    mode bits, first-run chunk size, parameter (fuzz_seekable_input.cpp names the bits)."""
    random_access, size_exact, stale, misplaced, cut_short, no_forward, small_buffer = 1, 2, 8, 16, 32, 64, 128
    src = ["-f", "lavfi", "-i", "testsrc2=size=32x32:rate=10:duration=0.3"]
    x264 = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "2"]
    clips = {"late": x264, "fast": x264 + ["-movflags", "faststart"]}
    files = {}
    for name, args in clips.items():
        path = os.path.join(tmp, name + ".mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y"] + src + args + [path], check=True)
        with open(path, "rb") as f:
            files[name] = f.read()
    seeking = random_access | no_forward | small_buffer
    return {
        "late_exact_size": bytes([seeking | size_exact, 0x10, 0]) + files["late"],
        "late_unknown_size_stale": bytes([seeking | stale, 0x04, 0]) + files["late"],
        "late_cut_short": bytes([seeking | size_exact | cut_short, 0x10, 0]) + files["late"],
        "late_misplaced": bytes([seeking | misplaced, 0x10, 0]) + files["late"],
        "late_spooled": bytes([0, 0x10, 40]) + files["late"],
        "late_spool_too_small": bytes([0, 0x10, 0]) + files["late"],
        "fast_exact_size": bytes([seeking | size_exact, 0x10, 0]) + files["fast"],
    }


def main():
    """make_corpus.py [TARGET...]: rewrites every target's seeds, or only those named."""
    only = set(sys.argv[1:])
    tmp = tempfile.mkdtemp()
    try:
        pb = load_proto(tmp)
        seeds = {}  # target -> {name: bytes}
        for name, spec in specs(pb).items():
            seeds.setdefault("fuzz_job_spec", {})[name] = pb.TranscodeRequest(spec=spec).SerializeToString()
        for name, data in raw_streams(pb).items():
            seeds.setdefault("fuzz_raw_frames", {})[name] = data
            # The spec alone is a job spec seed too.
            first = pb.TranscodeRequest.FromString(data[2:2 + struct.unpack("<H", data[:2])[0]])
            seeds["fuzz_job_spec"]["raw_" + name] = first.SerializeToString()
        seeds["fuzz_encoder"] = encoder_seeds()
        seeds["fuzz_container_input"] = containers(tmp)
        seeds["fuzz_seekable_input"] = seekable_inputs(tmp)
        for target, files in seeds.items():
            if only and target not in only:
                continue
            shutil.rmtree(os.path.join(CORPUS, target), ignore_errors=True)
            for name, data in files.items():
                write(target, name, data)
    finally:
        shutil.rmtree(tmp)
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print(f"{target}: {len(files)} seeds, {size} bytes")


if __name__ == "__main__":
    main()
