// CONVEYOR_GPU=off: the GPU encoder API with no backend behind it.
#include "gpu_encoder.h"

namespace conveyor {

struct GpuJpegEncoder::Impl {};

const char* GpuBackendName() { return "none"; }

GpuProbe ProbeGpus() {
  GpuProbe p;
  p.unavailable_reason = "built without GPU support (CONVEYOR_GPU=off)";
  return p;
}

GpuJpegEncoder::GpuJpegEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuJpegEncoder::~GpuJpegEncoder() = default;

StatusOr<std::unique_ptr<GpuJpegEncoder>> GpuJpegEncoder::Create(int) {
  return Unavailable("built without GPU support (CONVEYOR_GPU=off)");
}

StatusOr<std::vector<uint8_t>> GpuJpegEncoder::Encode(const FrameView&, const EncodeParams&, int, int) {
  return Unavailable("built without GPU support (CONVEYOR_GPU=off)");
}

}  // namespace conveyor
