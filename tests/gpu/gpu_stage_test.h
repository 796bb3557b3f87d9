// What the GPU stage tests (scale, orientation, deinterlace) share: a fixture that skips,
// saying why, where no GPU is usable, compares a kernel's output and the guard after it
// with the CPU path's bytes and counts the cases for the summary line that
// tests/gpu/h200_run.sh requires; and, in GPU flavours, a test frame uploaded with padded
// rows and a destination with a guard behind it.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frame.h"
#include "stage_color.h"  // SourcePlanes
#include "status.h"

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)
#include "gpu_runtime.h"
#endif

namespace conveyor::testing {

constexpr uint8_t kCanary = 0xCD;
constexpr size_t kGuardBytes = 4096;  // after a destination, must stay kCanary

class GpuStageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  void SetUp() override;
  // `gpu` (the destination and its guard) against `cpu`, byte for byte; counts the case.
  void ExpectSameBytes(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu, const std::string& what);

 public:
  static int cases_;
  static size_t bytes_;

 private:
  static std::string* skip_reason_;
};

// Prints "gpu-vs-cpu <stage> byte-identical cases: N, bytes compared: M" when the test
// program ends.
void PrintByteIdentitySummary(const char* stage);

#if defined(CONVEYOR_GPU_NVIDIA) || defined(CONVEYOR_GPU_AMD)

// `frame`'s planes uploaded to one device buffer, each row `pad` bytes wider than packed.
struct DeviceFrame {
  DeviceBuffer buffer;
  SourcePlanes planes{};
};
StatusOr<DeviceFrame> UploadPadded(const FrameView& frame, int pad, hipStream_t stream);

// A device buffer of `bytes` and a guard of kGuardBytes, all kCanary; and, after the
// kernels, the whole of it read back (the stream synchronised).
StatusOr<DeviceBuffer> GuardedDestination(size_t bytes, hipStream_t stream);
StatusOr<std::vector<uint8_t>> ReadBackGuarded(const DeviceBuffer& dst, hipStream_t stream);

#endif

}  // namespace conveyor::testing
