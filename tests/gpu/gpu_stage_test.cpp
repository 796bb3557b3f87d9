// The GPU stage tests' shared fixture and device buffers (see gpu_stage_test.h).
#include "gpu_stage_test.h"

#include <algorithm>
#include <cstdio>

#include "gpu_encoder.h"  // ProbeGpus

namespace conveyor::testing {

int GpuStageTest::cases_ = 0;
size_t GpuStageTest::bytes_ = 0;
std::string* GpuStageTest::skip_reason_ = nullptr;

void GpuStageTest::SetUpTestSuite() {
  const GpuProbe probe = ProbeGpus();
  if (probe.devices.empty()) {
    skip_reason_ = new std::string(probe.unavailable_reason);
    return;
  }
  std::printf("GPU backend %s, device 0: %s\n", GpuBackendName(), probe.devices[0].name.c_str());
}

void GpuStageTest::SetUp() {
  if (skip_reason_ != nullptr) GTEST_SKIP() << "no GPU: " << *skip_reason_;
}

void GpuStageTest::ExpectSameBytes(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu,
                                   const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size() + kGuardBytes) << what;
  size_t first_diff = 0;
  while (first_diff < cpu.size() && cpu[first_diff] == gpu[first_diff]) ++first_diff;
  ASSERT_EQ(first_diff, cpu.size()) << what << ": first differing byte at " << first_diff << " (cpu "
                                    << int{cpu[first_diff]} << ", gpu " << int{gpu[first_diff]} << ")";
  for (size_t i = cpu.size(); i < gpu.size(); ++i)
    ASSERT_EQ(gpu[i], kCanary) << what << ": kernel wrote " << i - cpu.size() << " bytes past the end";
  ++cases_;
  bytes_ += cpu.size();
}

void PrintByteIdentitySummary(const char* stage) {
  class Summary : public ::testing::EmptyTestEventListener {
   public:
    explicit Summary(const char* stage) : stage_(stage) {}
    void OnTestProgramEnd(const ::testing::UnitTest&) override {
      std::printf("gpu-vs-cpu %s byte-identical cases: %d, bytes compared: %zu\n", stage_, GpuStageTest::cases_,
                  GpuStageTest::bytes_);
    }

   private:
    const char* stage_;
  };
  ::testing::UnitTest::GetInstance()->listeners().Append(new Summary(stage));
}

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

StatusOr<DeviceFrame> UploadPadded(const FrameView& frame, int pad, hipStream_t stream) {
  const PlaneGeometry g = PackedPlaneGeometry(frame.format, frame.width, frame.height);
  const int num_planes = LayoutOf(frame.format).num_planes;
  std::vector<uint8_t> host;
  size_t offset[3] = {0, 0, 0};
  DeviceFrame d;
  for (int p = 0; p < num_planes; ++p) {
    offset[p] = host.size();
    d.planes.stride[p] = g.row_bytes[p] + pad;
    host.resize(host.size() + static_cast<size_t>(d.planes.stride[p]) * g.rows[p], 0);
    for (int y = 0; y < g.rows[p]; ++y)
      std::copy_n(frame.plane[p] + static_cast<size_t>(y) * frame.stride[p], g.row_bytes[p],
                  host.begin() + offset[p] + static_cast<size_t>(y) * d.planes.stride[p]);
  }
  ASSIGN_OR_RETURN(d.buffer, DeviceBuffer::Allocate(host.size(), "test source"));
  GPU_RETURN_IF_ERROR(hipMemcpyAsync(d.buffer.get(), host.data(), host.size(), hipMemcpyHostToDevice, stream),
                      "upload source");
  // The copy reads `host` until it completes: wait before it goes.
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream), "hipStreamSynchronize(upload)");
  for (int p = 0; p < num_planes; ++p) d.planes.plane[p] = d.buffer.get<uint8_t>() + offset[p];
  return d;
}

StatusOr<DeviceBuffer> GuardedDestination(size_t bytes, hipStream_t stream) {
  const std::vector<uint8_t> canary(bytes + kGuardBytes, kCanary);
  ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(canary.size(), "test destination"));
  GPU_RETURN_IF_ERROR(hipMemcpyAsync(d.get(), canary.data(), canary.size(), hipMemcpyHostToDevice, stream),
                      "fill destination");
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream), "hipStreamSynchronize(fill)");
  return d;
}

StatusOr<std::vector<uint8_t>> ReadBackGuarded(const DeviceBuffer& dst, hipStream_t stream) {
  std::vector<uint8_t> out(dst.size());
  GPU_RETURN_IF_ERROR(hipMemcpyAsync(out.data(), dst.get(), out.size(), hipMemcpyDeviceToHost, stream),
                      "read back destination");
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream), "hipStreamSynchronize(read back)");
  return out;
}

#endif

}  // namespace conveyor::testing
