// Frames handed to the GPU worker in device memory (FrameRequest::DeviceInput), as a
// hardware decoder leaves them: NV12 and P010 surfaces with pitched rows, written by copies
// queued on the worker's decode stream (Worker::Decoding) just before Submit(). Each
// output must be the CPU encoder's JPEG of the same picture in host memory (for P010,
// after the CPU narrowing, kernels/narrow_cpu.h), and libjpeg-turbo's check against it.
// The surfaces are poisoned first and their real bytes queued behind slow copies, so a
// worker that read them without waiting on the decode stream would encode the poison.
// The CPU worker must refuse device input. GPU cases skip, saying why, where no GPU is
// usable or the build has none. Free of FFmpeg and gRPC so it runs as built on the GPU host.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "cpu_encoder.h"
#include "gpu_encoder.h"
#include "libjpeg_turbo_check.h"
#include "narrow_cpu.h"
#include "stage_narrow.h"
#include "synthetic_frame.h"
#include "worker.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_runtime.h"
#endif

namespace conveyor {

int compared_cases = 0;  // printed by main() for tests/gpu/h200_run.sh

namespace {

struct Results {
  std::mutex mu;
  std::map<uint64_t, FrameResult> by_id;
  std::function<void(FrameResult&&)> Callback() {
    return [this](FrameResult&& r) {
      std::lock_guard<std::mutex> lock(mu);
      by_id[r.id] = std::move(r);
    };
  }
};

TEST(DeviceInputTest, TheCpuWorkerRefusesDeviceInput) {
  std::unique_ptr<Worker> worker = MakeCpuWorker(WorkerOptions{});
  ASSERT_FALSE(worker->Decoding().has_value());
  testing::SyntheticFrame f = testing::MakeSyntheticFrame(64, 32, PixelFormat::kNv12, 1);
  FrameRequest req;
  req.frame = f.view;
  req.renditions = {Rendition{0, 0, EncodeParams{}}};
  req.device.enabled = true;
  Results got;
  req.on_done = got.Callback();
  const Status s = worker->Submit(std::move(req));
  worker->Flush();
  if (s.ok()) {
    ASSERT_EQ(got.by_id.size(), 1u);
    EXPECT_FALSE(got.by_id.begin()->second.status.ok()) << "the CPU worker encoded device input";
  } else {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
}

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// A picture in device memory as a decoder leaves it: two planes of one pitched buffer.
struct Surface {
  DeviceBuffer buffer;
  PinnedBuffer staging;  // the host bytes the queued copies read
  size_t pitch = 0;
  size_t uv_offset = 0;
};

class GpuDeviceInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuProbe probe = ProbeGpus();
    if (probe.devices.empty()) {
      GTEST_SKIP() << "no GPU: " << (probe.unavailable_reason.empty() ? "no device found" : probe.unavailable_reason);
    }
    auto w = MakeGpuWorker(0, WorkerOptions{});
    ASSERT_TRUE(w.ok()) << "device 0 (" << probe.devices[0].name << ") is present but its worker did not start: "
                        << w.status().ToString();
    worker_ = std::move(w).value();
    const std::optional<DecodeTarget> target = worker_->Decoding();
    if (!target || target->stream == nullptr) {
      GTEST_SKIP() << "this GPU worker has no decode stream (device frames are an NVIDIA path)";
    }
    decode_stream_ = static_cast<hipStream_t>(target->stream);
    ASSERT_EQ(hipSetDevice(0), hipSuccess);
    auto slow = DeviceBuffer::Allocate(kSlowBytes * 2, "slow copies");
    ASSERT_TRUE(slow.ok()) << slow.status().ToString();
    slow_ = std::move(slow).value();
  }

  // Uploads `rows[p]` rows of `row_bytes[p]` bytes of each plane of `host` into a pitched
  // surface: poison first, then copies queued on the decode stream behind slow ones, not
  // waited for. The surface (and its staging) is returned to be kept by the request.
  std::shared_ptr<Surface> QueueSurface(const uint8_t* const host[2], const int host_stride[2],
                                        const int row_bytes[2], const int rows[2]) {
    auto s = std::make_shared<Surface>();
    s->pitch = (static_cast<size_t>(row_bytes[0]) + 511) / 512 * 512;
    s->uv_offset = s->pitch * rows[0];
    const size_t bytes = s->uv_offset + s->pitch * rows[1];
    auto buffer = DeviceBuffer::Allocate(bytes, "surface");
    auto staging = PinnedBuffer::Allocate(bytes, false, "surface staging");
    EXPECT_TRUE(buffer.ok() && staging.ok());
    if (!buffer.ok() || !staging.ok()) return nullptr;
    s->buffer = std::move(buffer).value();
    s->staging = std::move(staging).value();
    for (int p = 0; p < 2; ++p) {
      uint8_t* dst = s->staging.get<uint8_t>() + (p == 0 ? 0 : s->uv_offset);
      for (int r = 0; r < rows[p]; ++r) {
        std::memcpy(dst + r * s->pitch, host[p] + static_cast<size_t>(r) * host_stride[p], row_bytes[p]);
      }
    }
    EXPECT_EQ(hipMemsetAsync(s->buffer.get(), 0xCD, bytes, decode_stream_), hipSuccess);
    EXPECT_EQ(hipStreamSynchronize(decode_stream_), hipSuccess);
    // Tens of megabytes copied on the decode stream first: the surface's bytes land well
    // after Submit() returns.
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(hipMemcpyAsync(slow_.get<uint8_t>() + (i % 2) * kSlowBytes, slow_.get<uint8_t>() + ((i + 1) % 2) * kSlowBytes,
                               kSlowBytes, hipMemcpyDeviceToDevice, decode_stream_),
                hipSuccess);
    }
    EXPECT_EQ(hipMemcpyAsync(s->buffer.get(), s->staging.get(), bytes, hipMemcpyHostToDevice, decode_stream_),
              hipSuccess);
    return s;
  }

  FrameView DeviceView(const Surface& s, int width, int height, ColorRange range) const {
    FrameView v;
    v.width = width;
    v.height = height;
    v.format = PixelFormat::kNv12;
    v.matrix = ColorMatrix::kBt709;
    v.range = range;
    v.plane[0] = s.buffer.get<uint8_t>();
    v.plane[1] = s.buffer.get<uint8_t>() + s.uv_offset;
    v.stride[0] = v.stride[1] = static_cast<int>(s.pitch);
    return v;
  }

  // Submits the device frame and expects the CPU encoder's JPEG of `host_equivalent`.
  void ExpectCpuEncoderBytes(const FrameView& device_view, bool p010, std::shared_ptr<Surface> surface,
                             const FrameView& host_equivalent, const EncodeParams& params, const std::string& what) {
    Results got;
    FrameRequest req;
    req.id = 1;
    req.frame = device_view;
    req.device.enabled = true;
    req.device.p010 = p010;
    req.owner = surface;
    req.renditions = {Rendition{0, 0, params}};
    req.on_done = got.Callback();
    surface.reset();
    ASSERT_TRUE(worker_->Submit(std::move(req)).ok()) << what;
    worker_->Flush();
    ASSERT_EQ(got.by_id.size(), 1u) << what;
    const FrameResult& r = got.by_id.begin()->second;
    ASSERT_TRUE(r.status.ok()) << what << ": " << r.status.ToString();
    ASSERT_EQ(r.jpeg.size(), 1u);
    CpuJpegEncoder reference(0);
    auto want = reference.Encode(host_equivalent, params);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const std::vector<uint8_t> jpeg = r.jpeg[0].ToVector();
    ASSERT_EQ(jpeg, *want) << what << ": differs from the CPU encoder's JPEG of the host picture";
    const Status checked = testing::CheckAgainstLibjpegTurbo(host_equivalent, params, jpeg);
    ASSERT_TRUE(checked.ok()) << what << ": " << checked.ToString();
    ++compared_cases;
  }

  static constexpr size_t kSlowBytes = 32 << 20;
  std::unique_ptr<Worker> worker_;
  hipStream_t decode_stream_ = nullptr;
  DeviceBuffer slow_;
};

TEST_F(GpuDeviceInputTest, Nv12SurfacesAreReadAfterTheDecodeStreamsCopies) {
  const int sizes[][2] = {{1920, 1080}, {642, 362}, {17, 9}, {1, 1}};
  for (const auto& sz : sizes) {
    const std::string what = "nv12 " + std::to_string(sz[0]) + "x" + std::to_string(sz[1]);
    testing::SyntheticFrame f = testing::MakeSyntheticFrame(sz[0], sz[1], PixelFormat::kNv12, 7 + sz[0]);
    const PlaneGeometry g = PackedPlaneGeometry(PixelFormat::kNv12, sz[0], sz[1]);
    const uint8_t* planes[2] = {f.view.plane[0], f.view.plane[1]};
    const int strides[2] = {f.view.stride[0], f.view.stride[1]};
    const int row_bytes[2] = {g.row_bytes[0], g.row_bytes[1]};
    const int rows[2] = {g.rows[0], g.rows[1]};
    std::shared_ptr<Surface> s = QueueSurface(planes, strides, row_bytes, rows);
    ASSERT_NE(s, nullptr);
    const FrameView device = DeviceView(*s, sz[0], sz[1], f.view.range);
    EncodeParams params;
    params.quality = 85;
    ExpectCpuEncoderBytes(device, false, std::move(s), f.view, params, what);
  }
}

TEST_F(GpuDeviceInputTest, P010SurfacesAreNarrowedAsTheCpuNarrows) {
  const int sizes[][2] = {{1920, 1080}, {722, 406}, {33, 7}};
  for (const auto& sz : sizes) {
    for (const bool full : {false, true}) {
      const int w = sz[0], h = sz[1];
      const std::string what = "p010 " + std::to_string(w) + "x" + std::to_string(h) + (full ? " full" : " limited");
      const NarrowPlan plan = MakeNarrowPlan(w, h, full);
      const int row_bytes[2] = {2 * w, 2 * plan.chroma_row_bytes};
      const int rows[2] = {h, plan.chroma_rows};
      // 10-bit samples in the top bits, the low six random too (the narrowing ignores them).
      std::mt19937 rng(static_cast<uint32_t>(w * 31 + h + full));
      std::vector<uint8_t> y(static_cast<size_t>(row_bytes[0]) * rows[0]);
      std::vector<uint8_t> uv(static_cast<size_t>(row_bytes[1]) * rows[1]);
      for (auto& b : y) b = static_cast<uint8_t>(rng());
      for (auto& b : uv) b = static_cast<uint8_t>(rng());
      const uint8_t* planes[2] = {y.data(), uv.data()};
      std::shared_ptr<Surface> s = QueueSurface(planes, row_bytes, row_bytes, rows);
      ASSERT_NE(s, nullptr);
      const ColorRange range = full ? ColorRange::kFull : ColorRange::kLimited;
      const FrameView device = DeviceView(*s, w, h, range);
      std::vector<uint8_t> nv12(plan.dst_size);
      NarrowP010ToNv12(y.data(), row_bytes[0], uv.data(), row_bytes[1], w, h, full, nv12.data());
      auto host = MakePackedFrameView(nv12.data(), nv12.size(), w, h, PixelFormat::kNv12);
      ASSERT_TRUE(host.ok()) << host.status().ToString();
      host->matrix = ColorMatrix::kBt709;
      host->range = range;
      EncodeParams params;
      params.quality = 90;
      ExpectCpuEncoderBytes(device, true, std::move(s), *host, params, what);
    }
  }
}

// A decoder's surface goes back to it once the worker's copy has completed, while the frame
// may still be encoding; the decoder then writes its next picture there. The owner's
// release poisons the surface on the decode stream, as that next picture would: a surface
// given back before the copy completed shows in the output.
TEST_F(GpuDeviceInputTest, SurfacesGoBackOnlyOnceCopied) {
  constexpr int kFrames = 12;
  testing::SyntheticFrame f = testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kNv12, 41);
  const PlaneGeometry g = PackedPlaneGeometry(PixelFormat::kNv12, 1920, 1080);
  const uint8_t* planes[2] = {f.view.plane[0], f.view.plane[1]};
  const int strides[2] = {f.view.stride[0], f.view.stride[1]};
  const int row_bytes[2] = {g.row_bytes[0], g.row_bytes[1]};
  const int rows[2] = {g.rows[0], g.rows[1]};
  EncodeParams params;
  params.quality = 85;
  Results got;
  std::atomic<int> released{0};
  for (int i = 0; i < kFrames; ++i) {
    std::shared_ptr<Surface> s = QueueSurface(planes, strides, row_bytes, rows);
    ASSERT_NE(s, nullptr);
    FrameRequest req;
    req.id = i;
    req.frame = DeviceView(*s, 1920, 1080, f.view.range);
    req.device.enabled = true;
    hipStream_t stream = decode_stream_;
    req.owner = std::shared_ptr<Surface>(s.get(), [keep = s, stream, &released](Surface* surface) {
      EXPECT_EQ(hipMemsetAsync(surface->buffer.get(), 0x11, surface->buffer.size(), stream), hipSuccess);
      EXPECT_EQ(hipStreamSynchronize(stream), hipSuccess);
      released.fetch_add(1);
    });
    s.reset();
    req.renditions = {Rendition{0, 0, params}};
    req.on_done = got.Callback();
    ASSERT_TRUE(worker_->Submit(std::move(req)).ok());
  }
  worker_->Flush();
  EXPECT_EQ(released.load(), kFrames);
  ASSERT_EQ(got.by_id.size(), static_cast<size_t>(kFrames));
  CpuJpegEncoder reference(0);
  auto want = reference.Encode(f.view, params);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  for (const auto& [id, r] : got.by_id) {
    ASSERT_TRUE(r.status.ok()) << "frame " << id << ": " << r.status.ToString();
    ASSERT_EQ(r.jpeg.size(), 1u);
    EXPECT_EQ(r.jpeg[0].ToVector(), *want) << "frame " << id << ": its surface was given back before its copy";
    ++compared_cases;
  }
}

#else

TEST(GpuDeviceInputTest, NeedsAGpuFlavour) { GTEST_SKIP() << "no GPU: this build has no GPU flavour"; }

#endif

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::printf("device-input byte-identical cases: %d\n", conveyor::compared_cases);
  return rc;
}
