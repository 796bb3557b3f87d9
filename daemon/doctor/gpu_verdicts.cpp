// The GPU checks' pure parts: version formatting and the overlap and bandwidth verdicts,
// built in every flavour so the tests cover them without a device.
#include <algorithm>
#include <cctype>

#include "gpu_checks.h"

namespace conveyor::doctor {

std::string FormatCudaVersion(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string FormatHipVersion(int v) {
  if (v < 10000000) return std::to_string(v);
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100) + "." + std::to_string(v % 100000);
}

double OverlapFraction(double copy_ms, double kernel_ms, double together_ms) {
  const double shorter = std::min(copy_ms, kernel_ms);
  if (shorter <= 0) return 0;
  return std::clamp((copy_ms + kernel_ms - together_ms) / shorter, 0.0, 1.0);
}

CheckResult OverlapVerdict(double copy_ms, double kernel_ms, double together_ms, size_t bytes) {
  CheckResult r;
  r.name = "overlap";
  const double f = OverlapFraction(copy_ms, kernel_ms, together_ms);
  r.detail = "H2D copy of " + FormatBytes(static_cast<double>(bytes)) + " " + FormatFixed(copy_ms, 2) +
             " ms + busy kernel " + FormatFixed(kernel_ms, 2) + " ms alone = " +
             FormatFixed(copy_ms + kernel_ms, 2) + " ms; on two streams together " + FormatFixed(together_ms, 2) +
             " ms: " + FormatFixed(100.0 * f, 0) + "% of the shorter hidden";
  if (f >= 0.5) {
    r.verdict = Verdict::kOk;
  } else {
    r.verdict = Verdict::kWarn;
    r.detail += f < 0.1 ? " -- no overlap" : " -- little overlap";
    r.detail += ": copies and kernels serialise (see HSA_ENABLE_SDMA, GPU_MAX_HW_QUEUES, *_LAUNCH_BLOCKING, "
                "AMD_SERIALIZE_* below)";
  }
  r.metrics = {{"copy_ms", copy_ms}, {"kernel_ms", kernel_ms}, {"together_ms", together_ms},
               {"overlap_fraction", f}};
  return r;
}

CheckResult BandwidthVerdict(const std::string& direction, double pinned_gbps, double pageable_gbps, size_t bytes,
                             int reps) {
  CheckResult r;
  r.name = direction + " bandwidth";
  const double ratio = pageable_gbps > 0 ? pinned_gbps / pageable_gbps : 0;
  r.detail = "pinned " + FormatFixed(pinned_gbps, 1) + " GB/s, pageable " + FormatFixed(pageable_gbps, 1) +
             " GB/s, pinned/pageable " + FormatFixed(ratio, 2) + "x (" + FormatBytes(static_cast<double>(bytes)) +
             ", best of " + std::to_string(reps) + ")";
  if (pinned_gbps > 0 && ratio >= 0.9) {
    r.verdict = Verdict::kOk;
  } else {
    r.verdict = Verdict::kWarn;
    r.detail += " -- pinned is not faster than pageable: check the PCIe link and IOMMU settings";
  }
  std::string key = direction;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  r.metrics = {{key + "_pinned_gbps", pinned_gbps}, {key + "_pageable_gbps", pageable_gbps},
               {key + "_pinned_over_pageable", ratio}};
  return r;
}

}  // namespace conveyor::doctor
