// Builds the fixed-point conversion matrix to JFIF YCbCr (ITU T.871: full range, BT.601
// coefficients) from the frame's matrix and range.
#include "color_xform.h"

#include <cmath>

namespace conveyor {
namespace {

struct Coeffs {
  double kr, kb;
};

Coeffs CoeffsOf(ColorMatrix m) {
  switch (m) {
    case ColorMatrix::kBt601: return {0.299, 0.114};
    case ColorMatrix::kBt709: return {0.2126, 0.0722};
    case ColorMatrix::kBt2020: return {0.2627, 0.0593};
  }
  return {0.299, 0.114};
}

using Mat3 = double[3][3];

// Normalised RGB (0..1) -> normalised Y (0..1), Cb, Cr (-0.5..0.5).
void RgbToYcc(Coeffs k, Mat3 out) {
  const double kg = 1.0 - k.kr - k.kb;
  const double rows[3][3] = {
      {k.kr, kg, k.kb},
      {-k.kr / (2 * (1 - k.kb)), -kg / (2 * (1 - k.kb)), 0.5},
      {0.5, -kg / (2 * (1 - k.kr)), -k.kb / (2 * (1 - k.kr))},
  };
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = rows[i][j];
}

// Normalised Y, Cb, Cr -> normalised RGB.
void YccToRgb(Coeffs k, Mat3 out) {
  const double kg = 1.0 - k.kr - k.kb;
  const double rows[3][3] = {
      {1.0, 0.0, 2 * (1 - k.kr)},
      {1.0, -2 * (1 - k.kb) * k.kb / kg, -2 * (1 - k.kr) * k.kr / kg},
      {1.0, 2 * (1 - k.kb), 0.0},
  };
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = rows[i][j];
}

void Multiply(const Mat3 a, const Mat3 b, Mat3 out) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a[i][k] * b[k][j];
      out[i][j] = s;
    }
}

int32_t Fix(double v) { return static_cast<int32_t>(std::lround(v * (1 << kColorFracBits))); }

}  // namespace

ColorXform MakeColorXform(const FrameView& frame) {
  // Everything below is "code value in" -> "code value out" for 8-bit samples:
  // out = 255 * Jfif(normalised input) + (0, 128, 128).
  Mat3 jfif;
  RgbToYcc(CoeffsOf(ColorMatrix::kBt601), jfif);

  Mat3 total;           // applied to (input - offset)
  double offset[3];     // input code offsets
  if (LayoutOf(frame.format).kind == LayoutKind::kPackedRgb) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) total[i][j] = jfif[i][j];  // 255 in and out cancel
    offset[0] = offset[1] = offset[2] = 0;
  } else {
    const bool full = frame.EffectiveRange() == ColorRange::kFull;
    // Input code -> normalised: Y' = (Y - 16) / 219, C' = (C - 128) / 224 for limited.
    const double y_scale = full ? 1.0 / 255 : 1.0 / 219;
    const double c_scale = full ? 1.0 / 255 : 1.0 / 224;
    offset[0] = full ? 0 : 16;
    offset[1] = offset[2] = 128;
    Mat3 to_rgb, ycc_to_ycc;
    YccToRgb(CoeffsOf(frame.matrix), to_rgb);
    Multiply(jfif, to_rgb, ycc_to_ycc);
    for (int i = 0; i < 3; ++i) {
      total[i][0] = 255 * ycc_to_ycc[i][0] * y_scale;
      total[i][1] = 255 * ycc_to_ycc[i][1] * c_scale;
      total[i][2] = 255 * ycc_to_ycc[i][2] * c_scale;
    }
  }

  ColorXform x{};
  const double out_offset[3] = {0, 128, 128};
  for (int i = 0; i < 3; ++i) {
    double folded = out_offset[i];
    for (int j = 0; j < 3; ++j) {
      // Entries that are zero in exact arithmetic (Y's effect on chroma) come out as
      // tiny residues; Fix() rounds them to exactly zero.
      x.m[i][j] = Fix(total[i][j]);
      folded -= total[i][j] * offset[j];
    }
    // + 0.5 for rounding; chroma rounds exact halves down (0.5 - 2^-16), as IJG libjpeg's
    // jccolor does. Saturated ramps land on exact halves often, and rounding those up
    // biases Cb/Cr upward by a fraction of a code (3.6 dB at 4:4:4 q100 on testsrc2).
    x.bias[i] = Fix(folded) + (1 << (kColorFracBits - 1)) - (i > 0 ? 1 : 0);
  }
  return x;
}

}  // namespace conveyor
