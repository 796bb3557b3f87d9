// The video engines of each GPU worker: FFmpeg's hardware device (media::HwDecodeDevice)
// on the worker's GPU, opened at start (decode auto or gpu) or when a session first needs
// it, and kept for the daemon's life, shared by every session on that worker.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw_decode.h"
#include "scheduler.h"

namespace conveyor {

class DecodeDevices {
 public:
  explicit DecodeDevices(const Scheduler* scheduler);

  struct Device {
    std::shared_ptr<media::HwDecodeDevice> device;  // null: none
    std::string why_none;                           // for a GPU worker without one
  };
  // Worker `index`'s device, opened at the first call (VA-API on `vaapi_node`, or the
  // GPU's own render node when it is empty). A device that fails to open is not tried
  // again: the reason stays, and the log says it once.
  Device For(int index, const std::string& vaapi_node);
  // Device bytes of decoded surfaces held on worker `index`'s way to its encoder.
  uint64_t HeldSurfaceBytes(int index) const;
  // Hardware decoders of worker `index`'s device closed and not yet torn down.
  uint64_t RetiredDecoders(int index) const;
  // Worker `index`'s video decode engines as the driver counts them; -1 when unknown or
  // its device is not open.
  int Engines(int index) const;

 private:
  const Scheduler* const scheduler_;
  mutable std::mutex mu_;
  std::vector<bool> tried_;
  std::vector<Device> devices_;
};

}  // namespace conveyor
