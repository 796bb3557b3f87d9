// Host execution of the deinterlace stage: the CPU worker's counterpart of
// EnqueueDeinterlace, writing DeinterlaceOutput for each destination sample, so the same
// bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "frame.h"
#include "stage_deinterlace.h"
#include "status.h"

namespace conveyor {

// Checks that `prev`, `cur` and `next` are valid frames of the plan's format and size,
// then writes cur deinterlaced to `dst_packed` (plan.dst_size bytes, packed layout). At
// a stream's first frame pass cur as prev, at its last cur as next.
Status DeinterlaceFrameOnHost(const FrameView& prev, const FrameView& cur, const FrameView& next,
                              const DeinterlacePlan& plan, uint8_t* dst_packed);

// A deinterlaced frame that owns its bytes. `view` points into `bytes` and carries cur's
// matrix and range: moving keeps it valid, copying does not.
struct DeinterlacedFrame {
  std::vector<uint8_t> bytes;
  FrameView view;
};

StatusOr<DeinterlacedFrame> DeinterlaceFrameToOwned(const FrameView& prev, const FrameView& cur,
                                                    const FrameView& next, bool top_field_first);

}  // namespace conveyor
