// The libjpeg-turbo check that the GPU tests apply to GPU output (tests/common/
// libjpeg_turbo_check.h), shown here on the CPU encoder, whose output the GPU's equals
// byte for byte: it passes every format, subsampling, quality and colour signalling the
// GPU tests use, and it fails output that is worse than libjpeg-turbo's, of another
// frame, of the wrong subsampling or damaged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "cpu_encoder.h"
#include "libjpeg_turbo_check.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

using testing::CheckAgainstLibjpegTurbo;
using testing::MakeSyntheticFrame;

std::vector<uint8_t> EncodeCpu(const FrameView& frame, const EncodeParams& p) {
  auto jpeg = CpuJpegEncoder(1).Encode(frame, p);
  EXPECT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  return jpeg.ok() ? *jpeg : std::vector<uint8_t>{};
}

// Worst ratio of our error to libjpeg-turbo's over the planes, for the printed margin.
double WorstRatio(const FrameView& frame, const EncodeParams& p, const std::vector<uint8_t>& jpeg) {
  const auto ref = testing::MakeReferencePlanes(frame, p.subsampling);
  auto ours = testing::MeasureWithLibjpegTurbo(jpeg, ref);
  auto theirs = testing::LibjpegTurboErrors(ref, p.quality);
  if (!ours.ok() || !theirs.ok()) return 0;
  double worst = 0;
  for (int c = 0; c < 3; ++c) worst = std::max(worst, (ours->mse[c] + 1e-9) / (theirs->mse[c] + 1e-9));
  return worst;
}

TEST(LibjpegTurboCheck, PassesTheCpuEncoderOverTheGpuTestsCases) {
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                 PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                 PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};
  const int sizes[][2] = {{1, 1}, {17, 9}, {640, 360}, {1919, 1079}};
  double worst = 0;
  std::string worst_case;
  uint32_t seed = 1;
  for (auto [w, h] : sizes)
    for (PixelFormat f : formats) {
      const auto frame = MakeSyntheticFrame(w, h, f, seed++);
      for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444})
        for (int q : {1, 50, 85, 100}) {
          EncodeParams p;
          p.subsampling = ss;
          p.quality = q;
          const auto jpeg = EncodeCpu(frame.view, p);
          const Status st = CheckAgainstLibjpegTurbo(frame.view, p, jpeg);
          EXPECT_TRUE(st.ok()) << w << "x" << h << " " << PixelFormatName(f) << " " << SubsamplingName(ss)
                               << " q" << q << ": " << st.ToString();
          const double ratio = w > 17 ? WorstRatio(frame.view, p, jpeg) : 0;
          if (ratio > worst) {
            worst = ratio;
            worst_case = std::to_string(w) + "x" + std::to_string(h) + " " + PixelFormatName(f) + " " +
                         SubsamplingName(ss) + " q" + std::to_string(q);
          }
        }
    }
  std::printf("worst ratio of our plane error to libjpeg-turbo's (frames from 640x360): %.3f, %s\n", worst,
              worst_case.c_str());
}

TEST(LibjpegTurboCheck, PassesEveryColourSignalling) {
  for (ColorMatrix m : {ColorMatrix::kBt601, ColorMatrix::kBt709, ColorMatrix::kBt2020})
    for (ColorRange r : {ColorRange::kLimited, ColorRange::kFull}) {
      const auto frame = MakeSyntheticFrame(1280, 720, PixelFormat::kYuv420p, 5, m, r);
      const auto jpeg = EncodeCpu(frame.view, EncodeParams{});
      const Status st = CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, jpeg);
      EXPECT_TRUE(st.ok()) << ColorMatrixName(m) << " " << ColorRangeName(r) << ": " << st.ToString();
    }
}

// A wrong matrix shifts every sample: the check reads the frame's signalling itself.
TEST(LibjpegTurboCheck, FailsOutputOfTheWrongColourMatrix) {
  auto frame = MakeSyntheticFrame(640, 360, PixelFormat::kYuv420p, 7, ColorMatrix::kBt709);
  const auto jpeg = EncodeCpu(frame.view, EncodeParams{});
  frame.view.matrix = ColorMatrix::kBt601;
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, jpeg).ok());
}

TEST(LibjpegTurboCheck, FailsOutputWorseThanLibjpegTurbosAtTheSameQuality) {
  const auto frame = MakeSyntheticFrame(640, 360, PixelFormat::kRgb24, 3);
  for (int q : {50, 85, 95}) {
    EncodeParams lower;
    lower.quality = q - 10;
    EncodeParams claimed;
    claimed.quality = q;
    const Status st = CheckAgainstLibjpegTurbo(frame.view, claimed, EncodeCpu(frame.view, lower));
    EXPECT_FALSE(st.ok()) << "q" << lower.quality << " output passed as q" << q;
    if (!st.ok()) std::printf("q%d output as q%d: %s\n", lower.quality, q, st.ToString().c_str());
  }
}

TEST(LibjpegTurboCheck, FailsAnotherFramesOutput) {
  const auto frame = MakeSyntheticFrame(640, 360, PixelFormat::kYuv420p, 11);
  const auto other = MakeSyntheticFrame(640, 360, PixelFormat::kYuv420p, 12);
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, EncodeCpu(other.view, EncodeParams{})).ok());
}

TEST(LibjpegTurboCheck, FailsTheWrongSizeOrSubsampling) {
  const auto frame = MakeSyntheticFrame(64, 48, PixelFormat::kYuv420p, 2);
  const auto wider = MakeSyntheticFrame(72, 48, PixelFormat::kYuv420p, 2);
  EncodeParams p444;
  p444.subsampling = Subsampling::k444;
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, EncodeCpu(frame.view, p444)).ok());
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, EncodeCpu(wider.view, EncodeParams{})).ok());
}

TEST(LibjpegTurboCheck, FailsDamagedOutput) {
  const auto frame = MakeSyntheticFrame(320, 240, PixelFormat::kYuv420p, 4);
  auto jpeg = EncodeCpu(frame.view, EncodeParams{});
  ASSERT_GT(jpeg.size(), 1000u);
  auto truncated = jpeg;
  truncated.resize(jpeg.size() / 2);
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, truncated).ok());
  // One flipped bit in the middle of the entropy-coded data: the decoder either reports
  // it or the planes after it are wrong.
  auto flipped = jpeg;
  flipped[jpeg.size() / 2] ^= 0x10;
  EXPECT_FALSE(CheckAgainstLibjpegTurbo(frame.view, EncodeParams{}, flipped).ok());
}

}  // namespace
}  // namespace conveyor
