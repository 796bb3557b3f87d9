// Exact comparison with libjpeg (libjpeg-turbo's libjpeg API: jpeg_set_quality(q, TRUE),
// JDCT_ISLOW, the standard Huffman tables, restart_interval in MCUs).
//   - The quantisation and Huffman tables we write equal libjpeg's, byte for byte, at
//     every quality from 1 to 100 (Annex K tables, IJG scaling, baseline clamp to 255).
//   - At 4:4:4 from rgb24 the two encoders do the same arithmetic (JFIF colour
//     conversion, the islow DCT, rounding quantisation), so SOF0, SOS, DRI and the whole
//     entropy-coded data must be the same bytes, over the conformance contents, sizes that
//     are not multiples of 8, and every kind of restart interval.
//   - At 4:2:0 and 4:2:2 the coded data differs by design (our chroma downsampling); the
//     chroma of both files, decoded by libjpeg-turbo, is measured against the source's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "conformance_util.h"
#include "cpu_encoder.h"
#include "encode_plan.h"
#include "jpeg_segments.h"

namespace conformance {
namespace {

using conveyor::EncodeParams;
using conveyor::PixelFormat;
using conveyor::Subsampling;

struct Pair {
  std::vector<uint8_t> ours, ref;
  int restart = 0;  // the interval both were written with
};

// Encodes `rgb` with ours and with libjpeg at the same settings; kRestartAuto takes the
// interval our plan picks.
void EncodeBoth(const std::vector<uint8_t>& rgb, int w, int h, int quality, Subsampling sub,
                int restart, Pair* out) {
  EncodeParams params;
  params.quality = quality;
  params.subsampling = sub;
  params.restart_interval = restart;
  auto view = conveyor::MakePackedFrameView(rgb.data(), rgb.size(), w, h, PixelFormat::kRgb24);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  auto plan = conveyor::MakeEncodePlan(*view, params);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  out->restart = plan->restart_interval;
  conveyor::CpuJpegEncoder enc(0);
  auto ours = enc.Encode(*view, params);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  auto ref = LibjpegEncodeRgb(rgb.data(), w, h, quality, sub, out->restart);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  out->ours = std::move(*ours);
  out->ref = std::move(*ref);
}

TEST(LibjpegExact, TablesEqualLibjpegsAtEveryQuality) {
  auto rgb = RenderRgb(Content::kTestsrc2Noise, 48, 32);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  int compared = 0;
  for (Subsampling sub : {Subsampling::k420, Subsampling::k444}) {
    for (int quality = 1; quality <= 100; ++quality) {
      SCOPED_TRACE(std::string(conveyor::SubsamplingName(sub)) + " q" + std::to_string(quality));
      Pair p;
      EncodeBoth(*rgb, 48, 32, quality, sub, 0, &p);
      if (HasFatalFailure()) return;
      const JpegSegments ours = SplitJpeg(p.ours), ref = SplitJpeg(p.ref);
      ASSERT_TRUE(ours.ok) << ours.error;
      ASSERT_TRUE(ref.ok) << ref.error;
      ASSERT_EQ(ours.dqt.size(), 2u);
      ASSERT_EQ(ours.dht.size(), 4u);
      ASSERT_EQ(TableDifference(ours, ref), "") << "against libjpeg's tables";
      ++compared;
    }
  }
  std::printf("[exact] DQT and DHT equal libjpeg's at %d quality/subsampling pairs\n", compared);
}

struct ExactCase {
  Content content;
  int w, h;
};

void PrintTo(const ExactCase& c, std::ostream* os) {
  *os << ContentName(c.content) << " " << c.w << "x" << c.h;
}

std::vector<ExactCase> ExactCases() {
  std::vector<ExactCase> cases;
  for (Content c : {Content::kTestsrc2, Content::kTestsrc2Noise, Content::kMandelbrot,
                    Content::kGradients, Content::kSmpteBars}) {
    for (auto [w, h] : {std::pair{1, 1}, {17, 9}, {641, 359}, {1919, 1079}, {1920, 1080},
                        {16384, 16}}) {
      // ffmpeg's mandelbrot source takes over a minute to render 16384 columns.
      if (c == Content::kMandelbrot && w == 16384) continue;
      cases.push_back({c, w, h});
    }
  }
  return cases;
}

class LibjpegExactTest : public ::testing::TestWithParam<ExactCase> {};

TEST_P(LibjpegExactTest, CodedDataEqualsLibjpegsAt444) {
  const ExactCase c = GetParam();
  auto rgb = RenderRgb(c.content, c.w, c.h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  // No restart markers, one MCU a segment, an interval that ends segments mid-row, the
  // plan's own choice, and the largest DRI holds.
  for (int restart : {0, 1, 7, conveyor::kRestartAuto, conveyor::kMaxRestartInterval}) {
    for (int quality : {1, 50, 85, 100}) {
      SCOPED_TRACE("q" + std::to_string(quality) + " restart " + std::to_string(restart));
      Pair p;
      EncodeBoth(*rgb, c.w, c.h, quality, Subsampling::k444, restart, &p);
      if (HasFatalFailure()) return;
      const JpegSegments ours = SplitJpeg(p.ours), ref = SplitJpeg(p.ref);
      ASSERT_TRUE(ours.ok) << ours.error;
      ASSERT_TRUE(ref.ok) << ref.error;
      const std::string diff = FirstDifference(ours, ref);
      EXPECT_EQ(diff, "") << "against libjpeg with restart_interval " << p.restart;
    }
  }
}

std::string ExactCaseName(const ::testing::TestParamInfo<ExactCase>& info) {
  std::string name = ContentName(info.param.content);
  for (char& ch : name) {
    if (ch == '+') ch = '_';
  }
  return name + "_" + std::to_string(info.param.w) + "x" + std::to_string(info.param.h);
}

INSTANTIATE_TEST_SUITE_P(Contents, LibjpegExactTest, ::testing::ValuesIn(ExactCases()),
                         ExactCaseName);

// JFIF chroma (T.871) of packed rgb24, in double precision: channel 1 Cb, 2 Cr.
double Chroma(const uint8_t* px, int channel) {
  const double r = px[0], g = px[1], b = px[2];
  return channel == 1 ? -0.168736 * r - 0.331264 * g + 0.5 * b + 128.0
                      : 0.5 * r - 0.418688 * g - 0.081312 * b + 128.0;
}

// PSNR of one chroma channel of `decoded` against the source's, at full resolution.
double ChromaPsnr(const std::vector<uint8_t>& decoded, const std::vector<uint8_t>& source,
                  int channel) {
  double sse = 0;
  for (size_t i = 0; i + 2 < source.size(); i += 3) {
    const double d = Chroma(&decoded[i], channel) - Chroma(&source[i], channel);
    sse += d * d;
  }
  const double mse = sse / static_cast<double>(source.size() / 3);
  return mse == 0 ? INFINITY : 10.0 * std::log10(255.0 * 255.0 / mse);
}

constexpr double kMaxChromaDeficitDb = 0.3;

// Sizes with enough chroma samples for a PSNR to mean something.
class LibjpegChromaTest : public ::testing::TestWithParam<ExactCase> {};

TEST_P(LibjpegChromaTest, SubsampledChromaIsAsGoodAsLibjpegs) {
  const ExactCase c = GetParam();
  auto rgb = RenderRgb(c.content, c.w, c.h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  for (Subsampling sub : {Subsampling::k420, Subsampling::k422}) {
    for (int quality : {50, 85, 100}) {
      SCOPED_TRACE(std::string(conveyor::SubsamplingName(sub)) + " q" + std::to_string(quality));
      Pair p;
      EncodeBoth(*rgb, c.w, c.h, quality, sub, conveyor::kRestartAuto, &p);
      if (HasFatalFailure()) return;
      const JpegSegments ours = SplitJpeg(p.ours), ref = SplitJpeg(p.ref);
      ASSERT_TRUE(ours.ok) << ours.error;
      ASSERT_EQ(TableDifference(ours, ref), "") << "against libjpeg's tables";
      auto ours_rgb = TurboDecodeRgb(p.ours);
      ASSERT_TRUE(ours_rgb.ok()) << ours_rgb.status().message();
      auto ref_rgb = TurboDecodeRgb(p.ref);
      ASSERT_TRUE(ref_rgb.ok()) << ref_rgb.status().message();
      for (int channel : {1, 2}) {
        const double mine = ChromaPsnr(ours_rgb->plane[0], *rgb, channel);
        const double theirs = ChromaPsnr(ref_rgb->plane[0], *rgb, channel);
        std::printf("[chroma] %-15s %5dx%-5d %s q%-3d %s ours %6.2f dB libjpeg %6.2f dB\n",
                    ContentName(c.content), c.w, c.h, conveyor::SubsamplingName(sub), quality,
                    channel == 1 ? "Cb" : "Cr", mine, theirs);
        EXPECT_GE(mine, theirs - kMaxChromaDeficitDb) << (channel == 1 ? "Cb" : "Cr");
      }
    }
  }
}

std::vector<ExactCase> ChromaCases() {
  std::vector<ExactCase> cases;
  for (const ExactCase& c : ExactCases()) {
    if (c.w >= 16 && c.h >= 16) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Contents, LibjpegChromaTest, ::testing::ValuesIn(ChromaCases()),
                         ExactCaseName);

}  // namespace
}  // namespace conformance
