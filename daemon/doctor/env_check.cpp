// Descriptions of the GPU runtime's environment variables (see env_check.h).
#include "env_check.h"

#include <cstdlib>

namespace conveyor::doctor {

namespace {

bool IsTruthy(const std::string& v) { return !v.empty() && v != "0" && v != "false" && v != "off"; }

CheckResult Line(const std::string& name, Verdict verdict, const std::optional<std::string>& value,
                 const std::string& effect) {
  CheckResult r;
  r.name = name;
  r.verdict = verdict;
  r.detail = (value ? "=" + (value->empty() ? std::string("\"\"") : *value) : std::string("unset")) + " -- " + effect;
  return r;
}

CheckResult VisibleDevices(const std::string& name, const std::optional<std::string>& v, const std::string& scope) {
  if (!v) return Line(name, Verdict::kOk, v, "every device is visible to " + scope);
  if (v->empty() || *v == "-1" || *v == "none" || *v == "NoDevFiles") {
    return Line(name, Verdict::kWarn, v, "hides every device from " + scope);
  }
  return Line(name, Verdict::kOk, v,
              "only these devices are visible to " + scope + ", renumbered from 0 in this order");
}

}  // namespace

const std::vector<std::string>& DoctorEnvVars() {
  static const std::vector<std::string> kVars = {
      "HSA_ENABLE_SDMA",     "HSA_ENABLE_INTERRUPT",  "HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES",
      "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_MAX_HW_QUEUES",        "CUDA_DEVICE_MAX_CONNECTIONS",
      "HIP_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING",  "AMD_SERIALIZE_KERNEL",     "AMD_SERIALIZE_COPY",
  };
  return kVars;
}

CheckResult DescribeEnv(const std::string& name, const std::optional<std::string>& v) {
  if (name == "HSA_ENABLE_SDMA") {
    if (!v) return Line(name, Verdict::kOk, v, "ROCr's default: copies use the SDMA (DMA) engines where the GPU has them");
    if (*v == "0") {
      return Line(name, Verdict::kWarn, v,
                  "SDMA off: copies run as blit kernels on the compute queues and compete with kernels for overlap");
    }
    return Line(name, Verdict::kOk, v, "copies use the SDMA engines, so they can run beside kernels");
  }
  if (name == "HSA_ENABLE_INTERRUPT") {
    if (!v) return Line(name, Verdict::kOk, v, "ROCr's default: completion signals wake waiters by interrupt");
    if (*v == "0") {
      return Line(name, Verdict::kOk, v, "completion is polled: lower wait latency, a CPU core busy while waiting");
    }
    return Line(name, Verdict::kOk, v, "completion signals wake waiters by interrupt");
  }
  if (name == "HSA_OVERRIDE_GFX_VERSION") {
    if (!v) return Line(name, Verdict::kOk, v, "ROCr reports each GPU's own gfx target");
    return Line(name, Verdict::kWarn, v,
                "ROCr reports this gfx target instead of the GPU's own, so code objects for it load; a wrong value "
                "faults or computes garbage");
  }
  if (name == "HIP_VISIBLE_DEVICES") return VisibleDevices(name, v, "HIP");
  if (name == "ROCR_VISIBLE_DEVICES") return VisibleDevices(name, v, "every ROCr (HSA) user");
  if (name == "CUDA_VISIBLE_DEVICES") return VisibleDevices(name, v, "CUDA (and HIP, which honours it too)");
  if (name == "GPU_MAX_HW_QUEUES") {
    if (!v) return Line(name, Verdict::kOk, v, "HIP's default: streams share 4 hardware queues per device");
    if (*v == "1") {
      return Line(name, Verdict::kWarn, v, "every stream shares one hardware queue: streams cannot overlap");
    }
    return Line(name, Verdict::kOk, v, "HIP maps streams onto this many hardware queues per device; more streams share them");
  }
  if (name == "CUDA_DEVICE_MAX_CONNECTIONS") {
    if (!v) return Line(name, Verdict::kOk, v, "CUDA's default: 8 hardware work queues per device");
    if (*v == "1") {
      return Line(name, Verdict::kWarn, v, "one hardware work queue: streams get false dependencies and overlap less");
    }
    return Line(name, Verdict::kOk, v, "CUDA maps streams onto this many hardware work queues; more streams share them");
  }
  if (name == "HIP_LAUNCH_BLOCKING" || name == "CUDA_LAUNCH_BLOCKING") {
    const std::string runtime = name == "HIP_LAUNCH_BLOCKING" ? "HIP" : "CUDA";
    if (!v || !IsTruthy(*v)) return Line(name, Verdict::kOk, v, runtime + " launches return before the work finishes (asynchronous)");
    return Line(name, Verdict::kWarn, v,
                "every " + runtime + " launch waits for completion: nothing overlaps (a debugging setting)");
  }
  if (name == "AMD_SERIALIZE_KERNEL" || name == "AMD_SERIALIZE_COPY") {
    const std::string what = name == "AMD_SERIALIZE_KERNEL" ? "kernel" : "copy";
    if (!v || *v == "0") return Line(name, Verdict::kOk, v, what + " enqueues are not serialised");
    std::string when = "waits for the device to go idle";
    if (*v == "1") when += " before each " + what;
    else if (*v == "2") when += " after each " + what;
    else when += " before and after each " + what;
    return Line(name, Verdict::kWarn, v, "HIP " + when + ": nothing overlaps (a debugging setting)");
  }
  return Line(name, Verdict::kOk, v, "not a variable the doctor knows");
}

std::vector<CheckResult> DescribeEnvironment(const EnvLookup& lookup) {
  std::vector<CheckResult> out;
  for (const std::string& name : DoctorEnvVars()) out.push_back(DescribeEnv(name, lookup(name)));
  return out;
}

std::optional<std::string> GetEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace conveyor::doctor
