// Checks shared by every worker.
#include "worker.h"

#include "tile_plan.h"

namespace conveyor {

int OrientedWidth(const FrameRequest& request) {
  return request.orientation.transpose ? request.frame.height : request.frame.width;
}

int OrientedHeight(const FrameRequest& request) {
  return request.orientation.transpose ? request.frame.width : request.frame.height;
}

PixelFormat TurnedFormat(const FrameRequest& request) {
  // The orientation stage turns yuv422p's chroma across rows into yuv444p (MakeOrientPlan).
  const bool widened = request.orientation.transpose && request.frame.format == PixelFormat::kYuv422p;
  return widened ? PixelFormat::kYuv444p : request.frame.format;
}

int RenditionWidth(const FrameRequest& request, size_t i) {
  const int w = request.renditions[i].width;
  return w == 0 ? OrientedWidth(request) : w;
}

int RenditionHeight(const FrameRequest& request, size_t i) {
  const int h = request.renditions[i].height;
  return h == 0 ? OrientedHeight(request) : h;
}

bool RenditionIsScaled(const FrameRequest& request, size_t i) {
  return RenditionWidth(request, i) != OrientedWidth(request) || RenditionHeight(request, i) != OrientedHeight(request);
}

namespace {

// The worker's buffers hold max_width x max_height pictures either way round.
bool Fits(int w, int h, const WorkerOptions& o) {
  return (w <= o.max_width && h <= o.max_height) || (w <= o.max_height && h <= o.max_width);
}

}  // namespace

Status ValidateSpriteSize(int width, int height, const WorkerOptions& options) {
  if (width < 1 || height < 1 || !Fits(width, height, options)) {
    return InvalidArgument("sprite " + std::to_string(width) + "x" + std::to_string(height) +
                           " exceeds this worker's limit of " + std::to_string(options.max_width) + "x" +
                           std::to_string(options.max_height));
  }
  return OkStatus();
}

Status ValidateRequest(const FrameRequest& request, const WorkerOptions& options) {
  RETURN_IF_ERROR(ValidateFrame(request.frame));
  if (!Fits(request.frame.width, request.frame.height, options)) {
    return InvalidArgument("frame " + std::to_string(request.frame.width) + "x" +
                           std::to_string(request.frame.height) + " exceeds this worker's limit of " +
                           std::to_string(options.max_width) + "x" + std::to_string(options.max_height));
  }
  if (request.device.p010 && (!request.device.enabled || request.frame.format != PixelFormat::kNv12)) {
    return InvalidArgument("device.p010: only device input narrowed to nv12 holds 16-bit samples");
  }
  if (request.device.enabled) {
    const FrameView& f = request.frame;
    const int sample = request.device.p010 ? 2 : 1;
    const int chroma_row = 2 * ((f.width + 1) / 2) * sample;
    if (f.format != PixelFormat::kNv12 || f.stride[0] < f.width * sample || f.stride[1] < chroma_row) {
      return InvalidArgument("device input: only nv12 (or p010) surfaces with rows at least a frame wide are taken");
    }
  }
  if (request.deinterlace.enabled) {
    const FrameView &f = request.frame, &p = request.deinterlace.prev, &n = request.deinterlace.next;
    RETURN_IF_ERROR(ValidateFrame(p).WithContext("deinterlace.prev"));
    RETURN_IF_ERROR(ValidateFrame(n).WithContext("deinterlace.next"));
    for (const FrameView* other : {&p, &n}) {
      if (other->format != f.format || other->width != f.width || other->height != f.height) {
        return InvalidArgument("deinterlace: the frames before and after are not the frame's format and size");
      }
    }
    const size_t three = 3 * PackedFrameSize(f.format, f.width, f.height);
    if (three > PackedFrameSize(PixelFormat::kRgba, options.max_width, options.max_height)) {
      return InvalidArgument("deinterlace: three " + std::to_string(f.width) + "x" + std::to_string(f.height) + " " +
                             PixelFormatName(f.format) + " frames are more than this worker's slot holds");
    }
  }
  if (request.renditions.empty()) return InvalidArgument("renditions: at least one is required");
  if (request.sprite != nullptr &&
      (request.device.enabled || request.deinterlace.enabled || !request.orientation.identity())) {
    return InvalidArgument("sprite: a sprite is encoded as it is, without device input, deinterlacing or a turn");
  }
  for (size_t i = 0; i < request.renditions.size(); ++i) {
    const Rendition& r = request.renditions[i];
    if (!r.tiled()) continue;
    const std::string where = "renditions[" + std::to_string(i) + "].tiles";
    if (request.renditions.size() != 1 || request.sprite != nullptr) {
      return InvalidArgument(where + ": a tiled rendition is its request's only one, and not of a sprite");
    }
    const FrameView& sprite = r.tiles.sprite->frame();
    const PixelFormat turned = TurnedFormat(request);
    if (sprite.format != turned) {
      return InvalidArgument(where + ": the frame is " + PixelFormatName(turned) + ", the sprite " +
                             PixelFormatName(sprite.format));
    }
    if (r.tiles.cells.empty()) return InvalidArgument(where + ": no cells");
    for (const auto& [x, y] : r.tiles.cells) {
      RETURN_IF_ERROR(MakeTilePlan(turned, OrientedWidth(request), OrientedHeight(request), r.width, r.height,
                                   sprite.width, sprite.height, x, y)
                          .status()
                          .WithContext(where));
    }
  }
  for (size_t i = 0; i < request.renditions.size(); ++i) {
    const Rendition& r = request.renditions[i];
    const std::string where = "renditions[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ValidateParams(r.params).WithContext(where));
    const int w = RenditionWidth(request, i), h = RenditionHeight(request, i);
    if (r.width < 0 || r.height < 0 || !Fits(w, h, options)) {
      return InvalidArgument(where + ": size " + std::to_string(r.width) + "x" + std::to_string(r.height) +
                             " is outside 1x1.." + std::to_string(options.max_width) + "x" +
                             std::to_string(options.max_height));
    }
  }
  if (!request.on_done) return InvalidArgument("on_done callback is required");
  return OkStatus();
}

}  // namespace conveyor
