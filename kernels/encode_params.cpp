// Encode parameter names and validation.
#include "encode_params.h"

namespace conveyor {

const char* SubsamplingName(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return "420";
    case Subsampling::k422: return "422";
    case Subsampling::k444: return "444";
  }
  return "unknown";
}

StatusOr<Subsampling> ParseSubsampling(const std::string& name) {
  if (name == "420" || name == "4:2:0") return Subsampling::k420;
  if (name == "422" || name == "4:2:2") return Subsampling::k422;
  if (name == "444" || name == "4:4:4") return Subsampling::k444;
  return InvalidArgument("unknown subsampling '" + name + "' (expected 420, 422 or 444)");
}

Status ValidateParams(const EncodeParams& p) {
  if (p.quality < 1 || p.quality > 100) {
    return InvalidArgument("quality " + std::to_string(p.quality) + " is out of range 1..100");
  }
  if (p.subsampling != Subsampling::k420 && p.subsampling != Subsampling::k422 &&
      p.subsampling != Subsampling::k444) {
    return InvalidArgument("unknown subsampling");
  }
  if (p.restart_interval != kRestartAuto &&
      (p.restart_interval < 0 || p.restart_interval > kMaxRestartInterval)) {
    return InvalidArgument("restart_interval " + std::to_string(p.restart_interval) +
                           " is out of range 0.." + std::to_string(kMaxRestartInterval) +
                           " (or auto)");
  }
  if (p.exif_orientation < 0 || p.exif_orientation > 8) {
    return InvalidArgument("exif_orientation " + std::to_string(p.exif_orientation) + " is out of range 0..8");
  }
  return OkStatus();
}

}  // namespace conveyor
