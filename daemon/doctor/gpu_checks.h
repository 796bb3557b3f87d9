// The checks that need the GPU runtime: device access, devices, a synchronous copy, a
// kernel, copy/kernel overlap and pinned against pageable bandwidth. gpu_checks.cpp
// implements them for HIP (and CUDA through hip_compat.h); gpu_checks_none.cpp is the
// CPU-only build's stand-in.
#pragma once

#include <string>
#include <vector>

#include "doctor.h"
#include "doctor_report.h"

namespace conveyor::doctor {

struct GpuReport {
  bool has_backend = false;
  std::string backend = "none";       // GpuBackendName(): "hip-amd", "hip-nvidia" or "none"
  bool device_found = false;
  std::string no_device_reason;       // the runtime's words, when device_found is false
  std::vector<CheckResult> access;    // device nodes and groups
  std::vector<CheckResult> devices;   // runtime, versions, one line per device
  std::vector<CheckResult> copies;    // sync copy, kernel, overlap, bandwidth
};

GpuReport RunGpuChecks(const DoctorOptions& options);

// Helpers shared with the tests: "13.0" for CUDA's 13000, "5.2.21153" for HIP's
// 50221153 (major*10^7 + minor*10^5 + patch).
std::string FormatCudaVersion(int v);
std::string FormatHipVersion(int v);

// Overlap as the fraction of the shorter operation hidden behind the longer:
// (copy + kernel - together) / min(copy, kernel), clamped to [0, 1].
double OverlapFraction(double copy_ms, double kernel_ms, double together_ms);
// ok at >= 0.5, warn below, with the numbers in the detail.
CheckResult OverlapVerdict(double copy_ms, double kernel_ms, double together_ms, size_t bytes);
// ok unless pinned is clearly (10%) slower than pageable.
CheckResult BandwidthVerdict(const std::string& direction, double pinned_gbps, double pageable_gbps, size_t bytes,
                             int reps);

}  // namespace conveyor::doctor
