"""End-to-end cases of storyboards (RenditionSpec.tile), held to the ffmpeg CLI's tile
filter on the same input: `ffmpeg -copyts -i IN -vf fps=R,scale=W:H:flags=area,tile=CxR`.

Each sprite must match the CLI's sprite (PSNR of the whole grid, and clearly less against
the other sprite), the last one padded with black cells as the CLI pads it. The WebVTT
index must have a cue per grid point the CLI's fps filter writes, from that point to the
next (the last to one step past it), naming the sprite and the cell in row-major order.
"""

import re

import conveyor_harness as h
from conveyor_harness import check, log
from frame_rate_cases import cli_fps
from picture_checks import psnr_limited_ref_vs_jpeg, write_jpeg_sequence
from selection_cases import make_clips

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def storyboard_spec(pb, columns, rows, width, height, rate, **fields):
    s = pb.JobSpec(container=pb.ContainerInput(), client_label="pye2e storyboard",
                   frame_rate=pb.Rational(num=rate[0], den=rate[1]), **fields)
    s.renditions.append(pb.RenditionSpec(tile=pb.TileSpec(columns=columns, rows=rows, width=width, height=height)))
    return s


def run_storyboard(ctx, job, path):
    """The call, and the WebVTT its Storyboard messages carry (with their counts)."""
    boards = []
    o = h.transcode(ctx.stub, ctx.pb, job, h.container_requests(ctx.pb, path, 65536),
                    on_response=lambda r: boards.append(r.storyboard) if r.WhichOneof("message") == "storyboard"
                    else None)
    return o, boards


CUE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d\d\d) --> (\d\d):(\d\d):(\d\d)\.(\d\d\d)$")


def parse_vtt(text):
    """[(start_ms, end_ms, sprite file, (x, y, w, h))] of a WebVTT index."""
    lines = text.split("\n")
    check(lines[0] == "WEBVTT", "the index does not start with WEBVTT: %r" % lines[:2])
    cues = []
    for k, line in enumerate(lines):
        m = CUE.match(line)
        if not m:
            continue
        t = [int(x) for x in m.groups()]
        start = ((t[0] * 60 + t[1]) * 60 + t[2]) * 1000 + t[3]
        end = ((t[4] * 60 + t[5]) * 60 + t[6]) * 1000 + t[7]
        url, _, frag = lines[k + 1].partition("#xywh=")
        cues.append((start, end, url, tuple(int(v) for v in frag.split(","))))
    return cues


def cli_sprites(ctx, path, rate, before, columns, rows, width, height, tag):
    """The CLI's sprites, raw yuv420p: the same selection, then fps, scale and tile."""
    out = ctx.path(tag + ".cli_tiles.yuv")
    vf = "fps=%s,scale=%d:%d:flags=area,tile=%dx%d" % (rate, width, height, columns, rows)
    h.ffmpeg(*(["-copyts"] + list(before) + ["-i", path, "-vf", vf, "-fps_mode", "passthrough", "-f", "rawvideo",
                                             "-pix_fmt", "yuv420p", out]))
    size = columns * width * rows * height * 3 // 2
    with open(out, "rb") as f:
        data = f.read()
    check(len(data) % size == 0, "%s: the CLI gave %d bytes, not whole sprites" % (tag, len(data)))
    return [data[k:k + size] for k in range(0, len(data), size)]


def our_sprites(ctx, frames, sw, sh, tag):
    pattern = write_jpeg_sequence(frames, ctx.path(tag + "_sprites"))
    out = ctx.path(tag + ".sprites.yuv")
    h.ffmpeg("-f", "image2", "-i", pattern, "-f", "rawvideo", "-pix_fmt", "yuvj420p", out)
    with open(out, "rb") as f:
        data = f.read()
    size = sw * sh * 3 // 2
    return [data[k:k + size] for k in range(0, len(data), size)]


@case
def storyboard_vs_ffmpeg_tile_filter(ctx):
    pb = ctx.pb
    mkv, _ = make_clips(ctx)
    # name, fps, columns x rows of width x height cells, JobSpec fields, options before -i
    runs = [("fps1_4x2", (1, 1), 4, 2, 80, 60, {}),
            ("fps3_5x3", (3, 1), 5, 3, 64, 48, {}),  # 30 cells: two full sprites
            ("fps2_3x3_ss2.5", (2, 1), 3, 3, 96, 72, dict(start_seconds=2.5))]
    failures = []
    for name, rate, columns, rows, cw, ch, fields in runs:
        tag = "storyboard_" + name
        try:
            text_rate = "%d/%d" % rate
            before = ["-ss", str(fields["start_seconds"])] if "start_seconds" in fields else []
            grid, _ = cli_fps(ctx, mkv, text_rate, ["-copyts"] + before, [], tag + "_grid")
            ref = cli_sprites(ctx, mkv, text_rate, before, columns, rows, cw, ch, tag)
            o, boards = run_storyboard(ctx, storyboard_spec(pb, columns, rows, cw, ch, rate, **fields), mkv)
            h.expect_ok(o, tag)
            check(o.kinds[-2:] == ["storyboard", "summary"], "%s: responses end %s, not Storyboard then Summary" %
                  (tag, o.kinds[-3:]))
            cells = columns * rows
            sprites = o.frames[0]
            want_sprites = (len(grid) + cells - 1) // cells
            check(len(sprites) == want_sprites == len(ref), "%s: %d sprites, %d cells want %d, the CLI made %d" %
                  (tag, len(sprites), len(grid), want_sprites, len(ref)))
            check(o.summary.frames_out == len(sprites), "%s: Summary.frames_out %d" % (tag, o.summary.frames_out))
            check([f.index for f in sprites] == list(range(len(sprites))), "%s: frame_index not 0, 1, ..." % tag)
            check([f.pts for f in sprites] == grid[::cells], "%s: sprite pts %s, the first cells' %s" %
                  (tag, [f.pts for f in sprites], grid[::cells]))
            sw, sh = columns * cw, rows * ch
            ours = our_sprites(ctx, sprites, sw, sh, tag)
            worst = None
            for k in range(len(ref)):
                own = psnr_limited_ref_vs_jpeg(ref[k], ours[k], sw, sh, 1)["y"]
                check(own >= 30.0, "%s sprite %d: Y PSNR %.2f dB against the CLI's, want >= 30" % (tag, k, own))
                if k + 1 < len(ref):
                    other = psnr_limited_ref_vs_jpeg(ref[k + 1], ours[k], sw, sh, 1)["y"]
                    check(other < own - 3.0, "%s sprite %d: matches the CLI's next sprite (%.2f dB) about as well "
                          "as its own (%.2f dB)" % (tag, k, other, own))
                worst = own if worst is None else min(worst, own)
            text = "".join(b.webvtt for b in boards)
            check(all(b.sprites == len(sprites) and b.cells == len(grid) for b in boards),
                  "%s: Storyboard says %s sprites, %s cells" % (tag, [b.sprites for b in boards],
                                                               [b.cells for b in boards]))
            cues = parse_vtt(text)
            step_ms = 1000.0 * rate[1] / rate[0]
            want = []
            for i, p in enumerate(grid):
                end = grid[i + 1] if i + 1 < len(grid) else p + 1
                n, cell = divmod(i, cells)
                want.append((round(p * step_ms), round(end * step_ms), "sprite_%d.jpg" % (n + 1),
                             ((cell % columns) * cw, (cell // columns) * ch, cw, ch)))
            check(cues == want, "%s: the index's cues\n    %s\n  want\n    %s" % (tag, cues[:4], want[:4]))
            log("%-28s OK: %2d cells in %d sprites of %dx%d, worst Y %.2f dB, %d cues" %
                (tag, len(grid), len(sprites), sw, sh, worst, len(cues)))
        except h.CheckFailed as e:
            failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case
def storyboard_bad_specs(ctx):
    pb = ctx.pb
    INVALID = ctx.grpc.StatusCode.INVALID_ARGUMENT
    mkv, _ = make_clips(ctx)

    def tiled(**tile):
        return storyboard_spec(pb, tile.pop("columns", 4), tile.pop("rows", 2), tile.pop("width", 80),
                               tile.pop("height", 60), (1, 1))

    two = tiled()
    two.renditions.append(pb.RenditionSpec(width=64, height=48))
    sized = tiled()
    sized.renditions[0].width = 320
    boxed = tiled()
    boxed.output.container.format = pb.CONTAINER_FORMAT_MATROSKA
    bad = [("columns 0", tiled(columns=0), "spec.renditions[0].tile.columns"),
           ("rows 101", tiled(rows=101), "spec.renditions[0].tile.rows"),
           ("odd width", tiled(width=81), "spec.renditions[0].tile.width"),
           ("no size", tiled(width=0, height=0), "spec.renditions[0].tile"),
           ("two renditions", two, "spec.renditions[0].tile"),
           ("rendition size", sized, "spec.renditions[0]"),
           ("container output", boxed, "spec.output.container"),
           ("sprite over the limit", tiled(columns=100, rows=100, width=80, height=60), "spec.renditions[0].tile")]
    for name, job, field in bad:
        o = h.transcode(ctx.stub, pb, job, h.container_requests(pb, mkv, 65536))
        h.expect_error(o, name, INVALID, field)
        log("%-22s INVALID_ARGUMENT: %s" % (name, o.details))
