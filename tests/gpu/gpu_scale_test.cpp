// The GPU rendition scaler against the CPU one, byte for byte, over every format and a
// ladder of sizes (down, up, mixed, 1x1, odd). Skips, saying why, where no GPU is usable;
// built in every flavour like gpu_encoder_test, with the device code compiled only in
// GPU flavours. Free of FFmpeg and gRPC so it runs as built on the GPU host.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_stage_test.h"
#include "scale_cpu.h"
#include "synthetic_frame.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_scale.h"
#endif

namespace conveyor {
namespace {

using testing::GpuStageTest;

const PixelFormat kAllFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                   PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                   PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// Uploads `frame` once (rows `pad` bytes wider than packed, to exercise strides), scales
// it on the device into each plan's rendition with one EnqueueScales call, and reads back
// each destination plus the guard behind it.
StatusOr<std::vector<std::vector<uint8_t>>> ScaleRenditionsOnDevice(const FrameView& frame,
                                                                    const std::vector<ScalePlan>& plans, int pad) {
  GPU_RETURN_IF_ERROR(hipSetDevice(0), "hipSetDevice(0)");
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "scale test stream"));
  ASSIGN_OR_RETURN(testing::DeviceFrame src, testing::UploadPadded(frame, pad, stream.get()));
  std::vector<DeviceBuffer> dst;
  std::vector<ScaleJob> jobs;
  for (const ScalePlan& plan : plans) {
    ASSIGN_OR_RETURN(DeviceBuffer d, testing::GuardedDestination(plan.dst_size, stream.get()));
    jobs.push_back({&plan, src.planes, d.get<uint8_t>()});
    dst.push_back(std::move(d));
  }
  if (jobs.size() == 1) {
    RETURN_IF_ERROR(EnqueueScale(plans[0], src.planes, dst[0].get<uint8_t>(), stream.get()));
  } else {
    RETURN_IF_ERROR(EnqueueScales(jobs.data(), static_cast<int>(jobs.size()), stream.get()));
  }
  std::vector<std::vector<uint8_t>> out;
  for (const DeviceBuffer& d : dst) {
    ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, testing::ReadBackGuarded(d, stream.get()));
    out.push_back(std::move(bytes));
  }
  return out;
}

StatusOr<std::vector<uint8_t>> ScaleOnDevice(const FrameView& frame, const ScalePlan& plan, int pad) {
  ASSIGN_OR_RETURN(auto out, ScaleRenditionsOnDevice(frame, {plan}, pad));
  return std::move(out[0]);
}

// EnqueueScale's own argument checks, which need no upload.
Status ExpectArgumentErrors(const ScalePlan& plan) {
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "scale test stream"));
  ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(1 << 20, "scale test buffer"));
  SourcePlanes planes{};
  for (int p = 0; p < plan.num_planes; ++p) {
    planes.plane[p] = buf.get<uint8_t>();
    planes.stride[p] = plan.SrcRowBytes(p);
  }
  EXPECT_EQ(EnqueueScale(plan, planes, nullptr, stream.get()).code(), StatusCode::kInvalidArgument);
  SourcePlanes bad = planes;
  bad.plane[plan.num_planes - 1] = nullptr;
  EXPECT_EQ(EnqueueScale(plan, bad, buf.get<uint8_t>(), stream.get()).code(), StatusCode::kInvalidArgument);
  bad = planes;
  bad.stride[0] -= 1;
  EXPECT_EQ(EnqueueScale(plan, bad, buf.get<uint8_t>(), stream.get()).code(), StatusCode::kInvalidArgument);
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize");
  return OkStatus();
}

#else

StatusOr<std::vector<std::vector<uint8_t>>> ScaleRenditionsOnDevice(const FrameView&, const std::vector<ScalePlan>&,
                                                                    int) {
  return Unavailable("built without a GPU backend");
}
StatusOr<std::vector<uint8_t>> ScaleOnDevice(const FrameView&, const ScalePlan&, int) {
  return Unavailable("built without a GPU backend");
}
Status ExpectArgumentErrors(const ScalePlan&) { return Unavailable("built without a GPU backend"); }

#endif

class GpuScaleTest : public GpuStageTest {
 protected:
  // Scales on both sides and requires identical bytes and an untouched guard.
  void ExpectIdentical(const FrameView& frame, int dw, int dh, ScaleFilter filter, int pad = 0) {
    auto plan = MakeScalePlan(frame.format, frame.width, frame.height, dw, dh, filter);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto gpu = ScaleOnDevice(frame, *plan, pad);
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    ExpectSameAsHost(frame, *plan, *gpu, std::string(ScaleFilterName(filter)) + " pad " + std::to_string(pad));
  }

  // `gpu` (the destination and its guard) against the CPU's scale of the plan.
  void ExpectSameAsHost(const FrameView& frame, const ScalePlan& plan, const std::vector<uint8_t>& gpu_out,
                        const std::string& how) {
    const std::string what = std::to_string(frame.width) + "x" + std::to_string(frame.height) + " -> " +
                             std::to_string(plan.dst_width) + "x" + std::to_string(plan.dst_height) + " " +
                             PixelFormatName(frame.format) + " " + how;
    std::vector<uint8_t> cpu(plan.dst_size);
    const Status s = ScaleFrameOnHost(frame, plan, cpu.data());
    ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
    ExpectSameBytes(cpu, gpu_out, what);
  }

};

TEST_F(GpuScaleTest, IdenticalOverTheRenditionLadder) {
  const int ladder[][2] = {{1280, 720}, {640, 360}, {1, 1}, {3840, 2160}};
  uint32_t seed = 1;
  for (PixelFormat f : kAllFormats) {
    const auto frame = testing::MakeSyntheticFrame(1920, 1080, f, seed++);
    for (auto [w, h] : ladder) {
      ExpectIdentical(frame.view, w, h, ScaleFilter::kAuto);
      if (HasFatalFailure()) return;
    }
  }
}

// A ladder's renditions in one EnqueueScales call: the area kernel's share launches (six
// planes at most a launch), the others (a 6x shrink, an enlargement) get their own, in
// between; each rendition must come out as the CPU makes it alone.
TEST_F(GpuScaleTest, RenditionsScaledTogetherAreEachIdentical) {
  const std::vector<std::vector<std::array<int, 2>>> ladders = {
      {{1280, 720}, {640, 360}},
      {{1280, 720}, {854, 480}, {640, 360}, {426, 240}, {1919, 1079}},
      {{1280, 720}, {320, 180}, {640, 360}, {3840, 2160}, {1, 1}}};
  uint32_t seed = 500;
  for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgb24, PixelFormat::kYuv444p})
    for (const auto& ladder : ladders) {
      const auto frame = testing::MakeSyntheticFrame(1920, 1080, f, seed++);
      std::vector<ScalePlan> plans;
      for (auto [w, h] : ladder) plans.push_back(MakeScalePlan(f, 1920, 1080, w, h).value());
      auto gpu = ScaleRenditionsOnDevice(frame.view, plans, 0);
      ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
      for (size_t r = 0; r < plans.size(); ++r) {
        ExpectSameAsHost(frame.view, plans[r], (*gpu)[r],
                         "rendition " + std::to_string(r) + " of " + std::to_string(plans.size()));
        if (HasFatalFailure()) return;
      }
    }
}

TEST_F(GpuScaleTest, IdenticalAtOddAndTinySizesWithEveryFilter) {
  const int cases[][4] = {{17, 9, 33, 21}, {17, 9, 5, 3}, {1, 1, 1, 1}, {1, 1, 7, 3},
                          {33, 21, 17, 9}, {100, 50, 50, 100}, {1919, 1079, 641, 359}};
  uint32_t seed = 100;
  for (auto [sw, sh, dw, dh] : cases)
    for (PixelFormat f : kAllFormats) {
      const auto frame = testing::MakeSyntheticFrame(sw, sh, f, seed++);
      for (ScaleFilter filter : {ScaleFilter::kAuto, ScaleFilter::kArea, ScaleFilter::kBilinear}) {
        ExpectIdentical(frame.view, dw, dh, filter);
        if (HasFatalFailure()) return;
      }
    }
}

// Around the separable kernel's limit of 8 taps an axis: 6x and 6.4x shrink it takes,
// 7x it leaves to the per-sample kernel, in every format (chroma planes shrink alike).
TEST_F(GpuScaleTest, IdenticalOnBothSidesOfTheSeparableKernelsTapLimit) {
  const int sizes[][2] = {{320, 180}, {300, 170}, {274, 154}};
  uint32_t seed = 300;
  for (PixelFormat f : kAllFormats) {
    const auto frame = testing::MakeSyntheticFrame(1920, 1080, f, seed++);
    for (auto [w, h] : sizes) {
      ExpectIdentical(frame.view, w, h, ScaleFilter::kAuto);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(GpuScaleTest, IdenticalWithPaddedSourceStrides) {
  for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgb24}) {
    const auto frame = testing::MakeSyntheticFrame(1280, 720, f, 7);
    for (int pad : {1, 64}) {
      ExpectIdentical(frame.view, 854, 480, ScaleFilter::kAuto, pad);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(GpuScaleTest, IdenticalAtExtremeAspectRatios) {
  const int cases[][4] = {{16384, 16, 1280, 2}, {16, 16384, 3, 720}, {2, 2, 16384, 4}};
  for (auto [sw, sh, dw, dh] : cases)
    for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kRgba}) {
      const auto frame = testing::MakeSyntheticFrame(sw, sh, f, sw + sh);
      ExpectIdentical(frame.view, dw, dh, ScaleFilter::kAuto);
      if (HasFatalFailure()) return;
    }
}

TEST_F(GpuScaleTest, BadArgumentsAreAStatusNotACrash) {
  for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kBgra}) {
    const ScalePlan plan = MakeScalePlan(f, 64, 48, 32, 24).value();
    const Status s = ExpectArgumentErrors(plan);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Still usable afterwards.
  const auto frame = testing::MakeSyntheticFrame(64, 48, PixelFormat::kYuv420p, 1);
  ExpectIdentical(frame.view, 32, 24, ScaleFilter::kAuto);
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  conveyor::testing::PrintByteIdentitySummary("scale");
  return RUN_ALL_TESTS();
}
