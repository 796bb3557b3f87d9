// Rendition scaling of one plane sample: an area (box) filter for shrinking and a
// bilinear filter for enlarging, both in exact integer arithmetic so that the GPU kernel
// (one thread per destination sample) and the CPU path produce the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hd.h"

namespace conveyor {

// kAuto picks, per plane and per dimension, kArea where the plane shrinks or keeps its
// size and kBilinear where it grows (what swscale's "area" flag does as well).
enum class ScaleFilter : uint8_t { kAuto, kArea, kBilinear };

// Bilinear sample positions and weights carry this many fractional bits: the position
// error is below 2^-14 pixel, far under one code value even across a 0 -> 255 edge.
constexpr int kScaleFracBits = 14;
constexpr int32_t kScaleOne = 1 << kScaleFracBits;

// One plane of a scale, in samples (pixels, not bytes). `channels` interleaved bytes
// per pixel (3 or 4 for packed RGB, 2 for NV12's CbCr, else 1) are scaled independently.
// The filters are resolved: never kAuto here. `reciprocal` is ScaleReciprocal of the
// plane's weight total AxisTotal(x) * AxisTotal(y) (see DivideByTotal).
struct ScalePlaneGeom {
  int src_w, src_h;
  int dst_w, dst_h;
  int channels;
  ScaleFilter filter_x, filter_y;
  uint64_t reciprocal;
};

// The sum of one destination sample's weights along a dimension: the same for every
// sample of the plane (area: src, in units of 1/dst pixel; bilinear: kScaleOne).
CONVEYOR_HD inline int32_t AxisTotal(int src, ScaleFilter filter) {
  return filter == ScaleFilter::kArea ? src : kScaleOne;
}

// floor(n / d) for the normalisation of a weighted sum, as a multiply: the per-sample
// 64-bit division is the slowest instruction on both sides (emulated on GPUs, 40-90
// cycles on x86). With m = ceil(2^64 / d), m * d = 2^64 + e, 0 <= e < d, and
// n = q * d + r: n * m / 2^64 = q + (r + n * e / 2^64) / d, so the high word is q
// whenever n * e < 2^64, which holds for n < 256 * d and d <= 2^28 (a weighted average
// of bytes plus rounding; totals are at most 16384^2). d == 1 has no 64-bit m and is
// marked by m == 0.
// (Division by invariant integers: Granlund and Montgomery, PLDI 1994.)
inline uint64_t ScaleReciprocal(uint64_t d) { return d <= 1 ? 0 : ~uint64_t{0} / d + 1; }

CONVEYOR_HD inline uint64_t DivideByTotal(uint64_t n, uint64_t reciprocal) {
  if (reciprocal == 0) return n;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __umul64hi(n, reciprocal);
#else
  __extension__ typedef unsigned __int128 U128;  // GCC/Clang; not ISO C++
  return static_cast<uint64_t>((static_cast<U128>(n) * reciprocal) >> 64);
#endif
}

// The source samples one destination index reads along one dimension: indices
// first..last with integer weights summing to `total`.
//   area:     the destination sample d covers the source interval [d*src/dst,
//             (d+1)*src/dst). In units of 1/dst source pixel that is [lo, hi) =
//             [d*src, (d+1)*src), pixel i covers [i*dst, (i+1)*dst), and each weight is
//             the overlap length: exact coverage, total = src.
//   bilinear: centre-aligned position p = (d + 0.5)*src/dst - 0.5 in kScaleFracBits
//             fixed point, clamped to the plane; lo is its fraction, total = kScaleOne.
struct AxisTaps {
  int first, last;
  int32_t lo, hi;
  int32_t total;
  bool area;
};

CONVEYOR_HD inline AxisTaps AxisTapsFor(int src, int dst, ScaleFilter filter, int d) {
  AxisTaps t;
  if (filter == ScaleFilter::kArea) {
    t.area = true;
    t.lo = d * src;  // <= 2^28 for dimensions up to 16384
    t.hi = t.lo + src;
    t.first = t.lo / dst;
    t.last = (t.hi - 1) / dst;
    t.total = AxisTotal(src, filter);
    return t;
  }
  t.area = false;
  t.total = AxisTotal(src, filter);
  t.hi = 0;
  // Exact per sample (not an accumulated step, which drifts by up to x * 2^-F pixel).
  int64_t pos = (static_cast<int64_t>(2 * d + 1) * src << kScaleFracBits) / (2 * dst) -
                kScaleOne / 2;
  if (pos < 0) pos = 0;
  t.first = static_cast<int>(pos >> kScaleFracBits);
  t.lo = static_cast<int32_t>(pos & (kScaleOne - 1));
  // No second tap at the last pixel (clamped edge) or with a zero fraction, so the loop
  // below never reads past the plane.
  if (t.first >= src - 1) {
    t.first = src - 1;
    t.lo = 0;
  }
  t.last = t.lo == 0 ? t.first : t.first + 1;
  return t;
}

CONVEYOR_HD inline int32_t AxisWeight(const AxisTaps& t, int i, int dst) {
  if (t.area) {
    const int32_t lo = t.lo > i * dst ? t.lo : i * dst;
    const int32_t hi = t.hi < (i + 1) * dst ? t.hi : (i + 1) * dst;
    return hi - lo;
  }
  return i == t.first ? kScaleOne - t.lo : t.lo;
}

// Destination sample (x, y), channel `channel`, of one plane, from the taps of its
// column (tx) and row (ty). The 2-D filter is the product of the two 1-D ones: rows are
// summed with the horizontal weights (int32: at most 255 * 2^14), then weighted
// vertically in int64 (at most 255 * 2^28) and divided once by the product of the
// totals, rounding to nearest. Integer sums are exact in any order, so a CPU loop that
// sums columns first gets the same result. A weighted average of bytes cannot exceed
// 255; the clamp only guards a plan built by hand.
CONVEYOR_HD inline uint8_t ScaleSampleFromTaps(const ScalePlaneGeom& g, const uint8_t* src_plane, int src_stride,
                                               const AxisTaps& tx, const AxisTaps& ty, int channel) {
  int64_t sum = 0;
  for (int j = ty.first; j <= ty.last; ++j) {
    const uint8_t* row = src_plane + static_cast<size_t>(j) * src_stride + channel;
    int32_t row_sum = 0;
    for (int i = tx.first; i <= tx.last; ++i) row_sum += AxisWeight(tx, i, g.dst_w) * row[i * g.channels];
    sum += static_cast<int64_t>(AxisWeight(ty, j, g.dst_h)) * row_sum;
  }
  const uint64_t half = (static_cast<uint64_t>(tx.total) * ty.total) >> 1;
  const uint64_t v = DivideByTotal(static_cast<uint64_t>(sum) + half, g.reciprocal);
  return static_cast<uint8_t>(v > 255 ? 255 : v);
}

// Destination sample (x, y), channel `channel`, of one plane.
CONVEYOR_HD inline uint8_t ScaleSample(const ScalePlaneGeom& g, const uint8_t* src_plane,
                                       int src_stride, int x, int y, int channel) {
  return ScaleSampleFromTaps(g, src_plane, src_stride, AxisTapsFor(g.src_w, g.dst_w, g.filter_x, x),
                             AxisTapsFor(g.src_h, g.dst_h, g.filter_y, y), channel);
}

}  // namespace conveyor
