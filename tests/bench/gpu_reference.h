// GPU measurements the pipeline benchmark compares against, taken in the same run:
// the pinned H2D copy bound for a frame size, pinned against pageable bandwidth, and the
// seed's anti-pattern (`serial`). Built only in GPU flavours; elsewhere they return
// UNAVAILABLE.
#pragma once

#include <vector>

#include "encode_params.h"
#include "frame_source.h"
#include "status.h"
#include "worker.h"

namespace conveyor::bench {

struct CopyBandwidth {
  double h2d_pinned_gbs = 0, h2d_pageable_gbs = 0, d2h_pinned_gbs = 0, d2h_pageable_gbs = 0;
};
StatusOr<CopyBandwidth> MeasureCopyBandwidth(int device, size_t bytes, int reps);

// Frames/s of a loop of pinned H2D copies of `frame_bytes` each: no encoder can beat it.
StatusOr<double> MeasureH2dBoundFps(int device, size_t frame_bytes, int frames);

// The same loop, reading each copy from the next of `frames` in turn, registered in
// place (hipHostRegister): the memory the pipeline's "registered" input uploads from.
StatusOr<double> MeasureRegisteredH2dFps(int device, const std::vector<uint8_t*>& frames, size_t frame_bytes,
                                         int copies);

// Frames/s of pinned H2D copies of `frame_bytes` and, at the same time on a second
// stream, pinned D2H copies of `output_bytes`: what the link allows once each frame's
// output also comes back, since the two directions share it (on the H200 together they
// move less than one direction alone does).
StatusOr<double> MeasureDuplexBoundFps(int device, size_t frame_bytes, size_t output_bytes, int frames);

// One stream (the legacy default), synchronous pageable copies, readback after the whole
// frame: the naive pipeline whose stall the band readback removes. Returns one FrameTimes per frame.
StatusOr<std::vector<FrameTimes>> RunSerial(int device, const std::vector<const OwnedFrame*>& frames,
                                            const std::vector<EncodeParams>& params);

}  // namespace conveyor::bench
