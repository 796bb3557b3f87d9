#!/usr/bin/env python3
"""Loads tests/player/storyboard.html in headless Chromium against a storyboard directory
(thumbnails.vtt + sprite_N.jpg) and proves, from the screenshot, that the tile shown above
the seek bar for each time t is the one the WebVTT index names.

For each t: the page's own report (body data-* attributes, from --dump-dom) must match the
cue this script picks from its own VTT parser, and the screenshot's preview rectangle must
match that tile of the sprite (PSNR >= --min-psnr), clearly better than a neighbouring tile.
"""
import argparse
import functools
import html
import http.server
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "storyboard.html")
TIME_RE = re.compile(r"^(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})$")
PAYLOAD_RE = re.compile(r"^([^#]+)#xywh=(?:pixel:)?(\d+),(\d+),(\d+),(\d+)$")


class CheckError(Exception):
    pass


def parse_time(s):
    m = TIME_RE.match(s.strip())
    if not m:
        raise CheckError(f"bad VTT timestamp {s!r}")
    h, mi, se, ms = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + se + ms / 1000


def parse_vtt(text):
    """Cues as dicts (start, end, url, xywh), written apart from the page's parser so that a
    shared mistake does not pass unnoticed."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not re.match(r"^WEBVTT(?:[ \t]|$)", lines[0]):
        raise CheckError("VTT has no WEBVTT header")
    cues = []
    for i, line in enumerate(lines):
        if "-->" not in line:
            continue
        a, b = line.split("-->", 1)
        payload = lines[i + 1].strip() if i + 1 < len(lines) else ""
        m = PAYLOAD_RE.match(payload)
        if not m:
            raise CheckError(f"VTT line {i + 2}: no url#xywh= in {payload!r}")
        cues.append(dict(start=parse_time(a), end=parse_time((b.split() or [""])[0]), url=m.group(1),
                         xywh=tuple(int(v) for v in m.groups()[1:])))
    if not cues:
        raise CheckError("VTT has no cues")
    return cues


def cue_at(cues, t):
    # Same rule as the page: start <= t < end, the last cue also covering its end time.
    for i, c in enumerate(cues):
        if c["start"] <= t and (t < c["end"] or (i == len(cues) - 1 and t == c["end"])):
            return i
    return -1


def default_times(cues):
    """Mid-times of the first cue, the middle cue, a cue in the middle of the last sprite
    (or of the only sprite) and the last cue."""
    last_sprite = [i for i, c in enumerate(cues) if c["url"] == cues[-1]["url"]]
    picks = {0, len(cues) // 2, last_sprite[len(last_sprite) // 2], len(cues) - 1}
    return [(cues[i]["start"] + cues[i]["end"]) / 2 for i in sorted(picks)]


def body_attrs(dom):
    # Chromium serializes attributes as name="value", with &quot; &amp; escaped.
    m = re.search(r"<body\b([^>]*)>", dom)
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m[1])} if m else {}


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the storyboard directory, plus the page itself at /storyboard.html."""

    def translate_path(self, path):
        if urllib.parse.urlsplit(path).path == "/storyboard.html":
            return self.server.page
        return super().translate_path(path)

    def log_message(self, fmt, *args):
        self.server.log.append(fmt % args)


def chromium_log(p):
    # Without a session bus every run logs D-Bus errors; they say nothing about the page.
    return "\n".join(line for line in p.stderr.decode(errors="replace").splitlines()
                     if "dbus/" not in line)


def run_chromium(cmd):
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        raise CheckError(f"chromium exited {p.returncode}: {' '.join(cmd)}\n{chromium_log(p)}")
    return p


# To RGB before cropping (a crop of 4:2:0 would round odd x/y to even), with interpolated
# chroma: Chromium decodes JPEG with libjpeg-turbo's smooth upsampling, while swscale's
# default repeats chroma samples, which alone costs ~6 dB on saturated edges.
TO_RGB = "scale=flags=bicubic+full_chroma_int+accurate_rnd:in_range=full:out_range=full," \
         "format=rgb24"


def crop_rgb(ffmpeg, path, x, y, w, h):
    # crop clamps a rectangle that runs off the image; a zero size makes it fail instead.
    crop = f"crop=w='if(lte({x}+{w},iw),{w},0)':h='if(lte({y}+{h},ih),{h},0)':x={x}:y={y}"
    p = subprocess.run([ffmpeg, "-v", "error", "-i", path, "-vf", f"{TO_RGB},{crop}",
                        "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                       capture_output=True)
    if p.returncode != 0 or len(p.stdout) != w * h * 3:
        raise CheckError(f"ffmpeg cannot crop {w}x{h} at {x},{y} out of {path} (outside the "
                         f"image?): {p.stderr.decode(errors='replace').strip()}")
    return p.stdout


def psnr(a, b):
    mse = sum((p - q) ** 2 for p, q in zip(a, b)) / len(a)
    return math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)


def check_time(args, cues, port, t, workdir, outdir):
    want = cue_at(cues, t)
    if want < 0:
        raise CheckError(f"no cue covers it in the VTT (choose times inside "
                         f"{cues[0]['start']}..{cues[-1]['end']})")
    cue = cues[want]
    shot = os.path.join(outdir or workdir, f"storyboard_t{t:g}.png")
    url = f"http://127.0.0.1:{port}/storyboard.html?vtt=thumbnails.vtt&t={t:g}"
    # One run gives both: --dump-dom and --screenshot are taken after the virtual-time
    # budget, which the page's fetch and sprite decode finish well within.
    # --no-sandbox: the setuid/namespace sandbox is unavailable as root and in containers.
    p = run_chromium([args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                      "--hide-scrollbars", "--force-device-scale-factor=1",
                      "--window-size=1000,400", "--virtual-time-budget=5000", "--no-first-run",
                      f"--user-data-dir={tempfile.mkdtemp(dir=workdir)}",
                      f"--screenshot={shot}", "--dump-dom", url])
    a = body_attrs(p.stdout.decode(errors="replace"))
    if a.get("data-state") != "ready":
        raise CheckError(f"page state {a.get('data-state')!r}, not 'ready'\n"
                         f"{chromium_log(p)}")
    got = (a.get("data-cue-index"), a.get("data-sprite"), a.get("data-xywh"))
    expect = (str(want), cue["url"], ",".join(map(str, cue["xywh"])))
    if got != expect:
        raise CheckError(f"page chose cue/sprite/xywh {got}, the VTT says {expect}")
    if not os.path.exists(shot):
        raise CheckError(f"chromium wrote no screenshot\n{chromium_log(p)}")

    try:
        rect = [float(v) for v in a.get("data-preview-rect", "").split(",")]
        x, y, w, h = (round(v) for v in rect)
    except ValueError:
        raise CheckError(f"bad data-preview-rect {a.get('data-preview-rect')!r}")
    if any(abs(v - round(v)) > 0.01 for v in rect) or (w, h) != cue["xywh"][2:]:
        raise CheckError(f"preview rectangle {rect} is not the tile's whole-pixel "
                         f"size {cue['xywh'][2:]} (scaled or resampled)")
    shown = crop_rgb(args.ffmpeg, shot, x, y, w, h)
    sprite = os.path.join(args.dir, cue["url"])
    sx, sy, sw, sh = cue["xywh"]
    tile = crop_rgb(args.ffmpeg, sprite, sx, sy, sw, sh)
    match = psnr(shown, tile)

    # Control: the same crop against the neighbouring cue's tile must score clearly worse,
    # or a page that shows any tile (or the check itself) could pass unnoticed.
    other = want + 1 if want + 1 < len(cues) else want - 1
    line = (f"cue {want} {cue['url']}#xywh={sx},{sy},{sw},{sh} "
            f"at {x},{y}: PSNR {match:.2f} dB")
    problems = []
    if match < args.min_psnr:
        problems.append(f"PSNR {match:.2f} dB < {args.min_psnr} dB")
    if other < 0:
        line += "; control: single cue, none to compare"
    else:
        o = cues[other]
        neighbour = crop_rgb(args.ffmpeg, os.path.join(args.dir, o["url"]), *o["xywh"]) \
            if o["xywh"][2:] == (sw, sh) else None
        if neighbour is None:
            line += f"; control: cue {other} has another tile size, not comparable"
        elif psnr(neighbour, tile) > 45:
            line += f"; control: cue {other}'s tile is the same picture, not meaningful"
        else:
            ctrl = psnr(shown, neighbour)
            line += f", vs cue {other}'s tile {ctrl:.2f} dB (margin {match - ctrl:.2f} dB)"
            if match - ctrl < args.min_margin:
                problems.append(f"the neighbouring tile (cue {other}) scores {ctrl:.2f} dB, "
                                f"not {args.min_margin} dB below the match")
    if problems:
        where = f"screenshot {shot}" if outdir else "--out keeps the screenshot"
        raise CheckError(f"{line}: " + "; ".join(problems) + f" ({where})")
    print(f"t={t:g}: {line} ok", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="directory with thumbnails.vtt and sprites")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--ffmpeg", default="ffmpeg")
    ap.add_argument("--times", help="comma-separated seconds (default: spread over the VTT)")
    ap.add_argument("--out", help="keep the screenshots here")
    ap.add_argument("--page", default=PAGE, help="the page under test (default: %(default)s)")
    ap.add_argument("--min-psnr", type=float, default=30.0)
    ap.add_argument("--min-margin", type=float, default=3.0,
                    help="dB the match must beat the neighbouring tile by")
    args = ap.parse_args()
    for tool in (args.chromium, args.ffmpeg):
        if not shutil.which(tool):
            sys.exit(f"storyboard_page_check: {tool} not found")

    try:
        with open(os.path.join(args.dir, "thumbnails.vtt"), encoding="utf-8") as f:
            cues = parse_vtt(f.read())
        times = [float(v) for v in args.times.split(",")] if args.times else default_times(cues)
    except (OSError, ValueError, CheckError) as e:
        sys.exit(f"storyboard_page_check: FAIL: {e}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=args.dir))
    server.log, server.page = [], os.path.abspath(args.page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    failures = []
    try:
        with tempfile.TemporaryDirectory(prefix="storyboard_check_") as workdir:
            for t in times:
                try:
                    check_time(args, cues, server.server_address[1], t, workdir, args.out)
                except CheckError as e:
                    print(f"FAIL: t={t:g}: {e}", flush=True)
                    failures.append(f"{t:g}")
    finally:
        server.shutdown()
    if failures:
        if server.log:
            print("HTTP requests served:\n  " + "\n  ".join(server.log), file=sys.stderr)
        sys.exit(f"storyboard_page_check: FAIL at t={','.join(failures)} "
                 f"({len(failures)} of {len(times)} times)")
    print(f"storyboard_page_check: {len(times)} times, all ok")


if __name__ == "__main__":
    main()
