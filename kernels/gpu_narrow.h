// Launcher for the narrow stage on the GPU: a hardware decoder's P010 surface in device
// memory to 8-bit NV12 in the packed layout that the later stages read. The math is
// NarrowSample (stage_narrow.h), which the CPU path (narrow_cpu.h) runs too. GPU builds
// only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hip_compat.h"
#include "stage_narrow.h"
#include "status.h"

namespace conveyor {

// Narrows the device planes `y_device` and `uv_device` (P010 at the plan's size, rows
// `y_pitch` and `uv_pitch` bytes apart, any pitch of at least a row) into
// `dst_packed_nv12_device` (plan.dst_size bytes) on `stream`, one launch for both planes.
// Returns argument and launch errors only; execution errors surface at the next wait on
// the stream.
Status EnqueueNarrowP010(const NarrowPlan& plan, const uint8_t* y_device, size_t y_pitch, const uint8_t* uv_device,
                         size_t uv_pitch, uint8_t* dst_packed_nv12_device, hipStream_t stream);

}  // namespace conveyor
