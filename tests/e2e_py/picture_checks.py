"""Checks of the pictures the end-to-end cases get back: the JPEG's SOF marker and a clean
decode with djpeg, a JPEG sequence on disk for the ffmpeg CLI, and PSNR (plain Python,
no numpy) against limited-range yuv420p references and against the exact JFIF YCbCr of
PPM frames."""

import collections
import os
import struct

from conveyor_harness import check, run


# ---------------------------------------------------------------- JPEG checks


def jpeg_size(data):
    """(width, height, components, sampling) from the SOF marker, or None."""
    i = 2
    if data[:2] != b"\xff\xd8":
        return None
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w, nc = struct.unpack(">HHB", data[i + 5:i + 10])
            sampling = [data[i + 10 + 3 * k + 1] for k in range(nc)]
            return w, h, nc, ["%dx%d" % (s >> 4, s & 15) for s in sampling]
        i += 2 + length
    return None


def djpeg_check(data, work_dir, name, grayscale=False):
    """Decodes one JPEG with libjpeg-turbo's djpeg; any warning fails. Returns (w, h, pixels)."""
    path = os.path.join(work_dir, name)
    with open(path, "wb") as f:
        f.write(data)
    argv = ["djpeg"] + (["-grayscale"] if grayscale else []) + [path]
    p = run(argv, check_rc=False)
    check(p.returncode == 0 and not p.stderr,
          "%s does not decode cleanly with djpeg (rc=%d): %s" % (name, p.returncode, p.stderr.decode(errors="replace")))
    out = p.stdout
    # PNM header: magic, width, height, maxval, one whitespace byte, pixels.
    fields, pos = [], 0
    while len(fields) < 4:
        while out[pos:pos + 1].isspace():
            pos += 1
        start = pos
        while not out[pos:pos + 1].isspace():
            pos += 1
        fields.append(out[start:pos])
    pixels = out[pos + 1:]
    w, h = int(fields[1]), int(fields[2])
    check(len(pixels) == w * h * (1 if grayscale else 3), "%s: djpeg gave %d bytes for %dx%d" % (name, len(pixels), w, h))
    return w, h, pixels


def check_jpeg_frames(frames, width, height, work_dir, tag):
    """Every frame a baseline JPEG of width x height that djpeg decodes without a warning."""
    d = os.path.join(work_dir, "djpeg_" + tag)
    os.makedirs(d, exist_ok=True)
    for k, fr in enumerate(frames):
        info = jpeg_size(fr.data)
        check(info is not None, "%s frame %d: no SOF marker (%d bytes)" % (tag, k, len(fr.data)))
        check(info[:2] == (width, height), "%s frame %d: SOF says %dx%d, want %dx%d" % (tag, k, info[0], info[1], width, height))
        w, h, _ = djpeg_check(fr.data, d, "%04d.jpg" % k)
        check((w, h) == (width, height), "%s frame %d: decodes to %dx%d" % (tag, k, w, h))


def write_jpeg_sequence(frames, directory):
    os.makedirs(directory, exist_ok=True)
    for k, fr in enumerate(frames):
        with open(os.path.join(directory, "%04d.jpg" % k), "wb") as f:
            f.write(fr.data)
    return os.path.join(directory, "%04d.jpg")


# ---------------------------------------------------------------- PSNR without numpy


def _clamp(x):
    return 0.0 if x < 0 else 255.0 if x > 255 else x


# Target value of a limited-range 8-bit sample in the full-range (JFIF) YCbCr that a JPEG
# holds. BT.601 limited -> full is a pure range change (no matrix change).
LIMITED_TO_FULL = {
    "y": [_clamp((v - 16) * 255.0 / 219.0) for v in range(256)],
    "c": [_clamp((v - 128) * 255.0 / 224.0 + 128.0) for v in range(256)],
}


def sse_against(ref_plane, test_plane, target):
    """Sum of squared errors of test (full-range samples) against target[ref]."""
    check(len(ref_plane) == len(test_plane), "plane sizes differ: %d vs %d" % (len(ref_plane), len(test_plane)))
    counts = collections.Counter(zip(ref_plane, test_plane))  # C-speed pair histogram
    return sum(n * (target[a] - b) ** 2 for (a, b), n in counts.items())


def psnr_from_sse(sse, n):
    import math
    if sse == 0:
        return float("inf")
    return 10.0 * math.log10(255.0 * 255.0 * n / sse)


def yuv420_planes(data, w, h, frames):
    """Splits a yuv420p byte string into per-plane byte strings (all frames together)."""
    cw, ch = (w + 1) // 2, (h + 1) // 2
    fs = w * h + 2 * cw * ch
    check(len(data) == fs * frames, "raw yuv420p: %d bytes, want %d frames of %d" % (len(data), frames, fs))
    y, u, v = bytearray(), bytearray(), bytearray()
    for k in range(frames):
        o = k * fs
        y += data[o:o + w * h]
        u += data[o + w * h:o + w * h + cw * ch]
        v += data[o + w * h + cw * ch:o + fs]
    return bytes(y), bytes(u), bytes(v)


IDENTITY = [float(v) for v in range(256)]


def psnr_bytes(a, b):
    return psnr_from_sse(sse_against(a, b, IDENTITY), len(a))


_YR = [0.299 * v for v in range(256)]
_YG = [0.587 * v for v in range(256)]
_YB = [0.114 * v for v in range(256)]
_BR = [-0.168735892 * v for v in range(256)]
_BG = [-0.331264108 * v for v in range(256)]
_BB = [0.5 * v + 128.0 for v in range(256)]
_RR = [0.5 * v + 128.0 for v in range(256)]
_RG = [-0.418687589 * v for v in range(256)]
_RB = [-0.081312411 * v for v in range(256)]


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        start = pos
        while not data[pos:pos + 1].isspace():
            pos += 1
        fields.append(data[start:pos])
    check(fields[0] == b"P6" and fields[3] == b"255", "%s: not an 8-bit P6 PPM" % path)
    return int(fields[1]), int(fields[2]), data[pos + 1:]


def jfif_ycc420_of_rgb(rgb, w, h):
    """The exact (unrounded) JFIF Y, and 2x2-averaged Cb, Cr, of packed rgb24: what an RGB
    JPEG encoder such as cjpeg -sample 2x2 is asked to code. Even sizes only."""
    check(w % 2 == 0 and h % 2 == 0, "odd size")
    r, g, b = rgb[0::3], rgb[1::3], rgb[2::3]
    y = [_YR[p] + _YG[q] + _YB[s] for p, q, s in zip(r, g, b)]
    cb = [_BR[p] + _BG[q] + _BB[s] for p, q, s in zip(r, g, b)]
    cr = [_RR[p] + _RG[q] + _RB[s] for p, q, s in zip(r, g, b)]

    def down(c):
        out = []
        for row in range(0, h, 2):
            a, b2 = c[row * w:(row + 1) * w], c[(row + 1) * w:(row + 2) * w]
            out += [(a[i] + a[i + 1] + b2[i] + b2[i + 1]) * 0.25 for i in range(0, w, 2)]
        return out
    return y, down(cb), down(cr)


def sse_float(target, test):
    check(len(target) == len(test), "plane sizes differ: %d vs %d" % (len(target), len(test)))
    return sum((t - x) * (t - x) for t, x in zip(target, test))


def psnr_rgb_input_vs_jpeg(ppm_paths, jpeg_yuv, w, h):
    """PSNR (dB) of decoded JPEGs (yuvj420p) against the exact JFIF YCbCr of the PPM frames
    they were encoded from: the coding loss alone, without any colour conversion before."""
    ty, tu, tv = yuv420_planes(jpeg_yuv, w, h, len(ppm_paths))
    ny, nc = w * h, (w // 2) * (h // 2)
    sy = su = sv = 0.0
    for k, path in enumerate(ppm_paths):
        pw, ph, rgb = read_ppm(path)
        check((pw, ph) == (w, h), "%s is %dx%d" % (path, pw, ph))
        y, cb, cr = jfif_ycc420_of_rgb(rgb, w, h)
        sy += sse_float(y, ty[k * ny:(k + 1) * ny])
        su += sse_float(cb, tu[k * nc:(k + 1) * nc])
        sv += sse_float(cr, tv[k * nc:(k + 1) * nc])
    n = len(ppm_paths)
    return {"y": psnr_from_sse(sy, ny * n), "cb": psnr_from_sse(su, nc * n), "cr": psnr_from_sse(sv, nc * n),
            "avg": psnr_from_sse(sy + su + sv, (ny + 2 * nc) * n)}


def psnr_limited_ref_vs_jpeg(ref_yuv, jpeg_yuv, w, h, frames):
    """PSNR (dB) of decoded JPEGs (full-range yuvj420p) against a limited-range yuv420p
    reference: Y, Cb, Cr and the pixel-weighted average (MSE over all samples, 4:1:1)."""
    ry, ru, rv = yuv420_planes(ref_yuv, w, h, frames)
    ty, tu, tv = yuv420_planes(jpeg_yuv, w, h, frames)
    sy = sse_against(ry, ty, LIMITED_TO_FULL["y"])
    su = sse_against(ru, tu, LIMITED_TO_FULL["c"])
    sv = sse_against(rv, tv, LIMITED_TO_FULL["c"])
    return {
        "y": psnr_from_sse(sy, len(ry)),
        "cb": psnr_from_sse(su, len(ru)),
        "cr": psnr_from_sse(sv, len(rv)),
        "avg": psnr_from_sse(sy + su + sv, len(ry) + len(ru) + len(rv)),
    }
