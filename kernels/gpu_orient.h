// Launcher for the orientation stage on the GPU: the uploaded frame turned and mirrored
// into a packed frame that the scale and encode stages then read. The math is
// OrientSource, which the CPU path (orient_cpu.h) runs too. GPU builds only.
#pragma once

#include <cstdint>

#include "hip_compat.h"
#include "stage_color.h"  // SourcePlanes
#include "stage_orient.h"
#include "status.h"

namespace conveyor {

// Turns the device frame `src_device` (plan.src_format at the plan's source size, any
// strides at least a packed row) into `dst_packed_device` (plan.dst_size bytes) on
// `stream`, one launch for all planes. Returns argument and launch errors only; execution
// errors surface at the next wait on the stream.
Status EnqueueOrient(const OrientPlan& plan, const SourcePlanes& src_device, uint8_t* dst_packed_device,
                     hipStream_t stream);

}  // namespace conveyor
