// What the decode balancer measures: how busy a GPU's video engines are (NVIDIA: NVML's
// decoder utilization, read through the driver's libnvidia-ml.so.1, loaded at run time so
// the daemon needs no NVIDIA package to build or start) and how many of the host's cores
// are idle (/proc/stat). Both are rates over the time since the last reading.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "status.h"

namespace conveyor {

// The engines' busy share, 0..1, of the GPU at `pci_bus_id` ("0000:c1:00.0"), over NVML's
// own last sampling period. UNAVAILABLE where NVML is not there (no NVIDIA driver, an AMD
// GPU) or does not know the device.
class EngineUtilization {
 public:
  static std::unique_ptr<EngineUtilization> Open();  // null without NVML
  ~EngineUtilization();
  StatusOr<double> Busy(const std::string& pci_bus_id);

 private:
  EngineUtilization() = default;
  struct Api;
  std::unique_ptr<Api> api_;
};

// Idle cores of the host since the previous call (the first call: since boot).
class CpuIdle {
 public:
  StatusOr<double> IdleCores();

 private:
  std::mutex mu_;
  uint64_t last_idle_ = 0, last_total_ = 0;
};

}  // namespace conveyor
