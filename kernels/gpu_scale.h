// Launcher for the rendition scaler on the GPU: one upload of the source frame, then
// kernels writing the scaled frames in the packed layout. The math is
// ScaleSample, which the CPU path (scale_cpu.h) runs too. GPU builds only.
#pragma once

#include <cstdint>

#include "hip_compat.h"
#include "scale_plan.h"
#include "stage_color.h"  // SourcePlanes
#include "status.h"

namespace conveyor {

// Scales the device frame `src_device` (plan.format at the plan's source size, any
// strides at least a packed row) into `dst_packed_device` (plan.dst_size bytes) on
// `stream`. Returns argument and launch errors only; execution errors surface at the
// next wait on the stream.
Status EnqueueScale(const ScalePlan& plan, const SourcePlanes& src_device,
                    uint8_t* dst_packed_device, hipStream_t stream);

// One rendition of a frame for EnqueueScales: its plan, the device source and the
// destination in the packed layout.
struct ScaleJob {
  const ScalePlan* plan;
  SourcePlanes src;
  uint8_t* dst;
};

// Several scales on `stream`, in as few launches as their kernels allow: renditions the
// area kernel takes share launches (a ladder's 720p and 360p are one), the others get
// one each. Checks every job before launching any.
Status EnqueueScales(const ScaleJob* jobs, int n, hipStream_t stream);

}  // namespace conveyor
