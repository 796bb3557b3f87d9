// CONVEYOR_GPU=off: no runtime to ask. The device nodes are still looked at, so the
// operator learns whether a GPU build would find a driver here.
#include "gpu_checks.h"
#include "host_access.h"

namespace conveyor::doctor {

GpuReport RunGpuChecks(const DoctorOptions&) {
  GpuReport rep;
  rep.has_backend = false;
  rep.backend = "none";
  rep.no_device_reason = "built without GPU support (CONVEYOR_GPU=off)";
  CheckResult backend;
  backend.name = "gpu backend";
  backend.verdict = Verdict::kSkip;
  backend.detail = "none: this build has no GPU backend (CONVEYOR_GPU=off); build with CONVEYOR_GPU=amd or nvidia";
  rep.devices.push_back(backend);
  rep.access.push_back(CheckDeviceNode("/dev/kfd", "amdgpu (KFD)", false));
  rep.access.push_back(CheckDeviceNode("/dev/nvidiactl", "NVIDIA", false));
  return rep;
}

}  // namespace conveyor::doctor
