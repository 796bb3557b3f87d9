// Against the reference: libjpeg (libjpeg-turbo's libjpeg API) encodes the same rgb24
// source with the same quality, subsampling and restart interval (JDCT_ISLOW, standard
// Huffman tables). Both files are decoded by the same decoder (libjpeg-turbo to RGB) and
// compared with the source. Ours must be no worse than libjpeg by more than 0.3 dB and
// within 10 % of its size.
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

constexpr double kMaxPsnrDeficitDb = 0.3;
constexpr double kMaxSizeRatioDeviation = 0.10;

struct Comparison {
  double psnr_ours, psnr_ref;
  size_t bytes_ours, bytes_ref;
  int restart;
};

// Encodes `rgb` with both encoders and decodes both with libjpeg-turbo. Our file must
// also pass the two-decoder checks.
void Compare(const std::vector<uint8_t>& rgb, int width, int height, int quality,
             Subsampling sub, Comparison* out) {
  EncodeParams params;
  params.quality = quality;
  params.subsampling = sub;
  auto view = conveyor::MakePackedFrameView(rgb.data(), rgb.size(), width, height,
                                            PixelFormat::kRgb24);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  auto plan = conveyor::MakeEncodePlan(*view, params);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  out->restart = plan->restart_interval;

  conveyor::CpuJpegEncoder enc(0);
  auto ours = enc.Encode(*view, params);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  BothDecodes dec;
  ASSERT_TRUE(DecodeWithBoth(*ours, width, height, sub, &dec));

  auto ref = LibjpegEncodeRgb(rgb.data(), width, height, quality, sub, out->restart);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  auto ref_layout = ParseStream(*ref);
  ASSERT_TRUE(ref_layout.ok) << ref_layout.error;
  // Same restart structure on both sides, or the size comparison would be unfair.
  ASSERT_EQ(ref_layout.dri, dec.layout.dri);
  ASSERT_EQ(ref_layout.rst.size(), dec.layout.rst.size());
  auto ref_rgb = TurboDecodeRgb(*ref);
  ASSERT_TRUE(ref_rgb.ok()) << ref_rgb.status().message();

  out->psnr_ours = Psnr(dec.turbo_rgb.plane[0], rgb);
  out->psnr_ref = Psnr(ref_rgb->plane[0], rgb);
  out->bytes_ours = ours->size();
  out->bytes_ref = ref->size();
}

struct Case {
  Content content;
  int w, h;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << ContentName(c.content) << " " << c.w << "x" << c.h;
}

class LibjpegCompareTest : public ::testing::TestWithParam<Case> {};

TEST_P(LibjpegCompareTest, QualityAndSizeMatchLibjpeg) {
  const Case c = GetParam();
  auto rgb = RenderRgb(c.content, c.w, c.h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();

  std::printf("[vs-libjpeg] %-15s %-9s %-4s %-4s %-4s %10s %10s %7s %10s %10s %7s\n", "content",
              "size", "sub", "q", "RI", "PSNR ours", "PSNR ref", "dPSNR", "bytes ours",
              "bytes ref", "ratio");
  for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
    for (int quality : {50, 85, 100}) {
      const std::string label = std::string(ContentName(c.content)) + " " +
                                std::to_string(c.w) + "x" + std::to_string(c.h) + " " +
                                conveyor::SubsamplingName(sub) + " q" + std::to_string(quality);
      SCOPED_TRACE(label);
      Comparison r{};
      Compare(*rgb, c.w, c.h, quality, sub, &r);
      if (HasFatalFailure()) return;
      const double ratio = static_cast<double>(r.bytes_ours) / static_cast<double>(r.bytes_ref);
      std::printf("[vs-libjpeg] %-15s %4dx%-4d %-4s %-4d %-4d %10.3f %10.3f %+7.3f %10zu %10zu "
                  "%7.4f\n",
                  ContentName(c.content), c.w, c.h, conveyor::SubsamplingName(sub), quality,
                  r.restart, r.psnr_ours, r.psnr_ref, r.psnr_ours - r.psnr_ref, r.bytes_ours,
                  r.bytes_ref, ratio);
      const std::string key = std::string(conveyor::SubsamplingName(sub)) + "_q" +
                              std::to_string(quality);
      RecordProperty("psnr_ours_" + key, std::to_string(r.psnr_ours));
      RecordProperty("psnr_libjpeg_" + key, std::to_string(r.psnr_ref));
      RecordProperty("bytes_ours_" + key, std::to_string(r.bytes_ours));
      RecordProperty("bytes_libjpeg_" + key, std::to_string(r.bytes_ref));

      EXPECT_GE(r.psnr_ours, r.psnr_ref - kMaxPsnrDeficitDb)
          << "ours " << r.psnr_ours << " dB vs libjpeg " << r.psnr_ref << " dB";
      EXPECT_GE(ratio, 1.0 - kMaxSizeRatioDeviation)
          << "ours " << r.bytes_ours << " bytes vs libjpeg " << r.bytes_ref;
      EXPECT_LE(ratio, 1.0 + kMaxSizeRatioDeviation)
          << "ours " << r.bytes_ours << " bytes vs libjpeg " << r.bytes_ref;
    }
  }
  std::fflush(stdout);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = ContentName(info.param.content);
  for (char& ch : name) {
    if (ch == '+') ch = '_';
  }
  return name + "_" + std::to_string(info.param.w) + "x" + std::to_string(info.param.h);
}

// "Natural-looking" content: camera-like noise over a synthetic scene, fractal detail with
// colour ramps, and smooth gradients.
INSTANTIATE_TEST_SUITE_P(
    NaturalContent, LibjpegCompareTest,
    ::testing::Values(Case{Content::kTestsrc2Noise, 1920, 1080},
                      Case{Content::kMandelbrot, 1920, 1080},
                      Case{Content::kGradients, 1920, 1080},
                      Case{Content::kTestsrc2Noise, 1280, 720},
                      Case{Content::kMandelbrot, 1280, 720},
                      Case{Content::kGradients, 1280, 720}),
    CaseName);

// Synthetic content with flat primaries and exact ramps (testsrc2) and flat bars
// (smptehdbars): many pixels whose chroma falls exactly halfway between two codes, so the
// rounding of the colour conversion shows. Same criterion as above.
INSTANTIATE_TEST_SUITE_P(SyntheticContent, LibjpegCompareTest,
                         ::testing::Values(Case{Content::kTestsrc2, 1920, 1080},
                                           Case{Content::kSmpteBars, 1920, 1080}),
                         CaseName);

}  // namespace
}  // namespace conformance
