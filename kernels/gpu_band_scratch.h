// The device buffers the stages of one band pass to each other, owned together. They are
// reused band after band and frame after frame by whoever owns the encode stream: every
// stage runs on that one stream in order, so one set is enough.
#pragma once

#include <functional>

#include "encode_plan.h"
#include "gpu_runtime.h"
#include "gpu_stages.h"

namespace conveyor {

class BandScratch {
 public:
  // Grows every buffer to at least `bytes` (the ScratchSizes of a launch's items). When one has
  // to be replaced, `before_grow` runs first: it must wait for the encode stream, whose
  // queued work may still use the old buffer. `stream` is the encode stream, on which a
  // new coordination buffer is zeroed.
  Status Reserve(const BandScratchSizes& bytes, hipStream_t stream, const std::function<Status()>& before_grow);
  // The same for `frames` bands of `plan` in one launch.
  Status Reserve(const EncodePlan& plan, int frames, hipStream_t stream, const std::function<Status()>& before_grow) {
    return Reserve(ScratchSizes(plan, frames), stream, before_grow);
  }

  // Whether every buffer already holds `bytes`.
  bool Holds(const BandScratchSizes& bytes) const;

  BandScratchBuffers buffers() const;

  uint64_t bytes() const;

 private:
  DeviceBuffer levels_, block_words_, block_bits_, segment_words_, coordination_;
};

}  // namespace conveyor
