// CONVEYOR_GPU=off: there is no GPU worker to make.
#include "gpu_encoder.h"
#include "worker.h"

namespace conveyor {

StatusOr<std::unique_ptr<Worker>> MakeGpuWorker(int, const WorkerOptions&) {
  return Unavailable(ProbeGpus().unavailable_reason);
}

}  // namespace conveyor
