// CONVEYOR_GPU=off: no GPU references to measure.
#include "gpu_reference.h"

namespace conveyor::bench {

StatusOr<CopyBandwidth> MeasureCopyBandwidth(int, size_t, int) { return Unavailable("no GPU in this build"); }
StatusOr<double> MeasureH2dBoundFps(int, size_t, int) { return Unavailable("no GPU in this build"); }
StatusOr<double> MeasureRegisteredH2dFps(int, const std::vector<uint8_t*>&, size_t, int) {
  return Unavailable("no GPU in this build");
}
StatusOr<double> MeasureDuplexBoundFps(int, size_t, size_t, int) { return Unavailable("no GPU in this build"); }
StatusOr<std::vector<FrameTimes>> RunSerial(int, const std::vector<const OwnedFrame*>&,
                                            const std::vector<EncodeParams>&) {
  return Unavailable("no GPU in this build");
}

}  // namespace conveyor::bench
