// A sprite in device memory, cleared to black on the stream that first uses it.
#include "device_sprite.h"

#include "tile_plan.h"

namespace conveyor {

StatusOr<std::shared_ptr<DeviceSprite>> DeviceSprite::Create(PixelFormat format, int width, int height,
                                                             ColorMatrix matrix, ColorRange range, hipStream_t stream) {
  auto sprite = std::make_shared<DeviceSprite>();
  const size_t bytes = PackedFrameSize(format, width, height);
  ASSIGN_OR_RETURN(sprite->buffer_, DeviceBuffer::Allocate(bytes, "sprite"));
  ASSIGN_OR_RETURN(sprite->written_, Event::Create(false, "sprite written"));
  const PlaneFill fill = BlackFill(format, range, width, height);
  for (int i = 0; i < fill.num_planes; ++i) {
    GPU_RETURN_IF_ERROR(hipMemsetAsync(sprite->data() + fill.offset[i], fill.value[i], fill.bytes[i], stream),
                        "hipMemsetAsync(sprite)");
  }
  GPU_RETURN_IF_ERROR(hipEventRecord(sprite->written_.get(), stream), "hipEventRecord(sprite written)");
  ASSIGN_OR_RETURN(sprite->frame_, MakePackedFrameView(sprite->data(), bytes, width, height, format, matrix, range));
  return sprite;
}

}  // namespace conveyor
