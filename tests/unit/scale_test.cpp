// The rendition scaler on the host: plan geometry and argument checks, the CPU's row
// path against the per-sample function the GPU runs, exact results (identity, 2:1 area
// averages, known bilinear ramps), and agreement within one code value with a
// double-precision reference over every format and odd and large sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "scale_cpu.h"
#include "scale_plan.h"
#include "stage_scale.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

const PixelFormat kAllFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                   PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                   PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};

int ChannelsOf(PixelFormat f, int plane) {
  const FormatLayout l = LayoutOf(f);
  if (l.kind == LayoutKind::kPackedRgb) return l.bytes_per_pixel;
  return l.kind == LayoutKind::kSemiPlanarYuv && plane == 1 ? 2 : 1;
}

// The textbook definitions, in doubles. Area: the mean of the source over the interval
// the destination sample covers. Bilinear: centre-aligned position, clamped, linear mix.
// Weights of source indices first..first + w.size() - 1; returns their total.
struct RefTaps {
  int first = 0;
  std::vector<double> w;
  double total = 1;
};

RefTaps Axis(int src, int dst, bool area, int d) {
  RefTaps t;
  const double scale = static_cast<double>(src) / dst;
  if (area) {
    const double lo = d * scale, hi = (d + 1) * scale;
    t.first = static_cast<int>(std::floor(lo));
    for (int i = t.first; i < src && i < hi; ++i) t.w.push_back(std::fmin(hi, i + 1.0) - std::fmax(lo, 1.0 * i));
    t.total = scale;
    return t;
  }
  const double pos = std::fmin(std::fmax((d + 0.5) * scale - 0.5, 0.0), src - 1.0);
  t.first = static_cast<int>(std::floor(pos));
  const double f = pos - t.first;
  t.w.push_back(1.0 - f);
  if (f > 0) t.w.push_back(f);
  return t;
}

// One plane of the reference; `filter` kAuto means area where the plane shrinks or keeps
// its size in that dimension, bilinear where it grows.
std::vector<uint8_t> ReferencePlane(const uint8_t* src, int stride, int sw, int sh, int ch, int dw,
                                    int dh, ScaleFilter filter) {
  const bool area_x = filter == ScaleFilter::kArea || (filter == ScaleFilter::kAuto && dw <= sw);
  const bool area_y = filter == ScaleFilter::kArea || (filter == ScaleFilter::kAuto && dh <= sh);
  std::vector<uint8_t> out(static_cast<size_t>(dw) * dh * ch);
  std::vector<RefTaps> tx(dw);
  for (int x = 0; x < dw; ++x) tx[x] = Axis(sw, dw, area_x, x);
  for (int y = 0; y < dh; ++y) {
    const RefTaps ty = Axis(sh, dh, area_y, y);
    for (int x = 0; x < dw; ++x)
      for (int c = 0; c < ch; ++c) {
        double sum = 0;
        for (size_t j = 0; j < ty.w.size(); ++j)
          for (size_t i = 0; i < tx[x].w.size(); ++i)
            sum += ty.w[j] * tx[x].w[i] *
                   src[(ty.first + j) * stride + (tx[x].first + i) * ch + c];
        const double v = std::floor(sum / (tx[x].total * ty.total) + 0.5);
        out[(static_cast<size_t>(y) * dw + x) * ch + c] = static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
  }
  return out;
}

// A one-row yuv444p frame whose three planes are the same bytes.
FrameView OneRow444(const uint8_t* row, int width) {
  FrameView v;
  v.width = width;
  v.height = 1;
  v.format = PixelFormat::kYuv444p;
  for (int p = 0; p < 3; ++p) {
    v.plane[p] = row;
    v.stride[p] = width;
  }
  return v;
}

std::vector<uint8_t> ScaleOnHost(const FrameView& src, int dw, int dh, ScaleFilter filter) {
  auto plan = MakeScalePlan(src.format, src.width, src.height, dw, dh, filter);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return {};
  std::vector<uint8_t> out(plan->dst_size, 0xEE);
  const Status s = ScaleFrameOnHost(src, *plan, out.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// ScaleSample over a whole frame: what the GPU kernel computes, one sample per thread.
std::vector<uint8_t> PerSample(const FrameView& src, const ScalePlan& plan) {
  std::vector<uint8_t> out(plan.dst_size);
  for (int p = 0; p < plan.num_planes; ++p) {
    const ScalePlaneGeom& g = plan.plane[p];
    for (int y = 0; y < g.dst_h; ++y)
      for (int b = 0; b < g.dst_w * g.channels; ++b)
        out[plan.dst_offset[p] + static_cast<size_t>(y) * plan.dst_row_bytes[p] + b] =
            ScaleSample(g, src.plane[p], src.stride[p], b / g.channels, y, b % g.channels);
  }
  return out;
}

TEST(ScaleDivide, ReciprocalMultiplyIsExactFloorDivision) {
  // Every weight total a plan can have is a product of two of 1..16384 and 2^14; the
  // numerators are weighted byte averages plus half the total: below 256 * d.
  std::vector<uint64_t> divisors = {1, 2, 3, 5, 7, 255, 256, 1000, 16383, 16384, 16385};
  for (uint64_t a : {16384ull, 16383ull, 12345ull, 9999ull, 3ull})
    for (uint64_t b : {16384ull, 16381ull, 8191ull, 1080ull, 7ull}) divisors.push_back(a * b);
  uint32_t h = 12345;
  for (int i = 0; i < 200; ++i) {
    h = h * 1664525u + 1013904223u;
    divisors.push_back(1 + (h >> 4) % (1u << 28));
  }
  for (uint64_t d : divisors) {
    const uint64_t m = ScaleReciprocal(d);
    for (uint64_t k = 0; k < 256; ++k)
      for (uint64_t n : {k * d, k * d + d / 2, k * d + d - 1}) {
        ASSERT_EQ(DivideByTotal(n, m), n / d) << n << " / " << d;
        if (n > 0) {
          ASSERT_EQ(DivideByTotal(n - 1, m), (n - 1) / d) << n - 1 << " / " << d;
        }
      }
  }
}

TEST(ScaleDivide, NarrowDivisionEqualsTheWideOne) {
  uint32_t h = 777;
  for (int i = 0; i < 20000; ++i) {
    h = h * 1664525u + 1013904223u;
    const uint64_t d = 1 + (h >> 4) % (1u << 24);  // area totals of planes that fit 32-bit sums
    const uint64_t m = ScaleReciprocal(d);
    h = h * 1664525u + 1013904223u;
    const uint64_t n = h % (256 * d);
    if (n >= (uint64_t{1} << 32)) continue;
    ASSERT_EQ(DivideNarrowByTotal(static_cast<uint32_t>(n), m), n / d) << n << " / " << d;
    ASSERT_EQ(DivideNarrowByTotal(static_cast<uint32_t>(n), m), DivideByTotal(n, m)) << n << " / " << d;
  }
  EXPECT_EQ(DivideNarrowByTotal(4000000000u, ScaleReciprocal(1)), 4000000000u);
}

// ScaleAreaStrip over a whole plane, in strips of `rows` destination rows.
template <int K>
std::vector<uint8_t> AreaStrips(const FrameView& src, const ScalePlan& plan, int rows) {
  std::vector<uint8_t> out(plan.dst_size, 0xEE);
  for (int p = 0; p < plan.num_planes; ++p) {
    const ScalePlaneGeom& g = plan.plane[p];
    for (int y0 = 0; y0 < g.dst_h; y0 += rows)
      for (int v = 0; v < g.dst_w * g.channels; ++v)
        ScaleAreaStrip<K>(g, src.plane[p], src.stride[p], v, y0, std::min(y0 + rows, g.dst_h),
                          out.data() + plan.dst_offset[p] + static_cast<size_t>(y0) * plan.dst_row_bytes[p] + v,
                          plan.dst_row_bytes[p]);
  }
  return out;
}

TEST(ScaleHost, AreaColumnStripsEqualPerSampleDefinition) {
  // Shrinking by 1.5, 2, 3 and odd ratios, keeping the size, and enlarging with the area
  // filter forced; strips of 1, 3 and 8 rows start on every kind of row boundary.
  const int cases[][4] = {{480, 270, 320, 180},    {480, 270, 160, 90},    {479, 269, 161, 89},
                          {64, 48, 32, 24},        {17, 9, 5, 3},          {5, 3, 17, 9},
                          {33, 21, 17, 9},         {100, 50, 50, 100},     {31, 7, 31, 7},
                          {1, 1, 1, 1},            {1, 1, 7, 3},           {300, 200, 1, 1},
                          {16, 16384, 5, 720}};
  int planes = 0;
  uint32_t seed = 900;
  for (auto [sw, sh, dw, dh] : cases)
    for (PixelFormat f : kAllFormats) {
      const auto frame = testing::MakeSyntheticFrame(sw, sh, f, seed++);
      const ScalePlan plan = MakeScalePlan(f, sw, sh, dw, dh, ScaleFilter::kArea).value();
      int taps = 2;
      bool fits = true;
      for (int p = 0; p < plan.num_planes; ++p) {
        taps = std::max(taps, MaxAreaTaps(plan.plane[p].src_w, plan.plane[p].dst_w));
        fits = fits && AreaColumnsFit<4>(plan.plane[p]);
      }
      if (!fits) continue;  // the GPU's other kernels take these
      const std::vector<uint8_t> want = PerSample(frame.view, plan);
      // A launch runs every plane with the most taps of any rendition in it.
      for (int k = taps; k <= 4; ++k)
        for (int rows : {1, 3, 8}) {
          const std::vector<uint8_t> got = k == 2   ? AreaStrips<2>(frame.view, plan, rows)
                                           : k == 3 ? AreaStrips<3>(frame.view, plan, rows)
                                                    : AreaStrips<4>(frame.view, plan, rows);
          ASSERT_EQ(got, want) << PixelFormatName(f) << " " << sw << "x" << sh << " -> " << dw << "x" << dh
                               << " in strips of " << rows << " with " << k << " taps";
        }
      planes += plan.num_planes;
    }
  std::printf("checked %d planes\n", planes);
  EXPECT_GT(planes, 100);
}

TEST(ScaleHost, AreaTapLimitsAndThirtyTwoBitSums) {
  EXPECT_EQ(MaxAreaTaps(1920, 1280), 2);  // 1.5: every sample reads two pixels
  EXPECT_EQ(MaxAreaTaps(1920, 640), 3);   // 3: exactly three
  EXPECT_EQ(MaxAreaTaps(1919, 641), 4);   // just under 3: some straddle four
  EXPECT_EQ(MaxAreaTaps(17, 33), 2);      // enlarging: at most two
  EXPECT_EQ(MaxAreaTaps(7, 7), 1);
  EXPECT_FALSE(AreaColumnsFit<4>(ScalePlaneGeom{3, 3, 1, 1, 1, ScaleFilter::kArea, ScaleFilter::kArea, 0}));
  ScalePlaneGeom g{3840, 2160, 1280, 720, 1, ScaleFilter::kArea, ScaleFilter::kArea, 0};
  EXPECT_TRUE(AreaColumnsFit<4>(g));  // 255.5 * 3840 * 2160 < 2^32
  g.src_w = 7680;
  g.src_h = 4320;
  g.dst_w = 3840;
  g.dst_h = 2160;
  EXPECT_FALSE(AreaColumnsFit<4>(g));  // 255.5 * 7680 * 4320 does not fit
  g = ScalePlaneGeom{1920, 1080, 1280, 720, 1, ScaleFilter::kArea, ScaleFilter::kBilinear, 0};
  EXPECT_FALSE(AreaColumnsFit<4>(g));
  g = ScalePlaneGeom{1920, 1080, 320, 180, 1, ScaleFilter::kArea, ScaleFilter::kArea, 0};
  EXPECT_FALSE(AreaColumnsFit<4>(g));  // six taps across
}

TEST(ScalePlan, RejectsBadArgumentsNamingTheField) {
  const char* fields[] = {"src_width", "src_height", "dst_width", "dst_height"};
  for (int field = 0; field < 4; ++field)
    for (int bad : {0, -1, kMaxDimension + 1}) {
      int d[4] = {64, 48, 32, 24};
      d[field] = bad;
      auto plan = MakeScalePlan(PixelFormat::kYuv420p, d[0], d[1], d[2], d[3]);
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(plan.status().message().find(fields[field]), std::string::npos) << plan.status().ToString();
    }
  auto format = MakeScalePlan(static_cast<PixelFormat>(99), 64, 48, 32, 24);
  EXPECT_EQ(format.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(format.status().message().find("format"), std::string::npos);
  auto filter = MakeScalePlan(PixelFormat::kRgb24, 64, 48, 32, 24, static_cast<ScaleFilter>(7));
  EXPECT_EQ(filter.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(filter.status().message().find("filter"), std::string::npos);
  EXPECT_TRUE(MakeScalePlan(PixelFormat::kNv12, kMaxDimension, 1, 1, kMaxDimension).ok());
}

TEST(ScalePlan, GeometryFollowsThePackedLayout) {
  for (PixelFormat f : kAllFormats)
    for (auto [sw, sh, dw, dh] : {std::array<int, 4>{1920, 1080, 1280, 720}, {17, 9, 5, 3}, {1, 1, 33, 21}}) {
      const ScalePlan p = MakeScalePlan(f, sw, sh, dw, dh).value();
      const PlaneGeometry sg = PackedPlaneGeometry(f, sw, sh);
      const PlaneGeometry dg = PackedPlaneGeometry(f, dw, dh);
      EXPECT_EQ(p.num_planes, LayoutOf(f).num_planes);
      EXPECT_EQ(p.dst_size, PackedFrameSize(f, dw, dh));
      for (int i = 0; i < p.num_planes; ++i) {
        const ScalePlaneGeom& g = p.plane[i];
        EXPECT_EQ(g.channels, ChannelsOf(f, i));
        EXPECT_EQ(g.src_w * g.channels, sg.row_bytes[i]);
        EXPECT_EQ(g.src_h, sg.rows[i]);
        EXPECT_EQ(g.dst_w * g.channels, dg.row_bytes[i]);
        EXPECT_EQ(g.dst_h, dg.rows[i]);
        EXPECT_EQ(p.dst_offset[i], dg.offset[i]);
        EXPECT_EQ(p.dst_row_bytes[i], dg.row_bytes[i]);
      }
    }
  // 17x9 -> 5x3 in 4:2:0: chroma 9x5 -> 3x2.
  const ScalePlan odd = MakeScalePlan(PixelFormat::kYuv420p, 17, 9, 5, 3).value();
  EXPECT_EQ(odd.plane[1].src_w, 9);
  EXPECT_EQ(odd.plane[1].src_h, 5);
  EXPECT_EQ(odd.plane[1].dst_w, 3);
  EXPECT_EQ(odd.plane[1].dst_h, 2);
}

TEST(ScalePlan, AutoResolvesPerDimension) {
  const ScalePlan p = MakeScalePlan(PixelFormat::kYuv420p, 100, 50, 50, 100).value();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.plane[i].filter_x, ScaleFilter::kArea);
    EXPECT_EQ(p.plane[i].filter_y, ScaleFilter::kBilinear);
  }
  // 17 -> 18 grows the luma; the chroma keeps its 9 columns and takes area (a copy).
  const ScalePlan q = MakeScalePlan(PixelFormat::kYuv420p, 17, 9, 18, 9).value();
  EXPECT_EQ(q.plane[0].filter_x, ScaleFilter::kBilinear);
  EXPECT_EQ(q.plane[1].filter_x, ScaleFilter::kArea);
  const ScalePlan forced = MakeScalePlan(PixelFormat::kRgba, 100, 50, 50, 100, ScaleFilter::kBilinear).value();
  EXPECT_EQ(forced.plane[0].filter_x, ScaleFilter::kBilinear);
  EXPECT_EQ(forced.plane[0].filter_y, ScaleFilter::kBilinear);
  EXPECT_STREQ(ScaleFilterName(ScaleFilter::kArea), "area");
}

TEST(ScaleHost, HostRowPathEqualsPerSampleDefinition) {
  const int cases[][4] = {{1, 1, 1, 1},   {1, 1, 9, 4},    {17, 9, 5, 3},     {5, 3, 17, 9},
                          {17, 9, 33, 21}, {33, 21, 17, 9}, {100, 50, 50, 100}, {640, 360, 427, 241},
                          {300, 200, 1, 1}, {31, 7, 31, 7}};
  int planes = 0;
  uint32_t seed = 40;
  for (auto [sw, sh, dw, dh] : cases)
    for (PixelFormat f : kAllFormats) {
      const auto frame = testing::MakeSyntheticFrame(sw, sh, f, seed++);
      for (ScaleFilter filter : {ScaleFilter::kAuto, ScaleFilter::kArea, ScaleFilter::kBilinear}) {
        const ScalePlan plan = MakeScalePlan(f, sw, sh, dw, dh, filter).value();
        ASSERT_EQ(ScaleOnHost(frame.view, dw, dh, filter), PerSample(frame.view, plan))
            << PixelFormatName(f) << " " << sw << "x" << sh << " -> " << dw << "x" << dh << " "
            << ScaleFilterName(filter);
        planes += plan.num_planes;
      }
    }
  std::printf("checked %d planes\n", planes);
}

TEST(ScaleHost, SameSizeIsAnExactCopyWithEveryFilter) {
  for (PixelFormat f : kAllFormats)
    for (auto [w, h] : {std::array<int, 2>{1, 1}, {17, 9}, {64, 48}})
      for (ScaleFilter filter : {ScaleFilter::kAuto, ScaleFilter::kArea, ScaleFilter::kBilinear}) {
        const auto frame = testing::MakeSyntheticFrame(w, h, f, w + h);
        EXPECT_EQ(ScaleOnHost(frame.view, w, h, filter), frame.bytes)
            << PixelFormatName(f) << " " << w << "x" << h << " " << ScaleFilterName(filter);
      }
}

TEST(ScaleHost, ReadsSourceStridesWiderThanARow) {
  const auto packed = testing::MakeSyntheticFrame(37, 23, PixelFormat::kYuv420p, 3);
  std::vector<uint8_t> padded[3];
  FrameView v = packed.view;
  const PlaneGeometry g = PackedPlaneGeometry(v.format, v.width, v.height);
  for (int p = 0; p < 3; ++p) {
    const int stride = g.row_bytes[p] + 13;
    padded[p].assign(static_cast<size_t>(stride) * g.rows[p], 0xFF);
    for (int y = 0; y < g.rows[p]; ++y)
      std::copy_n(packed.view.plane[p] + static_cast<size_t>(y) * g.row_bytes[p], g.row_bytes[p],
                  padded[p].begin() + static_cast<size_t>(y) * stride);
    v.plane[p] = padded[p].data();
    v.stride[p] = stride;
  }
  for (auto [dw, dh] : {std::array<int, 2>{37, 23}, {12, 7}, {80, 50}})
    EXPECT_EQ(ScaleOnHost(v, dw, dh, ScaleFilter::kAuto), ScaleOnHost(packed.view, dw, dh, ScaleFilter::kAuto));
}

TEST(ScaleHost, TwoToOneAreaIsTheRoundedBlockAverage) {
  for (PixelFormat f : {PixelFormat::kYuv444p, PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgba}) {
    const auto frame = testing::MakeSyntheticFrame(64, 32, f, 11);
    const std::vector<uint8_t> out = ScaleOnHost(frame.view, 32, 16, ScaleFilter::kAuto);
    const PlaneGeometry sg = PackedPlaneGeometry(f, 64, 32);
    const PlaneGeometry dg = PackedPlaneGeometry(f, 32, 16);
    for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
      const int ch = ChannelsOf(f, p);
      const uint8_t* s = frame.bytes.data() + sg.offset[p];
      for (int y = 0; y < dg.rows[p]; ++y)
        for (int b = 0; b < dg.row_bytes[p]; ++b) {
          const int x = b / ch, c = b % ch;
          auto at = [&](int i, int j) { return s[static_cast<size_t>(j) * sg.row_bytes[p] + i * ch + c]; };
          const int want = (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1) + 2) / 4;
          ASSERT_EQ(out[dg.offset[p] + static_cast<size_t>(y) * dg.row_bytes[p] + b], want)
              << PixelFormatName(f) << " plane " << p << " (" << x << ", " << y << ") channel " << c;
        }
    }
  }
}

TEST(ScaleHost, KnownSmallCases) {
  // A 4x1 ramp from a 2x1 [0, 255]: centre-aligned positions -0.25 (clamped), 0.25,
  // 0.75, 1.25 (clamped) give 0, 63.75, 191.25, 255.
  const uint8_t two[2] = {0, 255};
  EXPECT_EQ(ScaleOnHost(OneRow444(two, 2), 4, 1, ScaleFilter::kAuto),
            (std::vector<uint8_t>{0, 64, 191, 255, 0, 64, 191, 255, 0, 64, 191, 255}));
  // Area 3:1 across: [10 20 30 | 40 50 61] -> 20, 50 (50.33 rounds down); the whole
  // row as one pixel: 35.17 -> 35.
  const uint8_t six[6] = {10, 20, 30, 40, 50, 61};
  const FrameView g = OneRow444(six, 6);
  EXPECT_EQ(ScaleOnHost(g, 2, 1, ScaleFilter::kAuto), (std::vector<uint8_t>{20, 50, 20, 50, 20, 50}));
  EXPECT_EQ(ScaleOnHost(g, 1, 1, ScaleFilter::kAuto), (std::vector<uint8_t>{35, 35, 35}));
  // 6 -> 4 by area: each output covers 1.5 pixels: (10 + 10) / 1.5 = 13.3, (20*.5 + 30) / 1.5 = 26.7, ...
  EXPECT_EQ(ScaleOnHost(g, 4, 1, ScaleFilter::kArea),
            (std::vector<uint8_t>{13, 27, 43, 57, 13, 27, 43, 57, 13, 27, 43, 57}));
  // A flat frame stays flat at any size and with either filter.
  const auto flat_bytes = std::vector<uint8_t>(PackedFrameSize(PixelFormat::kRgb24, 3, 2), 77);
  const FrameView flat = MakePackedFrameView(flat_bytes.data(), flat_bytes.size(), 3, 2, PixelFormat::kRgb24).value();
  for (ScaleFilter f : {ScaleFilter::kArea, ScaleFilter::kBilinear})
    for (auto [w, h] : {std::array<int, 2>{1, 1}, {7, 5}, {2, 9}})
      for (uint8_t b : ScaleOnHost(flat, w, h, f)) ASSERT_EQ(b, 77);
}

TEST(ScaleHost, WithinOneCodeValueOfTheDoubleReference) {
  struct Case {
    int sw, sh, dw, dh;
  };
  const Case cases[] = {{1, 1, 1, 1},     {17, 9, 5, 3},      {5, 3, 17, 9},     {17, 9, 33, 21},
                        {1, 1, 3, 2},     {7, 7, 1, 1},       {100, 50, 50, 100}, {1920, 1080, 1280, 720},
                        {1920, 1080, 640, 360}, {1920, 1080, 3840, 2160}};
  int samples = 0, off_by_one = 0;
  uint32_t seed = 1;
  for (const Case& k : cases)
    for (PixelFormat f : kAllFormats) {
      // The 4K reference is slow in doubles: three formats (planar, semi-planar, packed).
      if (k.dw == 3840 && f != PixelFormat::kYuv420p && f != PixelFormat::kNv12 && f != PixelFormat::kRgba) continue;
      const auto frame = testing::MakeSyntheticFrame(k.sw, k.sh, f, seed++);
      for (ScaleFilter filter : {ScaleFilter::kAuto, ScaleFilter::kArea, ScaleFilter::kBilinear}) {
        if (filter != ScaleFilter::kAuto && k.sw * k.sh > 10000) continue;
        const std::vector<uint8_t> got = ScaleOnHost(frame.view, k.dw, k.dh, filter);
        const PlaneGeometry sg = PackedPlaneGeometry(f, k.sw, k.sh);
        const PlaneGeometry dg = PackedPlaneGeometry(f, k.dw, k.dh);
        for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
          const int ch = ChannelsOf(f, p);
          const std::vector<uint8_t> want =
              ReferencePlane(frame.view.plane[p], frame.view.stride[p], sg.row_bytes[p] / ch, sg.rows[p], ch,
                             dg.row_bytes[p] / ch, dg.rows[p], filter);
          for (size_t i = 0; i < want.size(); ++i) {
            const int diff = std::abs(got[dg.offset[p] + i] - want[i]);
            ASSERT_LE(diff, 1) << PixelFormatName(f) << " " << k.sw << "x" << k.sh << " -> " << k.dw << "x"
                               << k.dh << " " << ScaleFilterName(filter) << " plane " << p << " byte " << i;
            off_by_one += diff;
          }
          samples += static_cast<int>(want.size());
        }
      }
    }
  std::printf("%d samples against the double reference, %d off by one\n", samples, off_by_one);
}

TEST(ScaleHost, ExtremeAspectRatios) {
  for (auto [sw, sh, dw, dh] : {std::array<int, 4>{kMaxDimension, 2, 3, 1}, {2, kMaxDimension, 1, 5}, {1, 1, kMaxDimension, 1}}) {
    const auto frame = testing::MakeSyntheticFrame(sw, sh, PixelFormat::kRgb24, 5);
    const std::vector<uint8_t> got = ScaleOnHost(frame.view, dw, dh, ScaleFilter::kAuto);
    const std::vector<uint8_t> want = ReferencePlane(frame.view.plane[0], frame.view.stride[0], sw, sh, 3, dw, dh,
                                                     ScaleFilter::kAuto);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_LE(std::abs(got[i] - want[i]), 1) << sw << "x" << sh << " byte " << i;
  }
}

TEST(ScaleHost, RejectsFramesThatDoNotMatchThePlan) {
  const auto frame = testing::MakeSyntheticFrame(64, 48, PixelFormat::kYuv420p, 1);
  const ScalePlan plan = MakeScalePlan(PixelFormat::kYuv420p, 64, 48, 32, 24).value();
  std::vector<uint8_t> out(plan.dst_size);
  EXPECT_TRUE(ScaleFrameOnHost(frame.view, plan, out.data()).ok());
  EXPECT_EQ(ScaleFrameOnHost(frame.view, plan, nullptr).code(), StatusCode::kInvalidArgument);
  const ScalePlan other_size = MakeScalePlan(PixelFormat::kYuv420p, 64, 46, 32, 24).value();
  EXPECT_EQ(ScaleFrameOnHost(frame.view, other_size, out.data()).code(), StatusCode::kInvalidArgument);
  const ScalePlan other_format = MakeScalePlan(PixelFormat::kNv12, 64, 48, 32, 24).value();
  EXPECT_EQ(ScaleFrameOnHost(frame.view, other_format, out.data()).code(), StatusCode::kInvalidArgument);
  FrameView bad = frame.view;
  bad.plane[2] = nullptr;
  EXPECT_EQ(ScaleFrameOnHost(bad, plan, out.data()).code(), StatusCode::kInvalidArgument);
  bad = frame.view;
  bad.stride[0] = 10;
  EXPECT_EQ(ScaleFrameOnHost(bad, plan, out.data()).code(), StatusCode::kInvalidArgument);
}

TEST(ScaleHost, OwnedResultCarriesSignallingAndPointsIntoItsBytes) {
  const auto frame = testing::MakeSyntheticFrame(40, 30, PixelFormat::kNv12, 2, ColorMatrix::kBt2020, ColorRange::kFull);
  const ScalePlan plan = MakeScalePlan(PixelFormat::kNv12, 40, 30, 25, 15).value();
  auto scaled = ScaleFrameToOwned(frame.view, plan);
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  const ScaledFrame out = std::move(scaled).value();
  EXPECT_EQ(out.view.width, 25);
  EXPECT_EQ(out.view.height, 15);
  EXPECT_EQ(out.view.format, PixelFormat::kNv12);
  EXPECT_EQ(out.view.matrix, ColorMatrix::kBt2020);
  EXPECT_EQ(out.view.range, ColorRange::kFull);
  EXPECT_EQ(out.view.plane[0], out.bytes.data());
  EXPECT_EQ(out.view.plane[1], out.bytes.data() + plan.dst_offset[1]);
  EXPECT_EQ(out.bytes, ScaleOnHost(frame.view, 25, 15, ScaleFilter::kAuto));
}

}  // namespace
}  // namespace conveyor
