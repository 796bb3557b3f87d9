// Checks shared by every worker.
#include "worker.h"

namespace conveyor {

int RenditionWidth(const FrameRequest& request, size_t i) {
  const int w = request.renditions[i].width;
  return w == 0 ? request.frame.width : w;
}

int RenditionHeight(const FrameRequest& request, size_t i) {
  const int h = request.renditions[i].height;
  return h == 0 ? request.frame.height : h;
}

bool RenditionIsScaled(const FrameRequest& request, size_t i) {
  return RenditionWidth(request, i) != request.frame.width || RenditionHeight(request, i) != request.frame.height;
}

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
    const int w = RenditionWidth(request, i), h = RenditionHeight(request, i);
    if (r.width < 0 || r.height < 0 || w > options.max_width || h > options.max_height) {
      return InvalidArgument(where + ": size " + std::to_string(r.width) + "x" + std::to_string(r.height) +
                             " is outside 1x1.." + std::to_string(options.max_width) + "x" +
                             std::to_string(options.max_height));
    }
  }
  if (!request.on_done) return InvalidArgument("on_done callback is required");
  return OkStatus();
}

}  // namespace conveyor
