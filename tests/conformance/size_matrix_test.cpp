// Size matrix: every frame size the encoder must handle (1x1 up to the 16384 limit, odd
// sizes, partial MCUs, a one-MCU-row strip) x every subsampling x qualities 1..100, from
// rgb24 testsrc2. Each output must decode with both decoders at the right size, the two
// decoders must produce the same samples, the picture must resemble the source, and its
// luma must be as good as libjpeg's at the same settings.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <ostream>
#include <vector>

#include "conformance_checks.h"
#include "conformance_util.h"
#include "cpu_encoder.h"

namespace conformance {
namespace {

using conveyor::EncodeParams;
using conveyor::PixelFormat;
using conveyor::Subsampling;

struct Size {
  int w, h;
};

struct SizeCase {
  Size size;
  Subsampling sub;
};

void PrintTo(const SizeCase& c, std::ostream* os) {
  *os << c.size.w << "x" << c.size.h << " " << conveyor::SubsamplingName(c.sub);
}

std::vector<SizeCase> AllSizeCases() {
  std::vector<SizeCase> cases;
  for (Size size : {Size{1, 1}, Size{17, 9}, Size{1919, 1079}, Size{3840, 2160}, Size{16384, 16}}) {
    for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
      cases.push_back({size, sub});
    }
  }
  return cases;
}

// Lowest acceptable PSNR (dB; libjpeg-turbo RGB decode vs the rgb24 source, all channels)
// per subsampling and quality. testsrc2 has sharp chroma edges, so 4:2:x output tops out
// near 28-36 dB even at q100 (libjpeg gets the same, see the [size-matrix] log lines).
// Worst cases measured over all five sizes: 420 19.9/26.3/27.5/27.7, 422 19.9/26.9/28.1/
// 30.7, 444 20.8/28.0/31.5/50.8 for q1/50/85/100. The floors are ~2-3 dB below; a swapped
// Cb/Cr, a wrong block order or a wrong colour matrix lands far below them.
double MinPsnr(Subsampling s, int quality) {
  const int qi = quality <= 1 ? 0 : quality <= 50 ? 1 : quality <= 85 ? 2 : 3;
  static constexpr double k420[4] = {17.0, 24.0, 25.0, 25.5};
  static constexpr double k422[4] = {17.0, 24.5, 26.0, 28.0};
  static constexpr double k444[4] = {18.5, 26.0, 29.0, 47.0};
  switch (s) {
    case Subsampling::k420: return k420[qi];
    case Subsampling::k422: return k422[qi];
    case Subsampling::k444: return k444[qi];
  }
  return 99;
}

// The two decoders run different IDCTs on the same coefficients; they may differ by
// rounding, never by more.
constexpr int kMaxDecoderDisagreement = 2;

// Luma of ours vs libjpeg at the same quality, subsampling and restart interval (both
// decoded by libjpeg-turbo, compared with the source's exact JFIF luma).
constexpr double kMaxLumaDeficitDb = 0.3;

class SizeMatrixTest : public ::testing::TestWithParam<SizeCase> {};

TEST_P(SizeMatrixTest, EncodesAndDecodesWithBothDecoders) {
  const Size size = GetParam().size;
  const Subsampling sub = GetParam().sub;
  auto rgb = RenderRgb(Content::kTestsrc2, size.w, size.h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  const std::vector<uint8_t> luma = JfifLuma(*rgb);

  conveyor::CpuJpegEncoder enc(0);
  for (int quality : {1, 50, 85, 100}) {
    SCOPED_TRACE("quality " + std::to_string(quality));
    EncodeParams params;
    params.quality = quality;
    params.subsampling = sub;
    auto view = conveyor::MakePackedFrameView(rgb->data(), rgb->size(), size.w, size.h,
                                              PixelFormat::kRgb24);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    auto plan = conveyor::MakeEncodePlan(*view, params);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto jpeg = enc.Encode(*view, params);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();

    BothDecodes dec;
    ASSERT_TRUE(DecodeWithBoth(*jpeg, size.w, size.h, sub, &dec, /*compare_planes=*/true));
    // Restart structure: DRI as planned, RST0..7 cycling between the segments.
    EXPECT_EQ(dec.layout.dri, plan->restart_interval);
    ASSERT_EQ(static_cast<int>(dec.layout.rst.size()), plan->num_segments - 1);
    for (size_t i = 0; i < dec.layout.rst.size(); ++i) {
      ASSERT_EQ(dec.layout.rst[i], static_cast<int>(i % 8)) << "RST marker " << i;
    }

    auto ref = LibjpegEncodeRgb(rgb->data(), size.w, size.h, quality, sub,
                                plan->restart_interval);
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    auto ref_rgb = TurboDecodeRgb(*ref);
    ASSERT_TRUE(ref_rgb.ok()) << ref_rgb.status().message();
    auto ref_yuv = TurboDecodeYuv(*ref);
    ASSERT_TRUE(ref_yuv.ok()) << ref_yuv.status().message();

    const double psnr = Psnr(dec.turbo_rgb.plane[0], *rgb);
    const double psnr_ref = Psnr(ref_rgb->plane[0], *rgb);
    const double luma_psnr = Psnr(dec.turbo_yuv.plane[0], luma);
    const double luma_psnr_ref = Psnr(CropPlane(*ref_yuv, 0, size.w, size.h), luma);
    std::printf("[size-matrix] %5dx%-5d %s q%-3d | ours %8zu B, PSNR %6.2f, Y %6.2f | libjpeg "
                "%8zu B, PSNR %6.2f, Y %6.2f | decoders differ by <= %d\n",
                size.w, size.h, conveyor::SubsamplingName(sub), quality, jpeg->size(), psnr,
                luma_psnr, ref->size(), psnr_ref, luma_psnr_ref, dec.plane_max_diff);

    EXPECT_GE(psnr, MinPsnr(sub, quality)) << "decoded picture vs source";
    EXPECT_LE(dec.plane_max_diff, kMaxDecoderDisagreement)
        << "FFmpeg and libjpeg-turbo decode different samples (PSNR " << dec.plane_psnr << ")";
    EXPECT_GE(luma_psnr, luma_psnr_ref - kMaxLumaDeficitDb) << "luma worse than libjpeg's";
  }
  std::fflush(stdout);
}

std::string SizeCaseName(const ::testing::TestParamInfo<SizeCase>& info) {
  return std::to_string(info.param.size.w) + "x" + std::to_string(info.param.size.h) + "_" +
         conveyor::SubsamplingName(info.param.sub);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SizeMatrixTest, ::testing::ValuesIn(AllSizeCases()), SizeCaseName);

}  // namespace
}  // namespace conformance
