// GPU encoder against the CPU path, byte for byte, over sizes, formats, subsamplings,
// qualities, restart intervals and band splits, and every GPU output decoded by
// libjpeg-turbo and measured against its source (libjpeg_turbo_check.h), so that a fault
// both paths share is caught too. Skips, saying why, where no GPU is usable. Free of
// FFmpeg and gRPC so it runs as built on the GPU host.
#include <gtest/gtest.h>

#include <cstdio>
#include <utility>

#include "cpu_encoder.h"
#include "gpu_encoder.h"
#include "libjpeg_turbo_check.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

class GpuEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const GpuProbe probe = ProbeGpus();
    if (probe.devices.empty()) {
      skip_reason_ = new std::string(probe.unavailable_reason);
      return;
    }
    std::printf("GPU backend %s, device 0: %s, %.1f GiB\n", GpuBackendName(),
                probe.devices[0].name.c_str(), probe.devices[0].total_memory / 1073741824.0);
    auto gpu = GpuJpegEncoder::Create(0);
    if (!gpu.ok()) {
      create_error_ = new std::string(gpu.status().ToString());
      return;
    }
    gpu_ = std::move(gpu).value().release();
    cpu_ = new CpuJpegEncoder(0);
  }
  static void TearDownTestSuite() {
    delete gpu_;
    delete cpu_;
    gpu_ = nullptr;
    cpu_ = nullptr;
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << "no GPU: " << *skip_reason_;
    ASSERT_EQ(create_error_, nullptr) << *create_error_;
  }

  // Encodes on both workers and requires identical bytes, and the GPU's to pass
  // libjpeg-turbo's check against the frame.
  void ExpectIdentical(const FrameView& frame, const EncodeParams& p, int band_hint = 0, int first_band_hint = 0) {
    auto cpu = cpu_->Encode(frame, p);
    ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
    auto gpu = gpu_->Encode(frame, p, band_hint, first_band_hint);
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    const std::string what = std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                             " " + PixelFormatName(frame.format) + " q" + std::to_string(p.quality) +
                             " ss" + SubsamplingName(p.subsampling) + " restart " +
                             std::to_string(p.restart_interval) + " bands " + std::to_string(band_hint) +
                             " first band " + std::to_string(first_band_hint);
    ASSERT_EQ(cpu->size(), gpu->size()) << what;
    size_t first_diff = 0;
    while (first_diff < cpu->size() && (*cpu)[first_diff] == (*gpu)[first_diff]) ++first_diff;
    ASSERT_EQ(first_diff, cpu->size()) << what << ": first differing byte at " << first_diff;
    ++cases_;
    bytes_ += cpu->size();
    const Status decoded = testing::CheckAgainstLibjpegTurbo(frame, p, *gpu);
    ASSERT_TRUE(decoded.ok()) << what << ": " << decoded.ToString();
    ++decoded_;
  }

  static std::string* skip_reason_;
  static std::string* create_error_;
  static GpuJpegEncoder* gpu_;
  static CpuJpegEncoder* cpu_;

 public:
  static int cases_;
  static size_t bytes_;
  static int decoded_;
};

std::string* GpuEncoderTest::skip_reason_ = nullptr;
std::string* GpuEncoderTest::create_error_ = nullptr;
GpuJpegEncoder* GpuEncoderTest::gpu_ = nullptr;
CpuJpegEncoder* GpuEncoderTest::cpu_ = nullptr;
int GpuEncoderTest::cases_ = 0;
size_t GpuEncoderTest::bytes_ = 0;
int GpuEncoderTest::decoded_ = 0;

const PixelFormat kAllFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                   PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                   PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};
const Subsampling kAllSubsamplings[] = {Subsampling::k420, Subsampling::k422, Subsampling::k444};

TEST_F(GpuEncoderTest, IdenticalAcrossFormatsSubsamplingsAndQualities) {
  const int sizes[][2] = {{1, 1}, {17, 9}, {640, 360}, {1919, 1079}};
  uint32_t seed = 1;
  for (auto [w, h] : sizes)
    for (PixelFormat f : kAllFormats) {
      const auto frame = testing::MakeSyntheticFrame(w, h, f, seed++);
      for (Subsampling ss : kAllSubsamplings)
        for (int q : {1, 50, 85, 100}) {
          EncodeParams p;
          p.subsampling = ss;
          p.quality = q;
          ExpectIdentical(frame.view, p);
          if (HasFatalFailure()) return;
        }
    }
}

TEST_F(GpuEncoderTest, IdenticalAtLargeAndExtremeSizes) {
  const int sizes[][2] = {{3840, 2160}, {16384, 16}, {16, 16384}, {7680, 4320}};
  for (auto [w, h] : sizes)
    for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kRgba, PixelFormat::kNv12}) {
      const auto frame = testing::MakeSyntheticFrame(w, h, f, w + h);
      for (Subsampling ss : kAllSubsamplings) {
        EncodeParams p;
        p.subsampling = ss;
        ExpectIdentical(frame.view, p);
        if (HasFatalFailure()) return;
      }
    }
}

TEST_F(GpuEncoderTest, IdenticalForRestartIntervalsAndBandSplits) {
  const auto frame = testing::MakeSyntheticFrame(1280, 720, PixelFormat::kYuv420p, 99);
  for (int restart : {kRestartAuto, 0, 1, 3, 7, 64, 5000})
    for (int hint : {0, 16, 48, 720}) {
      EncodeParams p;
      p.restart_interval = restart;
      ExpectIdentical(frame.view, p, hint);
      if (HasFatalFailure()) return;
    }
}

// A first band smaller than the others (the GPU worker's for large frames), against the
// CPU's even bands.
TEST_F(GpuEncoderTest, IdenticalWithASmallFirstBand) {
  for (auto [w, h] : {std::pair{1280, 720}, std::pair{3840, 2160}, std::pair{1919, 1079}})
    for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kRgb24}) {
      const auto frame = testing::MakeSyntheticFrame(w, h, f, w ^ h);
      for (int restart : {kRestartAuto, 0, 7})
        for (auto [hint, first] : {std::pair{0, 16}, std::pair{368, 64}, std::pair{48, 16}}) {
          EncodeParams p;
          p.restart_interval = restart;
          ExpectIdentical(frame.view, p, hint, first);
          if (HasFatalFailure()) return;
        }
    }
}

TEST_F(GpuEncoderTest, IdenticalForEveryColourSignalling) {
  for (ColorMatrix m : {ColorMatrix::kBt601, ColorMatrix::kBt709, ColorMatrix::kBt2020})
    for (ColorRange r : {ColorRange::kLimited, ColorRange::kFull}) {
      const auto frame = testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, 5, m, r);
      ExpectIdentical(frame.view, EncodeParams{});
      if (HasFatalFailure()) return;
    }
}

TEST_F(GpuEncoderTest, BadInputIsAStatusNotACrash) {
  const auto frame = testing::MakeSyntheticFrame(64, 64, PixelFormat::kYuv420p, 1);
  EncodeParams p;
  p.quality = 0;
  EXPECT_EQ(gpu_->Encode(frame.view, p).status().code(), StatusCode::kInvalidArgument);
  FrameView bad = frame.view;
  bad.plane[1] = nullptr;
  EXPECT_EQ(gpu_->Encode(bad, EncodeParams{}).status().code(), StatusCode::kInvalidArgument);
  // Still usable afterwards.
  ExpectIdentical(frame.view, EncodeParams{});
}

class Summary : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::printf("gpu-vs-cpu byte-identical cases: %d, bytes compared: %zu\n", GpuEncoderTest::cases_,
                GpuEncoderTest::bytes_);
    std::printf("libjpeg-turbo checked outputs: %d\n", GpuEncoderTest::decoded_);
  }
};

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new conveyor::Summary);
  return RUN_ALL_TESTS();
}
