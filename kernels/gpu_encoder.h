// The GPU encoder as the rest of the tree sees it: device discovery and a frame encoder
// that runs the staged kernels band by band. Free of vendor types so it builds in every
// flavour; with CONVEYOR_GPU=off, ProbeGpus() reports why there is no device and
// Create() returns UNAVAILABLE.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encode_params.h"
#include "frame.h"
#include "status.h"

namespace conveyor {

// The GPU backend this binary was built with: "hip-nvidia", "hip-amd" or "none". The one
// name the API (WorkerStatus.backend, Started.backend), the metrics (build_info's
// gpu_backend) and the logs use; a worker on the CPU is "cpu" (WorkerInfo).
const char* GpuBackendName();

struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t total_memory = 0;
  int runtime_version = 0;
  int driver_version = 0;
};

struct GpuProbe {
  std::vector<GpuDeviceInfo> devices;
  std::string unavailable_reason;  // set when devices is empty
};

// Never fails: no driver, no device or a CPU-only build all come back as an empty list
// with the reason.
GpuProbe ProbeGpus();

class GpuJpegEncoder {
 public:
  static StatusOr<std::unique_ptr<GpuJpegEncoder>> Create(int device);
  ~GpuJpegEncoder();
  GpuJpegEncoder(const GpuJpegEncoder&) = delete;
  GpuJpegEncoder& operator=(const GpuJpegEncoder&) = delete;

  // Uploads the frame from pinned staging, enqueues every band's stages on the encode
  // stream with an event after each band, and reads each band back as soon as its event
  // fires. Blocks until the last band is home. Output is byte-identical to
  // CpuJpegEncoder for the same frame and parameters.
  StatusOr<std::vector<uint8_t>> Encode(const FrameView& frame, const EncodeParams& params,
                                        int band_rows_hint = 0, int first_band_rows_hint = 0);

  struct Impl;

 private:
  explicit GpuJpegEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor
