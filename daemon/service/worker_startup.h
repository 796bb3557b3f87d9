// The workers conveyord starts from its config: a GPU worker per usable device unless
// workers = "cpu", else the CPU worker; and, when workers = "auto" on a GPU build ends on
// the CPU, why, so that the operator hears of it (a warning, conveyor_workers_cpu_fallback
// and a line on /readyz) rather than finding a GPU host encoding on its cores.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon_config.h"
#include "gpu_encoder.h"
#include "status.h"
#include "worker.h"

namespace conveyor {

struct StartedWorkers {
  std::vector<std::unique_ptr<Worker>> workers;
  std::string cpu_fallback;  // CpuFallbackReason(), "" unless workers = "auto" fell back
};

// `test_fault_every` > 0 (--test-fault-every) makes every Nth worker call fail.
// UNAVAILABLE when workers = "gpu" and no GPU worker starts.
StatusOr<StartedWorkers> StartWorkers(const config::DaemonConfig& c, int test_fault_every);

// Why workers = `workers` serves on the CPU although the build has a GPU backend
// (`gpu_backend`, GpuBackendName(): "none" on a CPU build), given the probe and the devices
// that could not be opened ("gpu N (name): error"); "" when no GPU worker was wanted:
// workers = "cpu", or a CPU build.
std::string CpuFallbackReason(const std::string& workers, const std::string& gpu_backend, const GpuProbe& probe,
                              const std::vector<std::string>& unusable);

}  // namespace conveyor
