#include "decode_devices.h"

#include <string>

#include <spdlog/spdlog.h>

namespace conveyor {

DecodeDevices::DecodeDevices(const Scheduler* scheduler)
    : scheduler_(scheduler), tried_(scheduler->num_workers(), false), devices_(scheduler->num_workers()) {}

DecodeDevices::Device DecodeDevices::For(int index, const std::string& vaapi_node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(devices_.size())) return {};
  Device& d = devices_[index];
  if (tried_[index]) return d;
  tried_[index] = true;
  const WorkerSlot& w = scheduler_->worker(index);
  if (!w.info.is_gpu()) return d;  // the CPU worker: nothing to say, the CPU decodes
  const std::optional<DecodeTarget> target = w.worker->Decoding();
  if (!target) {
    d.why_none = w.worker->Describe() + " has no video engines this build reaches";
    return d;
  }
  StatusOr<std::shared_ptr<media::HwDecodeDevice>> opened =
      target->api == "cuda" ? media::HwDecodeDevice::OpenCuda(target->device, target->stream, target->context)
                            : media::HwDecodeDevice::OpenVaapi(target->pci_bus_id, vaapi_node);
  if (opened.ok()) {
    d.device = std::move(opened).value();
    const int engines = d.device->engines();
    spdlog::info("decode: {} decodes through FFmpeg's {} hwaccel ({} frames, {})", w.worker->Describe(), target->api,
                 target->device_frames() ? "device" : "host",
                 engines > 0 ? std::to_string(engines) + " decode engines" : "decode engines uncounted");
  } else {
    d.why_none = "the video engines of " + w.worker->Describe() + " did not open: " + opened.status().message();
    spdlog::warn("decode: {}; its sessions decode on the CPU", d.why_none);
  }
  return d;
}

uint64_t DecodeDevices::HeldSurfaceBytes(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(devices_.size()) || !devices_[index].device) return 0;
  return devices_[index].device->held_surface_bytes();
}

uint64_t DecodeDevices::RetiredDecoders(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(devices_.size()) || !devices_[index].device) return 0;
  return devices_[index].device->retired_decoders();
}

int DecodeDevices::Engines(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(devices_.size()) || !devices_[index].device) return -1;
  return devices_[index].device->engines();
}

}  // namespace conveyor
