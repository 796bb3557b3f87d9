// The GPU deinterlace stage against the CPU one, byte for byte: every format it takes,
// both field orders, sizes from 1x1 and odd ones to 1080p, the stream's ends (cur passed
// as prev or next), padded source strides, and a guard after the destination that the
// kernel must leave alone. Skips, saying why, where no GPU is usable; built in every
// flavour like gpu_orient_test, with the device code compiled only in GPU flavours. Free
// of FFmpeg and gRPC so it runs as built on the GPU host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "deinterlace_cpu.h"
#include "gpu_stage_test.h"
#include "synthetic_frame.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_deinterlace.h"
#endif

namespace conveyor {
namespace {

using testing::GpuStageTest;

const PixelFormat kFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                PixelFormat::kYuv422p, PixelFormat::kYuv444p};

// prev, cur and next of one output frame.
struct Triple {
  const FrameView* frame[3];
};

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// Uploads the three frames (rows `pad` bytes wider than packed, each frame its own
// buffer), deinterlaces on the device and reads back the destination plus the guard
// behind it.
StatusOr<std::vector<uint8_t>> DeinterlaceOnDevice(const Triple& t, const DeinterlacePlan& plan, int pad) {
  GPU_RETURN_IF_ERROR(hipSetDevice(0), "hipSetDevice(0)");
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "deinterlace test stream"));
  testing::DeviceFrame src[3];
  for (int f = 0; f < 3; ++f) {
    ASSIGN_OR_RETURN(src[f], testing::UploadPadded(*t.frame[f], pad, stream.get()));
  }
  ASSIGN_OR_RETURN(DeviceBuffer dst, testing::GuardedDestination(plan.dst_size, stream.get()));
  RETURN_IF_ERROR(
      EnqueueDeinterlace(plan, src[0].planes, src[1].planes, src[2].planes, dst.get<uint8_t>(), stream.get()));
  return testing::ReadBackGuarded(dst, stream.get());
}

// EnqueueDeinterlace's own argument checks, which need no upload.
Status ExpectArgumentErrors(const DeinterlacePlan& plan) {
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "deinterlace test stream"));
  ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(1 << 20, "deinterlace test buffer"));
  SourcePlanes planes{};
  for (int p = 0; p < plan.num_planes; ++p) {
    planes.plane[p] = buf.get<uint8_t>();
    planes.stride[p] = plan.plane[p].w * plan.plane[p].channels;
  }
  uint8_t* dst = buf.get<uint8_t>();
  EXPECT_EQ(EnqueueDeinterlace(plan, planes, planes, planes, nullptr, stream.get()).code(),
            StatusCode::kInvalidArgument);
  SourcePlanes bad = planes;
  bad.plane[plan.num_planes - 1] = nullptr;
  EXPECT_EQ(EnqueueDeinterlace(plan, bad, planes, planes, dst, stream.get()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EnqueueDeinterlace(plan, planes, bad, planes, dst, stream.get()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EnqueueDeinterlace(plan, planes, planes, bad, dst, stream.get()).code(), StatusCode::kInvalidArgument);
  bad = planes;
  bad.stride[0] -= 1;
  EXPECT_EQ(EnqueueDeinterlace(plan, planes, planes, bad, dst, stream.get()).code(), StatusCode::kInvalidArgument);
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize");
  return OkStatus();
}

#else

StatusOr<std::vector<uint8_t>> DeinterlaceOnDevice(const Triple&, const DeinterlacePlan&, int) {
  return Unavailable("built without a GPU backend");
}
Status ExpectArgumentErrors(const DeinterlacePlan&) { return Unavailable("built without a GPU backend"); }

#endif

class GpuDeinterlaceTest : public GpuStageTest {
 protected:
  // Deinterlaces on both sides and requires identical bytes and an untouched guard.
  void ExpectIdentical(const Triple& t, bool tff, const std::string& label, int pad = 0) {
    const FrameView& cur = *t.frame[1];
    const std::string what = std::to_string(cur.width) + "x" + std::to_string(cur.height) + " " +
                             PixelFormatName(cur.format) + (tff ? " tff " : " bff ") + label + " pad " +
                             std::to_string(pad);
    auto plan = MakeDeinterlacePlan(cur.format, cur.width, cur.height, tff);
    ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().ToString();
    auto gpu = DeinterlaceOnDevice(t, *plan, pad);
    ASSERT_TRUE(gpu.ok()) << what << ": " << gpu.status().ToString();
    std::vector<uint8_t> cpu(plan->dst_size);
    const Status s = DeinterlaceFrameOnHost(*t.frame[0], *t.frame[1], *t.frame[2], *plan, cpu.data());
    ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
    ExpectSameBytes(cpu, *gpu, what);
  }

  // A middle frame and both ends of a stream of three synthetic frames, for both field
  // orders.
  void ExpectIdenticalOverAStream(PixelFormat f, int w, int h, int pad = 0) {
    const auto a = testing::MakeSyntheticFrame(w, h, f, 3);
    const auto b = testing::MakeSyntheticFrame(w, h, f, 4);
    const auto c = testing::MakeSyntheticFrame(w, h, f, 5);
    const Triple triples[] = {
        {{&a.view, &b.view, &c.view}}, {{&a.view, &a.view, &b.view}}, {{&b.view, &c.view, &c.view}}};
    const char* const labels[] = {"middle", "first", "last"};
    for (const bool tff : {true, false}) {
      for (int i = 0; i < 3; ++i) ExpectIdentical(triples[i], tff, labels[i], pad);
    }
  }
};

TEST_F(GpuDeinterlaceTest, IdenticalForEveryFormatAndFieldOrderAtSmallAndOddSizes) {
  const int sizes[][2] = {{1, 1}, {2, 2}, {3, 3}, {2, 1}, {1, 4}, {7, 5}, {17, 9}, {33, 47}, {130, 70}};
  for (PixelFormat f : kFormats) {
    for (const auto& s : sizes) ExpectIdenticalOverAStream(f, s[0], s[1]);
  }
}

TEST_F(GpuDeinterlaceTest, IdenticalAtHdSizes) {
  for (const auto& [w, h] : {std::make_pair(1920, 1080), std::make_pair(1280, 720), std::make_pair(720, 576)}) {
    for (PixelFormat f : kFormats) ExpectIdenticalOverAStream(f, w, h);
  }
}

TEST_F(GpuDeinterlaceTest, IdenticalWithPaddedSourceStrides) {
  for (PixelFormat f : kFormats) {
    ExpectIdenticalOverAStream(f, 45, 31, 13);
    ExpectIdenticalOverAStream(f, 64, 36, 64);
  }
}

TEST_F(GpuDeinterlaceTest, BadArgumentsAreAStatusNotACrash) {
  auto plan = MakeDeinterlacePlan(PixelFormat::kYuv420p, 64, 48, true);
  ASSERT_TRUE(plan.ok());
  const Status s = ExpectArgumentErrors(*plan);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  conveyor::testing::PrintByteIdentitySummary("deinterlace");
  return RUN_ALL_TESTS();
}
