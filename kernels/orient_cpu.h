// Host execution of the orientation stage: the CPU worker's counterpart of
// EnqueueOrient, copying the same source sample into each destination sample
// (OrientSource), so the same bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "frame.h"
#include "stage_orient.h"
#include "status.h"

namespace conveyor {

// Checks that `src` is a valid frame of the plan's source format and size, then writes
// the turned frame to `dst_packed` (plan.dst_size bytes, packed layout).
Status OrientFrameOnHost(const FrameView& src, const OrientPlan& plan, uint8_t* dst_packed);

// A turned frame that owns its bytes. `view` points into `bytes` and carries the
// source's matrix and range: moving keeps it valid, copying does not.
struct OrientedFrame {
  std::vector<uint8_t> bytes;
  FrameView view;
};

StatusOr<OrientedFrame> OrientFrameToOwned(const FrameView& src, Orientation o);

}  // namespace conveyor
