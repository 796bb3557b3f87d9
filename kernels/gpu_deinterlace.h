// Launcher for the deinterlace stage on the GPU: a frame made whole from the uploaded
// previous, current and next frames, into a packed frame that the later stages read. The
// math is DeinterlaceSample, which the CPU path (deinterlace_cpu.h) runs too. GPU builds
// only.
#pragma once

#include <cstdint>

#include "hip_compat.h"
#include "stage_color.h"  // SourcePlanes
#include "stage_deinterlace.h"
#include "status.h"

namespace conveyor {

// Deinterlaces the device frame `cur_device` into `dst_packed_device` (plan.dst_size
// bytes) on `stream`, one launch for all planes, reading `prev_device` and
// `next_device` beside it (all three plan.format at the plan's size, any strides at
// least a packed row; at a stream's ends cur is passed as prev or next). Returns argument
// and launch errors only; execution errors surface at the next wait on the stream.
Status EnqueueDeinterlace(const DeinterlacePlan& plan, const SourcePlanes& prev_device, const SourcePlanes& cur_device,
                          const SourcePlanes& next_device, uint8_t* dst_packed_device, hipStream_t stream);

}  // namespace conveyor
