// The colour conversion from a frame's signalling to JFIF's full-range BT.601 YCbCr,
// as one fixed-point 3x3 matrix plus offsets. It is computed once on the host and the
// same integers are used by the CPU and GPU, so both produce identical samples.
#pragma once

#include <cstdint>

#include "frame.h"
#include "hd.h"

namespace conveyor {

constexpr int kColorFracBits = 16;

struct ColorXform {
  // out[c] = (m[c][0]*a + m[c][1]*b + m[c][2]*d + bias[c]) >> 16, clamped to 0..255,
  // where (a, b, d) is (Y, Cb, Cr) for YUV inputs and (R, G, B) for RGB inputs, taken
  // as raw 0..255 codes. `bias` folds in input offsets, output offsets and rounding.
  int32_t m[3][3];
  int32_t bias[3];
};

// Frame colour signalling (matrix, range, YUV or RGB) to JFIF YCbCr.
ColorXform MakeColorXform(const FrameView& frame);

CONVEYOR_HD inline uint8_t ClampToByte(int32_t v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Dot product of row c with an input triple, before bias and shift.
CONVEYOR_HD inline int32_t XformDot(const ColorXform& x, int c, int32_t a, int32_t b, int32_t d) {
  return x.m[c][0] * a + x.m[c][1] * b + x.m[c][2] * d;
}

}  // namespace conveyor
