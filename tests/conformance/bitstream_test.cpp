// Stream structure and determinism: every restart interval decodes to the same picture
// with both decoders, DRI and RST markers are written as planned, and neither the band
// split, the thread count nor padded strides change a single byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "conformance_checks.h"
#include "conformance_util.h"
#include "cpu_encoder.h"

namespace conformance {
namespace {

using conveyor::ColorMatrix;
using conveyor::ColorRange;
using conveyor::EncodeParams;
using conveyor::FrameView;
using conveyor::PixelFormat;
using conveyor::Subsampling;

constexpr int kW = 1919, kH = 1079;

struct SubParam {
  Subsampling sub;
};
void PrintTo(const SubParam& p, std::ostream* os) { *os << conveyor::SubsamplingName(p.sub); }

class RestartIntervalTest : public ::testing::TestWithParam<SubParam> {};

TEST_P(RestartIntervalTest, AnyIntervalDecodesToTheSamePicture) {
  const Subsampling sub = GetParam().sub;
  auto rgb = RenderRgb(Content::kTestsrc2Noise, kW, kH);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  conveyor::CpuJpegEncoder enc(0);

  std::vector<uint8_t> first_picture;
  for (int ri : {conveyor::kRestartAuto, 0, 1, 7, 119, 1000, 65535}) {
    SCOPED_TRACE("restart_interval " + std::to_string(ri));
    EncodeParams params;
    params.quality = 85;
    params.subsampling = sub;
    params.restart_interval = ri;
    auto view = conveyor::MakePackedFrameView(rgb->data(), rgb->size(), kW, kH,
                                              PixelFormat::kRgb24);
    ASSERT_TRUE(view.ok());
    auto plan = conveyor::MakeEncodePlan(*view, params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if (ri != conveyor::kRestartAuto) {
      EXPECT_EQ(plan->restart_interval, ri);
    }
    auto jpeg = enc.Encode(*view, params);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();

    BothDecodes dec;
    ASSERT_TRUE(DecodeWithBoth(*jpeg, kW, kH, sub, &dec, /*compare_planes=*/true));
    EXPECT_LE(dec.plane_max_diff, 2);
    EXPECT_EQ(dec.layout.dri, plan->restart_interval > 0 ? plan->restart_interval : -1);
    const int total_mcus = plan->mcus_x * plan->mcus_y;
    const int segments = plan->restart_interval > 0
                             ? (total_mcus + plan->restart_interval - 1) / plan->restart_interval
                             : 1;
    ASSERT_EQ(static_cast<int>(dec.layout.rst.size()), segments - 1);
    for (size_t i = 0; i < dec.layout.rst.size(); ++i) {
      ASSERT_EQ(dec.layout.rst[i], static_cast<int>(i % 8)) << "RST marker " << i;
    }
    // Restart markers only reset DC prediction; the coefficients, hence the decoded
    // picture, must not depend on them.
    if (first_picture.empty()) {
      first_picture = dec.turbo_rgb.plane[0];
    } else {
      EXPECT_TRUE(dec.turbo_rgb.plane[0] == first_picture) << "decoded picture changed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Subsamplings, RestartIntervalTest,
                         ::testing::Values(SubParam{Subsampling::k420},
                                           SubParam{Subsampling::k422},
                                           SubParam{Subsampling::k444}),
                         [](const ::testing::TestParamInfo<SubParam>& info) {
                           return std::string("s") + conveyor::SubsamplingName(info.param.sub);
                         });

TEST(DeterminismTest, BandSplitAndThreadCountNeverChangeTheBytes) {
  constexpr int w = 959, h = 539;
  auto rgb = RenderRgb(Content::kMandelbrot, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  auto view = conveyor::MakePackedFrameView(rgb->data(), rgb->size(), w, h, PixelFormat::kRgb24);
  ASSERT_TRUE(view.ok());
  conveyor::CpuJpegEncoder all(0), one(1), three(3);
  for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
    for (int ri : {conveyor::kRestartAuto, 0, 7}) {
      SCOPED_TRACE(std::string(conveyor::SubsamplingName(sub)) + " restart " + std::to_string(ri));
      EncodeParams params;
      params.quality = 75;
      params.subsampling = sub;
      params.restart_interval = ri;
      auto want = all.Encode(*view, params);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      for (int hint : {1, 8, 16, 17, 100, 539, 5000}) {
        auto got = all.Encode(*view, params, hint);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(*got == *want) << "band_rows_hint " << hint;
        // A first band smaller than the rest (the GPU worker's, for an early first byte).
        for (int first : {1, 8, 24}) {
          auto split = all.Encode(*view, params, hint, first);
          ASSERT_TRUE(split.ok()) << split.status().ToString();
          EXPECT_TRUE(*split == *want) << "band_rows_hint " << hint << ", first band " << first;
        }
      }
      auto single = one.Encode(*view, params);
      ASSERT_TRUE(single.ok());
      EXPECT_TRUE(*single == *want) << "1 thread";
      auto odd = three.Encode(*view, params, 32);
      ASSERT_TRUE(odd.ok());
      EXPECT_TRUE(*odd == *want) << "3 threads";
    }
  }
}

// Decoded frames from FFmpeg have padded rows; a view with strides wider than the row
// must encode exactly like the tightly packed frame.
TEST(DeterminismTest, PaddedStridesGiveTheSameBytes) {
  constexpr int w = 317, h = 179;
  conveyor::CpuJpegEncoder enc(0);
  struct FormatCase {
    PixelFormat format;
    std::string filter;
  };
  const FormatCase cases[] = {
      {PixelFormat::kYuv420p, "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p"},
      {PixelFormat::kNv12, "scale=out_color_matrix=bt709:out_range=tv,format=nv12"},
      {PixelFormat::kYuv422p, "scale=out_color_matrix=bt709:out_range=tv,format=yuv422p"},
      {PixelFormat::kBgra, "format=bgra"},
  };
  for (const FormatCase& fc : cases) {
    SCOPED_TRACE(conveyor::PixelFormatName(fc.format));
    auto packed = ConvertRgb(Content::kTestsrc2, w, h, fc.filter, fc.format);
    ASSERT_TRUE(packed.ok()) << packed.status().message();
    auto tight = conveyor::MakePackedFrameView(packed->data(), packed->size(), w, h, fc.format,
                                               ColorMatrix::kBt709, ColorRange::kLimited);
    ASSERT_TRUE(tight.ok());

    // Copy every plane into rows of row_bytes + 37 bytes filled with garbage.
    const conveyor::PlaneGeometry g = conveyor::PackedPlaneGeometry(fc.format, w, h);
    std::vector<std::vector<uint8_t>> planes(3);
    FrameView padded = *tight;
    for (int p = 0; p < 3; ++p) {
      if (tight->plane[p] == nullptr) continue;
      const int stride = g.row_bytes[p] + 37;
      planes[p].assign(static_cast<size_t>(stride) * g.rows[p], 0xA5);
      for (int y = 0; y < g.rows[p]; ++y) {
        std::memcpy(planes[p].data() + static_cast<size_t>(y) * stride,
                    tight->plane[p] + static_cast<size_t>(y) * tight->stride[p], g.row_bytes[p]);
      }
      padded.plane[p] = planes[p].data();
      padded.stride[p] = stride;
    }
    for (Subsampling sub : {Subsampling::k420, Subsampling::k444}) {
      EncodeParams params;
      params.subsampling = sub;
      auto a = enc.Encode(*tight, params);
      auto b = enc.Encode(padded, params);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      EXPECT_TRUE(*a == *b) << conveyor::SubsamplingName(sub);
    }
  }
}

// Negative control: the checks above can fail. Corrupted copies of a valid file must be
// rejected by DecodeWithBoth (each corruption is caught by at least one decoder or by
// the marker parser).
TEST(HarnessTest, CorruptStreamsAreRejected) {
  constexpr int w = 640, h = 360;
  auto rgb = RenderRgb(Content::kTestsrc2Noise, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  conveyor::CpuJpegEncoder enc(0);
  EncodeParams params;
  auto good = EncodePacked(enc, *rgb, w, h, PixelFormat::kRgb24, params);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  BothDecodes dec;
  ASSERT_TRUE(DecodeWithBoth(*good, w, h, Subsampling::k420, &dec));
  ASSERT_GT(dec.layout.rst.size(), 40u);

  // Offset of the n-th RST marker.
  auto rst_at = [&](int n) {
    int seen = 0;
    for (size_t i = 2; i + 1 < good->size(); ++i) {
      if ((*good)[i] == 0xFF && (*good)[i + 1] >= 0xD0 && (*good)[i + 1] <= 0xD7 && ++seen == n) {
        return i;
      }
    }
    return size_t{0};
  };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> bad;
  {
    auto j = *good;
    j.resize(j.size() * 2 / 3);
    j.push_back(0xFF);
    j.push_back(0xD9);
    bad.emplace_back("truncated", j);
  }
  {
    auto j = *good;
    const size_t k = rst_at(20);
    j[k + 1] = static_cast<uint8_t>(0xD0 + ((j[k + 1] - 0xD0 + 3) & 7));
    bad.emplace_back("RST renumbered", j);
  }
  {
    auto j = *good;
    const size_t k = rst_at(20);
    j.erase(j.begin() + k, j.begin() + k + 2);
    bad.emplace_back("RST removed", j);
  }
  {
    auto j = *good;
    for (size_t i = j.size() / 2; i < j.size() / 2 + 40; ++i) j[i] ^= 0x5A;
    bad.emplace_back("scan data scrambled", j);
  }
  {
    auto j = *good;
    j.resize(j.size() - 2);  // no EOI
    bad.emplace_back("EOI missing", j);
  }
  for (const auto& [name, j] : bad) {
    BothDecodes d;
    EXPECT_FALSE(DecodeWithBoth(j, w, h, Subsampling::k420, &d)) << name;
  }
  // A wrong expectation is a failure too.
  BothDecodes d;
  EXPECT_FALSE(DecodeWithBoth(*good, w + 1, h, Subsampling::k420, &d));
  EXPECT_FALSE(DecodeWithBoth(*good, w, h, Subsampling::k444, &d));
}

}  // namespace
}  // namespace conformance
