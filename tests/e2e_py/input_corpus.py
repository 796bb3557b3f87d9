#!/usr/bin/python3
"""The input corpus: the kinds of file a transcode service meets, made with ffmpeg's lavfi
sources (no media is committed). Each entry says how to make it and what the ffmpeg CLI
does with it, which corpus_cases.py holds conveyord to.

  tests/e2e_py/input_corpus.py DIR [NAME...]   writes the files into DIR and lists them

An entry's `expect` is "same" (conveyord gives the frames `ffmpeg -i IN OUT.mkv` decodes:
count, pts, size after autorotation, picture) or ("refused", code name, text) where the
daemon refuses the input on purpose (audio only: the CLI writes an audio-only file, the
daemon transcodes video). Damaged and cut-off files are made and compared by
damaged_input_cases.py; seekable and spooled input by random_access_cases.py.
"""

import os
import struct
import subprocess
import sys

W, H = 320, 240
SECONDS = "0.8"  # 20 frames at 25 frames/s
TESTSRC = "testsrc2=size=%dx%d:rate=25" % (W, H)
X264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]


def write_tkhd_matrix(path, out, matrix):
    """Copies the MP4/MOV at `path` to `out` with its (first) track's tkhd matrix replaced
    by the nine 32-bit values of `matrix` (16.16 and 2.30 fixed point, as ISO/IEC 14496-12
    lays them out)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    p = data.find(b"tkhd")
    if p < 0:
        raise ValueError("%s: no tkhd box" % path)
    version = data[p + 4]
    at = p + (56 if version == 1 else 44)  # after the times, ids, duration, layer, group, volume
    data[at:at + 36] = struct.pack(">9i", *matrix)
    with open(out, "wb") as f:
        f.write(data)


ONE, W30 = 1 << 16, 1 << 30
# Track matrices the ffmpeg CLI 5.1 reads as a mirror (hflip) and as a transpose.
MIRRORED = [-ONE, 0, 0, 0, ONE, 0, W << 16, 0, W30]
TRANSPOSED = [0, ONE, 0, ONE, 0, 0, 0, 0, W30]


def entry(name, ext, inputs, args, expect="same", post=None, chroma="420", cli_filter=None):
    """`post`: ("matrix", nine values) rewrites the track matrix, ("rotate", "N") remuxes with
    the rotate tag (FFmpeg 5.1 drops it when it encodes). `chroma`: the source's chroma
    resolution, at which the picture is compared ("420" or "444"). `cli_filter`: what the
    CLI must be asked for to do what conveyord does by default (-vf)."""
    return {"name": name, "ext": ext, "inputs": inputs, "args": args, "expect": expect, "post": post,
            "chroma": chroma, "cli_filter": cli_filter}


# conveyord deinterlaces the frames the decoder flags interlaced; the CLI keeps the fields
# unless asked: this is the asking.
YADIF = "yadif=mode=0:parity=auto:deint=interlaced"


def src(extra=""):
    return ["-f", "lavfi", "-i", TESTSRC + extra]


ENTRIES = [
    # The ffmpeg CLI's own default MP4: moov after mdat.
    entry("h264_moov_at_end", "mp4", src(), X264),
    entry("h264_aac", "mkv", src() + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"],
          X264 + ["-c:a", "aac", "-shortest"]),
    entry("audio_only", "m4a", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"], ["-c:a", "aac"],
          expect=("refused", "INVALID_ARGUMENT", "no video stream")),
    # Phones' rotation: FFmpeg 5.1's mov muxer writes `rotate` (counter-clockwise) as the matrix;
    # a mirror and a transpose need the matrix written into the file.
    entry("rotate_90", "mp4", src(), X264, post=("rotate", "90")),
    entry("rotate_180", "mp4", src(), X264, post=("rotate", "180")),
    entry("rotate_270", "mp4", src(), X264, post=("rotate", "270")),
    entry("mirrored", "mp4", src(), X264 + ["-movflags", "faststart"], post=("matrix", MIRRORED)),
    entry("transposed", "mp4", src(), X264 + ["-movflags", "faststart"], post=("matrix", TRANSPOSED)),
    # Broadcast: interlaced MPEG-2 in MPEG-TS, top and bottom field first, and H.264 (PAFF).
    entry("interlaced_tff", "ts", src(",tinterlace=mode=interleave_top,setfield=tff"),
          ["-c:v", "mpeg2video", "-flags", "+ilme+ildct", "-top", "1", "-b:v", "4M"], cli_filter=YADIF),
    entry("interlaced_bff", "ts", src(",tinterlace=mode=interleave_bottom,setfield=bff"),
          ["-c:v", "mpeg2video", "-flags", "+ilme+ildct", "-top", "0", "-b:v", "4M"], cli_filter=YADIF),
    entry("interlaced_h264", "ts", src(",tinterlace=mode=interleave_top,setfield=tff"),
          X264 + ["-flags", "+ilme+ildct", "-x264-params", "tff=1"], cli_filter=YADIF),
    # Variable frame rate: every third frame dropped, the others keep their times.
    entry("vfr", "mkv", src(",select='not(eq(mod(n\\,3)\\,1))'"), X264 + ["-fps_mode", "vfr"]),
    entry("hevc_10bit", "mkv", src(), ["-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le",
                                       "-x265-params", "log-level=error"]),
    # 12-bit 4:4:4 with alpha: ProRes 4444 (FFmpeg's decoder gives yuva444p12le).
    entry("prores_4444_alpha_12bit", "mov", src(",format=yuva444p10le"),
          ["-c:v", "prores_ks", "-profile:v", "4444", "-pix_fmt", "yuva444p10le"], chroma="444"),
    entry("prores_422", "mov", src(), ["-c:v", "prores_ks", "-profile:v", "2"]),
    entry("vp9_alpha", "webm", src(",format=yuva420p"), ["-c:v", "libvpx-vp9", "-deadline", "realtime",
                                                         "-cpu-used", "8", "-pix_fmt", "yuva420p"]),
    entry("av1", "mkv", src(), ["-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "30", "-pix_fmt", "yuv420p"]),
    entry("mpeg2", "ts", src(), ["-c:v", "mpeg2video", "-b:v", "4M"]),
    # An odd size: x264 takes odd sizes at 4:4:4.
    entry("odd_size_444", "mkv", ["-f", "lavfi", "-i", "testsrc2=size=322x242:rate=25,format=yuv444p,crop=321:241:0:0"],
          ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv444p"], chroma="444"),
]


def make(directory, names=None):
    """Writes the entries (all, or those named) into `directory`; returns {name: (path, entry)}."""
    os.makedirs(directory, exist_ok=True)
    made = {}
    for e in ENTRIES:
        if names and e["name"] not in names:
            continue
        path = os.path.join(directory, "%s.%s" % (e["name"], e["ext"]))
        target = path + ".src." + e["ext"] if e["post"] else path
        cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + e["inputs"] + \
              ["-t", SECONDS] + e["args"] + [target]
        r = subprocess.run(cmd, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError("%s: %s\n%s" % (e["name"], " ".join(cmd), r.stderr.decode()[-2000:]))
        if e["post"] and e["post"][0] == "matrix":
            write_tkhd_matrix(target, path, e["post"][1])
            os.remove(target)
        elif e["post"]:
            subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", target, "-c", "copy",
                            "-metadata:s:v", "rotate=" + e["post"][1], path], check=True)
            os.remove(target)
        made[e["name"]] = (path, e)
    return made


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name, (path, e) in make(sys.argv[1], set(sys.argv[2:])).items():
        print("%-26s %8d bytes  %s" % (name, os.path.getsize(path), path))
