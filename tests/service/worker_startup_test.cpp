// When workers = "auto" ends on the CPU, the daemon says why on a GPU build (the operator
// installed it for the GPU) and stays quiet where the CPU is what was asked for or all
// the build has.
#include <gtest/gtest.h>

#include "worker_startup.h"

namespace conveyor {
namespace {

GpuProbe NoDevice() {
  GpuProbe p;
  p.unavailable_reason = "no usable GPU: hipGetDeviceCount returned hipErrorNoDevice";
  return p;
}

GpuProbe Devices(int n) {
  GpuProbe p;
  for (int i = 0; i < n; ++i) {
    GpuDeviceInfo d;
    d.index = i;
    d.name = "NVIDIA H200";
    p.devices.push_back(d);
  }
  return p;
}

TEST(CpuFallback, AGpuBuildWithNoDeviceSaysWhatTheProbeSaid) {
  EXPECT_EQ(CpuFallbackReason("auto", "hip-nvidia", NoDevice(), {}),
            "no usable GPU: hipGetDeviceCount returned hipErrorNoDevice");
}

TEST(CpuFallback, DevicesThatCannotBeOpenedAreEachNamed) {
  EXPECT_EQ(CpuFallbackReason("auto", "hip-amd", Devices(1), {"gpu 0 (NVIDIA H200): INTERNAL: out of memory"}),
            "its one GPU could not be opened: gpu 0 (NVIDIA H200): INTERNAL: out of memory");
  EXPECT_EQ(CpuFallbackReason("auto", "hip-nvidia", Devices(2), {"gpu 0 (a): INTERNAL: x", "gpu 1 (b): INTERNAL: y"}),
            "none of its 2 GPUs could be opened: gpu 0 (a): INTERNAL: x; gpu 1 (b): INTERNAL: y");
}

TEST(CpuFallback, TheCpuAskedForOrACpuBuildIsNoFallback) {
  EXPECT_EQ(CpuFallbackReason("cpu", "hip-nvidia", NoDevice(), {}), "");
  EXPECT_EQ(CpuFallbackReason("auto", "none", NoDevice(), {}), "");
}

}  // namespace
}  // namespace conveyor
