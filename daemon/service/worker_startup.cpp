// conveyord's workers from its config (see worker_startup.h).
#include "worker_startup.h"

#include <atomic>
#include <functional>

#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

// Test only (--test-fault-every N): every Nth worker call fails, counted over all
// workers, so that the soak test can check that a fault ends only the session whose frame
// it hit. The message says it was injected, so nobody mistakes it for a real fault.
std::function<Status(const std::string&)> EveryNthCallFails(int every) {
  auto calls = std::make_shared<std::atomic<uint64_t>>(0);
  return [every, calls](const std::string&) -> Status {
    const uint64_t n = calls->fetch_add(1) + 1;
    if (n % static_cast<uint64_t>(every) != 0) return OkStatus();
    return Internal("injected test fault " + std::to_string(n / every) + " (--test-fault-every " +
                    std::to_string(every) + ")");
  };
}

WorkerOptions OptionsFromConfig(const config::DaemonConfig& c) {
  WorkerOptions options;
  options.slots = c.gpu_slots;
  options.max_launch_frames = c.gpu_launch_frames;
  options.max_width = c.max_width;
  options.max_height = c.max_height;
  options.cpu_threads = c.cpu_threads;
  // Validate() accepts only these names.
  options.host_wait = c.gpu_wait == "spin"    ? WorkerOptions::HostWait::kSpin
                      : c.gpu_wait == "yield" ? WorkerOptions::HostWait::kYield
                      : c.gpu_wait == "block" ? WorkerOptions::HostWait::kBlock
                                              : WorkerOptions::HostWait::kAuto;
  // Runs of timed frames feed the stage histograms and the overlap gauge; timing every
  // frame would cost 10-20 % of a GPU's frames/s (StageTiming).
  options.stage_timing = StageTiming::Sampled();
  return options;
}

}  // namespace

std::string CpuFallbackReason(const std::string& workers, const std::string& gpu_backend, const GpuProbe& probe,
                              const std::vector<std::string>& unusable) {
  if (workers == "cpu" || gpu_backend == "none") return "";
  if (probe.devices.empty()) return probe.unavailable_reason;  // "no usable GPU: ..."
  std::string why = probe.devices.size() == 1 ? "its one GPU could not be opened: "
                                              : "none of its " + std::to_string(probe.devices.size()) +
                                                    " GPUs could be opened: ";
  for (size_t i = 0; i < unusable.size(); ++i) why += (i > 0 ? "; " : "") + unusable[i];
  return why;
}

StatusOr<StartedWorkers> StartWorkers(const config::DaemonConfig& c, int test_fault_every) {
  WorkerOptions options = OptionsFromConfig(c);
  if (test_fault_every > 0) {
    spdlog::warn("test hook: every {}th worker call fails (--test-fault-every)", test_fault_every);
    options.test_fault = EveryNthCallFails(test_fault_every);
  }
  StartedWorkers started;
  if (c.workers != "cpu") {
    const GpuProbe probe = ProbeGpus();
    std::vector<std::string> unusable;
    for (const GpuDeviceInfo& d : probe.devices) {
      StatusOr<std::unique_ptr<Worker>> w = MakeGpuWorker(d.index, options);
      if (!w.ok()) {
        unusable.push_back("gpu " + std::to_string(d.index) + " (" + d.name + "): " + w.status().ToString());
        spdlog::warn("{}: not used", unusable.back());
        continue;
      }
      spdlog::info("worker: {} ({} MiB)", (*w)->Describe(), d.total_memory >> 20);
      started.workers.push_back(std::move(w).value());
    }
    if (probe.devices.empty()) spdlog::info("no GPU: {}", probe.unavailable_reason);
    if (started.workers.empty() && c.workers == "gpu") {
      return Unavailable("workers = \"gpu\" but no GPU worker could start");
    }
    if (started.workers.empty()) started.cpu_fallback = CpuFallbackReason(c.workers, GpuBackendName(), probe, unusable);
  }
  if (started.workers.empty()) {
    std::unique_ptr<Worker> cpu = MakeCpuWorker(options);
    spdlog::info("worker: {}", cpu->Describe());
    started.workers.push_back(std::move(cpu));
  }
  if (!started.cpu_fallback.empty()) {
    spdlog::warn("workers = \"auto\" serves on the CPU on this {} build: {}. Set workers = \"gpu\" to refuse to "
                 "start instead",
                 GpuBackendName(), started.cpu_fallback);
  }
  return started;
}

}  // namespace conveyor
