// The deinterlace stage: each frame of an interlaced stream made whole by the yadif
// algorithm of FFmpeg's vf_yadif (Michael Niedermayer), as its mode 0 runs it: one frame
// out per frame in, the spatial interlacing check on, every frame deinterlaced. The lines
// of the field that is kept are cur's; each line of the other field is interpolated from
// cur's lines above and below and from the frames before and after. DeinterlaceOutput
// gives one destination sample in integers, so the GPU kernel (a thread per sample) and
// the CPU path give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frame.h"
#include "hd.h"
#include "status.h"

namespace conveyor {

// One plane of the stage, in samples; `channels` interleaved bytes per sample: 2 for
// NV12's CbCr, each channel filtered on its own (FFmpeg's yadif takes no NV12: the CLI
// separates it into two planes first, which gives the same bytes), else 1. Chroma planes
// are filtered at their own size, as yadif filters them.
struct DeinterlacePlaneGeom {
  int w, h;
  int channels;
};

struct DeinterlacePlan {
  PixelFormat format;
  int width, height;
  // Of cur: true keeps its top field (the even lines) and interpolates the odd ones,
  // false the other way round (yadif's parity=tff and parity=bff).
  bool top_field_first;
  int num_planes;
  DeinterlacePlaneGeom plane[3];
  // Destination in the packed layout (PackedPlaneGeometry of the format at the size).
  size_t dst_offset[3];
  int dst_row_bytes[3];
  size_t dst_size;
};

// Checks the format (planar or semi-planar YUV; packed RGB, which FFmpeg's yadif does not
// take either, is INVALID_ARGUMENT) and the size, and lays out the destination: the same
// format and size. Any size from 1x1 is taken: below 3 lines, which yadif refuses, reads
// outside a plane are moved to its nearest line, and a plane one line high comes out as
// cur's line wherever it is interpolated.
StatusOr<DeinterlacePlan> MakeDeinterlacePlan(PixelFormat format, int width, int height, bool top_field_first);

// The three frames the stage reads for one output frame: prev, cur and next of the same
// format and size. At a stream's first frame the caller passes cur as prev, at its last
// cur as next (as yadif does at the ends of its input).
enum DeinterlaceFrame : int { kDeinterlacePrev = 0, kDeinterlaceCur = 1, kDeinterlaceNext = 2 };

// One channel of one plane of the three frames, as the side that runs the stage addresses
// them: sample x of line y of frame f is base[f][y * stride[f] + x * channels].
struct DeinterlaceInputs {
  const uint8_t* base[3];
  int stride[3];
  int channels;
};

// Line y of frame f.
CONVEYOR_HD inline const uint8_t* DeinterlaceLine(const DeinterlaceInputs& in, int f, int y) {
  return in.base[f] + static_cast<size_t>(y) * in.stride[f];
}

// Whether line y is one of cur's kept field, copied as it is.
CONVEYOR_HD inline bool DeinterlaceKeepsLine(bool top_field_first, int y) {
  return (y & 1) == (top_field_first ? 0 : 1);
}

// The lines an interpolated line y of a plane `h` lines high reads: the kept lines above
// and below it (at the top and bottom edges yadif reads the one neighbour twice), those two
// lines further out for the temporal check, and whether that check runs (yadif skips it
// on the second line and the last but one, where the line further out is not there).
struct DeinterlaceLines {
  int up, down;
  int up2, down2;
  bool temporal_check;
};

CONVEYOR_HD inline int DeinterlaceClampLine(int y, int h) { return y < 0 ? 0 : y >= h ? h - 1 : y; }

CONVEYOR_HD inline DeinterlaceLines DeinterlaceLinesOf(int y, int h) {
  DeinterlaceLines l;
  const int up = y > 0 ? y - 1 : y + 1;
  const int down = y + 1 < h ? y + 1 : y - 1;
  // The clamps keep every line read inside the plane: those two out of the second line and
  // the last but one (read, though the check does not use them), and any of a plane under
  // 3 lines high.
  l.up = DeinterlaceClampLine(up, h);
  l.down = DeinterlaceClampLine(down, h);
  l.up2 = DeinterlaceClampLine(2 * up - y, h);
  l.down2 = DeinterlaceClampLine(2 * down - y, h);
  l.temporal_check = !(y == 1 || y + 2 == h);
  return l;
}

CONVEYOR_HD inline int DeinterlaceAbs(int v) { return v < 0 ? -v : v; }
CONVEYOR_HD inline int DeinterlaceMax(int a, int b) { return a > b ? a : b; }
CONVEYOR_HD inline int DeinterlaceMin(int a, int b) { return a < b ? a : b; }

// How unlike the line above (at x + j) and the line below (at x - j) are around x: three
// samples each, on a line through (x, y) at slope j. `o` is x's byte offset, `c` the
// bytes per sample.
CONVEYOR_HD inline int DeinterlaceScore(const uint8_t* above, const uint8_t* below, int o, int c, int j) {
  return DeinterlaceAbs(above[o + (j - 1) * c] - below[o - (j + 1) * c]) +
         DeinterlaceAbs(above[o + j * c] - below[o - j * c]) +
         DeinterlaceAbs(above[o + (j + 1) * c] - below[o + (1 - j) * c]);
}

// Whether sample x of a line `w` samples wide gets the spatial check: yadif's edge variant,
// which reads no neighbour across, runs on the three columns at each side.
CONVEYOR_HD inline bool DeinterlaceChecksAcross(int w, int x) { return x >= 3 && x + 3 < w; }

// Sample x of an interpolated line y (`lines` from DeinterlaceLinesOf), with the spatial
// check where kAcross (DeinterlaceChecksAcross). kChannels is in.channels where known at
// compile time (the host's row loops), 0 where not.
// In mode 0 the temporal pair of the missing line is (prev, cur): both hold the missing
// field, at times either side of the kept one.
template <bool kAcross, int kChannels>
CONVEYOR_HD inline uint8_t DeinterlaceSampleWith(const DeinterlaceInputs& in, const DeinterlaceLines& lines, int x,
                                                 int y) {
  const int ch = kChannels > 0 ? kChannels : in.channels;
  const int o = x * ch;
  const uint8_t* above = DeinterlaceLine(in, kDeinterlaceCur, lines.up);
  const uint8_t* below = DeinterlaceLine(in, kDeinterlaceCur, lines.down);
  const int c = above[o];
  const int e = below[o];
  const int p0 = DeinterlaceLine(in, kDeinterlacePrev, y)[o];
  const int n0 = DeinterlaceLine(in, kDeinterlaceCur, y)[o];
  // The temporal prediction and how far the picture moved about this sample: between the
  // two frames' missing lines, and between each neighbouring frame's kept lines and cur's.
  const int d = (p0 + n0) >> 1;
  const int moved0 = DeinterlaceAbs(p0 - n0) >> 1;
  const int moved1 = (DeinterlaceAbs(DeinterlaceLine(in, kDeinterlacePrev, lines.up)[o] - c) +
                      DeinterlaceAbs(DeinterlaceLine(in, kDeinterlacePrev, lines.down)[o] - e)) >> 1;
  const int moved2 = (DeinterlaceAbs(DeinterlaceLine(in, kDeinterlaceNext, lines.up)[o] - c) +
                      DeinterlaceAbs(DeinterlaceLine(in, kDeinterlaceNext, lines.down)[o] - e)) >> 1;
  int diff = DeinterlaceMax(moved0, DeinterlaceMax(moved1, moved2));

  // The spatial prediction: the average along the direction (vertical, or one or two
  // samples either way of it) whose samples above and below agree best; a slope of two
  // counts only where one was better than vertical. Written as selects rather than
  // yadif's nested branches (the same choice), so GPU threads do not diverge on it.
  int pred = (c + e) >> 1;
  if (kAcross) {
    int best = DeinterlaceScore(above, below, o, ch, 0) - 1;
    for (int side = -1; side <= 1; side += 2) {
      const int one = DeinterlaceScore(above, below, o, ch, side);
      const int two = DeinterlaceScore(above, below, o, ch, 2 * side);
      const bool took_one = one < best;
      best = took_one ? one : best;
      pred = took_one ? (above[o + side * ch] + below[o - side * ch]) >> 1 : pred;
      const bool took_two = took_one && two < best;
      best = took_two ? two : best;
      pred = took_two ? (above[o + 2 * side * ch] + below[o - 2 * side * ch]) >> 1 : pred;
    }
  }

  // The spatial interlacing check: where the temporal prediction stands out beyond both
  // of cur's neighbouring lines, and the temporal averages two lines out stand out from
  // them the same way, the spatial prediction may move that much further from it. yadif
  // skips the check on the second line and the last but one; the lines two out are inside
  // the plane there too (DeinterlaceLinesOf), so they are read either way.
  {
    const int b =
        (DeinterlaceLine(in, kDeinterlacePrev, lines.up2)[o] + DeinterlaceLine(in, kDeinterlaceCur, lines.up2)[o]) >> 1;
    const int f = (DeinterlaceLine(in, kDeinterlacePrev, lines.down2)[o] +
                   DeinterlaceLine(in, kDeinterlaceCur, lines.down2)[o]) >> 1;
    const int hi = DeinterlaceMax(DeinterlaceMax(d - e, d - c), DeinterlaceMin(b - c, f - e));
    const int lo = DeinterlaceMin(DeinterlaceMin(d - e, d - c), DeinterlaceMax(b - c, f - e));
    diff = lines.temporal_check ? DeinterlaceMax(DeinterlaceMax(diff, lo), -hi) : diff;
  }

  // The spatial prediction, kept within `diff` of the temporal one.
  pred = pred > d + diff ? d + diff : pred < d - diff ? d - diff : pred;
  return static_cast<uint8_t>(pred);
}

// Sample x of an interpolated line y of a plane `w` samples wide.
CONVEYOR_HD inline uint8_t DeinterlaceSample(const DeinterlaceInputs& in, const DeinterlaceLines& lines, int w,
                                             int x, int y) {
  return DeinterlaceChecksAcross(w, x) ? DeinterlaceSampleWith<true, 0>(in, lines, x, y)
                                       : DeinterlaceSampleWith<false, 0>(in, lines, x, y);
}

// Destination sample x of line y of a plane: cur's own where y is kept, else interpolated.
CONVEYOR_HD inline uint8_t DeinterlaceOutput(const DeinterlaceInputs& in, const DeinterlacePlaneGeom& g,
                                             bool top_field_first, int x, int y) {
  if (DeinterlaceKeepsLine(top_field_first, y)) {
    return in.base[kDeinterlaceCur][static_cast<size_t>(y) * in.stride[kDeinterlaceCur] + x * in.channels];
  }
  return DeinterlaceSample(in, DeinterlaceLinesOf(y, g.h), g.w, x, y);
}

}  // namespace conveyor
