// The GPU orientation stage against the CPU one, byte for byte: every format, all eight
// orientations, sizes from 1x1 and odd ones to 4K, padded source strides, and a guard
// after the destination that the kernel must leave alone. Skips, saying why, where no
// GPU is usable; built in every flavour like gpu_scale_test, with the device code
// compiled only in GPU flavours. Free of FFmpeg and gRPC so it runs as built on the GPU
// host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_stage_test.h"
#include "orient_cpu.h"
#include "synthetic_frame.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_orient.h"
#endif

namespace conveyor {
namespace {

using testing::GpuStageTest;

const PixelFormat kAllFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                   PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                   PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// Uploads `frame` (rows `pad` bytes wider than packed), turns it on the device and reads
// back the destination plus the guard behind it.
StatusOr<std::vector<uint8_t>> OrientOnDevice(const FrameView& frame, const OrientPlan& plan, int pad) {
  GPU_RETURN_IF_ERROR(hipSetDevice(0), "hipSetDevice(0)");
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "orient test stream"));
  ASSIGN_OR_RETURN(testing::DeviceFrame src, testing::UploadPadded(frame, pad, stream.get()));
  ASSIGN_OR_RETURN(DeviceBuffer dst, testing::GuardedDestination(plan.dst_size, stream.get()));
  RETURN_IF_ERROR(EnqueueOrient(plan, src.planes, dst.get<uint8_t>(), stream.get()));
  return testing::ReadBackGuarded(dst, stream.get());
}

// EnqueueOrient's own argument checks, which need no upload.
Status ExpectArgumentErrors(const OrientPlan& plan) {
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "orient test stream"));
  ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(1 << 20, "orient test buffer"));
  SourcePlanes planes{};
  for (int p = 0; p < plan.num_planes; ++p) {
    planes.plane[p] = buf.get<uint8_t>();
    planes.stride[p] = plan.plane[p].src_w * plan.plane[p].channels;
  }
  EXPECT_EQ(EnqueueOrient(plan, planes, nullptr, stream.get()).code(), StatusCode::kInvalidArgument);
  SourcePlanes bad = planes;
  bad.plane[plan.num_planes - 1] = nullptr;
  EXPECT_EQ(EnqueueOrient(plan, bad, buf.get<uint8_t>(), stream.get()).code(), StatusCode::kInvalidArgument);
  bad = planes;
  bad.stride[0] -= 1;
  EXPECT_EQ(EnqueueOrient(plan, bad, buf.get<uint8_t>(), stream.get()).code(), StatusCode::kInvalidArgument);
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize");
  return OkStatus();
}

#else

StatusOr<std::vector<uint8_t>> OrientOnDevice(const FrameView&, const OrientPlan&, int) {
  return Unavailable("built without a GPU backend");
}
Status ExpectArgumentErrors(const OrientPlan&) { return Unavailable("built without a GPU backend"); }

#endif

class GpuOrientTest : public GpuStageTest {
 protected:
  // Turns on both sides and requires identical bytes and an untouched guard.
  void ExpectIdentical(const FrameView& frame, Orientation o, int pad = 0) {
    const std::string what = std::to_string(frame.width) + "x" + std::to_string(frame.height) + " " +
                             PixelFormatName(frame.format) + " " + OrientationName(o) + " (EXIF " +
                             std::to_string(ExifOrientation(o)) + ") pad " + std::to_string(pad);
    auto plan = MakeOrientPlan(frame.format, frame.width, frame.height, o);
    ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().ToString();
    auto gpu = OrientOnDevice(frame, *plan, pad);
    ASSERT_TRUE(gpu.ok()) << what << ": " << gpu.status().ToString();
    std::vector<uint8_t> cpu(plan->dst_size);
    const Status s = OrientFrameOnHost(frame, *plan, cpu.data());
    ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
    ExpectSameBytes(cpu, *gpu, what);
  }
};

TEST_F(GpuOrientTest, IdenticalForEveryFormatAndOrientationAtOddSizes) {
  const int sizes[][2] = {{1, 1}, {2, 1}, {1, 3}, {17, 9}, {33, 47}, {130, 70}};
  for (PixelFormat f : kAllFormats) {
    for (const auto& s : sizes) {
      const auto frame = testing::MakeSyntheticFrame(s[0], s[1], f, 3);
      for (int exif = 1; exif <= 8; ++exif) ExpectIdentical(frame.view, OrientationFromExif(exif));
    }
  }
}

TEST_F(GpuOrientTest, IdenticalAtHdAnd4kSizes) {
  for (const auto& [w, h] : {std::make_pair(1920, 1080), std::make_pair(3840, 2160), std::make_pair(1080, 1920)}) {
    for (PixelFormat f : {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kYuv422p, PixelFormat::kRgba}) {
      const auto frame = testing::MakeSyntheticFrame(w, h, f, 5);
      for (int exif : {3, 6, 7, 8}) ExpectIdentical(frame.view, OrientationFromExif(exif));
    }
  }
}

TEST_F(GpuOrientTest, IdenticalWithPaddedSourceStrides) {
  for (PixelFormat f : kAllFormats) {
    const auto frame = testing::MakeSyntheticFrame(45, 31, f, 7);
    for (int exif = 2; exif <= 8; ++exif) ExpectIdentical(frame.view, OrientationFromExif(exif), 13);
  }
}

TEST_F(GpuOrientTest, BadArgumentsAreAStatusNotACrash) {
  auto plan = MakeOrientPlan(PixelFormat::kYuv420p, 64, 48, OrientationFromExif(6));
  ASSERT_TRUE(plan.ok());
  const Status s = ExpectArgumentErrors(*plan);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  conveyor::testing::PrintByteIdentitySummary("orientation");
  return RUN_ALL_TESTS();
}
