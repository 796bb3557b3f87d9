// A storyboard's sprite in a GPU worker's device memory (worker.h, Sprite). The tiling
// stage writes it on whichever encode lane its frame takes, and the sprite's own upload
// reads it on the upload stream: each waits for `written`, which each write re-records,
// so the sprite's work runs in submission order across streams with no host wait.
#pragma once

#include <memory>

#include "gpu_runtime.h"
#include "worker.h"

namespace conveyor {

class DeviceSprite : public Sprite {
 public:
  // A black sprite (BlackFill), cleared on `stream`, where `written` is first recorded.
  static StatusOr<std::shared_ptr<DeviceSprite>> Create(PixelFormat format, int width, int height,
                                                        ColorMatrix matrix, ColorRange range, hipStream_t stream);
  uint8_t* data() const { return buffer_.get<uint8_t>(); }
  size_t size() const { return buffer_.size(); }
  hipEvent_t written() const { return written_.get(); }

 private:
  DeviceBuffer buffer_;
  Event written_;
};

}  // namespace conveyor
