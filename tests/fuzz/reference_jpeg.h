// The JPEG file as the encoder's definitions give it: each sample from stage_color.h's
// per-sample functions (the box average, no direct-chroma shortcut), each block from
// FdctRow and FdctColumnQuantize, each segment from EncodeSegment. These are the functions
// the GPU kernels run; none of the CPU path's row loops, lanes or host Huffman coder is
// used, so CpuJpegEncoder must produce exactly these bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "encode_plan.h"
#include "stage_color.h"

namespace conveyor::fuzz {

std::vector<uint8_t> ReferenceJpeg(const EncodePlan& plan, const SourcePlanes& source);

}  // namespace conveyor::fuzz
