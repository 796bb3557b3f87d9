#include "decode_load.h"

#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace conveyor {

// The four NVML entry points used, as nvml.h declares them (the handle is an opaque
// pointer, the result an enum whose success is 0).
struct EngineUtilization::Api {
  void* lib = nullptr;
  using Init = int (*)();
  using Shutdown = int (*)();
  using HandleByPciBusId = int (*)(const char*, void**);
  using DecoderUtilization = int (*)(void*, unsigned int*, unsigned int*);
  Shutdown shutdown = nullptr;
  HandleByPciBusId handle_by_pci_bus_id = nullptr;
  DecoderUtilization decoder_utilization = nullptr;
  std::mutex mu;  // NVML is thread-safe; this only keeps one reading at a time
};

std::unique_ptr<EngineUtilization> EngineUtilization::Open() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto api = std::make_unique<Api>();
  api->lib = lib;
  auto init = reinterpret_cast<Api::Init>(dlsym(lib, "nvmlInit_v2"));
  api->shutdown = reinterpret_cast<Api::Shutdown>(dlsym(lib, "nvmlShutdown"));
  api->handle_by_pci_bus_id = reinterpret_cast<Api::HandleByPciBusId>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  api->decoder_utilization = reinterpret_cast<Api::DecoderUtilization>(dlsym(lib, "nvmlDeviceGetDecoderUtilization"));
  if (init == nullptr || api->shutdown == nullptr || api->handle_by_pci_bus_id == nullptr ||
      api->decoder_utilization == nullptr || init() != 0) {
    dlclose(lib);
    return nullptr;
  }
  std::unique_ptr<EngineUtilization> u(new EngineUtilization());
  u->api_ = std::move(api);
  return u;
}

EngineUtilization::~EngineUtilization() {
  if (api_) {
    api_->shutdown();
    dlclose(api_->lib);
  }
}

StatusOr<double> EngineUtilization::Busy(const std::string& pci_bus_id) {
  std::lock_guard<std::mutex> lock(api_->mu);
  void* device = nullptr;
  int rc = api_->handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
  if (rc != 0) return Unavailable("nvmlDeviceGetHandleByPciBusId(" + pci_bus_id + "): error " + std::to_string(rc));
  unsigned int percent = 0, period_us = 0;
  rc = api_->decoder_utilization(device, &percent, &period_us);
  if (rc != 0) return Unavailable("nvmlDeviceGetDecoderUtilization: error " + std::to_string(rc));
  return percent / 100.0;
}

StatusOr<double> CpuIdle::IdleCores() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return Unavailable("/proc/stat: no cpu line");
  std::istringstream fields(line.substr(4));
  uint64_t v[8] = {};
  for (uint64_t& x : v) fields >> x;  // user nice system idle iowait irq softirq steal
  uint64_t total = 0;
  for (uint64_t x : v) total += x;
  const uint64_t idle = v[3] + v[4];
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t d_total = total - last_total_, d_idle = idle - last_idle_;
  last_total_ = total;
  last_idle_ = idle;
  if (d_total == 0) return Unavailable("/proc/stat: no time has passed");
  return static_cast<double>(d_idle) / static_cast<double>(d_total) * static_cast<double>(cores > 0 ? cores : 1);
}

}  // namespace conveyor
