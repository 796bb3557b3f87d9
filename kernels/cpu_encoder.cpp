// Host execution of the encoder stages.
#include "cpu_encoder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "cpu_dct_x86.h"
#include "cpu_huffman.h"
#include "jfif_writer.h"
#include "stage_dct.h"
#include "stage_huffman.h"

namespace conveyor {
namespace {

// Eight int32 lanes; GCC lowers it to whatever vector width the target has.
typedef int32_t Lanes8 __attribute__((vector_size(32)));

// The hot host stages are built twice, for AVX2 and for baseline x86-64, and the loader
// picks one (GCC function multi-versioning); `flatten` pulls the stage helpers into
// each clone so they are compiled for its target too. Integer code: same bytes.
// (Not under ThreadSanitizer: its runtime is not up yet when the loader runs the clones'
// ifunc resolvers, and the process faults at start.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define CONVEYOR_HOST_CLONES __attribute__((target_clones("avx2", "default"), flatten, noinline))
#else
#define CONVEYOR_HOST_CLONES __attribute__((noinline))
#endif


// Scratch reused by each thread across bands and frames.
struct HostBandScratch {
  std::vector<uint8_t> planes[3];
  std::vector<int16_t> levels;
  std::vector<uint64_t> nonzero;  // a block's nonzero AC levels, from the SIMD DCT stages
  std::vector<uint8_t> segment;
};

// The CPU's colour stage works a row at a time: each source pixel is converted once
// and the chroma box filter sums the converted values, where the per-sample functions
// (which the GPU runs) would convert each pixel once per output sample covering it.
// The integers are the same: the unit tests compare this path with LumaSample and
// ChromaSample, and the GPU test compares whole files.
//
// The plan and planes come by value: the byte stores below may alias anything reached
// through a reference, which would make the compiler reload the plan every sample.
// A pixel format's layout as compile-time constants (see FetchTripleWith).
template <LayoutKind K, int kBpp, int kR, int kG, int kB, int kShiftX, int kShiftY>
struct StaticLayout {
  static constexpr LayoutKind kind = K;
  static constexpr int bytes_per_pixel = kBpp;
  static constexpr int r_index = kR, g_index = kG, b_index = kB;
  static constexpr int chroma_shift_x = kShiftX, chroma_shift_y = kShiftY;
};

typedef uint8_t Bytes16 __attribute__((vector_size(16)));
typedef uint8_t Bytes32 __attribute__((vector_size(32)));
typedef uint64_t Words2 __attribute__((vector_size(16)));

template <class T>
inline T Load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Bytes a..h of `q`, zero-extended into int32 lanes. Done as a byte shuffle of a vector
// whose upper half is zero: GCC 12 lowers __builtin_convertvector of a byte vector
// through general registers, a dozen instructions a lane, where this is four.
template <int a, int b, int c, int d, int e, int f, int g, int h>
inline Lanes8 ByteLanes(uint64_t q) {
  const Words2 w = {q, 0};
  const Bytes16 x = reinterpret_cast<const Bytes16&>(w);
  const Bytes32 y = __builtin_shufflevector(x, x, a, 8, 8, 8, b, 8, 8, 8, c, 8, 8, 8, d, 8, 8, 8, e, 8, 8, 8, f, 8, 8,
                                            8, g, 8, 8, 8, h, 8, 8, 8);
  return reinterpret_cast<const Lanes8&>(y);
}
inline Lanes8 EightBytes(const uint8_t* p) { return ByteLanes<0, 1, 2, 3, 4, 5, 6, 7>(Load<uint64_t>(p)); }

// (v + bias) >> shift (kColorFracBits unless given) clamped to 0..255, eight at a time,
// stored as bytes: the lane-wise ClampToByte((XformDot(...) + bias) >> shift).
inline void StoreConverted(uint8_t* out, Lanes8 v, int32_t bias, int shift = kColorFracBits) {
  const Lanes8 zero = {}, top = zero + 255;
  v = (v + bias) >> shift;
  v = v < zero ? zero : v;
  v = v > top ? top : v;
  const Bytes32 y = reinterpret_cast<const Bytes32&>(v);  // each lane's low byte holds it
  const Bytes16 b = __builtin_shufflevector(y, y, 0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  std::memcpy(out, &b, 8);
}

// The chroma (Cb, Cr) of eight consecutive luma pixels from x on (x even when the chroma
// is subsampled across), in lanes, as FetchTripleWith reads them: one chroma pair covers
// 1 << chroma_shift_x pixels.
template <LayoutKind K, class Layout>
inline void ChromaOfEightPixels(const uint8_t* cb_row, const uint8_t* cr_row, int x, Lanes8* cb, Lanes8* cr) {
  const Layout l;
  static_assert(K != LayoutKind::kSemiPlanarYuv || l.chroma_shift_x == 1, "semi-planar chroma is subsampled across");
  if (K == LayoutKind::kSemiPlanarYuv) {
    const uint64_t c = Load<uint64_t>(cb_row + x);  // four (Cb, Cr) pairs
    *cb = ByteLanes<0, 0, 2, 2, 4, 4, 6, 6>(c);
    *cr = ByteLanes<1, 1, 3, 3, 5, 5, 7, 7>(c);
  } else if (l.chroma_shift_x == 1) {
    *cb = ByteLanes<0, 0, 1, 1, 2, 2, 3, 3>(Load<uint32_t>(cb_row + x / 2));
    *cr = ByteLanes<0, 0, 1, 1, 2, 2, 3, 3>(Load<uint32_t>(cr_row + x / 2));
  } else {
    *cb = EightBytes(cb_row + x);
    *cr = EightBytes(cr_row + x);
  }
}

// Eight packed RGB pixels of kBpp bytes, four in each 128-bit half, and their channels
// pulled out of it in int32 lanes: one in-lane byte shuffle (pshufb under AVX2) and a
// mask a channel. Reads 16 bytes from the fifth pixel on: kPackedSpan pixels in all.
template <int kBpp>
constexpr int kPackedSpan = 4 + (16 + kBpp - 1) / kBpp;

template <int kBpp>
inline Bytes32 EightPackedPixels(const uint8_t* px) {
  const Bytes16 lo = Load<Bytes16>(px), hi = Load<Bytes16>(px + 4 * kBpp);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
}

// Output byte j of the shuffle: the channel's byte of pixel (j % 16) / 4 of j's half (only
// each lane's low byte is kept).
template <int kBpp, int kChannel>
constexpr int PackedChannelByte(int j) {
  return (j / 16) * 16 + ((j % 16) / 4) * kBpp + kChannel;
}
template <int kBpp, int kChannel, size_t... J>
inline Lanes8 PackedChannel(Bytes32 pixels, std::index_sequence<J...>) {
  const Bytes32 y = __builtin_shufflevector(pixels, pixels, PackedChannelByte<kBpp, kChannel>(J)...);
  return reinterpret_cast<const Lanes8&>(y) & 0xFF;
}

// FetchTripleWith's (a, b, d) of pixels x..x+7 of source row `sy` of a packed RGB frame.
template <class Layout>
inline void TripleOfEightPackedPixels(const SourcePlanes& s, int sy, int x, Lanes8* a, Lanes8* b, Lanes8* d) {
  const Layout l;
  constexpr int kBpp = l.bytes_per_pixel;
  const Bytes32 pixels = EightPackedPixels<kBpp>(s.plane[0] + static_cast<size_t>(sy) * s.stride[0] +
                                                 static_cast<size_t>(x) * kBpp);
  constexpr auto bytes = std::make_index_sequence<32>();
  *a = PackedChannel<kBpp, l.r_index>(pixels, bytes);
  *b = PackedChannel<kBpp, l.g_index>(pixels, bytes);
  *d = PackedChannel<kBpp, l.b_index>(pixels, bytes);
}

// Luma of source row `sy` of a packed RGB frame, eight pixels at a time, LumaSample's
// integers; returns the pixels done.
template <class Layout>
int LumaRowPacked(const ColorXform& x, const SourcePlanes& s, int sy, int w, uint8_t* row) {
  int i = 0;
  for (; i + kPackedSpan<Layout::bytes_per_pixel> <= w; i += 8) {
    Lanes8 a, b, d;
    TripleOfEightPackedPixels<Layout>(s, sy, i, &a, &b, &d);
    StoreConverted(row + i, x.m[0][0] * a + x.m[0][1] * b + x.m[0][2] * d, x.bias[0]);
  }
  return i;
}

// Converted chroma (XformDot rows 1 and 2) of pixels [0, n) of source row `sy` of a packed
// RGB frame, set into (first row) or added to `sum_b` and `sum_r`, eight at a time;
// returns the pixels done.
template <class Layout>
int ChromaSumsPacked(const ColorXform& x, const SourcePlanes& s, int sy, int n, bool first, int32_t* sum_b,
                     int32_t* sum_r) {
  int i = 0;
  for (; i + kPackedSpan<Layout::bytes_per_pixel> <= n; i += 8) {
    Lanes8 a, b, d;
    TripleOfEightPackedPixels<Layout>(s, sy, i, &a, &b, &d);
    Lanes8 db = x.m[1][0] * a + x.m[1][1] * b + x.m[1][2] * d;
    Lanes8 dr = x.m[2][0] * a + x.m[2][1] * b + x.m[2][2] * d;
    if (!first) {
      db += Load<Lanes8>(sum_b + i);
      dr += Load<Lanes8>(sum_r + i);
    }
    std::memcpy(sum_b + i, &db, sizeof(db));
    std::memcpy(sum_r + i, &dr, sizeof(dr));
  }
  return i;
}

// Luma of source row `sy` of a YUV frame, eight pixels at a time, then the per-sample
// path for the last few: every lane computes LumaSample's integers. Returns the pixels
// done. (A YUV source's luma can depend on its chroma: BT.709 frames are converted to
// JFIF's BT.601.)
template <LayoutKind K, class Layout>
int LumaRowYuv(const ColorXform& x, const SourcePlanes& s, int sy, int w, uint8_t* row) {
  const Layout l;
  const uint8_t* yrow = s.plane[0] + static_cast<size_t>(sy) * s.stride[0];
  const size_t crow = static_cast<size_t>(sy >> l.chroma_shift_y);
  const uint8_t* cb_row = s.plane[1] + crow * s.stride[1];
  const uint8_t* cr_row = K == LayoutKind::kSemiPlanarYuv ? cb_row : s.plane[2] + crow * s.stride[2];
  int i = 0;
  for (; i + 8 <= w; i += 8) {
    Lanes8 cb, cr;
    ChromaOfEightPixels<K, Layout>(cb_row, cr_row, i, &cb, &cr);
    const Lanes8 y = EightBytes(yrow + i);
    StoreConverted(row + i, x.m[0][0] * y + x.m[0][1] * cb + x.m[0][2] * cr, x.bias[0]);
  }
  return i;
}

// Chroma samples [0, n) of output chroma row `cy` when the source's chroma grid is the
// output's and chroma does not depend on luma (plan.chroma_direct): sample i is the
// source's chroma pair i converted, ChromaSample's integers, eight at a time. Returns the
// samples done; n is at most the source's chroma width.
template <LayoutKind K, class Layout>
int ChromaRowDirect(const ColorXform& x, const SourcePlanes& s, int crow, int n, uint8_t* cb_out, uint8_t* cr_out) {
  const uint8_t* cb_row = s.plane[1] + static_cast<size_t>(crow) * s.stride[1];
  const uint8_t* cr_row = K == LayoutKind::kSemiPlanarYuv ? cb_row : s.plane[2] + static_cast<size_t>(crow) * s.stride[2];
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    Lanes8 cb, cr;
    if (K == LayoutKind::kSemiPlanarYuv) {
      const uint64_t lo = Load<uint64_t>(cb_row + 2 * i), hi = Load<uint64_t>(cb_row + 2 * i + 8);
      cb = __builtin_shufflevector(ByteLanes<0, 2, 4, 6, 0, 0, 0, 0>(lo), ByteLanes<0, 2, 4, 6, 0, 0, 0, 0>(hi), 0, 1,
                                   2, 3, 8, 9, 10, 11);
      cr = __builtin_shufflevector(ByteLanes<1, 3, 5, 7, 0, 0, 0, 0>(lo), ByteLanes<1, 3, 5, 7, 0, 0, 0, 0>(hi), 0, 1,
                                   2, 3, 8, 9, 10, 11);
    } else {
      cb = EightBytes(cb_row + i);
      cr = EightBytes(cr_row + i);
    }
    StoreConverted(cb_out + i, x.m[1][1] * cb + x.m[1][2] * cr, x.bias[1]);
    StoreConverted(cr_out + i, x.m[2][1] * cb + x.m[2][2] * cr, x.bias[2]);
  }
  return i;
}

template <LayoutKind K, class Layout>
void ColorStageFor(const EncodePlan p, const SourcePlanes s, int band, uint8_t* const planes[3]) {
  const Layout layout;
  const ColorXform x = p.xform;
  const int w = p.width;
  thread_local std::vector<int32_t> sum_b, sum_r;  // converted chroma summed over rows
  sum_b.resize(w);
  sum_r.resize(w);

  // Luma: convert the w real pixels of each row, repeat the last into the padding.
  const int rows_y = p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row;
  const int y0 = p.BandFirstMcuRow(band) * p.comp[0].rows_per_mcu_row;
  const int plane_w = p.comp[0].plane_w;
  for (int y = 0; y < rows_y; ++y) {
    uint8_t* row = planes[0] + static_cast<size_t>(y) * plane_w;
    const int sy = ClampCoord(y0 + y, p.height);
    int vectored;
    if constexpr (K == LayoutKind::kPackedRgb) {
      vectored = LumaRowPacked<Layout>(x, s, sy, w, row);
    } else {
      vectored = LumaRowYuv<K, Layout>(x, s, sy, w, row);
    }
    for (int i = vectored; i < w; ++i) {
      int32_t a, b, d;
      FetchTripleWith<K>(layout, s, i, sy, &a, &b, &d);
      row[i] = ClampToByte((XformDot(x, 0, a, b, d) + x.bias[0]) >> kColorFracBits);
    }
    for (int i = w; i < plane_w; ++i) row[i] = row[w - 1];
  }

  // Chroma.
  const int rows_c = p.BandMcuRows(band) * p.comp[1].rows_per_mcu_row;
  const int c0 = p.BandFirstMcuRow(band) * p.comp[1].rows_per_mcu_row;
  const int cplane_w = p.comp[1].plane_w;
  const int hs = p.comp[0].h, vs = p.comp[0].v;
  const int log2n = (hs == 2) + (vs == 2);
  for (int y = 0; y < rows_c; ++y) {
    const size_t off = static_cast<size_t>(y) * cplane_w;
    uint8_t* cb = planes[1] + off;
    uint8_t* cr = planes[2] + off;
    if (p.chroma_direct) {
      // The source's chroma pairs as they are, past its chroma width the per-sample
      // path's clamped edge (the MCU padding).
      const int source_w = (w + hs - 1) / hs;
      const int crow = ClampCoord((c0 + y) * vs, p.height) / vs;
      const int vectored = ChromaRowDirect<K, Layout>(x, s, crow, std::min(source_w, cplane_w), cb, cr);
      for (int i = vectored; i < cplane_w; ++i) ChromaSample<K>(p, s, i, c0 + y, &cb[i], &cr[i]);
      continue;
    }
    // Sum the converted chroma of the vs source rows this output row covers...
    for (int dy = 0; dy < vs; ++dy) {
      const int sy = ClampCoord((c0 + y) * vs + dy, p.height);
      int vectored = 0;
      if constexpr (K == LayoutKind::kPackedRgb) {
        vectored = ChromaSumsPacked<Layout>(x, s, sy, w, dy == 0, sum_b.data(), sum_r.data());
      }
      for (int i = vectored; i < w; ++i) {
        int32_t a, b, d;
        FetchTripleWith<K>(layout, s, i, sy, &a, &b, &d);
        const int32_t db = XformDot(x, 1, a, b, d);
        const int32_t dr = XformDot(x, 2, a, b, d);
        sum_b[i] = dy == 0 ? db : sum_b[i] + db;
        sum_r[i] = dy == 0 ? dr : sum_r[i] + dr;
      }
    }
    // ...then across the hs columns, clamping at the right edge like the sample path:
    // eight samples at a time while their columns are all inside the row.
    const int shift = kColorFracBits + log2n;
    int i = 0;
    for (; hs <= 2 && i + 8 <= cplane_w && (i + 8) * hs <= w; i += 8) {
      Lanes8 tb = Load<Lanes8>(sum_b.data() + i * hs);
      Lanes8 tr = Load<Lanes8>(sum_r.data() + i * hs);
      if (hs == 2) {  // pairs of columns
        const Lanes8 b1 = Load<Lanes8>(sum_b.data() + i * 2 + 8);
        const Lanes8 r1 = Load<Lanes8>(sum_r.data() + i * 2 + 8);
        tb = __builtin_shufflevector(tb, b1, 0, 2, 4, 6, 8, 10, 12, 14) +
             __builtin_shufflevector(tb, b1, 1, 3, 5, 7, 9, 11, 13, 15);
        tr = __builtin_shufflevector(tr, r1, 0, 2, 4, 6, 8, 10, 12, 14) +
             __builtin_shufflevector(tr, r1, 1, 3, 5, 7, 9, 11, 13, 15);
      }
      StoreConverted(cb + i, tb, x.bias[1] * (1 << log2n), shift);
      StoreConverted(cr + i, tr, x.bias[2] * (1 << log2n), shift);
    }
    for (; i < cplane_w; ++i) {
      int32_t tb = 0, tr = 0;
      for (int dx = 0; dx < hs; ++dx) {
        const int sx = ClampCoord(i * hs + dx, w);
        tb += sum_b[sx];
        tr += sum_r[sx];
      }
      cb[i] = ClampToByte((tb + x.bias[1] * (1 << log2n)) >> (kColorFracBits + log2n));
      cr[i] = ClampToByte((tr + x.bias[2] * (1 << log2n)) >> (kColorFracBits + log2n));
    }
  }
}

CONVEYOR_HOST_CLONES void ColorStage(const EncodePlan& p, const SourcePlanes& s, int band,
                                      uint8_t* const scratch[3]) {
  using K = LayoutKind;
  switch (p.format) {
    case PixelFormat::kYuv420p:
    case PixelFormat::kYuvj420p:
      return ColorStageFor<K::kPlanarYuv, StaticLayout<K::kPlanarYuv, 1, 0, 0, 0, 1, 1>>(p, s, band, scratch);
    case PixelFormat::kNv12:
      return ColorStageFor<K::kSemiPlanarYuv, StaticLayout<K::kSemiPlanarYuv, 1, 0, 0, 0, 1, 1>>(p, s, band, scratch);
    case PixelFormat::kYuv422p:
      return ColorStageFor<K::kPlanarYuv, StaticLayout<K::kPlanarYuv, 1, 0, 0, 0, 1, 0>>(p, s, band, scratch);
    case PixelFormat::kYuv444p:
      return ColorStageFor<K::kPlanarYuv, StaticLayout<K::kPlanarYuv, 1, 0, 0, 0, 0, 0>>(p, s, band, scratch);
    case PixelFormat::kRgb24:
      return ColorStageFor<K::kPackedRgb, StaticLayout<K::kPackedRgb, 3, 0, 1, 2, 0, 0>>(p, s, band, scratch);
    case PixelFormat::kBgr24:
      return ColorStageFor<K::kPackedRgb, StaticLayout<K::kPackedRgb, 3, 2, 1, 0, 0, 0>>(p, s, band, scratch);
    case PixelFormat::kRgba:
      return ColorStageFor<K::kPackedRgb, StaticLayout<K::kPackedRgb, 4, 0, 1, 2, 0, 0>>(p, s, band, scratch);
    case PixelFormat::kBgra:
      return ColorStageFor<K::kPackedRgb, StaticLayout<K::kPackedRgb, 4, 2, 1, 0, 0, 0>>(p, s, band, scratch);
  }
}

// 8x8 transpose of int32 lanes in three rounds of interleaves (32-bit pairs, 64-bit pairs,
// 128-bit halves), the usual SIMD arrangement.
inline void Transpose8x8(const Lanes8 r[8], Lanes8 c[8]) {
  Lanes8 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    c[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    c[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// The DCT of one block with the 1-D passes run eight at a time: pass 1 transforms the
// eight rows in parallel (lanes are rows), pass 2 the eight columns (lanes are columns).
// Fdct8 is the same template the GPU runs per row and per column, so each lane computes
// exactly the integers of the scalar path (unit.Dct.HostStageEqualsPerRowAndColumnDefinition).
inline void FdctQuantizeBlock(const uint8_t* src, int stride, const QuantTable& quant,
                              const uint8_t* zigzag_position, int16_t* levels) {
  Lanes8 rows[8], in[8], out[8];
  for (int r = 0; r < 8; ++r) rows[r] = EightBytes(src + r * stride) - 128;
  Transpose8x8(rows, in);                 // in[j][r]: sample j of row r
  dct::Fdct8<true, Lanes8>(in, out, 1);   // out[u][r]: coefficient u of row r
  Transpose8x8(out, in);                  // in[r][u]
  dct::Fdct8<false, Lanes8>(in, out, 1);  // out[v][u]: coefficient (v, u), natural order
  for (int v = 0; v < 8; ++v) {
    Lanes8 mul, half;
    std::memcpy(&mul, quant.multiplier + 8 * v, sizeof(mul));
    std::memcpy(&half, quant.half + 8 * v, sizeof(half));
    // Quantize(), eight lanes at a time.
    const Lanes8 sign = out[v] >> 31;
    Lanes8 n = ((out[v] ^ sign) - sign) + half;
    n = n < 16383 ? n : 16383;
    const Lanes8 level = (((n >> 3) * mul) >> kQuantShift ^ sign) - sign;
    for (int u = 0; u < 8; ++u) levels[zigzag_position[8 * v + u]] = static_cast<int16_t>(level[u]);
  }
}

CONVEYOR_HOST_CLONES void PortableDctStage(const EncodePlan p, const EncodeTables& t, int band,
                                    const uint8_t* const planes[3], int16_t* levels) {
  // Walks MCUs in scan order with nested loops: no division per block.
  int16_t* out = levels;
  for (int row = 0; row < p.BandMcuRows(band); ++row) {
    for (int mx = 0; mx < p.mcus_x; ++mx) {
      for (int j = 0; j < p.blocks_per_mcu; ++j, out += 64) {
        const int c = p.block_comp[j];
        const int w = p.comp[c].plane_w;
        const int x = (mx * p.comp[c].h + p.block_dx[j]) * 8;
        const int y = (row * p.comp[c].v + p.block_dy[j]) * 8;
        FdctQuantizeBlock(planes[c] + static_cast<size_t>(y) * w + x, w, t.quant[p.comp[c].quant], t.zigzag_position,
                          out);
      }
    }
  }
}

#if defined(CONVEYOR_X86_SIMD)
// A quantisation table in the SIMD stages' held order (cpu_dct_x86.h).
void PrepareX86Quant(const QuantTable& q, const uint8_t* zigzag_position, X86QuantTable* out) {
  for (int held = 0; held < 64; ++held) {
    const int natural = 8 * kX86HeldRows[held / 8] + held % 8;
    out->multiplier[held] = q.multiplier[natural];
    out->half[held] = static_cast<int16_t>(q.half[natural]);
    out->zigzag_source[zigzag_position[natural]] = static_cast<uint16_t>(held);
  }
}

// The band an MCU row at a time through the AVX2 or AVX-512 stage, which also fills
// `nonzero`.
void X86DctStage(const EncodePlan& p, const EncodeTables& t, int band, const uint8_t* const planes[3],
                 int16_t* levels, uint64_t* nonzero, HostSimd simd) {
  X86QuantTable quant[2];
  for (int c = 0; c < 2; ++c) PrepareX86Quant(t.quant[c], t.zigzag_position, &quant[c]);
  X86DctRow row;
  row.mcus = p.mcus_x;
  row.blocks_per_mcu = p.blocks_per_mcu;
  for (int j = 0; j < p.blocks_per_mcu; ++j) {
    const ComponentPlan& c = p.comp[p.block_comp[j]];
    row.stride[j] = c.plane_w;
    row.mcu_step[j] = 8 * c.h;
    row.quant[j] = &quant[c.quant];
  }
  const size_t row_blocks = static_cast<size_t>(p.mcus_x) * p.blocks_per_mcu;
  for (int r = 0; r < p.BandMcuRows(band); ++r) {
    for (int j = 0; j < p.blocks_per_mcu; ++j) {
      const int c = p.block_comp[j];
      const size_t y = static_cast<size_t>(r * p.comp[c].v + p.block_dy[j]) * 8;
      row.first[j] = planes[c] + y * p.comp[c].plane_w + p.block_dx[j] * 8;
    }
    row.levels = levels + r * row_blocks * 64;
    row.nonzero = nonzero + r * row_blocks;
    (simd == HostSimd::kAvx512 ? DctRowAvx512 : DctRowAvx2)(row);
  }
}
#endif

// Stage 2 on the chosen code. Returns whether `nonzero` was filled (the SIMD stages fill
// it; the portable one leaves the masks to the Huffman coder).
bool DctStage(const EncodePlan& p, const EncodeTables& t, int band, const uint8_t* const planes[3],
              int16_t* levels, uint64_t* nonzero, HostSimd simd) {
#if defined(CONVEYOR_X86_SIMD)
  if (simd != HostSimd::kPortable && HostSimdAvailable(simd)) {
    X86DctStage(p, t, band, planes, levels, nonzero, simd);
    return true;
  }
#endif
  PortableDctStage(p, t, band, planes, levels);
  return false;
}

// Stages 3 and 4: code each segment into scratch, append it and its RST marker.
// `nonzero`: the blocks' masks from the DCT stage, or null.
CONVEYOR_HOST_CLONES void HuffmanAndPackStage(const EncodePlan& p, const EncodeTables& t, int band,
                                              HostBandScratch* scratch, const uint64_t* nonzero,
                                              std::vector<uint8_t>* out) {
  if (scratch->segment.size() < p.segment_capacity) scratch->segment.resize(p.segment_capacity);
  HostHuffTables tables;
  BuildHostHuffTables(t, &tables);
  const int first = p.BandFirstSegment(band);
  for (int s = first; s < first + p.BandSegments(band); ++s) {
    // The plan sizes segment_capacity for the worst case, so this never overflows.
    const uint32_t n = EncodeSegmentHost(p, tables, scratch->levels.data(), band, s, scratch->segment.data(), nonzero);
    out->insert(out->end(), scratch->segment.data(), scratch->segment.data() + n);
    uint8_t marker[2];
    out->insert(out->end(), marker, marker + WriteRestartMarker(p, s, marker));
  }
}

}  // namespace

void ColorBandOnHost(const EncodePlan& plan, const SourcePlanes& source, int band, uint8_t* const planes[3]) {
  ColorStage(plan, source, band, planes);
}

bool DctBandOnHost(const EncodePlan& plan, const EncodeTables& tables, int band, const uint8_t* const planes[3],
                   int16_t* levels, HostSimd simd, uint64_t* nonzero) {
  std::vector<uint64_t> masks;
  if (nonzero == nullptr) {
    masks.resize(plan.BandBlocks());
    nonzero = masks.data();
  }
  return DctStage(plan, tables, band, planes, levels, nonzero, simd);
}

SourcePlanes SourcePlanesOf(const FrameView& frame) {
  SourcePlanes s{};
  for (int i = 0; i < 3; ++i) {
    s.plane[i] = frame.plane[i];
    s.stride[i] = frame.stride[i];
  }
  return s;
}

void EncodeBandOnHost(const EncodePlan& plan, const EncodeTables& tables,
                      const SourcePlanes& source, int band, std::vector<uint8_t>* out) {
  thread_local HostBandScratch scratch;
  for (int c = 0; c < 3; ++c) scratch.planes[c].resize(plan.BandPlaneSize(c));
  scratch.levels.resize(plan.BandBlocks() * 64);
  scratch.nonzero.resize(plan.BandBlocks());

  uint8_t* const planes[3] = {scratch.planes[0].data(), scratch.planes[1].data(), scratch.planes[2].data()};
  ColorStage(plan, source, band, planes);
  const bool masks =
      DctStage(plan, tables, band, planes, scratch.levels.data(), scratch.nonzero.data(), BestHostSimd());

  HuffmanAndPackStage(plan, tables, band, &scratch, masks ? scratch.nonzero.data() : nullptr, out);
}

CpuJpegEncoder::CpuJpegEncoder(int threads) : pool_(threads) {}

StatusOr<std::vector<uint8_t>> CpuJpegEncoder::Encode(const FrameView& frame,
                                                      const EncodeParams& params,
                                                      int band_rows_hint, int first_band_rows_hint) {
  ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(frame, params, band_rows_hint, first_band_rows_hint));
  EncodeTables tables;
  BuildEncodeTables(plan.quality, &tables);
  const SourcePlanes source = SourcePlanesOf(frame);

  std::vector<std::vector<uint8_t>> bands(plan.num_bands);
  pool_.ParallelFor(plan.num_bands, [&](int b) {
    EncodeBandOnHost(plan, tables, source, b, &bands[b]);
  });

  std::vector<uint8_t> jpeg;
  size_t total = 0;
  for (const auto& b : bands) total += b.size();
  jpeg.reserve(total + 1024);
  AppendJfifHeader(plan, &jpeg);
  for (const auto& b : bands) jpeg.insert(jpeg.end(), b.begin(), b.end());
  AppendJfifTrailer(&jpeg);
  return jpeg;
}

}  // namespace conveyor
