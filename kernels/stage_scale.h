// Rendition scaling of one plane sample: an area (box) filter for shrinking and a
// bilinear filter for enlarging, both in exact integer arithmetic so that the GPU kernel
// (one thread per destination sample) and the CPU path produce the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>

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

// DivideByTotal for a numerator known to fit 32 bits: floor(n * m / 2^64) from two
// 32 x 32 -> 64-bit products instead of a full 64 x 64 -> 128-bit one. The value is the
// same, so it is exact under DivideByTotal's conditions. n * m = hi * 2^32 + lo, and
// hi + (lo >> 32) <= (2^32 - 1)^2 + 2^32 - 1 < 2^64 cannot overflow.
CONVEYOR_HD inline uint32_t DivideNarrowByTotal(uint32_t n, uint64_t reciprocal) {
  if (reciprocal == 0) return n;
  const uint64_t lo = static_cast<uint64_t>(n) * static_cast<uint32_t>(reciprocal);
  const uint64_t hi = static_cast<uint64_t>(n) * static_cast<uint32_t>(reciprocal >> 32);
  return static_cast<uint32_t>((hi + (lo >> 32)) >> 32);
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

// The area filter on both axes, a column at a time: the GPU's usual rendition scale
// (AreaScaleKernel in gpu_scale.hip), written here so that the host tests run it too.
// Same sums as ScaleSampleFromTaps, in another order: a column's horizontal taps are
// worked out once into K registers (weights zero outside the column's own), and the
// source rows its strip reads are walked top to bottom, each summed across once and
// added to every destination row it overlaps (two at a boundary; several when
// enlarging). Nothing is shared between threads; the divisions are made once a column
// and once a strip.
//
// Fits where both axes of the plane are area filtered, no destination sample reads more
// than K source samples across (MaxAreaTaps), rows are at least K samples wide, and the
// sums fit 32 bits: a sample's sum is at most 255 * src_w * src_h, plus half of that
// total for rounding.
inline int MaxAreaTaps(int src, int dst) {
  // Sample d covers [d*src, d*src + src) in units of 1/dst pixel. With f = d*src mod dst,
  // a multiple of g = gcd(src, dst) below dst, it touches floor((f + src - 1) / dst) + 1
  // pixels, most at f = dst - g (exactly src/dst where dst divides src).
  return (dst - std::gcd(src, dst) + src - 1) / dst + 1;
}

template <int K>
inline bool AreaColumnsFit(const ScalePlaneGeom& g) {
  return g.filter_x == ScaleFilter::kArea && g.filter_y == ScaleFilter::kArea &&
         MaxAreaTaps(g.src_w, g.dst_w) <= K && g.src_w >= K &&
         static_cast<uint64_t>(g.src_w) * g.src_h * 511 / 2 < (uint64_t{1} << 32);
}

// A column's horizontal taps: K consecutive source pixels from `window`, whose weights
// are zero outside the column's own. The window is moved left at the row's end rather
// than reading past it (rows are at least K wide), so every tap is a fixed step from
// the first: with one channel a row's K loads share one address.
template <int K>
struct AreaColumn {
  int offset;  // of the window's first byte in a row
  int32_t weight[K];

  // Virtual column v = x * channels + channel of the destination plane.
  CONVEYOR_HD AreaColumn(const ScalePlaneGeom& g, int v) {
    const int x = g.channels == 1 ? v : v / g.channels, channel = v - x * g.channels;
    const int lo = x * g.src_w, hi = lo + g.src_w;
    int window = lo / g.dst_w;  // the first pixel the column reads
    if (window > g.src_w - K) window = g.src_w - K;
    CONVEYOR_UNROLL
    for (int i = 0; i < K; ++i) {
      const int a = (window + i) * g.dst_w;  // source pixel window + i covers [a, a + dst_w)
      const int w = (hi < a + g.dst_w ? hi : a + g.dst_w) - (lo > a ? lo : a);
      weight[i] = w > 0 ? w : 0;
    }
    offset = window * g.channels + channel;
  }

  // `Step` is the plane's channels where known at compile time, else 0 and `step` is.
  template <int Step>
  CONVEYOR_HD int32_t RowSum(const uint8_t* row, int step) const {
    const uint8_t* p = row + offset;
    int32_t sum = 0;
    CONVEYOR_UNROLL
    for (int i = 0; i < K; ++i) sum += weight[i] * p[i * (Step != 0 ? Step : step)];
    return sum;
  }
};

// Source rows a strip reads at once: their loads are independent of the sums before
// them, so a thread has this many rows' bytes in flight instead of one (the GPU kernel
// is bound by that chain of loads).
constexpr int kAreaRowBatch = 4;

// Destination rows y0..y_end - 1 of column v, the first written at `out`, the next
// `out_stride` bytes further on. The source rows the strip reads are walked in order;
// each adds its sum, weighted by its overlap, to the destination row it falls in, and a
// row that reaches past that destination row's end (or covers several, when enlarging)
// finishes it and carries into the next.
template <int K, int Step>
CONVEYOR_HD inline void ScaleAreaStripWith(const ScalePlaneGeom& g, const uint8_t* src, size_t stride, int v, int y0,
                                           int y_end, uint8_t* out, size_t out_stride) {
  const AreaColumn<K> column(g, v);
  const uint32_t half = (static_cast<uint32_t>(g.src_w) * static_cast<uint32_t>(g.src_h)) >> 1;
  const int first_row = y0 * g.src_h / g.dst_h, last_row = (y_end * g.src_h - 1) / g.dst_h;
  int lo = y0 * g.src_h, hi = lo + g.src_h;  // destination row y covers [lo, hi) in 1/dst_h rows
  uint32_t sum = 0;
  for (int j0 = first_row; j0 <= last_row; j0 += kAreaRowBatch) {
    int32_t row_sum[kAreaRowBatch];
    CONVEYOR_UNROLL
    for (int u = 0; u < kAreaRowBatch; ++u) {
      const int j = j0 + u < last_row ? j0 + u : last_row;  // past the end: a valid row, unused
      row_sum[u] = column.template RowSum<Step>(src + static_cast<size_t>(j) * stride, g.channels);
    }
    CONVEYOR_UNROLL
    for (int u = 0; u < kAreaRowBatch; ++u) {
      const int j = j0 + u;
      if (j > last_row) break;
      const int a = j * g.dst_h, b = a + g.dst_h;  // source row j covers [a, b), which overlaps [lo, hi)
      sum += static_cast<uint32_t>((hi < b ? hi : b) - (lo > a ? lo : a)) * static_cast<uint32_t>(row_sum[u]);
      while (b >= hi) {  // row j reaches the end of destination row y: y is done
        const uint32_t q = DivideNarrowByTotal(sum + half, g.reciprocal);
        *out = static_cast<uint8_t>(q > 255 ? 255 : q);
        out += out_stride;
        lo = hi;
        hi += g.src_h;
        if (lo >= y_end * g.src_h) return;
        sum = b > lo ? static_cast<uint32_t>((hi < b ? hi : b) - lo) * static_cast<uint32_t>(row_sum[u]) : 0;
      }
    }
  }
}

template <int K>
CONVEYOR_HD inline void ScaleAreaStrip(const ScalePlaneGeom& g, const uint8_t* src, size_t stride, int v, int y0,
                                       int y_end, uint8_t* out, size_t out_stride) {
  if (g.channels == 1) {
    ScaleAreaStripWith<K, 1>(g, src, stride, v, y0, y_end, out, out_stride);
  } else {
    ScaleAreaStripWith<K, 0>(g, src, stride, v, y0, y_end, out, out_stride);
  }
}

// Destination sample (x, y), channel `channel`, of one plane.
CONVEYOR_HD inline uint8_t ScaleSample(const ScalePlaneGeom& g, const uint8_t* src_plane,
                                       int src_stride, int x, int y, int channel) {
  return ScaleSampleFromTaps(g, src_plane, src_stride, AxisTapsFor(g.src_w, g.dst_w, g.filter_x, x),
                             AxisTapsFor(g.src_h, g.dst_h, g.filter_y, y), channel);
}

}  // namespace conveyor
