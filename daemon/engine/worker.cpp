// Checks shared by every worker.
#include "worker.h"

namespace conveyor {

Status ValidateRequest(const FrameRequest& request, const WorkerOptions& options) {
  RETURN_IF_ERROR(ValidateFrame(request.frame));
  if (request.frame.width > options.max_width || request.frame.height > options.max_height) {
    return InvalidArgument("frame " + std::to_string(request.frame.width) + "x" +
                           std::to_string(request.frame.height) + " exceeds this worker's limit of " +
                           std::to_string(options.max_width) + "x" + std::to_string(options.max_height));
  }
  if (request.renditions.empty()) return InvalidArgument("renditions: at least one is required");
  for (size_t i = 0; i < request.renditions.size(); ++i) {
    const Rendition& r = request.renditions[i];
    const std::string where = "renditions[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ValidateParams(r.params).WithContext(where));
    const bool same = (r.width == 0 || r.width == request.frame.width) &&
                      (r.height == 0 || r.height == request.frame.height);
    if (!same) {
      return Unimplemented(where + ": scaling to " + std::to_string(r.width) + "x" +
                           std::to_string(r.height) + " is not available yet");
    }
  }
  if (!request.on_done) return InvalidArgument("on_done callback is required");
  return OkStatus();
}

}  // namespace conveyor
