// Stage 1: colour conversion. Produces the band's component planes (JFIF YCbCr at the
// output subsampling, padded to whole MCUs by repeating the edge pixels) from the source
// frame. One sample per call so the GPU runs it one thread per sample and the CPU in
// row loops; both share every integer. The layout kind is a template parameter so that
// neither side branches on the pixel format per sample.
#pragma once

#include "encode_plan.h"
#include "hd.h"

namespace conveyor {

// Source plane pointers as seen by the side that runs the stage (host or device).
struct SourcePlanes {
  const uint8_t* plane[3];
  int stride[3];
};

// Planes of a frame stored packed (PackedPlaneGeometry) at `base`, host or device.
inline SourcePlanes PackedSourcePlanes(const uint8_t* base, PixelFormat format, int width, int height) {
  const PlaneGeometry g = PackedPlaneGeometry(format, width, height);
  SourcePlanes planes{};
  for (int c = 0; c < 3; ++c) {
    planes.plane[c] = base + g.offset[c];
    planes.stride[c] = g.row_bytes[c];
  }
  return planes;
}

// The input triple at pixel (x, y), which must lie inside the frame:
// (Y, Cb, Cr) codes for YUV formats, (R, G, B) for RGB formats. `l` is the runtime
// FormatLayout (GPU) or a type with the same members as compile-time constants (the
// CPU's StaticLayout), which lets the compiler vectorise the row loops.
template <LayoutKind K, class Layout>
CONVEYOR_HD inline void FetchTripleWith(const Layout& l, const SourcePlanes& s, int x, int y,
                                        int32_t* a, int32_t* b, int32_t* d) {
  if (K == LayoutKind::kPackedRgb) {
    const uint8_t* px = s.plane[0] + static_cast<size_t>(y) * s.stride[0] + x * l.bytes_per_pixel;
    *a = px[l.r_index];
    *b = px[l.g_index];
    *d = px[l.b_index];
    return;
  }
  *a = s.plane[0][static_cast<size_t>(y) * s.stride[0] + x];
  const int cx = x >> l.chroma_shift_x;
  const size_t crow = static_cast<size_t>(y >> l.chroma_shift_y);
  if (K == LayoutKind::kSemiPlanarYuv) {
    const uint8_t* c = s.plane[1] + crow * s.stride[1] + 2 * cx;
    *b = c[0];
    *d = c[1];
  } else {
    *b = s.plane[1][crow * s.stride[1] + cx];
    *d = s.plane[2][crow * s.stride[2] + cx];
  }
}

template <LayoutKind K>
CONVEYOR_HD inline void FetchTriple(const EncodePlan& p, const SourcePlanes& s, int x, int y,
                                    int32_t* a, int32_t* b, int32_t* d) {
  FetchTripleWith<K>(p.layout, s, x, y, a, b, d);
}

CONVEYOR_HD inline int ClampCoord(int v, int limit) { return v < limit ? v : limit - 1; }

// Luma sample at (x, y) of the padded luma plane.
template <LayoutKind K>
CONVEYOR_HD inline uint8_t LumaSample(const EncodePlan& p, const SourcePlanes& s, int x, int y) {
  int32_t a, b, d;
  FetchTriple<K>(p, s, ClampCoord(x, p.width), ClampCoord(y, p.height), &a, &b, &d);
  return ClampToByte((XformDot(p.xform, 0, a, b, d) + p.xform.bias[0]) >> kColorFracBits);
}

// Chroma samples at (cx, cy) of the padded chroma planes: the average of the converted
// chroma over the luma pixels the sample covers (a box filter for 4:2:x output). With
// plan.chroma_direct every covered pixel has the same converted chroma, so one fetch
// gives exactly the average.
template <LayoutKind K>
CONVEYOR_HD inline void ChromaSample(const EncodePlan& p, const SourcePlanes& s, int cx, int cy,
                                     uint8_t* cb, uint8_t* cr) {
  const int hs = p.comp[0].h;
  const int vs = p.comp[0].v;
  if (p.chroma_direct) {
    int32_t a, b, d;
    FetchTriple<K>(p, s, ClampCoord(cx * hs, p.width), ClampCoord(cy * vs, p.height), &a, &b, &d);
    *cb = ClampToByte((XformDot(p.xform, 1, a, b, d) + p.xform.bias[1]) >> kColorFracBits);
    *cr = ClampToByte((XformDot(p.xform, 2, a, b, d) + p.xform.bias[2]) >> kColorFracBits);
    return;
  }
  int32_t sum_b = 0, sum_r = 0;
  for (int dy = 0; dy < vs; ++dy) {
    const int y = ClampCoord(cy * vs + dy, p.height);
    for (int dx = 0; dx < hs; ++dx) {
      int32_t a, b, d;
      FetchTriple<K>(p, s, ClampCoord(cx * hs + dx, p.width), y, &a, &b, &d);
      sum_b += XformDot(p.xform, 1, a, b, d);
      sum_r += XformDot(p.xform, 2, a, b, d);
    }
  }
  const int log2n = (hs == 2) + (vs == 2);
  *cb = ClampToByte((sum_b + p.xform.bias[1] * (1 << log2n)) >> (kColorFracBits + log2n));
  *cr = ClampToByte((sum_r + p.xform.bias[2] * (1 << log2n)) >> (kColorFracBits + log2n));
}

}  // namespace conveyor
