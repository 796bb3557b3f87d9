// The orientation stage: a frame turned and mirrored as its display matrix says (the
// ffmpeg CLI's autorotate), before the renditions are made from it. Each of the eight
// orientations is a transpose and two flips of the sample grid, so a destination sample
// is one source sample: OrientSource gives its position, the GPU kernel (one thread per
// destination sample) and the CPU path copy it, and both give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "frame.h"
#include "hd.h"
#include "status.h"

namespace conveyor {

// Destination (x', y') reads source (x, y) with (u, v) = transpose ? (y', x') : (x', y'),
// x = flip_x ? W-1-u : u, y = flip_y ? H-1-v : v. The eight values are the EXIF
// orientations 1..8 (ExifOrientation): the stored picture's turn and mirror for display.
//   rotate 90 clockwise:  transpose + flip_y        (FFmpeg's transpose=clock, EXIF 6)
//   rotate 180:           flip_x + flip_y                                     (EXIF 3)
//   rotate 270 clockwise: transpose + flip_x        (transpose=cclock,        EXIF 8)
//   mirror:               flip_x (hflip, EXIF 2); flip_y (vflip, EXIF 4)
//   transpose (EXIF 5), transpose + flip_x + flip_y (transpose=clock_flip, EXIF 7)
struct Orientation {
  bool transpose = false;
  bool flip_x = false;
  bool flip_y = false;

  bool identity() const { return !transpose && !flip_x && !flip_y; }
  bool operator==(const Orientation& o) const {
    return transpose == o.transpose && flip_x == o.flip_x && flip_y == o.flip_y;
  }
  bool operator!=(const Orientation& o) const { return !(*this == o); }
};

// The EXIF Orientation tag value (1..8) of an orientation, and back (0 or out of range:
// identity).
int ExifOrientation(Orientation o);
Orientation OrientationFromExif(int exif);
// As a clockwise rotation applied after an optional horizontal mirror: degrees in
// {0, 90, 180, 270} and whether the mirror is part of it.
int OrientationDegrees(Orientation o);
bool OrientationMirrors(Orientation o);
// "rotate 90", "mirror + rotate 270", "none".
const char* OrientationName(Orientation o);

// One plane of an orientation, in samples; `channels` interleaved bytes per sample (3 or
// 4 for packed RGB, 2 for NV12's CbCr, else 1). A 4:2:2 plane that a transpose would turn
// 4:4:0 (which the encoder has no layout for) becomes 4:4:4 instead, each turned chroma
// sample written to two rows: dst_shift_y = 1 reads destination row y' as row y' >> 1.
struct OrientPlaneGeom {
  int src_w, src_h;
  int dst_w, dst_h;
  int channels;
  int dst_shift_y;
};

struct OrientPlan {
  Orientation orientation;
  PixelFormat src_format, dst_format;
  int src_width, src_height;
  int dst_width, dst_height;  // swapped by a transpose
  int num_planes;
  OrientPlaneGeom plane[3];
  // Destination in the packed layout (PackedPlaneGeometry of dst_format at the size).
  size_t dst_offset[3];
  int dst_row_bytes[3];
  size_t dst_size;
};

// Checks the format and size and lays out the destination: the same format, except
// yuv422p under a transpose, which becomes yuv444p.
StatusOr<OrientPlan> MakeOrientPlan(PixelFormat format, int width, int height, Orientation o);

// The source sample that destination sample (dx, dy) of plane `g` copies.
CONVEYOR_HD inline void OrientSource(const Orientation& o, const OrientPlaneGeom& g, int dx, int dy, int* sx,
                                     int* sy) {
  const int b = dy >> g.dst_shift_y;
  const int u = o.transpose ? b : dx;
  const int v = o.transpose ? dx : b;
  *sx = o.flip_x ? g.src_w - 1 - u : u;
  *sy = o.flip_y ? g.src_h - 1 - v : v;
}

}  // namespace conveyor
