// The GPU narrow stage against the CPU one, byte for byte: P010 pictures with noise in
// every bit (the six low bits included), sizes from 1x1 and odd ones to 1080p, both
// ranges, padded and odd source pitches, a picture holding every 10-bit value at every
// position of the dither pattern, and a guard after the destination that the kernel must
// leave alone. The CPU path is checked against libswscale in tests/unit/narrow_test.cpp.
// Skips, saying why, where no GPU is usable; built in every flavour like
// gpu_deinterlace_test, with the device code compiled only in GPU flavours. Free of FFmpeg
// and gRPC so it runs as built on the GPU host.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu_stage_test.h"
#include "narrow_cpu.h"
#include "stage_narrow.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_narrow.h"
#endif

namespace conveyor {
namespace {

using testing::GpuStageTest;

// A P010 picture in host memory: the luma rows, then the interleaved chroma rows, each
// plane's rows its pitch apart.
struct P010Picture {
  int width = 0, height = 0;
  size_t y_pitch = 0, uv_pitch = 0;
  std::vector<uint8_t> bytes;  // luma plane at 0, chroma plane at uv_offset
  size_t uv_offset = 0;

  const uint8_t* y() const { return bytes.data(); }
  const uint8_t* uv() const { return bytes.data() + uv_offset; }
};

// Every byte random (padding and the six low bits of each sample included).
P010Picture RandomP010(int w, int h, int pad_y, int pad_uv, uint32_t seed) {
  const NarrowPlan plan = MakeNarrowPlan(w, h, false);
  P010Picture p;
  p.width = w;
  p.height = h;
  p.y_pitch = 2 * static_cast<size_t>(w) + pad_y;
  p.uv_pitch = 2 * static_cast<size_t>(plan.chroma_row_bytes) + pad_uv;
  p.uv_offset = p.y_pitch * h;
  p.bytes.resize(p.uv_offset + p.uv_pitch * plan.chroma_rows);
  std::mt19937 rng(seed);
  for (auto& b : p.bytes) b = static_cast<uint8_t>(rng());
  return p;
}

// 2048x128 with every 10-bit value at every (x mod 8, y mod 8) of each plane's dither
// pattern: sample (x, y) of a plane w samples wide is x / 8 + (w / 8) * (y / 8) mod 1024,
// for Cb and Cr with an offset of their own.
P010Picture EveryValueAtEveryDitherPosition() {
  P010Picture p = RandomP010(2048, 128, 6, 10, 7);
  auto put = [](uint8_t* at, unsigned v) {
    at[0] = static_cast<uint8_t>((v << 6) & 0xFF);
    at[1] = static_cast<uint8_t>(v >> 2);
  };
  for (int y = 0; y < p.height; ++y) {
    for (int x = 0; x < p.width; ++x) {
      put(&p.bytes[y * p.y_pitch + 2 * x], (x / 8 + (p.width / 8) * (y / 8)) & 1023);
    }
  }
  const int cw = (p.width + 1) / 2, ch = (p.height + 1) / 2;
  for (int y = 0; y < ch; ++y) {
    for (int x = 0; x < cw; ++x) {
      for (int c = 0; c < 2; ++c) {
        const unsigned value = (x / 8 + (cw / 8) * (y / 8) + 389 * (c + 1)) & 1023;
        put(&p.bytes[p.uv_offset + y * p.uv_pitch + 4 * x + 2 * c], value);
      }
    }
  }
  return p;
}

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// Uploads the picture with its pitches, narrows it on the device and reads back the
// destination plus the guard behind it.
StatusOr<std::vector<uint8_t>> NarrowOnDevice(const P010Picture& src, const NarrowPlan& plan) {
  GPU_RETURN_IF_ERROR(hipSetDevice(0), "hipSetDevice(0)");
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "narrow test stream"));
  ASSIGN_OR_RETURN(DeviceBuffer source, DeviceBuffer::Allocate(src.bytes.size(), "narrow test source"));
  GPU_RETURN_IF_ERROR(
      hipMemcpyAsync(source.get(), src.bytes.data(), src.bytes.size(), hipMemcpyHostToDevice, stream.get()),
      "upload source");
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize(upload)");
  ASSIGN_OR_RETURN(DeviceBuffer dst, testing::GuardedDestination(plan.dst_size, stream.get()));
  const uint8_t* base = source.get<uint8_t>();
  RETURN_IF_ERROR(EnqueueNarrowP010(plan, base, src.y_pitch, base + src.uv_offset, src.uv_pitch, dst.get<uint8_t>(),
                                    stream.get()));
  return testing::ReadBackGuarded(dst, stream.get());
}

// EnqueueNarrowP010's own argument checks, which need no upload.
Status ExpectArgumentErrors() {
  GPU_RETURN_IF_ERROR(hipSetDevice(0), "hipSetDevice(0)");
  ASSIGN_OR_RETURN(Stream stream, Stream::Create(0, "narrow test stream"));
  ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(1 << 20, "narrow test buffer"));
  const NarrowPlan plan = MakeNarrowPlan(64, 48, false);
  uint8_t* b = buf.get<uint8_t>();
  const size_t pitch = 2 * 64;
  auto code = [&](const NarrowPlan& p, const uint8_t* y, size_t yp, const uint8_t* uv, size_t uvp, uint8_t* dst) {
    return EnqueueNarrowP010(p, y, yp, uv, uvp, dst, stream.get()).code();
  };
  EXPECT_EQ(code(plan, b, pitch, b, pitch, nullptr), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(plan, nullptr, pitch, b, pitch, b), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(plan, b, pitch, nullptr, pitch, b), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(plan, b, pitch - 1, b, pitch, b), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(plan, b, pitch, b, pitch - 1, b), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(MakeNarrowPlan(0, 48, false), b, pitch, b, pitch, b), StatusCode::kInvalidArgument);
  NarrowPlan tampered = plan;
  tampered.dst_size -= 1;
  EXPECT_EQ(code(tampered, b, pitch, b, pitch, b), StatusCode::kInvalidArgument);
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize");
  return OkStatus();
}

#else

StatusOr<std::vector<uint8_t>> NarrowOnDevice(const P010Picture&, const NarrowPlan&) {
  return Unavailable("built without a GPU backend");
}
Status ExpectArgumentErrors() { return Unavailable("built without a GPU backend"); }

#endif

class GpuNarrowTest : public GpuStageTest {
 protected:
  // Narrows on both sides in both ranges and requires identical bytes and an untouched
  // guard.
  void ExpectIdentical(const P010Picture& src, const std::string& label) {
    for (const bool full : {false, true}) {
      const std::string what = std::to_string(src.width) + "x" + std::to_string(src.height) + " " + label +
                               (full ? " full" : " limited") + " range, pitches " + std::to_string(src.y_pitch) +
                               "/" + std::to_string(src.uv_pitch);
      const NarrowPlan plan = MakeNarrowPlan(src.width, src.height, full);
      auto gpu = NarrowOnDevice(src, plan);
      ASSERT_TRUE(gpu.ok()) << what << ": " << gpu.status().ToString();
      std::vector<uint8_t> cpu(plan.dst_size);
      NarrowP010ToNv12(src.y(), static_cast<int>(src.y_pitch), src.uv(), static_cast<int>(src.uv_pitch), src.width,
                       src.height, full, cpu.data());
      ExpectSameBytes(cpu, *gpu, what);
    }
  }
};

TEST_F(GpuNarrowTest, IdenticalAtSmallAndOddSizes) {
  const int sizes[][2] = {{1, 1}, {2, 2}, {3, 3}, {2, 1}, {1, 4}, {7, 5}, {17, 9}, {33, 47}, {130, 70}, {129, 71}};
  uint32_t seed = 1;
  for (const auto& s : sizes) ExpectIdentical(RandomP010(s[0], s[1], 0, 0, seed++), "random");
}

TEST_F(GpuNarrowTest, IdenticalAtHdSizes) {
  ExpectIdentical(RandomP010(1920, 1080, 0, 0, 11), "random");
  ExpectIdentical(RandomP010(1921, 1081, 0, 0, 12), "random");
  ExpectIdentical(RandomP010(1280, 720, 0, 0, 13), "random");
}

TEST_F(GpuNarrowTest, IdenticalWithPaddedAndOddPitches) {
  const int sizes[][2] = {{1, 1}, {17, 9}, {33, 47}, {130, 70}, {1920, 1080}};
  uint32_t seed = 100;
  for (const auto& s : sizes) {
    ExpectIdentical(RandomP010(s[0], s[1], 7, 13, seed++), "random");
    ExpectIdentical(RandomP010(s[0], s[1], 64, 128, seed++), "random");
  }
}

TEST_F(GpuNarrowTest, IdenticalForEveryValueAtEveryDitherPosition) {
  ExpectIdentical(EveryValueAtEveryDitherPosition(), "every value");
}

TEST_F(GpuNarrowTest, BadArgumentsAreAStatusNotACrash) {
  const Status s = ExpectArgumentErrors();
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  conveyor::testing::PrintByteIdentitySummary("narrow");
  return RUN_ALL_TESTS();
}
