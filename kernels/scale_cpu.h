// Host execution of a rendition scale: the CPU worker's counterpart of EnqueueScale,
// with the same integers as the ScaleSample the GPU kernel runs, so the same bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "frame.h"
#include "scale_plan.h"
#include "status.h"

namespace conveyor {

// Checks that `src` is a valid frame of the plan's format and source size, then writes
// the scaled frame to `dst_packed` (plan.dst_size bytes, packed layout).
Status ScaleFrameOnHost(const FrameView& src, const ScalePlan& plan, uint8_t* dst_packed);

// A scaled frame that owns its bytes. `view` points into `bytes` and carries the
// source's matrix and range: moving keeps it valid, copying does not.
struct ScaledFrame {
  std::vector<uint8_t> bytes;
  FrameView view;
};

StatusOr<ScaledFrame> ScaleFrameToOwned(const FrameView& src, const ScalePlan& plan);

}  // namespace conveyor
